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
#include "core/jcanon.h"
#include "core/jmp.h"
#include "core/jw.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/str.h"
#include "core/signal.h"
#include "core/ts.h"
#include "ingest/pubwait.h"

struct webhook {
    hlisten *http;
    kfk_producer *prod;
    char *token;
    size_t token_len;
    size_t max_alerts, max_output;
    pubwait *pw;
    unsigned long rejected; /* answered with an error by this module */
    unsigned long over_alerts, over_output, over_message;
};

/* Alertmanager posts a group's alerts together, rarely more than a few
 * hundred. Each signal carries the post's common fields; the signals of a
 * post at max_body with common fields of a few KiB are well under 16 MiB. */
#define WH_DEFAULT_MAX_ALERTS 5000
#define WH_DEFAULT_MAX_OUTPUT (16 * 1024 * 1024)
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
    w->rejected++;
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
    return hl_bearer_ok(headers, w->token, w->token_len);
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

static json_t *alert_host(json_t *labels)
{
    static const char *const keys[] = {"Hostname", "hostname", "node"};
    const char *v;
    size_t len;

    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if ((v = label(labels, keys[i])))
            return json_string(v);
    if (!(v = label(labels, "instance")))
        return NULL;
    v = str_instance_host(v, &len);
    return json_stringn(v, len);
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
    jw canon;      /* each one's canonical text, in turn */
} wh_post;

static void post_open(wh_post *p, json_t *body)
{
    json_t *v;

    memset(p, 0, sizeof *p);
    p->body = body;
    p->alerts = json_object_get(body, "alerts");
    p->n = json_array_size(p->alerts);
    p->common = json_object();
    jw_init(&p->canon);
    for (size_t i = 0; i < sizeof wh_top_fields / sizeof *wh_top_fields; i++)
        if ((v = json_object_get(body, wh_top_fields[i])))
            json_object_set(p->common, wh_top_fields[i], v);
}

static void post_close(wh_post *p)
{
    json_decref(p->common);
    free(p->ids);
    free(jw_take(&p->canon));
}

/* The length of v's canonical dump (JSON_COMPACT | JSON_SORT_KEYS), its
 * hash continuing from h in *h. Written into the post's reused buffer
 * (core/jcanon.h): json_dumps, a buffer and a key sort per alert, was a
 * fifth of the receiver's time. The text and so the ids are the same. */
static void dump_hash(wh_post *p, json_t *v, uint64_t *h, size_t *len)
{
    const char *t;

    jw_clear(&p->canon);
    jcanon_write(&p->canon, v);
    t = jw_text(&p->canon, len);
    *h = hash_fnv1a(*h, t, *len);
}

/* Work in proportion to the body only: one dump of the common fields, one
 * of each alert. */
static void post_measure(wh_post *p)
{
    uint64_t common = HASH_FNV_SEED;
    size_t clen, len;

    p->ids = xcalloc(p->n ? p->n : 1, sizeof *p->ids);
    dump_hash(p, p->common, &common, &clen);
    for (size_t i = 0; i < p->n; i++) {
        p->ids[i] = common;
        dump_hash(p, json_array_get(p->alerts, i), &p->ids[i], &len);
        p->bytes += clen + len;
    }
}

static json_t *alert_payload(const wh_post *p, json_t *alert)
{
    json_t *o = json_copy(p->common); /* shallow: the values are shared */

    if (o)
        json_object_set_new(o, "alerts", json_pack("[O]", alert));
    return o;
}

/* The signal's id: the alert's hash continued with its time. */
static void id_hex(uint64_t h, json_t *ts, char hex[17])
{
    const char *t = json_string_value(ts);

    h = hash_fnv1a(h, t, strlen(t));
    snprintf(hex, 17, "%016llx", (unsigned long long)h);
}

static json_t *signal_id(uint64_t h, json_t *ts)
{
    char hex[17];

    id_hex(h, ts, hex);
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

static void pack_text(msgpack_packer *pk, const char *t)
{
    size_t n = strlen(t);

    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, t, n);
}

/* The common fields as msgpack map entries, without the map's header:
 * packed once, copied into every alert's payload. */
static void pack_common(const wh_post *p, msgpack_sbuffer *sb)
{
    msgpack_packer pk;
    const char *k;
    json_t *v;

    msgpack_sbuffer_init(sb);
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    json_object_foreach(p->common, k, v) {
        pack_text(&pk, k);
        jmp_pack(&pk, v);
    }
}

