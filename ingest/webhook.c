#include "ingest/webhook.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>

#include "core/hash.h"
#include "core/hlisten.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/str.h"
#include "core/signal.h"
#include "core/ts.h"

typedef struct wh_wait wh_wait;

struct webhook {
    hlisten *http;
    kfk_producer *prod;
    struct event_base *base;
    char *token;
    size_t token_len;
    size_t max_alerts, max_output;
    int ack_timeout_s;
    struct timeval ack_tv; /* a common timeout: one queue for all posts */
    wh_wait *waiting;      /* posts whose answer waits for Kafka */
    unsigned long failing; /* posts answered 503 since the last 200 */
    int draining;
    struct event *drain_ev;
    void (*on_drained)(void *);
    void *drained_arg;
    wh_stat st;
};

/* Alertmanager posts a group's alerts together, rarely more than a few
 * hundred. Each signal carries the post's common fields; the signals of a
 * post at max_body with common fields of a few KiB are well under 16 MiB. */
#define WH_DEFAULT_MAX_ALERTS 5000
#define WH_DEFAULT_MAX_OUTPUT (16 * 1024 * 1024)
/* Alertmanager gives a notification, its retries included, the longer of
 * group_interval and 10 s: a post refused after 5 s is retried within it. */
#define WH_DEFAULT_ACK_TIMEOUT_S 5
/* After the last held answer of a drain, a loop turn or so for it to be
 * written before the process stops. */
#define WH_DRAIN_GRACE_MS 100

/* Webhook body fields every signal's payload carries (shared, not
 * copied: wh_post). */
static const char *const wh_top_fields[] = {
    "receiver",          "status",      "groupLabels", "commonLabels",
    "commonAnnotations", "externalURL", "version",     "groupKey",
    "truncatedAlerts"};

/* ---- responses ---------------------------------------------------------- */

static void send_json(struct evhttp_request *req, int code, const char *reason,
                      json_t *o)
{
    char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
    struct evbuffer *out = evhttp_request_get_output_buffer(req);

    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "application/json");
    evbuffer_add_printf(out, "%s\n", txt ? txt : "{}");
    evhttp_send_reply(req, code, reason, NULL);
    free(txt);
    json_decref(o);
}

/* Reasons quote client text, possibly cut mid-character; jansson refuses
 * invalid UTF-8, so such a reason is replaced rather than lost silently. */
static json_t *error_body(const char *msg)
{
    json_t *o = json_pack("{s:s}", "error", msg);

    return o ? o : json_pack("{s:s}", "error", "request rejected");
}

/* On a 503: Alertmanager retries such a post (with its own backoff). */
static void retry_after(struct evhttp_request *req)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After",
                      "1");
}

static void reject(webhook *w, struct evhttp_request *req, int code,
                   const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void reject(webhook *w, struct evhttp_request *req, int code,
                   const char *reason, const char *fmt, ...)
{
    char msg[600], uri[256], *addr = NULL;
    ev_uint16_t port = 0;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    evhttp_connection_get_peer(evhttp_request_get_connection(req), &addr,
                               &port);
    log_warn("webhook", "%s:%u %s %s: %d: %s", addr ? addr : "?",
             (unsigned)port, evhttp_request_get_command(req) == EVHTTP_REQ_GET
                                 ? "GET" : "POST",
             hl_log_uri(req, uri, sizeof uri), code, msg);
    w->st.rejected++;
    send_json(req, code, reason, error_body(msg));
}

/* ---- authentication ----------------------------------------------------- */

static void reject_unauthorized(webhook *w, struct evhttp_request *req)
{
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "WWW-Authenticate", "Bearer");
    reject(w, req, 401, "Unauthorized", "missing or invalid bearer token");
}

static int authorized(const webhook *w, const struct evkeyvalq *headers)
{
    const char *h = evhttp_find_header(headers, "Authorization");

    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return 0;
    for (h += 7; *h == ' '; h++)
        ;
    return str_secret_equal(h, strlen(h), w->token, w->token_len);
}

/* ---- webhook body ------------------------------------------------------- */

static json_t *parse_body(const char *data, size_t len, cs_err *err)
{
    json_error_t jerr;
    json_t *o;

    if (len == 0) {
        cs_err_set(err, "request body is empty");
        return NULL;
    }
    o = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o)
        cs_err_set(err, "invalid JSON at line %d column %d: %s", jerr.line,
                   jerr.column, jerr.text);
    return o;
}

