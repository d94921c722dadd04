/* The ingest paths against an embedded broker. Webhook: what each kind of
 * request is answered, that exactly the alerts of the valid post reach
 * cascade.signals as normalised signals, that the connection limit
 * holds new connections back until one closes, and that a post is
 * answered 200 only once Kafka has acknowledged its alerts (503 when it
 * does not in time; clients that hang up and stopping the webhook).
 * File publishing: valid lines become signals, bad ones dead letters
 * with line and reason. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "check.h"
#include "core/kafka.h"
#include "core/mem.h"
#include "core/kafka_broker.h"
#include "core/signal.h"
#include "core/ts.h"
#include "ingest/filein.h"
#include "ingest/pubwait.h"
#include "ingest/webhook.h"


#define TOKEN "s3cret-token"
#define MAX_BODY 4096
#define PARTITIONS 4

/* Three alerts: host from instance (port stripped) in cluster c1, a
 * resolved one with a Hostname label and no cluster, and one whose
 * startsAt is Alertmanager's "unset" time. */
static const char *const valid_post =
    "{\"version\":\"4\",\"status\":\"firing\",\"receiver\":\"cascade\","
    "\"groupKey\":\"{}:{alertname=\\\"GPUXid\\\"}\",\"truncatedAlerts\":0,"
    "\"groupLabels\":{\"alertname\":\"GPUXid\"},\"commonLabels\":{},"
    "\"commonAnnotations\":{},\"externalURL\":\"http://am:9093\",\"alerts\":["
    "{\"status\":\"firing\",\"labels\":{\"alertname\":\"GPUXid\","
    "\"instance\":\"gpu-node-7:9100\",\"cluster\":\"c1\"},"
    "\"annotations\":{},\"startsAt\":\"2026-03-02T08:00:00Z\","
    "\"endsAt\":\"0001-01-01T00:00:00Z\",\"fingerprint\":\"a1\"},"
    "{\"status\":\"resolved\",\"labels\":{\"alertname\":\"NodeDown\","
    "\"Hostname\":\"gpu-node-8\"},\"startsAt\":\"2026-03-02T07:00:00Z\","
    "\"endsAt\":\"2026-03-02T09:00:00.5Z\"},"
    "{\"status\":\"firing\",\"labels\":{\"alertname\":\"X\","
    "\"node\":\"gpu-node-9\",\"cluster\":\"c2\"},"
    "\"startsAt\":\"0001-01-01T00:00:00Z\"}]}";

typedef struct resp {
    struct event_base *base;
    int done, code;
    char body[1024], www_auth[64], retry_after[16];
} resp;

#define MAX_GOT 8

/* Messages read back from a topic: payload copies and keys. */
typedef struct got {
    struct event_base *base;
    kfk_consumer *c;
    int n, want, done;
    char key[MAX_GOT][32];
    char *val[MAX_GOT];
    size_t len[MAX_GOT];
} got;

/* ---- HTTP client ------------------------------------------------------- */

static void copy_header(struct evhttp_request *req, const char *name,
                        char *out, size_t cap)
{
    const char *v = evhttp_find_header(evhttp_request_get_input_headers(req),
                                       name);
    snprintf(out, cap, "%s", v ? v : "");
}

static void on_resp(struct evhttp_request *req, void *arg)
{
    resp *r = arg;
    struct evbuffer *in;
    size_t n;

    r->done = 1;
    if (req) {
        r->code = evhttp_request_get_response_code(req);
        in = evhttp_request_get_input_buffer(req);
        n = evbuffer_remove(in, r->body, sizeof r->body - 1);
        r->body[n > 0 ? n : 0] = '\0';
        copy_header(req, "WWW-Authenticate", r->www_auth, sizeof r->www_auth);
        copy_header(req, "Retry-After", r->retry_after, sizeof r->retry_after);
    }
    event_base_loopbreak(r->base);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

/* Runs the loop until *flag is set or ms pass; returns *flag. */
static int run_until(struct event_base *base, const int *flag, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    struct event *t = evtimer_new(base, on_deadline, base);
    int timed_out = 0;

    evtimer_add(t, &tv);
    while (!*flag && !timed_out) {
        event_base_dispatch(base);
        timed_out = !evtimer_pending(t, NULL);
    }
    event_free(t);
    return *flag;
}

static struct evhttp_connection *
start_request(struct event_base *base, int port, resp *r,
              enum evhttp_cmd_type cmd, const char *path, const char *auth,
              const char *body, size_t len)
{
    struct evhttp_connection *conn =
        evhttp_connection_base_new(base, NULL, "127.0.0.1", (ev_uint16_t)port);
    struct evhttp_request *req = evhttp_request_new(on_resp, r);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);

    memset(r, 0, sizeof *r);
    r->base = base;
    evhttp_add_header(h, "Host", "127.0.0.1");
    evhttp_add_header(h, "Content-Type", "application/json");
    if (auth)
        evhttp_add_header(h, "Authorization", auth);
    if (body)
        evbuffer_add(evhttp_request_get_output_buffer(req), body, len);
    REQUIRE(evhttp_make_request(conn, req, cmd, path) == 0);
    return conn;
}

