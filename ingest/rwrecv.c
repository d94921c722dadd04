#include "ingest/rwrecv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "core/hlisten.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/str.h"
#include "core/ts.h"
#include "ingest/pubwait.h"

#define RW_PATH "/api/v1/write"
/* One line a minute for a repeated refusal (a wrong token on every
 * request of every shard would flood the log). */
#define RW_LOG_EVERY_US (60 * 1000000LL)

struct rwrecv {
    hlisten *http;
    kfk_producer *prod;
    rwd *dec;
    pubwait *pw;
    char *token;
    size_t token_len;
    int64_t last_refusal_log; /* us, ts_mono */
    unsigned long refusals_unlogged;
    rw_stat st;
};

/* ---- answers ---------------------------------------------------------------- */

static void send_text(struct evhttp_request *req, int code, const char *reason,
                      const char *msg)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; charset=utf-8");
    evbuffer_add_printf(evhttp_request_get_output_buffer(req), "%s\n", msg);
    evhttp_send_reply(req, code, reason, NULL);
}

static void refuse(rwrecv *r, struct evhttp_request *req, int code,
                   const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The sender drops a 4xx'd request: every refusal is logged, but a run of
 * them (one per request of every shard) one line a minute. */
static void refuse(rwrecv *r, struct evhttp_request *req, int code,
                   const char *reason, const char *fmt, ...)
{
    char msg[512], *addr = NULL;
    ev_uint16_t port = 0;
    int64_t now = ts_mono();
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    str_utf8_trim(msg);
    r->st.refused++;
    if (!r->last_refusal_log || now - r->last_refusal_log >= RW_LOG_EVERY_US) {
        evhttp_connection_get_peer(evhttp_request_get_connection(req), &addr,
                                   &port);
        log_warn("remote-write", "%s:%u: %d: %s (the sender drops such a "
                 "request; %lu more refused since the last line)",
                 addr ? addr : "?", (unsigned)port, code, msg,
                 r->refusals_unlogged);
        r->last_refusal_log = now;
        r->refusals_unlogged = 0;
    } else {
        r->refusals_unlogged++;
    }
    send_text(req, code, reason, msg);
}

static void rw_accepted(struct evhttp_request *req, size_t n,
                        const char *note, void *arg)
{
    rwrecv *r = arg;

    r->st.published += n;
    if (note) /* the valid samples are stored; the rest never will be */
        refuse(r, req, 400, "Bad Request", "%s", note);
    else
        evhttp_send_reply(req, 204, "No Content", NULL);
}

static void rw_unavailable(struct evhttp_request *req, const char *msg,
                           void *arg)
{
    (void)arg;
    send_text(req, 503, "Service Unavailable", msg);
}

/* ---- the head ---------------------------------------------------------------- */

static int authorized(const rwrecv *r, const struct evkeyvalq *headers)
{
    return hl_bearer_ok(headers, r->token, r->token_len);
}

static int write_path(const char *path)
{
    return strcmp(path, RW_PATH) == 0 || strcmp(path, "/") == 0;
}

/* 0, or why the request is not remote-write 1.0 (415). */
static const char *not_rw1(const struct evkeyvalq *h)
{
    const char *enc = evhttp_find_header(h, "Content-Encoding");
    const char *type = evhttp_find_header(h, "Content-Type");
    const char *ver = evhttp_find_header(h, "X-Prometheus-Remote-Write-"
                                            "Version");

    if (!enc || strcasecmp(enc, "snappy"))
        return "Content-Encoding must be snappy";
    if (!type || strncasecmp(type, "application/x-protobuf", 22) ||
        (type[22] && type[22] != ';') ||
        (strstr(type, "proto=") &&
         !strstr(type, "proto=prometheus.WriteRequest")))
        return "Content-Type must be application/x-protobuf, remote-write "
               "1.0 (prometheus.WriteRequest; 2.0 is not taken: set "
               "protobuf_message: prometheus.WriteRequest)";
    if (ver && strncmp(ver, "0.", 2))
        return "X-Prometheus-Remote-Write-Version must be 0.1.0 "
               "(remote-write 1.0)";
    return NULL;
}

static int rw_headers(const hl_head *head, void *arg)
{
    const rwrecv *r = arg;

    if (!head->has_body &&
        (strcmp(head->method, "POST") || !write_path(head->path)))
        return 0;
    if (!authorized(r, head->headers))
        return 401;
    if (!strcmp(head->method, "POST") && write_path(head->path) &&
        not_rw1(head->headers))
        return 415;
    return 0;
}

static void rw_refused(struct evhttp_request *req, int code, const char *why,
                       void *arg)
{
    rwrecv *r = arg;
    /* hlisten hands over no header fields: say what 415 wants */
    const char *msg = code == 401 ? "missing or invalid bearer token"
                      : code == 415 ? "not a remote-write 1.0 request: "
                                      "Content-Encoding snappy, Content-Type "
                                      "application/x-protobuf wanted"
                                    : why ? why : "request refused";

    if (code == 401)
        evhttp_add_header(evhttp_request_get_output_headers(req),
                          "WWW-Authenticate", "Bearer");
    refuse(r, req, code,
           code == 401   ? "Unauthorized"
           : code == 415 ? "Unsupported Media Type"
           : code == 431 ? "Request Header Fields Too Large" : NULL,
           "%s", msg);
}

/* ---- a write --------------------------------------------------------------- */

static void stats_add(rwrecv *r, const rwd_result *res)
{
    r->st.samples += res->samples;
    r->st.filtered += res->filtered;
    r->st.nohost += res->nohost;
    r->st.nonfinite += res->nonfinite;
    r->st.invalid += res->invalid;
}

static void publish(rwrecv *r, struct evhttp_request *req, rwd_result *res)
{
    char note[400];
    cs_err err = {{0}};
    kfk_tracker *t = cs_oom(kfk_tracker_new());
    int rc;

    if (res->invalid)
        snprintf(note, sizeof note, "%lu of %lu samples refused, the first "
                 "because %s; the other %zu were taken", res->invalid,
                 res->samples, res->first_invalid, res->n);
    rc = pw_publish(r->prod, res->msgs, res->n, "sample", t, &err);
    rc = pw_answer(r->pw, req, rc, res->n, t, res->invalid ? note : NULL);
    if (rc == KFK_TOO_BIG)
        refuse(r, req, 413, "Payload Too Large", "%s", err.msg);
    else if (rc)
        pw_unavailable(r->pw, req, "%s", err.msg);
}

static void handle_write(rwrecv *r, struct evhttp_request *req)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    const struct evkeyvalq *h = evhttp_request_get_input_headers(req);
    size_t len = evbuffer_get_length(in);
    cs_err err = {{0}};
    const char *why;
    rwd_result res;
    int code;

    /* judged at the head already (rw_headers); checked again whole */
    if (!authorized(r, h)) {
        rw_refused(req, 401, NULL, r);
        return;
    }
    if ((why = not_rw1(h))) {
        refuse(r, req, 415, "Unsupported Media Type", "%s", why);
        return;
    }
    if (pw_draining(r->pw)) {
        pw_unavailable(r->pw, req, "the receiver is stopping; retry");
        return;
    }
    r->st.requests++;
    code = rwd_decode(r->dec, len ? evbuffer_pullup(in, -1) : (void *)"", len,
                      ts_now(), &res, &err);
    if (code)
        refuse(r, req, code, code == 413 ? "Payload Too Large"
                                         : "Bad Request", "%s", err.msg);
    else {
        stats_add(r, &res);
        publish(r, req, &res);
    }
    rwd_result_free(&res);
}