static int check_alert(json_t *a, size_t i, cs_err *err)
{
    json_t *st = json_object_get(a, "status");

    if (!json_is_object(a)) {
        cs_err_set(err, "alerts[%zu] must be an object", i);
        return -1;
    }
    if (!json_is_object(json_object_get(a, "labels"))) {
        cs_err_set(err, "alerts[%zu].labels must be an object", i);
        return -1;
    }
    if (!json_is_string(st) || (strcmp(json_string_value(st), "firing") &&
                                strcmp(json_string_value(st), "resolved"))) {
        cs_err_set(err, "alerts[%zu].status must be \"firing\" or \"resolved\"",
                   i);
        return -1;
    }
    return 0;
}

static int check_webhook(json_t *body, cs_err *err)
{
    json_t *ver = json_object_get(body, "version"), *alerts, *a;
    size_t i;

    if (!json_is_object(body)) {
        cs_err_set(err, "body must be a JSON object (an Alertmanager webhook)");
        return -1;
    }
    if (!json_is_string(ver) || strcmp(json_string_value(ver), "4") != 0) {
        cs_err_set(err, "field 'version' must be \"4\" (Alertmanager webhook "
                        "version 4)%s%.20s%s",
                   json_is_string(ver) ? ", got \"" : "",
                   json_is_string(ver) ? json_string_value(ver) : "",
                   json_is_string(ver) ? "\"" : "");
        return -1;
    }
    alerts = json_object_get(body, "alerts");
    if (!json_is_array(alerts)) {
        cs_err_set(err, "field 'alerts' must be an array");
        return -1;
    }
    json_array_foreach(alerts, i, a) {
        if (check_alert(a, i, err))
            return -1;
    }
    return 0;
}

/* ---- alert -> signal ---------------------------------------------------- */

static const char *label(json_t *labels, const char *key)
{
    json_t *v = json_object_get(labels, key);

    return json_is_string(v) && json_string_length(v) ? json_string_value(v)
                                                      : NULL;
}

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

/* Prometheus instance labels are host:port, [v6addr]:port, or a bare
 * host; a bare IPv6 address keeps its colons. */
static json_t *instance_host(const char *inst)
{
    const char *colon = strrchr(inst, ':'), *end;

    if (inst[0] == '[' && (end = strchr(inst, ']')) && end > inst + 1)
        return json_stringn(inst + 1, (size_t)(end - inst - 1));
    if (colon && colon > inst && strchr(inst, ':') == colon &&
        all_digits(colon + 1))
        return json_stringn(inst, (size_t)(colon - inst));
    return json_string(inst);
}

static json_t *alert_host(json_t *labels)
{
    static const char *const keys[] = {"Hostname", "hostname", "node"};
    const char *v;

    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if ((v = label(labels, keys[i])))
            return json_string(v);
    v = label(labels, "instance");
    return v ? instance_host(v) : NULL;
}

/* Firing alerts happen at startsAt, resolved ones at endsAt. Alertmanager
 * writes 0001-01-01T00:00:00Z for "unset", which the parser refuses (before
 * 1970), so that falls back to now like any unparsable time. */
static json_t *alert_ts(json_t *alert)
{
    const char *st = json_string_value(json_object_get(alert, "status"));
    json_t *v = json_object_get(
        alert, strcmp(st, "resolved") == 0 ? "endsAt" : "startsAt");
    int64_t ts;
    char buf[32];

    if (json_is_string(v) && ts_parse_rfc3339(json_string_value(v), &ts) == 0)
        return json_incref(v);
    ts_format(ts_now(), buf, sizeof buf);
    return json_string(buf);
}

/* ---- one post ----------------------------------------------------------- */

/* A post on its way to signals. Every alert's signal carries the post's
 * common fields (its receiver, the group's labels and annotations...) as
 * Alertmanager sent them: they are picked out once and shared by
 * reference, not copied, and dumped and hashed once. An alert's signal is
 * named by the hash of the common fields, the alert and its time, so that
 * no signal is dumped whole to be named (a 500 KB commonAnnotations was
 * dumped again for each of 11,000 alerts). What the signals take on the
 * wire, each alert with the common fields, is known before any is built. */