static void request(struct event_base *base, int port, resp *r,
                    enum evhttp_cmd_type cmd, const char *path,
                    const char *auth, const char *body)
{
    struct evhttp_connection *conn = start_request(
        base, port, r, cmd, path, auth, body, body ? strlen(body) : 0);

    REQUIRE(run_until(base, &r->done, 10000));
    evhttp_connection_free(conn);
}

/* ---- reading topics back ----------------------------------------------- */

static void on_batch(void *arg, rd_kafka_message_t **msgs, size_t n)
{
    got *g = arg;
    cs_err err = {{0}};

    for (size_t i = 0; i < n; i++, g->n++) {
        REQUIRE(g->n < MAX_GOT);
        snprintf(g->key[g->n], sizeof g->key[0], "%.*s", (int)msgs[i]->key_len,
                 msgs[i]->key ? (const char *)msgs[i]->key : "");
        g->val[g->n] = malloc(msgs[i]->len + 1);
        REQUIRE(g->val[g->n] != NULL);
        memcpy(g->val[g->n], msgs[i]->payload, msgs[i]->len);
        g->val[g->n][msgs[i]->len] = '\0';
        g->len[g->n] = msgs[i]->len;
    }
    REQUIRE(kfk_consumer_commit_held(g->c, &err) == 0);
    g->done = g->n >= g->want;
    if (g->done)
        event_base_loopbreak(g->base);
}

/* Reads `want` messages from the start of a topic, then lingers a second
 * so that any extra message would be counted too. */
static void read_topic(got *g, struct event_base *base, const char *bootstrap,
                       const char *group, const char *topic, int want)
{
    cs_err err = {{0}};
    int never = 0;

    memset(g, 0, sizeof *g);
    g->base = base;
    g->want = want;
    kfk_consumer_opts co = kfk_consumer_defaults(bootstrap, group, topic);
    co.max_batch = 64;
    co.on_batch = on_batch;
    co.arg = g;
    g->c = kfk_consumer_open(base, &co, &err);
    REQUIRE(g->c != NULL);
    run_until(base, &g->done, 20000);
    run_until(base, &never, 1000);
    kfk_consumer_free(g->c);
    REQUIRE(g->n == want);
}

static void got_free(got *g)
{
    for (int i = 0; i < g->n; i++)
        free(g->val[i]);
}

/* Index of the signal about `host`; s receives it decoded. */
static int find_host(const got *g, const char *host, sig *s)
{
    cs_err err = {{0}};

    for (int i = 0; i < g->n; i++) {
        REQUIRE(sig_parse_msgpack(s, g->val[i], g->len[i], &err) == 0);
        if (s->host && strcmp(s->host, host) == 0)
            return i;
        sig_free(s);
    }
    fprintf(stderr, "no signal about %s\n", host);
    REQUIRE(0);
    return -1;
}

static void check_alert_sig(const sig *s, const char *cluster, const char *ts)
{
    int64_t want;

    REQUIRE(s->source == SRC_ALERTMANAGER);
    REQUIRE(strcmp(s->cluster, cluster) == 0);
    REQUIRE(json_array_size(json_object_get(s->body, "alerts")) == 1);
    REQUIRE(strcmp(json_string_value(json_object_get(s->body, "receiver")),
                 "cascade") == 0);
    if (ts) {
        REQUIRE(ts_parse_rfc3339(ts, &want) == 0 && s->ts == want);
    } else { /* Alertmanager's unset time: now instead */
        REQUIRE(s->ts > ts_now() - 60 * TS_SEC && s->ts <= ts_now());
    }
}

static void check_published(struct event_base *base, const char *bootstrap)
{
    got g;
    sig s;
    int i;

    read_topic(&g, base, bootstrap, "wh-test", KFK_TOPIC_SIGNALS, 3);
    i = find_host(&g, "gpu-node-7", &s);
    check_alert_sig(&s, "c1", "2026-03-02T08:00:00Z");
    REQUIRE(strcmp(g.key[i], "c1") == 0);
    sig_free(&s);
    i = find_host(&g, "gpu-node-8", &s);
    check_alert_sig(&s, "default", "2026-03-02T09:00:00.5Z");
    REQUIRE(strcmp(g.key[i], "default") == 0);
    sig_free(&s);
    find_host(&g, "gpu-node-9", &s);
    check_alert_sig(&s, "c2", NULL);
    sig_free(&s);
    got_free(&g);
}

/* ---- request cases ------------------------------------------------------ */

static void expect(resp *r, int code, const char *fragment)
{
    if (r->code != code || !strstr(r->body, fragment))
        fprintf(stderr, "got %d %s (wanted %d with '%s')\n", r->code, r->body,
                code, fragment);
    REQUIRE(r->code == code);
    REQUIRE(strstr(r->body, fragment) != NULL);
}