static void rw_request(struct evhttp_request *req, void *arg)
{
    rwrecv *r = arg;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);

    if (path && strcmp(path, "/healthz") == 0 && cmd == EVHTTP_REQ_GET) {
        evbuffer_add(evhttp_request_get_output_buffer(req), "ok\n", 3);
        evhttp_send_reply(req, 200, "OK", NULL);
    } else if (path && write_path(path) && cmd == EVHTTP_REQ_POST) {
        handle_write(r, req);
    } else if (path && (write_path(path) || strcmp(path, "/healthz") == 0)) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
                          strcmp(path, "/healthz") ? "POST" : "GET");
        refuse(r, req, 405, "Method Not Allowed", "method not allowed here");
    } else {
        refuse(r, req, 404, "Not Found", "no such path (remote-write posts "
               "to " RW_PATH ")");
    }
}

/* ---- lifecycle ------------------------------------------------------------- */

rwrecv *rw_start(struct event_base *base, const rw_config *cfg,
                 kfk_producer *prod, cs_err *err)
{
    rwrecv *r;

    if (!cfg->token || !*cfg->token) {
        cs_err_set(err, "remote-write: a bearer token is required "
                        "(Prometheus' remote_write.authorization."
                        "credentials_file)");
        return NULL;
    }
    r = xcalloc(1, sizeof *r);
    r->prod = prod;
    r->token = xstrdup(cfg->token);
    r->token_len = strlen(r->token);
    if (!(r->dec = rwd_new(&cfg->decode, err)))
        goto fail;
    r->pw = pw_new(base, cfg->ack_timeout_s,
                   &(pw_hooks){.name = "remote-write", .request = "request",
                               .what = "samples", .accepted = rw_accepted,
                               .unavailable = rw_unavailable, .arg = r});
    r->http = hl_start(base, &(hl_opts){.name = "remote-write",
                                        .listen_addr = cfg->listen_addr,
                                        .port = cfg->port,
                                        .max_body = cfg->max_body,
                                        .max_connections = cfg->max_connections,
                                        .timeout_s = cfg->timeout_s,
                                        .on_request = rw_request,
                                        .on_headers = rw_headers,
                                        .on_refused = rw_refused,
                                        .arg = r},
                       err);
    if (!r->http)
        goto fail;
    log_info("remote-write", "listening on port %d", rw_port(r));
    return r;
fail:
    rw_free(r);
    return NULL;
}