typedef struct wh_post {
    json_t *body, *alerts, *common;
    size_t n;      /* alerts */
    uint64_t *ids; /* the hash of the common fields and each alert */
    size_t bytes;  /* what the signals take, as JSON */
} wh_post;

static void post_open(wh_post *p, json_t *body)
{
    json_t *v;

    memset(p, 0, sizeof *p);
    p->body = body;
    p->alerts = json_object_get(body, "alerts");
    p->n = json_array_size(p->alerts);
    p->common = json_object();
    for (size_t i = 0; i < sizeof wh_top_fields / sizeof *wh_top_fields; i++)
        if ((v = json_object_get(body, wh_top_fields[i])))
            json_object_set(p->common, wh_top_fields[i], v);
}

static void post_close(wh_post *p)
{
    json_decref(p->common);
    free(p->ids);
}

/* The length of v's canonical dump, its hash continuing from h in *h. */
static int dump_hash(json_t *v, uint64_t *h, size_t *len)
{
    char *dump = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);

    if (!dump)
        return -1;
    *len = strlen(dump);
    *h = hash_fnv1a(*h, dump, *len);
    free(dump);
    return 0;
}

/* Work in proportion to the body only: one dump of the common fields, one
 * of each alert. */
static int post_measure(wh_post *p, cs_err *err)
{
    uint64_t common = HASH_FNV_SEED;
    size_t clen, len;

    p->ids = xcalloc(p->n ? p->n : 1, sizeof *p->ids);
    if (dump_hash(p->common, &common, &clen))
        goto oom;
    for (size_t i = 0; i < p->n; i++) {
        p->ids[i] = common;
        if (dump_hash(json_array_get(p->alerts, i), &p->ids[i], &len))
            goto oom;
        p->bytes += clen + len;
    }
    return 0;
oom:
    cs_err_set(err, "out of memory");
    return -1;
}

static json_t *alert_payload(const wh_post *p, json_t *alert)
{
    json_t *o = json_copy(p->common); /* shallow: the values are shared */

    if (o)
        json_object_set_new(o, "alerts", json_pack("[O]", alert));
    return o;
}

static json_t *signal_id(uint64_t h, json_t *ts)
{
    const char *t = json_string_value(ts);
    char hex[17];

    h = hash_fnv1a(h, t, strlen(t));
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
    return json_string(hex);
}

static json_t *alert_signal(const wh_post *p, size_t i)
{
    json_t *alert = json_array_get(p->alerts, i);
    json_t *labels = json_object_get(alert, "labels");
    const char *cluster = label(labels, "cluster");
    json_t *host = alert_host(labels), *ts = alert_ts(alert);
    json_t *o = json_pack("{s:O, s:o, s:s, s:s, s:o}", "ts", ts, "id",
                          signal_id(p->ids[i], ts), "source", "alertmanager",
                          "cluster", cluster ? cluster : "default", "payload",
                          alert_payload(p, alert));

    if (o && host)
        json_object_set(o, "host", host);
    json_decref(host);
    json_decref(ts);
    return o;
}

/* Alert i's signal into s; err names the alert when it cannot be built. */
static int alert_sig(const wh_post *p, size_t i, sig *s, cs_err *err)
{
    json_t *o = alert_signal(p, i);

    if (o && sig_adopt_json(s, o, err) == 0) /* o is the signal's */
        return 0;
    if (!o)
        cs_err_set(err, "cannot build a signal");
    cs_err_prefix(err, "alerts[%zu]: ", i);
    return -1;
}

/* All or nothing: a post with one bad alert publishes none of them. */
static sig *post_signals(const wh_post *p, cs_err *err)
{
    sig *s = xcalloc(p->n ? p->n : 1, sizeof *s);

    for (size_t i = 0; i < p->n; i++)
        if (alert_sig(p, i, &s[i], err)) {
            wh_free_signals(s, i);
            return NULL;
        }
    return s;
}

/* A signal as its Kafka message: the msgpack and the key (its cluster). */
typedef struct wh_msg {
    char *val, *key;
    size_t len;
} wh_msg;

static void msgs_free(wh_msg *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(m[i].val);
        free(m[i].key);
    }
    free(m);
}