static void test_rejections(struct event_base *base, int port)
{
    const char *bearer = "Bearer " TOKEN;
    char big[MAX_BODY * 2 + 1];
    resp r;

    request(base, port, &r, EVHTTP_REQ_POST, "/api/v1/alerts", NULL, valid_post);
    expect(&r, 401, "\"error\"");
    REQUIRE(strcmp(r.www_auth, "Bearer") == 0);
    request(base, port, &r, EVHTTP_REQ_POST, "/api/v1/alerts",
            "Bearer s3cret-tokeN", valid_post);
    expect(&r, 401, "bearer token");
    request(base, port, &r, EVHTTP_REQ_POST, "/api/v1/alerts", bearer,
            "{\"version\":\"4\",\"alerts\":[");
    expect(&r, 400, "invalid JSON");
    request(base, port, &r, EVHTTP_REQ_POST, "/", bearer,
            "{\"version\":\"3\",\"alerts\":[]}");
    expect(&r, 400, "version");
    /* The first alert is fine; the second spoils the whole post. */
    request(base, port, &r, EVHTTP_REQ_POST, "/webhook", bearer,
            "{\"version\":\"4\",\"alerts\":[{\"status\":\"firing\","
            "\"labels\":{\"instance\":\"n1:1\"},\"startsAt\":"
            "\"2026-03-02T08:00:00Z\"},{\"status\":\"pending\",\"labels\":{}}]}");
    expect(&r, 400, "alerts[1].status");
    memset(big, ' ', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    request(base, port, &r, EVHTTP_REQ_POST, "/api/v1/alerts", bearer, big);
    REQUIRE(r.code == 413);
    request(base, port, &r, EVHTTP_REQ_GET, "/api/v1/alerts", bearer, NULL);
    expect(&r, 405, "\"error\"");
    request(base, port, &r, EVHTTP_REQ_GET, "/nope", NULL, NULL);
    expect(&r, 404, "\"error\"");
}

static int raw_connect(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    REQUIRE(fd >= 0);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    REQUIRE(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    return fd;
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    resp *r = arg;

    (void)fd;
    (void)what;
    r->done = 1;
    event_base_loopbreak(r->base);
}

/* What the server sends on fd, the loop running until it comes (3 s at
 * most). */
static void raw_answer(struct event_base *base, int fd, char *buf, size_t cap)
{
    resp r = {.base = base};
    struct event *ev = event_new(base, fd, EV_READ, on_readable, &r);
    ssize_t n;

    event_add(ev, NULL);
    REQUIRE(run_until(base, &r.done, 3000));
    n = recv(fd, buf, cap - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    event_free(ev);
}

/* A post without the token is refused from its head: the client sends a
 * head declaring a megabyte, and the 401 comes without the body. */
static void test_refused_unread(struct event_base *base, int port)
{
    static const char head[] =
        "POST /api/v1/alerts HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n";
    int fd = raw_connect(port);
    char ans[1024];

    REQUIRE(write(fd, head, sizeof head - 1) == (ssize_t)sizeof head - 1);
    raw_answer(base, fd, ans, sizeof ans);
    REQUIRE(strncmp(ans, "HTTP/1.1 401", 12) == 0);
    REQUIRE(strstr(ans, "WWW-Authenticate: Bearer") != NULL);
    REQUIRE(strstr(ans, "bearer token") != NULL);
    close(fd);
}

/* A credential in a query string never reaches the log: the logged URI
 * keeps its path and loses its query (a 404, and a 401 refused at the
 * head, whose answer goes through the same log line). */
static void test_uri_redacted(struct event_base *base, int port)
{
    check_capture cap;
    char *log;
    resp r;

    check_stderr_begin(&cap);
    request(base, port, &r, EVHTTP_REQ_GET, "/api/v2/alerts?token=qs-secret-1",
            NULL, NULL);
    request(base, port, &r, EVHTTP_REQ_POST, "/api/v1/alerts?token=qs-secret-2",
            NULL, valid_post);
    log = check_stderr_end(&cap);
    fputs(log, stderr);
    REQUIRE(strstr(log, "qs-secret") == NULL);
    REQUIRE(strstr(log, "GET /api/v2/alerts?<redacted>: 404") != NULL);
    REQUIRE(strstr(log, "POST /api/v1/alerts?<redacted>: 401") != NULL);
    free(log);
}

static void test_routes(struct event_base *base, int port, webhook *w)
{
    wh_stat st;
    resp r;

    request(base, port, &r, EVHTTP_REQ_GET, "/healthz", NULL, NULL);
    expect(&r, 200, "ok");
    test_rejections(base, port);
    test_uri_redacted(base, port);
    test_refused_unread(base, port);
    request(base, port, &r, EVHTTP_REQ_POST, "/api/v1/alerts",
            "bearer " TOKEN, valid_post);
    expect(&r, 200, "{\"accepted\":3}");
    wh_get_stats(w, &st);
    REQUIRE(st.accepted == 3);
    REQUIRE(st.rejected == 10); /* 413 is evhttp's own answer */
}

/* A signal is named by its post's common fields, its alert and its time:
 * the same post names its signals the same, two alerts differently. */
static void test_signal_ids(void)
{
    cs_err err = {{0}};
    size_t n1 = 0, n2 = 0;
    sig *a = wh_signals(valid_post, strlen(valid_post), &n1, &err);
    sig *b = wh_signals(valid_post, strlen(valid_post), &n2, &err);

    REQUIRE(a && b && n1 == 3 && n2 == 3);
    REQUIRE(a[0].id == b[0].id && a[1].id == b[1].id);
    REQUIRE(a[0].id != a[1].id);
    REQUIRE(json_string_length(json_object_get(a[0].obj, "id")) == 16);
    wh_free_signals(a, n1);
    wh_free_signals(b, n2);
}

/* What the server publishes (wh_messages, written directly) is, byte for
 * byte, the msgpack of wh_signals' signals; times set, so that none falls
 * back to now. */
static void test_messages_same(void)
{
    static const char three[] =
        "{\"version\":\"4\",\"status\":\"firing\",\"receiver\":\"r\","
        "\"groupLabels\":{\"alertname\":\"X\"},\"commonLabels\":{\"z\":\"1\"},"
        "\"commonAnnotations\":{\"d\":\"caf\u00e9\"},\"externalURL\":\"\","
        "\"truncatedAlerts\":0,\"alerts\":["
        "{\"status\":\"firing\",\"labels\":{\"alertname\":\"X\","
        "\"instance\":\"gpu-node-7:9100\",\"cluster\":\"c1\"},"
        "\"annotations\":{\"n\":1.5},\"startsAt\":\"2026-03-02T08:00:00Z\"},"
        "{\"status\":\"resolved\",\"labels\":{\"Hostname\":\"g8\"},"
        "\"startsAt\":\"2026-03-02T07:00:00Z\",\"endsAt\":\"2026-03-02T09:00:00.5Z\"},"
        "{\"status\":\"firing\",\"labels\":{\"instance\":\":9100\"},"
        "\"startsAt\":\"2026-03-02T08:00:01Z\"}]}";
    static const char none[] = "{\"version\":\"4\",\"alerts\":[]}";
    static const char nested[] =
        "{\"version\":\"4\",\"alerts\":[{\"status\":\"firing\",\"labels\":{},"
        "\"startsAt\":\"2026-03-02T08:00:00Z\",\"x\":[null,true,{\"b\":2,\"a\":1}]}]}";
    static const char *const bodies[] = {three, none, nested};

    for (size_t b = 0; b < sizeof bodies / sizeof *bodies; b++) {
        cs_err err = {{0}};
        size_t ns = 0, nm = 0;
        sig *s = wh_signals(bodies[b], strlen(bodies[b]), &ns, &err);
        pw_msg *m = wh_messages(bodies[b], strlen(bodies[b]), &nm, &err);

        if (!s || !m)
            fprintf(stderr, "body %zu: %s\n", b, err.msg);
        REQUIRE(s && m && ns == nm);
        for (size_t i = 0; i < ns; i++) {
            char *want = NULL;
            size_t len = 0;
            REQUIRE(sig_to_msgpack(&s[i], &want, &len) == 0);
            CHECK_INT(m[i].len, len);
            CHECK(m[i].len == len && !memcmp(m[i].val, want, len));
            CHECK_STR(m[i].key, s[i].cluster);
            free(want);
        }
        if (b == 0) {
            CHECK_STR(s[0].host, "gpu-node-7");
            CHECK_STR(s[2].host, ":9100"); /* not a host:port: as it is */
        }
        wh_free_signals(s, ns);
        pw_msgs_free(m, nm);
    }
}

/* A post of n alerts under one commonAnnotations of `common` bytes. */
static char *big_post(size_t n, size_t common)
{
    size_t cap = common + n * 64 + 256, len;
    char *b = malloc(cap);

    REQUIRE(b != NULL);
    len = (size_t)snprintf(b, cap, "{\"version\":\"4\",\"commonAnnotations\":"
                           "{\"description\":\"%0*d\"},\"alerts\":[",
                           (int)common, 0);
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(b + len, cap - len, "%s{\"status\":\"firing\","
                                "\"labels\":{\"i\":\"%zu\"}}", i ? "," : "", i);
    snprintf(b + len, cap - len, "]}");
    return b;
}

/* The work one post makes is bounded: more alerts than max_alerts, or
 * signals over max_output (each alert carries the post's common fields),
 * are refused with 413 naming the limit, before any signal is built. */
static void test_post_limits(struct event_base *base, kfk_producer *p)
{
    wh_config cfg = {.token = TOKEN, .max_alerts = 3, .max_output = 8192};
    cs_err err = {{0}};
    webhook *w = wh_start(base, &cfg, p, &err);
    char *body;
    wh_stat st;
    resp r;

    REQUIRE(w != NULL);
    body = big_post(4, 10);
    request(base, wh_port(w), &r, EVHTTP_REQ_POST, "/", "Bearer " TOKEN, body);
    expect(&r, 413, "4 alerts, over webhook.max_alerts (3)");
    free(body);
    body = big_post(3, 3000); /* about 9 kB of signals from 3 kB */
    request(base, wh_port(w), &r, EVHTTP_REQ_POST, "/", "Bearer " TOKEN, body);
    expect(&r, 413, "over webhook.max_output (8192)");
    free(body);
    body = big_post(2, 3000);
    request(base, wh_port(w), &r, EVHTTP_REQ_POST, "/", "Bearer " TOKEN, body);
    expect(&r, 200, "{\"accepted\":2}");
    free(body);
    wh_get_stats(w, &st);
    REQUIRE(st.over_alerts == 1 && st.over_output == 1 && st.rejected == 2);
    REQUIRE(st.accepted == 2);
    wh_free(w);

    /* One alert whose signal is over Kafka's message limit (within the
     * body limit): a 413 before anything is produced. It was a 500, which
     * Alertmanager retried for ever. */
    cfg = (wh_config){.token = TOKEN};
    REQUIRE((w = wh_start(base, &cfg, p, &err)) != NULL);
    body = big_post(1, 1000000);
    request(base, wh_port(w), &r, EVHTTP_REQ_POST, "/", "Bearer " TOKEN, body);
    expect(&r, 413, "over Kafka's 1000000-byte message limit");
    free(body);
    wh_get_stats(w, &st);
    REQUIRE(st.over_message == 1 && st.accepted == 0);
    wh_free(w);
}

/* A producer whose queue is full (its broker is unreachable) makes the
 * webhook answer 503 with Retry-After, so that Alertmanager retries. */
static void test_queue_full(struct event_base *base, kfk_producer *dead)
{
    cs_err err = {{0}};
    wh_config cfg = {.token = TOKEN};
    webhook *w;
    int rc = KFK_OK;
    wh_stat st;
    resp r;

    for (int i = 0; i < 1000000 && rc == KFK_OK; i++)
        rc = kfk_produce(dead, KFK_TOPIC_SIGNALS, NULL, 0, "x", 1, &err);
    REQUIRE(rc == KFK_QUEUE_FULL);
    w = wh_start(base, &cfg, dead, &err);
    REQUIRE(w != NULL);
    request(base, wh_port(w), &r, EVHTTP_REQ_POST, "/api/v1/alerts",
            "Bearer " TOKEN, valid_post);
    expect(&r, 503, "retry");
    REQUIRE(strcmp(r.retry_after, "1") == 0);
    wh_get_stats(w, &st);
    CHECK(st.delivery_failed == 1 && st.accepted == 0);
    wh_free(w);
}

/* ---- the answer waits for Kafka ---------------------------------------- */

/* Runs the loop until w has `want` posts waiting for Kafka (5 s at most). */
static int until_waiting(struct event_base *base, webhook *w,
                         unsigned long want)
{
    int never = 0;
    wh_stat st;

    for (int i = 0; i < 500; i++) {
        wh_get_stats(w, &st);
        if (st.waiting == want)
            return 1;
        run_until(base, &never, 10);
    }
    return 0;
}

/* The valid post over a socket of its own; the caller reads or closes. */
static int raw_post(int port)
{
    char head[256];
    int fd = raw_connect(port);
    int n = snprintf(head, sizeof head,
                     "POST /api/v1/alerts HTTP/1.1\r\nHost: x\r\n"
                     "Authorization: Bearer " TOKEN "\r\n"
                     "Content-Length: %zu\r\n\r\n", strlen(valid_post));

    REQUIRE(write(fd, head, (size_t)n) == n);
    REQUIRE(write(fd, valid_post, strlen(valid_post)) ==
            (ssize_t)strlen(valid_post));
    return fd;
}

/* With the broker unreachable (its queue empty: every produce succeeds)
 * a post is answered 503 with Retry-After once ack_timeout_s has passed.
 * It was 200 at once, with the alerts in a queue that a kill loses. The
 * wait outlasts the listener's timeout_s (the longest silence): a client
 * waiting for its answer is not silent. */
static void test_unacked(struct event_base *base, kfk_producer *dead)
{
    wh_config cfg = {.token = TOKEN, .ack_timeout_s = 2, .timeout_s = 1};
    cs_err err = {{0}};
    webhook *w = wh_start(base, &cfg, dead, &err);
    int64_t t0 = ts_now();
    wh_stat st;
    resp r;

    REQUIRE(w != NULL);
    request(base, wh_port(w), &r, EVHTTP_REQ_POST, "/api/v1/alerts",
            "Bearer " TOKEN, valid_post);
    expect(&r, 503, "3 of the post's 3 alerts not acknowledged by Kafka "
                    "within 2 s; retry");
    CHECK(strcmp(r.retry_after, "1") == 0);
    CHECK(ts_now() - t0 >= 1900 * (TS_SEC / 1000));
    wh_get_stats(w, &st);
    CHECK(st.delivery_timeout == 1 && st.accepted == 0 && st.rejected == 1);
    CHECK(st.waiting == 0);
    wh_free(w);
}

/* A client that hangs up while its post waits breaks nothing: the post
 * is answered (to nobody) when its time is up, and the one beside it as
 * usual. wh_free answers what still waits. ASan: nothing leaks. */
static void test_hung_up(struct event_base *base, kfk_producer *dead)
{
    wh_config cfg = {.token = TOKEN, .ack_timeout_s = 1};
    cs_err err = {{0}};
    webhook *w = wh_start(base, &cfg, dead, &err);
    char ans[64];
    wh_stat st;
    int fd[3];

    REQUIRE(w != NULL);
    fd[0] = raw_post(wh_port(w));
    fd[1] = raw_post(wh_port(w));
    REQUIRE(until_waiting(base, w, 2));
    close(fd[1]);
    REQUIRE(until_waiting(base, w, 0));
    raw_answer(base, fd[0], ans, sizeof ans);
    CHECK(strncmp(ans, "HTTP/1.1 503", 12) == 0);
    wh_get_stats(w, &st);
    CHECK(st.delivery_timeout == 2);
    fd[2] = raw_post(wh_port(w));
    REQUIRE(until_waiting(base, w, 1));
    wh_free(w);
    close(fd[0]);
    close(fd[2]);
}

static void on_drained(void *arg)
{
    resp *r = arg;

    r->done = 1;
    event_base_loopbreak(r->base);
}

/* Stopping: posts that arrive are answered 503 at once; the one waiting
 * gets its answer (503 after its ack timeout) before wh_drain says it is
 * done; asked again, wh_drain is done at once. */
static void test_drain(struct event_base *base, kfk_producer *dead)
{
    wh_config cfg = {.token = TOKEN, .ack_timeout_s = 1};
    cs_err err = {{0}};
    webhook *w = wh_start(base, &cfg, dead, &err);
    struct evhttp_connection *held;
    resp r, h, drained = {.base = base}, again = {.base = base};

    REQUIRE(w != NULL);
    held = start_request(base, wh_port(w), &h, EVHTTP_REQ_POST, "/",
                         "Bearer " TOKEN, valid_post, strlen(valid_post));
    REQUIRE(until_waiting(base, w, 1));
    wh_drain(w, on_drained, &drained);
    CHECK(!drained.done);
    request(base, wh_port(w), &r, EVHTTP_REQ_POST, "/", "Bearer " TOKEN,
            valid_post);
    expect(&r, 503, "stopping");
    CHECK(!drained.done);
    REQUIRE(run_until(base, &drained.done, 5000));
    CHECK(h.done && h.code == 503);
    wh_drain(w, on_drained, &again);
    CHECK(again.done);
    evhttp_connection_free(held);
    wh_free(w);
}

/* The end offsets of cascade.signals, summed over its partitions (a
 * client of its own, apart from what the test looks at). */
static long long signals_end(const char *bootstrap)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char why[256];
    rd_kafka_t *rk;
    int64_t lo, hi;
    long long sum = 0;

    REQUIRE(rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, why,
                              sizeof why) == RD_KAFKA_CONF_OK);
    REQUIRE((rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why)));
    for (int32_t i = 0; i < PARTITIONS; i++) {
        REQUIRE(rd_kafka_query_watermark_offsets(rk, KFK_TOPIC_SIGNALS, i, &lo,
                                                 &hi, 5000) == 0);
        sum += hi;
    }
    rd_kafka_destroy(rk);
    return sum;
}