/* Alert i's signal as msgpack, written directly: byte for byte what
 * sig_to_msgpack writes for alert_signal's object (ts, id, source,
 * cluster, payload: the common fields then "alerts": [the alert], host),
 * which check_webhook's checks make a valid signal. Building that object,
 * normalising it and packing the common fields again for every alert
 * were a fifth of the receiver's time. */
static void alert_message(const wh_post *p, const msgpack_sbuffer *common,
                          size_t i, pw_msg *m)
{
    json_t *alert = json_array_get(p->alerts, i);
    json_t *labels = json_object_get(alert, "labels");
    const char *cluster = label(labels, "cluster");
    json_t *host = alert_host(labels), *ts = alert_ts(alert);
    char id[17];
    msgpack_sbuffer sb;
    msgpack_packer pk;

    cluster = cluster ? cluster : "default";
    id_hex(p->ids[i], ts, id);
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, host ? 6 : 5);
    pack_text(&pk, "ts");
    pack_text(&pk, json_string_value(ts));
    pack_text(&pk, "id");
    pack_text(&pk, id);
    pack_text(&pk, "source");
    pack_text(&pk, "alertmanager");
    pack_text(&pk, "cluster");
    pack_text(&pk, cluster);
    pack_text(&pk, "payload");
    msgpack_pack_map(&pk, json_object_size(p->common) + 1);
    msgpack_sbuffer_write(&sb, common->data, common->size);
    pack_text(&pk, "alerts");
    msgpack_pack_array(&pk, 1);
    jmp_pack(&pk, alert);
    if (host) {
        pack_text(&pk, "host");
        pack_text(&pk, json_string_value(host));
    }
    m->key = xstrdup(cluster);
    /* msgpack's buffer starts at 8 KiB: held by the producer until
     * delivered, its unused tail would outweigh a small signal */
    m->val = xrealloc(sb.data, sb.size ? sb.size : 1);
    m->len = sb.size;
    json_decref(host);
    json_decref(ts);
}

/* The server's way: each signal is encoded as it is made, so that a post
 * holds its messages and nothing more (the producer takes them over,
 * uncopied). check_webhook passed, so every alert makes one. */
static pw_msg *post_messages(const wh_post *p)
{
    pw_msg *m = xcalloc(p->n ? p->n : 1, sizeof *m);
    msgpack_sbuffer common;

    pack_common(p, &common);
    for (size_t i = 0; i < p->n; i++)
        alert_message(p, &common, i, &m[i]);
    msgpack_sbuffer_destroy(&common);
    return m;
}

/* A body parsed, checked and measured into p (post_close and
 * json_decref of the body after); -1 with err set when refused. */
static int post_load(const char *body, size_t len, wh_post *p, cs_err *err)
{
    json_t *o = parse_body(body, len, err);

    if (!o || check_webhook(o, err)) {
        json_decref(o);
        return -1;
    }
    post_open(p, o);
    post_measure(p);
    return 0;
}

pw_msg *wh_messages(const char *body, size_t len, size_t *n, cs_err *err)
{
    pw_msg *m;
    wh_post p;

    *n = 0;
    if (post_load(body, len, &p, err))
        return NULL;
    m = post_messages(&p);
    *n = p.n;
    post_close(&p);
    json_decref(p.body);
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
    sig *s;
    wh_post p;

    *n = 0;
    if (post_load(body, len, &p, err))
        return NULL;
    if ((s = post_signals(&p, err)))
        *n = p.n;
    post_close(&p);
    json_decref(p.body);
    return s;
}

/* ---- routes ------------------------------------------------------------- */

