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
#include "core/jdoc.h"
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

/* The body read as a document (core/jdoc.h): it is checked, named and
 * forwarded, never edited, and jansson's parse, a value and a string
 * allocated at a time, was half of the receiver's time. */
static jdoc *parse_body(const char *data, size_t len, cs_err *err)
{
    jdoc *d;

    if (len == 0) {
        cs_err_set(err, "request body is empty");
        return NULL;
    }
    if (!(d = jd_parse(data, len, err)))
        cs_err_prefix(err, "invalid JSON at ");
    return d;
}

static int is_status(const jd_val *st)
{
    const char *t = st ? jd_str(st, NULL) : NULL;

    return t && (strcmp(t, "firing") == 0 || strcmp(t, "resolved") == 0);
}

static int check_alert(const jd_val *a, size_t i, cs_err *err)
{
    const jd_val *labels = jd_get(a, "labels");

    if (jd_typeof(a) != JD_OBJ) {
        cs_err_set(err, "alerts[%zu] must be an object", i);
        return -1;
    }
    if (!labels || jd_typeof(labels) != JD_OBJ) {
        cs_err_set(err, "alerts[%zu].labels must be an object", i);
        return -1;
    }
    if (!is_status(jd_get(a, "status"))) {
        cs_err_set(err, "alerts[%zu].status must be \"firing\" or \"resolved\"",
                   i);
        return -1;
    }
    return 0;
}

static int check_webhook(const jd_val *body, cs_err *err)
{
    const jd_val *ver = jd_get(body, "version"), *alerts, *a;
    const char *vs = ver ? jd_str(ver, NULL) : NULL;
    size_t i;

    if (jd_typeof(body) != JD_OBJ) {
        cs_err_set(err, "body must be a JSON object (an Alertmanager webhook)");
        return -1;
    }
    if (!vs || strcmp(vs, "4") != 0) {
        cs_err_set(err, "field 'version' must be \"4\" (Alertmanager webhook "
                        "version 4)%s%.*s%s",
                   vs ? ", got \"" : "", vs ? str_utf8_max(vs, 20) : 0,
                   vs ? vs : "", vs ? "\"" : "");
        return -1;
    }
    alerts = jd_get(body, "alerts");
    if (!alerts || jd_typeof(alerts) != JD_ARR) {
        cs_err_set(err, "field 'alerts' must be an array");
        return -1;
    }
    for (i = 0, a = jd_first(alerts); i < jd_size(alerts); i++, a = jd_next(a))
        if (check_alert(a, i, err))
            return -1;
    return 0;
}

/* ---- alert -> signal ---------------------------------------------------- */

static const char *label(const jd_val *labels, const char *key, size_t *len)
{
    const jd_val *v = jd_get(labels, key);
    const char *t = v ? jd_str(v, len) : NULL;

    return t && *len ? t : NULL;
}

/* The alert's host from its labels, len bytes at the result (not
 * NUL-terminated when cut from an instance's port), or NULL. */
static const char *alert_host(const jd_val *labels, size_t *len)
{
    static const char *const keys[] = {"Hostname", "hostname", "node"};
    const char *v;

    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if ((v = label(labels, keys[i], len)))
            return v;
    if (!(v = label(labels, "instance", len)))
        return NULL;
    return str_instance_host(v, len);
}

/* Firing alerts happen at startsAt, resolved ones at endsAt. Alertmanager
 * writes 0001-01-01T00:00:00Z for "unset", which the parser refuses (before
 * 1970), so that falls back to now (written into buf) like any unparsable
 * time. */
static const char *alert_ts(const jd_val *alert, char buf[32])
{
    const char *st = jd_str(jd_get(alert, "status"), NULL);
    const jd_val *v = jd_get(
        alert, strcmp(st, "resolved") == 0 ? "endsAt" : "startsAt");
    const char *t = v ? jd_str(v, NULL) : NULL;
    int64_t ts;

    if (t && ts_parse_rfc3339(t, &ts) == 0)
        return t;
    ts_format(ts_now(), buf, 32);
    return buf;
}

/* ---- one post ----------------------------------------------------------- */

#define WH_TOP (sizeof wh_top_fields / sizeof *wh_top_fields)

/* A post on its way to signals. Every alert's signal carries the post's
 * common fields (its receiver, the group's labels and annotations...) as
 * Alertmanager sent them: they are picked out once and dumped, hashed and
 * packed once. An alert's signal is named by the hash of the common
 * fields, the alert and its time, so that no signal is dumped whole to be
 * named (a 500 KB commonAnnotations was dumped again for each of 11,000
 * alerts). What the signals take on the wire, each alert with the common
 * fields, is known before any is built. */
