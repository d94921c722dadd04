/* Memory per alert in the Alertmanager webhook: posts of N alerts that
 * share one large commonAnnotations, each answered by a webhook on this
 * process's loop that publishes to an embedded broker (as `cascade ingest
 * webhook` does), the post sent whole before the clock starts.
 *
 *   bench_webhook [--common BYTES] [--runs R] N...
 *
 * For each N (default common annotation 500000 bytes, the size of the
 * probe that found the expansion; alerts are {"status": "firing",
 * "labels": {"i": "K"}}), one JSON object a line: alerts, body_bytes,
 * status (the webhook's answer), seconds (median of the runs, from the
 * request to its answer), rss_growth_kib (the process's peak RSS during
 * the post over its RSS before: the webhook, its signals and the
 * producer's queue), rss_per_alert (bytes), and signal_bytes_per_alert:
 * what one alert's signal takes as msgpack, the Kafka message (by
 * wh_signals, outside the timing; 0 when the webhook refused the post).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "bench/benchutil.h"
#include "core/kafka.h"
#include "core/kafka_broker.h"
#include "core/mem.h"
#include "ingest/webhook.h"

#define TOKEN "bench-token"

typedef struct post {
    struct event_base *base;
    int done, status;
} post;

/* VmRSS or VmHWM of this process, KiB. */
static long status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(field);

    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':')
            v = atol(line + n + 1);
    if (f)
        fclose(f);
    return v;
}

/* Peak RSS starts again from the current RSS. */
static void reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");

    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

static char *make_body(size_t alerts, size_t common, size_t *len)
{
    struct evbuffer *b = evbuffer_new();
    char *text;

    evbuffer_add_printf(b, "{\"version\":\"4\",\"status\":\"firing\","
                           "\"receiver\":\"cascade\",\"groupLabels\":{},"
                           "\"commonLabels\":{},\"commonAnnotations\":"
                           "{\"description\":\"");
    for (size_t i = 0; i < common; i++)
        evbuffer_add(b, "x", 1);
    evbuffer_add_printf(b, "\"},\"externalURL\":\"http://am:9093\","
                           "\"alerts\":[");
    for (size_t i = 0; i < alerts; i++)
        evbuffer_add_printf(b, "%s{\"status\":\"firing\",\"labels\":"
                               "{\"i\":\"%zu\"}}", i ? "," : "", i);
    evbuffer_add(b, "]}", 2);
    *len = evbuffer_get_length(b);
    text = xmalloc(*len + 1);
    evbuffer_remove(b, text, *len);
    text[*len] = '\0';
    evbuffer_free(b);
    return text;
}

static void on_answer(struct evhttp_request *req, void *arg)
{
    post *p = arg;

    p->done = 1;
    p->status = req ? evhttp_request_get_response_code(req) : 0;
    event_base_loopbreak(p->base);
}

/* Posts body; returns the seconds to the answer. */
static double post_once(struct event_base *base, int port, const char *body,
                        size_t len, int *status)
{
    struct evhttp_connection *conn =
        evhttp_connection_base_new(base, NULL, "127.0.0.1", (ev_uint16_t)port);
    post p = {.base = base};
    struct evhttp_request *req = evhttp_request_new(on_answer, &p);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    double t0;

    evhttp_add_header(h, "Host", "127.0.0.1");
    evhttp_add_header(h, "Authorization", "Bearer " TOKEN);
    evbuffer_add(evhttp_request_get_output_buffer(req), body, len);
    t0 = bench_now();
    evhttp_make_request(conn, req, EVHTTP_REQ_POST, "/api/v1/alerts");
    while (!p.done)
        event_base_dispatch(base);
    t0 = bench_now() - t0;
    evhttp_connection_free(conn);
    *status = p.status;
    return t0;
}

static double signal_bytes(const char *body, size_t len, size_t *n)
{
    cs_err err;
    sig *s = wh_signals(body, len, n, &err);
    double total = 0;
    char *buf;
    size_t blen;

    for (size_t i = 0; s && i < *n; i++)
        if (sig_to_msgpack(&s[i], &buf, &blen) == 0) {
            total += (double)blen;
            free(buf);
        }
    wh_free_signals(s, *n);
    return total;
}

static void bench(struct event_base *base, webhook *w, kfk_producer *p,
                  size_t alerts, size_t common, int runs)
{
    size_t len, n = 0;
    char *body = make_body(alerts, common, &len);
    double secs[64], bytes;
    long before, growth = 0;
    int status = 0;

    for (int r = 0; r < runs; r++) {
        kfk_producer_flush(p, 60000);
        before = status_kib("VmRSS");
        reset_peak();
        secs[r] = post_once(base, wh_port(w), body, len, &status);
        if (status_kib("VmHWM") - before > growth)
            growth = status_kib("VmHWM") - before;
    }
    qsort(secs, (size_t)runs, sizeof *secs, bench_cmp_double);
    bytes = status == 200 ? signal_bytes(body, len, &n) : 0;
    printf("{\"alerts\": %zu, \"common_bytes\": %zu, \"body_bytes\": %zu, "
           "\"status\": %d, \"seconds\": %.3f, \"rss_growth_kib\": %ld, "
           "\"rss_per_alert\": %.0f, \"signal_bytes_per_alert\": %.0f}\n",
           alerts, common, len, status, secs[runs / 2], growth,
           (double)growth * 1024 / (double)alerts,
           n ? bytes / (double)n : 0);
    fflush(stdout);
    free(body);
}

int main(int argc, char **argv)
{
    size_t common = 500000;
    int runs = 1, i = 1;
    cs_err err = {{0}};
    struct event_base *base = event_base_new();
    kfk_broker *b = kfk_broker_start(1, &err);
    kfk_producer *p;
    webhook *w;

    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (!strcmp(argv[i], "--common"))
            common = strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--runs"))
            runs = atoi(argv[i + 1]);
    }
    if (i >= argc || runs < 1 || runs > 64 || !base || !b) {
        fprintf(stderr, "usage: bench_webhook [--common BYTES] [--runs R] "
                        "N...\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    kfk_producer_opts po = kfk_producer_defaults(kfk_broker_bootstrap(b));
    if (!(p = kfk_producer_open(&po, &err)) || kfk_producer_attach(p, base) ||
        !(w = wh_start(base, &(wh_config){.token = TOKEN}, p, &err))) {
        fprintf(stderr, "bench_webhook: %s\n", err.msg);
        return 1;
    }
    for (; i < argc; i++)
        bench(base, w, p, strtoul(argv[i], NULL, 10), common, runs);
    wh_free(w);
    kfk_producer_free(p);
    kfk_broker_stop(b);
    event_base_free(base);
    return 0;
}