/* The server's way: each signal is encoded as soon as it is built and
 * then let go, so that a post holds its messages and nothing more (the
 * producer takes them over, uncopied). All or nothing as above. */
static wh_msg *post_messages(const wh_post *p, cs_err *err)
{
    wh_msg *m = xcalloc(p->n ? p->n : 1, sizeof *m);
    sig s;

    for (size_t i = 0; i < p->n; i++) {
        if (alert_sig(p, i, &s, err)) {
            msgs_free(m, i);
            return NULL;
        }
        m[i].key = xstrdup(s.cluster);
        if (sig_to_msgpack(&s, &m[i].val, &m[i].len)) {
            cs_err_set(err, "alerts[%zu]: cannot encode the signal", i);
            sig_free(&s);
            msgs_free(m, i + 1);
            return NULL;
        }
        sig_free(&s);
        /* msgpack's buffer starts at 8 KiB: held by the producer until
         * delivered, its unused tail would outweigh a small signal */
        m[i].val = xrealloc(m[i].val, m[i].len ? m[i].len : 1);
    }
    return m;
}

void wh_free_signals(sig *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sig_free(&s[i]);
    free(s);
}

sig *wh_signals(const char *body, size_t len, size_t *n, cs_err *err)
{
    json_t *o = parse_body(body, len, err);
    sig *s = NULL;
    wh_post p;

    *n = 0;
    if (!o || check_webhook(o, err)) {
        json_decref(o);
        return NULL;
    }
    post_open(&p, o);
    if (post_measure(&p, err) == 0 && (s = post_signals(&p, err)))
        *n = p.n;
    post_close(&p);
    json_decref(o);
    return s;
}

/* Returns KFK_OK, KFK_QUEUE_FULL, KFK_TOO_BIG or -1; t counts what was
 * enqueued. Alerts already enqueued stay published: Alertmanager retries
 * the whole post, and a signal's id comes from its content, so the
 * repeats are harmless downstream (the correlator counts an id once). A
 * signal over Kafka's message limit refuses the post before any of it
 * goes: that answer is a 413, which Alertmanager does not retry (a 500,
 * as it was, it retried for ever). */
static int publish(webhook *w, wh_msg *m, size_t n, kfk_tracker *t,
                   cs_err *err)
{
    int rc = KFK_OK;

    for (size_t i = 0; i < n; i++)
        if (!kfk_fits(strlen(m[i].key), m[i].len)) {
            cs_err_set(err, "alert %zu of %zu makes a signal of %zu bytes, "
                       "over Kafka's %d-byte message limit", i + 1, n,
                       m[i].len, KFK_MESSAGE_MAX_BYTES);
            return KFK_TOO_BIG;
        }
    for (size_t i = 0; i < n && rc == KFK_OK; i++) {
        rc = kfk_produce_take(w->prod, KFK_TOPIC_SIGNALS, m[i].key,
                              strlen(m[i].key), m[i].val, m[i].len, t, err);
        m[i].val = NULL; /* taken, or freed */
    }
    return rc;
}

/* ---- waiting for Kafka ------------------------------------------------- */

/* A post is answered 200 only once Kafka has acknowledged every one of
 * its alerts: a webhook killed after its 200 has lost nothing that
 * Alertmanager was told was taken. The producer is idempotent
 * (enable.idempotence in core/kafka.c), which makes librdkafka ask for
 * acks=all: a delivery report means every in-sync replica has the
 * message. Each post counts its own messages (a tracker of its own), so
 * posts in flight at once wait for their own acknowledgements only. */
struct wh_wait {
    webhook *w;
    struct evhttp_request *req; /* answered once, its client still there
                                 * or not: evhttp frees it either way */
    kfk_tracker *trk;
    struct event *timer;
    size_t n; /* alerts */
    wh_wait *prev, *next;
};

static void send_accepted(webhook *w, struct evhttp_request *req, size_t n)
{
    if (w->failing) {
        log_info("webhook", "Kafka acknowledges posts again, after %lu "
                 "answered 503", w->failing);
        w->failing = 0;
    }
    w->st.accepted += n;
    send_json(req, 200, "OK", json_pack("{s:I}", "accepted", (json_int_t)n));
}