/* 200 means stored: with a producer that lingers 300 ms before it sends,
 * the answer waits, and when it comes the topic's end has moved by the
 * post's alerts (it came at once, the alerts still lingering). Posts in
 * flight together wait for their own alerts, not one after another. */
static void test_acked(struct event_base *base, const char *bootstrap)
{
    enum { N = 8 };
    kfk_producer_opts po = kfk_producer_defaults(bootstrap);
    cs_err err = {{0}};
    struct evhttp_connection *conn[N];
    kfk_producer *p;
    long long end;
    int64_t t0;
    webhook *w;
    wh_stat st;
    resp r[N];

    po.linger_ms = 300;
    REQUIRE((p = kfk_producer_open(&po, &err)) && !kfk_producer_attach(p, base));
    w = wh_start(base, &(wh_config){.token = TOKEN}, p, &err);
    REQUIRE(w != NULL);
    end = signals_end(bootstrap);
    request(base, wh_port(w), &r[0], EVHTTP_REQ_POST, "/", "Bearer " TOKEN,
            valid_post);
    CHECK_INT(signals_end(bootstrap) - end, 3);
    expect(&r[0], 200, "{\"accepted\":3}");
    t0 = ts_now();
    for (int i = 0; i < N; i++)
        conn[i] = start_request(base, wh_port(w), &r[i], EVHTTP_REQ_POST, "/",
                                "Bearer " TOKEN, valid_post,
                                strlen(valid_post));
    for (int i = 0; i < N; i++) {
        REQUIRE(run_until(base, &r[i].done, 5000));
        CHECK_INT(r[i].code, 200);
        evhttp_connection_free(conn[i]);
    }
    CHECK(ts_now() - t0 < 3 * 300 * (TS_SEC / 1000)); /* 8 x 300 ms if not */
    wh_get_stats(w, &st);
    CHECK(st.accepted == 3 * (N + 1) && st.waiting == 0);
    wh_free(w);
    kfk_producer_free(p);
}

