#include "ingest/webhook.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <jansson.h>

#include "core/hlisten.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/str.h"
#include "core/signal.h"
#include "core/ts.h"

struct webhook {
    hlisten *http;
    kfk_producer *prod;
    char *token;
    size_t token_len;
    unsigned long accepted, rejected;
};

/* Webhook body fields copied into every signal's payload. */
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

static json_t *alert_payload(json_t *body, json_t *alert)
{
    json_t *p = json_object(), *v;

    for (size_t i = 0; i < sizeof wh_top_fields / sizeof *wh_top_fields; i++)
        if ((v = json_object_get(body, wh_top_fields[i])))
            json_object_set(p, wh_top_fields[i], v);
    json_object_set_new(p, "alerts", json_pack("[O]", alert));
    return p;
}

static json_t *alert_signal(json_t *body, json_t *alert)
{
    json_t *labels = json_object_get(alert, "labels");
    const char *cluster = label(labels, "cluster");
    json_t *host = alert_host(labels);
    json_t *o = json_pack("{s:o, s:s, s:s, s:o}", "ts", alert_ts(alert),
                          "source", "alertmanager", "cluster",
                          cluster ? cluster : "default", "payload",
                          alert_payload(body, alert));

    if (o && host)
        json_object_set(o, "host", host);
    json_decref(host);
    return o;
}

/* All or nothing: a post with one bad alert publishes none of them. */
static sig *build_signals(json_t *body, size_t *n, cs_err *err)
{
    json_t *alerts = json_object_get(body, "alerts"), *o;
    size_t cnt = json_array_size(alerts), i;
    sig *s = calloc(cnt ? cnt : 1, sizeof *s);

    if (!s) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    for (i = 0; i < cnt; i++) {
        o = alert_signal(body, json_array_get(alerts, i));
        if (!o || sig_from_json(&s[i], o, err)) {
            if (!o)
                cs_err_set(err, "cannot build a signal");
            cs_err_prefix(err, "alerts[%zu]: ", i);
            json_decref(o);
            wh_free_signals(s, i);
            return NULL;
        }
        json_decref(o);
    }
    *n = cnt;
    return s;
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

    *n = 0;
    if (o && check_webhook(o, err) == 0)
        s = build_signals(o, n, err);
    json_decref(o);
    return s;
}

/* Returns KFK_OK, KFK_QUEUE_FULL or -1. Alerts already enqueued stay
 * published: Alertmanager retries the whole post, and a signal id is a
 * content hash, so the repeats are harmless downstream. */
static int publish(webhook *w, const sig *s, size_t n, cs_err *err)
{
    char *buf;
    size_t len;
    int rc = KFK_OK;

    for (size_t i = 0; i < n && rc == KFK_OK; i++) {
        if (sig_to_msgpack(&s[i], &buf, &len)) {
            cs_err_set(err, "alerts[%zu]: cannot encode the signal", i);
            return -1;
        }
        rc = kfk_produce(w->prod, KFK_TOPIC_SIGNALS, s[i].cluster,
                         strlen(s[i].cluster), buf, len, err);
        free(buf);
    }
    return rc;
}

/* ---- routes ------------------------------------------------------------- */

static void answer_publish(webhook *w, struct evhttp_request *req, int rc,
                           size_t n, const cs_err *err)
{
    if (rc == KFK_QUEUE_FULL) {
        evhttp_add_header(evhttp_request_get_output_headers(req),
                          "Retry-After", "1");
        reject(w, req, 503, "Service Unavailable",
               "signal queue is full; retry later");
    } else if (rc != KFK_OK) {
        reject(w, req, 500, "Internal Server Error", "%s", err->msg);
    } else {
        w->accepted += n;
        send_json(req, 200, "OK", json_pack("{s:I}", "accepted", (json_int_t)n));
    }
}

static void handle_alerts(webhook *w, struct evhttp_request *req)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    cs_err err = {{0}};
    sig *s;
    size_t n = 0;

    /* judged at the head already (wh_headers); checked again whole */
    if (!authorized(w, evhttp_request_get_input_headers(req))) {
        reject_unauthorized(w, req);
        return;
    }
    s = wh_signals(len ? (const char *)evbuffer_pullup(in, -1) : "", len, &n,
                   &err);
    if (!s) {
        reject(w, req, 400, "Bad Request", "%s", err.msg);
        return;
    }
    answer_publish(w, req, publish(w, s, n, &err), n, &err);
    wh_free_signals(s, n);
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

void wh_stats(const webhook *w, unsigned long *accepted_alerts,
              unsigned long *rejected_requests)
{
    if (accepted_alerts)
        *accepted_alerts = w->accepted;
    if (rejected_requests)
        *rejected_requests = w->rejected;
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

void wh_free(webhook *w)
{
    if (!w)
        return;
    hl_free(w->http);
    if (w->token) {
        explicit_bzero(w->token, w->token_len);
        free(w->token);
    }
    free(w);
}