/* 503 with Retry-After: Alertmanager retries the post. During an outage
 * every post gets one; the first is logged with its reason, then one in
 * a thousand (no log flood), and the first 200 after them says how many
 * there were. */
static void send_unavailable(webhook *w, struct evhttp_request *req,
                             const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void send_unavailable(webhook *w, struct evhttp_request *req,
                             const char *fmt, ...)
{
    char msg[300];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (w->failing++ % 1000 == 0)
        log_warn("webhook", "post answered 503: %s (%lu so far since the "
                 "last 200)", msg, w->failing);
    w->st.rejected++;
    retry_after(req);
    send_json(req, 503, "Service Unavailable", error_body(msg));
}

/* wh_drain's callback, once no post waits (and its answer had a moment
 * to go out). */
static void on_drain_grace(evutil_socket_t fd, short what, void *arg)
{
    webhook *w = arg;
    void (*fn)(void *) = w->on_drained;

    (void)fd;
    (void)what;
    w->on_drained = NULL;
    if (fn)
        fn(w->drained_arg);
}

static void drain_check(webhook *w)
{
    struct timeval grace = {0, WH_DRAIN_GRACE_MS * 1000};

    if (w->on_drained && !w->waiting)
        evtimer_add(w->drain_ev, &grace);
}

static void wait_end(wh_wait *a)
{
    webhook *w = a->w;

    if (a->prev)
        a->prev->next = a->next;
    else
        w->waiting = a->next;
    if (a->next)
        a->next->prev = a->prev;
    w->st.waiting--;
    event_free(a->timer);
    kfk_tracker_release(a->trk); /* later reports no longer call us */
    free(a);
    drain_check(w);
}

/* The last of the post's alerts was reported, delivered or not. */
static void on_acked(void *arg)
{
    wh_wait *a = arg;
    unsigned long failed = kfk_tracker_take_failed(a->trk);

    if (failed) {
        a->w->st.delivery_failed++;
        send_unavailable(a->w, a->req, "Kafka refused %lu of the post's %zu "
                         "alerts (the kafka log says why); retry", failed,
                         a->n);
    } else {
        send_accepted(a->w, a->req, a->n);
    }
    wait_end(a);
}

/* What is still in flight may yet be delivered: a retried post then
 * repeats those signals, which the correlator counts once (at least
 * once, never lost). */
static void on_ack_timeout(evutil_socket_t fd, short what, void *arg)
{
    wh_wait *a = arg;

    (void)fd;
    (void)what;
    a->w->st.delivery_timeout++;
    send_unavailable(a->w, a->req, "%lu of the post's %zu alerts not "
                     "acknowledged by Kafka within %d s; retry",
                     kfk_tracker_pending(a->trk), a->n, a->w->ack_timeout_s);
    wait_end(a);
}

/* Holds req's answer until t's messages are all reported or the ack
 * timeout passes; takes t. */
static void wait_for_acks(webhook *w, struct evhttp_request *req,
                          kfk_tracker *t, size_t n)
{
    wh_wait *a = xcalloc(1, sizeof *a);

    *a = (wh_wait){.w = w, .req = req, .trk = t, .n = n, .next = w->waiting};
    a->timer = cs_oom(evtimer_new(w->base, on_ack_timeout, a));
    evtimer_add(a->timer, &w->ack_tv);
    kfk_tracker_on_done(t, on_acked, a);
    if (w->waiting)
        w->waiting->prev = a;
    w->waiting = a;
    w->st.waiting++;
}

/* ---- routes ------------------------------------------------------------- */

/* Takes t. */
static void answer_publish(webhook *w, struct evhttp_request *req, int rc,
                           size_t n, kfk_tracker *t, const cs_err *err)
{
    if (rc == KFK_OK && kfk_tracker_pending(t)) {
        wait_for_acks(w, req, t, n);
        return;
    }
    kfk_tracker_release(t); /* what was enqueued may still be delivered */
    if (rc == KFK_QUEUE_FULL) {
        w->st.delivery_failed++;
        send_unavailable(w, req, "signal queue is full; retry later");
    } else if (rc == KFK_TOO_BIG) {
        w->st.over_message++;
        reject(w, req, 413, "Payload Too Large", "%s", err->msg);
    } else if (rc != KFK_OK) {
        reject(w, req, 500, "Internal Server Error", "%s", err->msg);
    } else {
        send_accepted(w, req, n); /* no alerts: nothing to wait for */
    }
}

/* The limits on what one post makes: 413 naming the limit, else 0. */
static int over_limits(webhook *w, struct evhttp_request *req, wh_post *p)
{
    cs_err err = {{0}};

    if (p->n > w->max_alerts) {
        w->st.over_alerts++;
        reject(w, req, 413, "Payload Too Large",
               "the post has %zu alerts, over webhook.max_alerts (%zu): "
               "set max_alerts in Alertmanager's webhook_config", p->n,
               w->max_alerts);
        return 413;
    }
    if (post_measure(p, &err)) {
        reject(w, req, 500, "Internal Server Error", "%s", err.msg);
        return 500;
    }
    if (p->bytes > w->max_output) {
        w->st.over_output++;
        reject(w, req, 413, "Payload Too Large",
               "the post's %zu alerts make %zu bytes of signals (each with "
               "the common fields), over webhook.max_output (%zu)", p->n,
               p->bytes, w->max_output);
        return 413;
    }
    return 0;
}

static void serve_post(webhook *w, struct evhttp_request *req, json_t *body)
{
    cs_err err = {{0}};
    kfk_tracker *t;
    wh_post p;
    wh_msg *m;

    post_open(&p, body);
    if (over_limits(w, req, &p))
        goto out;
    if (!(m = post_messages(&p, &err))) {
        reject(w, req, 400, "Bad Request", "%s", err.msg);
        goto out;
    }
    t = cs_oom(kfk_tracker_new());
    answer_publish(w, req, publish(w, m, p.n, t, &err), p.n, t, &err);
    msgs_free(m, p.n);
out:
    post_close(&p);
}

static void handle_alerts(webhook *w, struct evhttp_request *req)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    cs_err err = {{0}};
    json_t *body;

    /* judged at the head already (wh_headers); checked again whole */
    if (!authorized(w, evhttp_request_get_input_headers(req))) {
        reject_unauthorized(w, req);
        return;
    }
    if (w->draining) { /* told once by wh_drain, not once a post */
        w->st.rejected++;
        retry_after(req);
        send_json(req, 503, "Service Unavailable",
                  error_body("the webhook is stopping; retry"));
        return;
    }
    body = parse_body(len ? (const char *)evbuffer_pullup(in, -1) : "", len,
                      &err);
    if (!body || check_webhook(body, &err))
        reject(w, req, 400, "Bad Request", "%s", err.msg);
    else
        serve_post(w, req, body);
    json_decref(body);
}