int rw_port(const rwrecv *r)
{
    return hl_port(r->http);
}

void rw_set_token(rwrecv *r, const char *token)
{
    char *t;

    if (!token || !*token || !(t = strdup(token)))
        return;
    explicit_bzero(r->token, r->token_len);
    free(r->token);
    r->token = t;
    r->token_len = strlen(t);
}

void rw_get_stats(const rwrecv *r, rw_stat *st)
{
    pw_stat p;

    pw_get_stats(r->pw, &p);
    *st = r->st;
    st->unavailable = p.unavailable;
    st->waiting = p.waiting;
}

void rw_drain(rwrecv *r, void (*done)(void *), void *arg)
{
    pw_drain(r->pw, done, arg);
}

void rw_free(rwrecv *r)
{
    rw_stat st;

    if (!r)
        return;
    if (r->http) {
        rw_get_stats(r, &st);
        log_info("remote-write", "%lu requests, %lu samples: %lu published, "
                 "%lu filtered by name, %lu without a host, %lu NaN or "
                 "infinite, %lu refused as invalid; %lu requests refused, "
                 "%lu answered 503", st.requests, st.samples, st.published,
                 st.filtered, st.nohost, st.nonfinite, st.invalid, st.refused,
                 st.unavailable);
    }
    pw_free(r->pw);
    hl_free(r->http);
    rwd_free(r->dec);
    if (r->token) {
        explicit_bzero(r->token, r->token_len);
        free(r->token);
    }
    free(r);
}

/* Declared once: rw_metrics writes them from rw_stat. */
static const mx_family RW_MX[] = {
    {"cascade_rw_requests_total", MX_COUNTER,
     "Remote-write requests read whole, by answer (ok: 204 or 400 with "
     "its signals published; refused: 4xx; unavailable: 503).", "answer"},
    {"cascade_rw_samples_total", MX_COUNTER,
     "Samples in remote-write requests, by fate (published, filtered, no "
     "host label, not finite, invalid).", "fate"},
    {"cascade_rw_requests_waiting", MX_GAUGE,
     "Requests whose answer waits for Kafka's acknowledgement now.", NULL},
    {"cascade_rw_kafka_up", MX_GAUGE,
     "1 while the receiver's producer has a broker connection up.", NULL},
};

int rw_ready(const rwrecv *r, char *why, size_t len)
{
    return kfk_producer_ready(r->prod, why, len);
}

void rw_metrics(const rwrecv *r, mx_out *o)
{
    rw_stat st;
    const char *ans[] = {"ok", "refused", "unavailable"};
    const char *fate[] = {"published", "filtered", "nohost", "nonfinite",
                          "invalid"};
    double a[3], f[5];

    rw_get_stats(r, &st);
    a[1] = (double)st.refused;
    a[2] = (double)st.unavailable;
    a[0] = (double)st.requests - a[1] - a[2];
    f[0] = (double)st.published;
    f[1] = (double)st.filtered;
    f[2] = (double)st.nohost;
    f[3] = (double)st.nonfinite;
    f[4] = (double)st.invalid;
    mx_family_begin(o, &RW_MX[0]);
    for (int i = 0; i < 3; i++)
        mx_sample(o, &RW_MX[0], &ans[i], a[i] < 0 ? 0 : a[i]);
    mx_family_begin(o, &RW_MX[1]);
    for (int i = 0; i < 5; i++)
        mx_sample(o, &RW_MX[1], &fate[i], f[i]);
    mx_single(o, &RW_MX[2], (double)st.waiting);
    mx_single(o, &RW_MX[3], kfk_producer_up(r->prod));
}