/* ---- file publishing ---------------------------------------------------- */

static void write_capture(char *path)
{
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

    REQUIRE(f != NULL);
    fputs("{\"ts\":\"2026-03-02T08:00:00Z\",\"source\":\"kernel\","
          "\"host\":\"n1\",\"line\":\"NVRM: Xid 79\"}\n", f);
    fputs("\n", f);
    fputs("{\"ts\":1,\"source\":\"kernel\"\n", f);
    fputs("{\"ts\":\"2026-03-02T08:00:01Z\",\"source\":\"kernel\","
          "\"cluster\":\"c9\",\"host\":\"n2\",\"line\":\"x\"}\r\n", f);
    fputs("\xff\xfe{bad\n", f);
    for (int i = 0; i < SIG_MAX_BYTES + 10; i++)
        fputc('x', f);
    fputs("\n{\"ts\":1772438400,\"source\":\"metric\",\"name\":\"m\","
          "\"value\":1}", f); /* last line without a newline */
    REQUIRE(fclose(f) == 0);
}

/* The dead letter for `line`, decoded. */
static json_t *dead_letter(const got *g, int line)
{
    json_t *o;

    for (int i = 0; i < g->n; i++) {
        o = json_loadb(g->val[i], g->len[i], 0, NULL);
        REQUIRE(o != NULL);
        if (json_integer_value(json_object_get(o, "line")) == line)
            return o;
        json_decref(o);
    }
    fprintf(stderr, "no dead letter for line %d\n", line);
    REQUIRE(0);
    return NULL;
}