static int alerts_path(const char *path)
{
    return strcmp(path, "/api/v1/alerts") == 0 || strcmp(path, "/") == 0 ||
           strcmp(path, "/webhook") == 0;
}

/* A post of alerts, and any request with a body, needs the token before
 * its body is read: without it the body is never read. */
static int wh_headers(const hl_head *head, void *arg)
{
    const webhook *w = arg;

    if (!head->has_body &&
        (strcmp(head->method, "POST") || !alerts_path(head->path)))
        return 0;
    return authorized(w, head->headers) ? 0 : 401;
}

static void wh_refused(struct evhttp_request *req, int code, const char *why,
                       void *arg)
{
    webhook *w = arg;

    if (code == 401)
        reject_unauthorized(w, req);
    else
        reject(w, req, code,
               code == 431 ? "Request Header Fields Too Large" : NULL, "%s",
               why ? why : "request refused");
}

static void wh_request(struct evhttp_request *req, void *arg)
{
    webhook *w = arg;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);

    if (path && strcmp(path, "/healthz") == 0 && cmd == EVHTTP_REQ_GET) {
        evbuffer_add(evhttp_request_get_output_buffer(req), "ok\n", 3);
        evhttp_send_reply(req, 200, "OK", NULL);
    } else if (path && alerts_path(path) && cmd == EVHTTP_REQ_POST) {
        handle_alerts(w, req);
    } else if (path && (alerts_path(path) || strcmp(path, "/healthz") == 0)) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
                          strcmp(path, "/healthz") ? "POST" : "GET");
        reject(w, req, 405, "Method Not Allowed", "method not allowed here");
    } else {
        reject(w, req, 404, "Not Found", "no such path");
    }
}