typedef struct wh_post {
    jdoc *doc;
    const jd_val **alerts; /* in order */
    size_t n;
    const char *ckey[WH_TOP]; /* the common fields present, in
                                 wh_top_fields' order */
    const jd_val *cval[WH_TOP];
    size_t nc;
    uint64_t *ids; /* the hash of the common fields and each alert */
    size_t bytes;  /* what the signals take, as JSON */
    jw canon;      /* each one's canonical text, in turn */
} wh_post;

static void post_open(wh_post *p, jdoc *doc)
{
    const jd_val *body = jd_root(doc), *alerts = jd_get(body, "alerts"), *a;

    memset(p, 0, sizeof *p);
    p->doc = doc;
    p->n = jd_size(alerts);
    p->alerts = xcalloc(p->n ? p->n : 1, sizeof *p->alerts);
    a = jd_first(alerts);
    for (size_t i = 0; i < p->n; i++, a = jd_next(a))
        p->alerts[i] = a;
    jw_init(&p->canon);
    for (size_t i = 0; i < WH_TOP; i++)
        if ((p->cval[p->nc] = jd_get(body, wh_top_fields[i])))
            p->ckey[p->nc++] = wh_top_fields[i];
}

static void post_close(wh_post *p)
{
    free(p->alerts);
    free(p->ids);
    free(jw_take(&p->canon));
    jd_free(p->doc);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The common fields as one object, canonically: as jansson dumps an
 * object of them (JSON_COMPACT | JSON_SORT_KEYS), which named the
 * signals before. */
static void canon_common(const wh_post *p, jw *w)
{
    const char *keys[WH_TOP];

    memcpy(keys, p->ckey, p->nc * sizeof *keys);
    qsort(keys, p->nc, sizeof *keys, cmp_str);
    jw_obj(w);
    for (size_t i = 0; i < p->nc; i++) {
        jw_key(w, keys[i]);
        jd_canon(w, jd_get(jd_root(p->doc), keys[i]));
    }
    jw_end_obj(w);
}

/* Continues *h with the canonical text in the post's buffer, *len its
 * length. */
static void canon_hash(wh_post *p, uint64_t *h, size_t *len)
{
    const char *t = jw_text(&p->canon, len);

    *h = hash_fnv1a(*h, t, *len);
}

/* Work in proportion to the body only: one dump of the common fields, one
 * of each alert, each into the post's reused buffer (a json_dumps, a
 * buffer and a key sort per alert was a fifth of the receiver's time). */
static void post_measure(wh_post *p)
{
    uint64_t common = HASH_FNV_SEED;
    size_t clen, len;

    p->ids = xcalloc(p->n ? p->n : 1, sizeof *p->ids);
    jw_clear(&p->canon);
    canon_common(p, &p->canon);
    canon_hash(p, &common, &clen);
    for (size_t i = 0; i < p->n; i++) {
        p->ids[i] = common;
        jw_clear(&p->canon);
        jd_canon(&p->canon, p->alerts[i]);
        canon_hash(p, &p->ids[i], &len);
        p->bytes += clen + len;
    }
}

/* The signal's id: the alert's hash continued with its time. */
static void id_hex(uint64_t h, const char *ts, char hex[17])
{
    h = hash_fnv1a(h, ts, strlen(ts));
    snprintf(hex, 17, "%016llx", (unsigned long long)h);
}

/* What a signal holds beside its payload. */
typedef struct wh_head {
    const char *ts, *cluster, *host; /* host NULL when none, not
                                        NUL-terminated (alert_host) */
    size_t clen, hlen;
    char id[17], now[32];
} wh_head;

static void alert_head(const wh_post *p, size_t i, wh_head *h)
{
    const jd_val *labels = jd_get(p->alerts[i], "labels");

    h->clen = h->hlen = 0;
    if (!(h->cluster = label(labels, "cluster", &h->clen))) {
        h->cluster = "default";
        h->clen = strlen(h->cluster);
    }
    h->host = alert_host(labels, &h->hlen);
    h->ts = alert_ts(p->alerts[i], h->now);
    id_hex(p->ids[i], h->ts, h->id);
}

/* The common fields and then "alerts": [the alert], as jansson values
 * (the signals' path, wh_signals). */
static json_t *alert_payload(const wh_post *p, const jd_val *alert)
{
    json_t *o = json_object();

    for (size_t i = 0; o && i < p->nc; i++)
        json_object_set_new(o, p->ckey[i], jd_json(p->cval[i]));
    if (o)
        json_object_set_new(o, "alerts", json_pack("[o]", jd_json(alert)));
    return o;
}

static json_t *alert_signal(const wh_post *p, size_t i)
{
    wh_head h;
    json_t *o;

    alert_head(p, i, &h);
    o = json_pack("{s:s, s:s, s:s, s:s, s:o}", "ts", h.ts, "id", h.id,
                  "source", "alertmanager", "cluster", h.cluster, "payload",
                  alert_payload(p, p->alerts[i]));
    if (o && h.host)
        json_object_set_new(o, "host", json_stringn(h.host, h.hlen));
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

static void pack_textn(msgpack_packer *pk, const char *t, size_t n)
{
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, t, n);
}

static void pack_text(msgpack_packer *pk, const char *t)
{
    pack_textn(pk, t, strlen(t));
}

/* The common fields as msgpack map entries, without the map's header:
 * packed once, copied into every alert's payload. */
static void pack_common(const wh_post *p, msgpack_sbuffer *sb)
{
    msgpack_packer pk;

    msgpack_sbuffer_init(sb);
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    for (size_t i = 0; i < p->nc; i++) {
        pack_text(&pk, p->ckey[i]);
        jd_pack(&pk, p->cval[i]);
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
    msgpack_sbuffer sb;
    msgpack_packer pk;
    wh_head h;

    alert_head(p, i, &h);
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, h.host ? 6 : 5);
    pack_text(&pk, "ts");
    pack_text(&pk, h.ts);
    pack_text(&pk, "id");
    pack_text(&pk, h.id);
    pack_text(&pk, "source");
    pack_text(&pk, "alertmanager");
    pack_text(&pk, "cluster");
    pack_textn(&pk, h.cluster, h.clen);
    pack_text(&pk, "payload");
    msgpack_pack_map(&pk, p->nc + 1);
    msgpack_sbuffer_write(&sb, common->data, common->size);
    pack_text(&pk, "alerts");
    msgpack_pack_array(&pk, 1);
    jd_pack(&pk, p->alerts[i]);
    if (h.host) {
        pack_text(&pk, "host");
        pack_textn(&pk, h.host, h.hlen);
    }
    m->key = xstrndup(h.cluster, h.clen);
    /* msgpack's buffer starts at 8 KiB: held by the producer until
     * delivered, its unused tail would outweigh a small signal */
    m->val = xrealloc(sb.data, sb.size ? sb.size : 1);
    m->len = sb.size;
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

/* A body parsed and checked into p (post_close after); -1 with err set
 * when refused. */
static int post_load(const char *body, size_t len, wh_post *p, cs_err *err)
{
    jdoc *d = parse_body(body, len, err);

    if (!d || check_webhook(jd_root(d), err)) {
        jd_free(d);
        return -1;
    }
    post_open(p, d);
    return 0;
}

pw_msg *wh_messages(const char *body, size_t len, size_t *n, cs_err *err)
{
    pw_msg *m;
    wh_post p;

    *n = 0;
    if (post_load(body, len, &p, err))
        return NULL;
    post_measure(&p);
    m = post_messages(&p);
    *n = p.n;
    post_close(&p);
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
    post_measure(&p);
    if ((s = post_signals(&p, err)))
        *n = p.n;
    post_close(&p);
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

/* p is loaded (post_load) and closed here. */
static void serve_post(webhook *w, struct evhttp_request *req, wh_post *p)
{
    cs_err err = {{0}};
    kfk_tracker *t;
    pw_msg *m;
    int rc;

    if (over_limits(w, req, p))
        goto out;
    m = post_messages(p);
    t = cs_oom(kfk_tracker_new());
    rc = pw_publish(w->prod, m, p->n, "alert", t, &err);
    if (rc == KFK_TOO_BIG)
        w->over_message++;
    rc = pw_answer(w->pw, req, rc, p->n, t, NULL);
    if (rc == KFK_TOO_BIG)
        reject(w, req, 413, "Payload Too Large", "%s", err.msg);
    else if (rc)
        reject(w, req, 500, "Internal Server Error", "%s", err.msg);
    pw_msgs_free(m, p->n);
out:
    post_close(p);
}

static void handle_alerts(webhook *w, struct evhttp_request *req)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    cs_err err = {{0}};
    wh_post p;

    /* judged at the head already (wh_headers); checked again whole */
    if (!authorized(w, evhttp_request_get_input_headers(req))) {
        reject_unauthorized(w, req);
        return;
    }
    if (pw_draining(w->pw)) { /* told once by wh_drain, not once a post */
        pw_unavailable(w->pw, req, "the webhook is stopping; retry");
        return;
    }
    if (post_load(len ? (const char *)evbuffer_pullup(in, -1) : "", len, &p,
                  &err))
        reject(w, req, 400, "Bad Request", "%s", err.msg);
    else
        serve_post(w, req, &p);
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