/* The limits on what one post makes: 413 naming the limit, else 0. */
static int over_limits(webhook *w, struct evhttp_request *req, wh_post *p)
{
    if (p->n > w->max_alerts) {
        w->over_alerts++;
        reject(w, req, 413, "Payload Too Large",
               "the post has %zu alerts, over webhook.max_alerts (%zu): "
               "set max_alerts in Alertmanager's webhook_config", p->n,
               w->max_alerts);
        return 413;
    }
    post_measure(p);
    if (p->bytes > w->max_output) {
        w->over_output++;
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
    pw_msg *m;
    int rc;

    post_open(&p, body);
    if (over_limits(w, req, &p))
        goto out;
    m = post_messages(&p);
    t = cs_oom(kfk_tracker_new());
    rc = pw_publish(w->prod, m, p.n, "alert", t, &err);
    if (rc == KFK_TOO_BIG)
        w->over_message++;
    rc = pw_answer(w->pw, req, rc, p.n, t, NULL);
    if (rc == KFK_TOO_BIG)
        reject(w, req, 413, "Payload Too Large", "%s", err.msg);
    else if (rc)
        reject(w, req, 500, "Internal Server Error", "%s", err.msg);
    pw_msgs_free(m, p.n);
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
    if (pw_draining(w->pw)) { /* told once by wh_drain, not once a post */
        pw_unavailable(w->pw, req, "the webhook is stopping; retry");
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

static void wh_accepted(struct evhttp_request *req, size_t n,
                        const char *note, void *arg)
{
    (void)note;
    (void)arg;
    send_json(req, 200, "OK", json_pack("{s:I}", "accepted", (json_int_t)n));
}

static void wh_unavailable(struct evhttp_request *req, const char *msg,
                           void *arg)
{
    (void)arg;
    send_json(req, 503, "Service Unavailable", error_body(msg));
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
    w->pw = pw_new(base, cfg->ack_timeout_s,
                   &(pw_hooks){.name = "webhook", .request = "post",
                               .what = "alerts",
                               .accepted = wh_accepted,
                               .unavailable = wh_unavailable, .arg = w});
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
    pw_stat p;

    pw_get_stats(w->pw, &p);
    *st = (wh_stat){.accepted = p.accepted,
                    .rejected = w->rejected + p.unavailable,
                    .over_alerts = w->over_alerts,
                    .over_output = w->over_output,
                    .over_message = w->over_message,
                    .delivery_failed = p.delivery_failed,
                    .delivery_timeout = p.delivery_timeout,
                    .waiting = p.waiting};
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
    pw_drain(w->pw, done, arg);
}

void wh_free(webhook *w)
{
    wh_stat st;

    if (!w)
        return;
    if (w->pw && w->http) {
        wh_get_stats(w, &st);
        log_info("webhook", "%lu alerts accepted; %lu requests refused, of "
                 "which %lu posts for a failed delivery and %lu not "
                 "acknowledged in time", st.accepted, st.rejected,
                 st.delivery_failed, st.delivery_timeout);
    }
    /* posts still waiting (a second stop signal) are answered 503 */
    pw_free(w->pw);
    hl_free(w->http);
    if (w->token) {
        explicit_bzero(w->token, w->token_len);
        free(w->token);
    }
    free(w);
}

/* Declared once: wh_metrics writes them from wh_stat. */
static const mx_family WH_MX[] = {
    {"cascade_webhook_alerts_accepted_total", MX_COUNTER,
     "Alerts published to cascade.signals by posts answered 200.", NULL},
    {"cascade_webhook_posts_refused_total", MX_COUNTER,
     "Posts answered with an error, by reason (other: malformed, "
     "unauthorized, wrong method or path).", "reason"},
    {"cascade_webhook_posts_waiting", MX_GAUGE,
     "Posts whose answer waits for Kafka's acknowledgement now.", NULL},
    {"cascade_webhook_kafka_up", MX_GAUGE,
     "1 while the receiver's producer has a broker connection up.", NULL},
};

int wh_ready(const webhook *w, char *why, size_t len)
{
    return kfk_producer_ready(w->prod, why, len);
}

void wh_metrics(const webhook *w, mx_out *o)
{
    wh_stat st;
    static const char *const reasons[] = {"over_alerts", "over_output",
                                          "over_message", "delivery_failed",
                                          "delivery_timeout", "other"};
    unsigned long n[6];

    wh_get_stats(w, &st);
    n[0] = st.over_alerts;
    n[1] = st.over_output;
    n[2] = st.over_message;
    n[3] = st.delivery_failed;
    n[4] = st.delivery_timeout;
    /* w->rejected counts this module's own refusals, the three above
     * among them; the delivery failures are the publisher's */
    n[5] = w->rejected - st.over_alerts - st.over_output - st.over_message;
    mx_single(o, &WH_MX[0], (double)st.accepted);
    mx_family_begin(o, &WH_MX[1]);
    for (int i = 0; i < 6; i++) {
        const char *v[] = {reasons[i]};
        mx_sample(o, &WH_MX[1], v, (double)n[i]);
    }
    mx_single(o, &WH_MX[2], (double)st.waiting);
    mx_single(o, &WH_MX[3], kfk_producer_up(w->prod));
}