/* ---- lifecycle ---------------------------------------------------------- */

/* What waiting for Kafka needs: the ack timeout and the drain's timer. */
static void waits_init(webhook *w, struct event_base *base, int ack_timeout_s)
{
    const struct timeval *common;

    w->base = base;
    w->ack_timeout_s = ack_timeout_s > 0 ? ack_timeout_s
                                         : WH_DEFAULT_ACK_TIMEOUT_S;
    w->ack_tv = (struct timeval){w->ack_timeout_s, 0};
    /* every post waits as long: a queue in order instead of a heap (NULL
     * past libevent's 256 such durations on one loop) */
    if ((common = event_base_init_common_timeout(base, &w->ack_tv)))
        w->ack_tv = *common;
    w->drain_ev = cs_oom(evtimer_new(base, on_drain_grace, w));
}

webhook *wh_start(struct event_base *base, const wh_config *cfg,
                  kfk_producer *prod, cs_err *err)
{
    webhook *w;

    if (!cfg->token || !*cfg->token) {
        cs_err_set(err, "webhook: a bearer token is required (Alertmanager's "
                        "http_config.authorization.credentials)");
        return NULL;
    }
    w = xcalloc(1, sizeof *w);
    w->prod = prod;
    waits_init(w, base, cfg->ack_timeout_s);
    w->max_alerts = cfg->max_alerts ? cfg->max_alerts : WH_DEFAULT_MAX_ALERTS;
    w->max_output = cfg->max_output ? cfg->max_output : WH_DEFAULT_MAX_OUTPUT;
    w->token_len = strlen(cfg->token);
    w->token = xstrdup(cfg->token);
    /* wh_config's zero fields mean the listener's own defaults. */
    w->http = hl_start(base, &(hl_opts){.name = "webhook",
                                        .listen_addr = cfg->listen_addr,
                                        .port = cfg->port,
                                        .max_body = cfg->max_body,
                                        .max_headers = cfg->max_headers,
                                        .max_connections = cfg->max_connections,
                                        .timeout_s = cfg->timeout_s,
                                        .request_deadline_s =
                                            cfg->request_timeout_s,
                                        .on_request = wh_request,
                                        .on_headers = wh_headers,
                                        .on_refused = wh_refused,
                                        .arg = w},
                       err);
    if (!w->http) {
        wh_free(w);
        return NULL;
    }
    log_info("webhook", "listening on port %d", wh_port(w));
    return w;
}

int wh_port(const webhook *w)
{
    return hl_port(w->http);
}

void wh_get_stats(const webhook *w, wh_stat *st)
{
    *st = w->st;
}

void wh_set_token(webhook *w, const char *token)
{
    char *t;

    if (!token || !*token || !(t = strdup(token)))
        return;
    explicit_bzero(w->token, w->token_len);
    free(w->token);
    w->token = t;
    w->token_len = strlen(t);
}

void wh_drain(webhook *w, void (*done)(void *), void *arg)
{
    w->on_drained = done;
    w->drained_arg = arg;
    if (w->draining) { /* asked again: stop waiting */
        evtimer_del(w->drain_ev);
        on_drain_grace(-1, 0, w);
        return;
    }
    w->draining = 1;
    log_info("webhook", "stopping: %lu posts await Kafka's acknowledgement "
             "(%d s at most); new ones are answered 503", w->st.waiting,
             w->ack_timeout_s);
    drain_check(w);
}

void wh_free(webhook *w)
{
    if (!w)
        return;
    /* Posts still waiting (a second stop signal): 503, which goes out only
     * if the loop runs again; a hung-up client's request is freed by it,
     * the others with their connections. */
    while (w->waiting) {
        send_unavailable(w, w->waiting->req, "the webhook stopped; retry");
        wait_end(w->waiting);
    }
    if (w->http)
        log_info("webhook", "%lu alerts accepted; %lu requests refused, of "
                 "which %lu posts for a failed delivery and %lu not "
                 "acknowledged in time", w->st.accepted, w->st.rejected,
                 w->st.delivery_failed, w->st.delivery_timeout);
    if (w->drain_ev)
        event_free(w->drain_ev);
    hl_free(w->http);
    if (w->token) {
        explicit_bzero(w->token, w->token_len);
        free(w->token);
    }
    free(w);
}