static const char *field(json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));

    REQUIRE(v != NULL);
    return v;
}

static void check_dead_letters(struct event_base *base, const char *bootstrap,
                               const char *path)
{
    got g;
    json_t *o;

    read_topic(&g, base, bootstrap, "fin-dl", KFK_TOPIC_DEADLETTER, 3);
    o = dead_letter(&g, 3);
    REQUIRE(strcmp(field(o, "source_file"), path) == 0);
    REQUIRE(strstr(field(o, "reason"), "invalid JSON") != NULL);
    REQUIRE(strcmp(field(o, "raw"), "{\"ts\":1,\"source\":\"kernel\"") == 0);
    json_decref(o);
    o = dead_letter(&g, 5); /* invalid UTF-8 kept readable */
    REQUIRE(strcmp(field(o, "raw"), "\xEF\xBF\xBD\xEF\xBF\xBD{bad") == 0);
    json_decref(o);
    o = dead_letter(&g, 6);
    REQUIRE(strstr(field(o, "reason"), "longer than") != NULL);
    REQUIRE(json_string_length(json_object_get(o, "raw")) == 64 * 1024);
    json_decref(o);
    got_free(&g);
}

/* The webhook's three alerts and the file's three signals. */
static void check_file_signals(struct event_base *base, const char *bootstrap)
{
    got g;
    sig s;
    int counts[SRC__COUNT] = {0};
    cs_err err = {{0}};

    read_topic(&g, base, bootstrap, "fin-sig", KFK_TOPIC_SIGNALS, 6);
    for (int i = 0; i < g.n; i++) {
        REQUIRE(sig_parse_msgpack(&s, g.val[i], g.len[i], &err) == 0);
        counts[s.source]++;
        REQUIRE(strcmp(g.key[i], s.cluster) == 0);
        sig_free(&s);
    }
    REQUIRE(counts[SRC_ALERTMANAGER] == 3 && counts[SRC_KERNEL] == 2 &&
          counts[SRC_METRIC] == 1);
    got_free(&g);
}

