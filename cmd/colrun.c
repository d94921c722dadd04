#include "cmd/colrun.h"
#include "commit.h" /* CASCADE_COMMIT, written at build time */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "cmd/cli.h"
#include "core/log.h"
#include "core/str.h"

kfk_producer *colrun_producer(const char *who, const char *brokers,
                              const char *config, const char *codec,
                              ccf_conf *cc)
{
    const char *const topics[] = {KFK_TOPIC_SIGNALS, KFK_TOPIC_DEADLETTER,
                                  NULL};
    const char *used;
    kfk_producer *p;
    cs_config c;
    cs_err err;

    if (cli_config(&c, config, who, &used))
        return NULL;
    if (cc && used && ccf_load(cc, used, &err)) {
        fprintf(stderr, "cascade %s: %s\n", who, err.msg);
        return NULL;
    }
    if (brokers)
        str_copy(c.brokers, sizeof c.brokers, brokers);
    if (!c.brokers[0]) {
        fprintf(stderr, "cascade %s: no Kafka brokers: give --brokers or "
                        "kafka.brokers in --config\n", who);
        return NULL;
    }
    kfk_producer_opts po = kfk_producer_defaults(c.brokers);
    if (c.linger_ms != KFK_LINGER_UNSET)
        po.linger_ms = c.linger_ms;
    po.props = &c.kprops;
    po.codec = codec;
    if (!(p = kfk_producer_open(&po, &err)) ||
        kfk_producer_topics(p, topics, NULL, CLI_TOPICS_MS, &err)) {
        fprintf(stderr, "cascade %s: %s\n", who, err.msg);
        kfk_producer_free(p);
        return NULL;
    }
    return p;
}

int colrun_int(const char *what, const char *v, int lo, int hi, int *out)
{
    char *end;
    long n = strtol(v, &end, 10);

    if (*v == '\0' || *end || n < lo || n > hi) {
        fprintf(stderr, "%s wants %d..%d, not '%s'\n", what, lo, hi, v);
        return -1;
    }
    *out = (int)n;
    return 0;
}

/* What a collector did, logged once a minute: an operator sees it work
 * (and stall) without waiting for it to stop. */
#define REPORT_S 60

static void loop_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

int colrun_open(colrun_loop *l, int seconds, kfk_producer *p, cs_err *err)
{
    struct timeval tv = {seconds, 0};

    memset(l, 0, sizeof *l);
    if (!(l->base = event_base_new()))
        goto fail;
    l->ev[0] = evsignal_new(l->base, SIGINT, loop_stop, l->base);
    l->ev[1] = evsignal_new(l->base, SIGTERM, loop_stop, l->base);
    l->ev[2] = evtimer_new(l->base, loop_stop, l->base);
    l->p = p;
    if (!l->ev[0] || !l->ev[1] || !l->ev[2] || event_add(l->ev[0], NULL) ||
        event_add(l->ev[1], NULL) || (seconds && event_add(l->ev[2], &tv)) ||
        kfk_producer_attach(p, l->base))
        goto fail;
    return 0;
fail:
    cs_err_set(err, "cannot set up the event loop");
    return -1;
}

/* fn(arg) every REPORT_S seconds from the loop. */
int colrun_report(colrun_loop *l, event_callback_fn fn, void *arg,
                       cs_err *err)
{
    struct timeval tv = {REPORT_S, 0};

    l->ev[3] = event_new(l->base, -1, EV_PERSIST, fn, arg);
    if (!l->ev[3] || event_add(l->ev[3], &tv)) {
        cs_err_set(err, "cannot set up the event loop");
        return -1;
    }
    return 0;
}

static void col_mx(mx_out *o, void *arg)
{
    colrun_loop *l = arg;
    cmx_counts c = {0};

    l->counts(l->counts_arg, &c);
    c.kafka_up = kfk_producer_up(l->p);
    cmx_write(o, l->collector, &c);
}

static int col_ok(char *why, size_t len, void *arg)
{
    return kfk_producer_ready(((colrun_loop *)arg)->p, why, len);
}

int colrun_observe(colrun_loop *l, const char *collector, const char *config,
                   void (*counts)(void *arg, cmx_counts *c), void *arg,
                   cs_err *err)
{
    cs_config c;
    const char *used;
    char who[64];
    obs_build b = {who, CASCADE_VERSION, CASCADE_COMMIT};

    snprintf(who, sizeof who, "ingest %s", collector);
    cli_notify_ready(l->base, NULL, NULL); /* started: ready */
    if (cli_config(&c, config, who, &used)) {
        cs_err_set(err, "the config cannot be read again");
        return -1;
    }
    if (c.metrics_ingest <= 0)
        return 0;
    if (!(l->obs = obs_start(l->base, c.metrics_listen, c.metrics_ingest, &b,
                             err)))
        return -1;
    l->collector = collector;
    l->counts = counts;
    l->counts_arg = arg;
    obs_add(l->obs, &(obs_part){collector, col_mx, col_ok, l});
    log_info(collector, "metrics on http://%s:%d/metrics (and /healthz, "
             "/readyz)", c.metrics_listen, obs_port(l->obs));
    return 0;
}

void colrun_close(colrun_loop *l)
{
    obs_free(l->obs);
    kfk_producer_detach(l->p);
    for (int i = 0; i < 4; i++)
        if (l->ev[i])
            event_free(l->ev[i]);
    if (l->base)
        event_base_free(l->base);
}