static void test_filein(struct event_base *base, kfk_producer *p,
                        const char *bootstrap)
{
    char path[256];
    fin_stats st;
    cs_err err = {{0}};

    check_tmp_template(path, sizeof path, "cascade-filein");
    write_capture(path);
    REQUIRE(fin_publish(path, p, &st, &err) == 1);
    REQUIRE(st.lines == 7 && st.published == 3 && st.rejected == 3);
    REQUIRE(fin_publish("/nonexistent/cascade.jsonl", p, &st, &err) == -1);
    REQUIRE(strstr(err.msg, "/nonexistent/cascade.jsonl") != NULL);
    check_dead_letters(base, bootstrap, path);
    check_file_signals(base, bootstrap);
    unlink(path);
}

/* A signal line of exactly `len` bytes (a long app line). */
static void put_signal(FILE *f, size_t len)
{
    const char *head = "{\"ts\":\"2026-03-02T08:00:02Z\",\"source\":\"app\","
                       "\"host\":\"n3\",\"line\":\"";
    size_t pad = len - strlen(head) - 2;

    fputs(head, f);
    for (size_t i = 0; i < pad; i++)
        fputc('y', f);
    fputs("\"}\n", f);
}

/* One limit for a line, derived from Kafka's message limit: a line at it
 * is taken (replay takes it too), one over it is dead-lettered with its
 * line number and the rest of the file goes on. Before, a 1,020,000-byte
 * line passed the line limit (1 MiB), Kafka refused its message, and the
 * run stopped there ("Broker: Message size too large", exit 2) with no
 * line number, dropping the rest. A message over the limit is refused
 * before librdkafka sees it, as one no retry can help. */
static void test_filein_limits(kfk_producer *p)
{
    char path[256];
    fin_stats st;
    cs_err err = {{0}};
    int fd;
    FILE *f;

    check_tmp_template(path, sizeof path, "cascade-limits");
    REQUIRE((fd = mkstemp(path)) >= 0 && (f = fdopen(fd, "w")) != NULL);
    put_signal(f, SIG_MAX_BYTES);
    put_signal(f, 1020000); /* under the old 1 MiB, over Kafka's limit */
    put_signal(f, 100);
    REQUIRE(fclose(f) == 0);
    REQUIRE(fin_publish(path, p, &st, &err) == 1);
    REQUIRE(st.lines == 3 && st.published == 2 && st.rejected == 1);
    unlink(path);
    {
        char *big = xcalloc(1, 999700);
        REQUIRE(kfk_produce(p, KFK_TOPIC_SIGNALS, "k", 1, big, 999700, &err) ==
                KFK_TOO_BIG);
        REQUIRE(strstr(err.msg, "over the 1000000-byte message limit") != NULL);
        free(big);
    }
}

/* ---- connection limit --------------------------------------------------- */

static void test_conn_limit(struct event_base *base, kfk_producer *p)
{
    wh_config cfg = {.token = TOKEN, .max_connections = 1};
    cs_err err = {{0}};
    webhook *w = wh_start(base, &cfg, p, &err);
    struct evhttp_connection *conn;
    int raw, never = 0;
    resp r;

    REQUIRE(w != NULL);
    raw = raw_connect(wh_port(w));
    run_until(base, &never, 300); /* the server accepts it: now full */
    conn = start_request(base, wh_port(w), &r, EVHTTP_REQ_GET, "/healthz",
                         NULL, NULL, 0);
    REQUIRE(!run_until(base, &r.done, 700));
    close(raw);
    REQUIRE(run_until(base, &r.done, 5000));
    REQUIRE(r.code == 200);
    evhttp_connection_free(conn);
    wh_free(w);
}

int main(void)
{
    cs_err err = {{0}};
    struct event_base *base = event_base_new();
    kfk_broker *b = kfk_broker_start(PARTITIONS, &err);
    kfk_producer *p, *dead;
    wh_config cfg = {.token = "", .max_body = MAX_BODY};
    webhook *w;

    /* libevent writes with plain write(): a peer that hangs up must not
     * kill the process (the daemon ignores SIGPIPE the same way). */
    signal(SIGPIPE, SIG_IGN);
    REQUIRE(base && b);
    kfk_producer_opts po = kfk_producer_defaults(kfk_broker_bootstrap(b));
    p = kfk_producer_open(&po, &err);
    REQUIRE(p && kfk_producer_attach(p, base) == 0);
    REQUIRE(wh_start(base, &cfg, p, &err) == NULL);
    REQUIRE(strstr(err.msg, "token") != NULL);
    cfg.token = TOKEN;
    w = wh_start(base, &cfg, p, &err);
    REQUIRE(w != NULL && wh_port(w) > 0);

    test_signal_ids();
    test_messages_same();
    test_routes(base, wh_port(w), w);
    test_conn_limit(base, p);
    po = kfk_producer_defaults("127.0.0.1:1");
    REQUIRE((dead = kfk_producer_open(&po, &err)) != NULL);
    test_unacked(base, dead);
    test_hung_up(base, dead);
    test_drain(base, dead);
    test_queue_full(base, dead); /* fills its queue */
    kfk_producer_free(dead);     /* gives up on the queue after 5 s */
    check_published(base, kfk_broker_bootstrap(b));
    test_filein(base, p, kfk_broker_bootstrap(b));
    test_filein_limits(p);
    test_post_limits(base, p); /* after the topics are read back */
    test_acked(base, kfk_broker_bootstrap(b));
    REQUIRE(kfk_producer_failed(p) == 0);

    wh_free(w);
    kfk_producer_free(p);
    event_base_free(base);
    kfk_broker_stop(b);
    printf("unit.webhook: %s\n", check_failed ? "FAILED" : "ok");
    return check_report(); /* CHECK's failures too, not only REQUIRE's */
}
