/* The console's HTTP server (console/server.h). */
#include "console/server.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "console/assets.h"
#include "core/hlisten.h"
#include "core/httpc.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/str.h"
#include "core/ts.h"
#include "view/render.h"
#include "view/report.h"
#include "view/reporthtml.h"

#define MAX_WATCH 16
#define HEALTH_S 5

/* What the last look at a watched process found. */
typedef struct watched {
    char url[256];
    long ready;       /* /readyz's status; 0: no answer yet */
    char why[256];    /* its body */
    json_t *facts;    /* a few of its metrics */
} watched;

struct cn_server {
    hlisten *http;
    cn_live *live;
    approvers *people;
    httpc *client;
    char act_url[256];
    watched w[MAX_WATCH];
    size_t nw;
    struct event *tick;
};

static void send_body(struct evhttp_request *req, int code, const char *type,
                      const char *body, size_t len)
{
    struct evbuffer *out = evbuffer_new();
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);

    evhttp_add_header(h, "Content-Type", type);
    evhttp_add_header(h, "Cache-Control", "no-store");
    /* the page's own scripts only: no inline script, nothing from elsewhere */
    evhttp_add_header(h, "Content-Security-Policy",
                      "default-src 'self'; img-src 'self' data:; "
                      "style-src 'self' 'unsafe-inline'; script-src 'self'");
    evbuffer_add(out, body, len);
    evhttp_send_reply(req, code, code < 300 ? "OK" : "Error", out);
    evbuffer_free(out);
}

static void send_json(struct evhttp_request *req, int code, json_t *body)
{
    char *txt = json_dumps(body, JSON_COMPACT);

    send_body(req, code, "application/json", txt ? txt : "{}", txt ? strlen(txt) : 2);
    free(txt);
    json_decref(body);
}

static void fail(struct evhttp_request *req, int code, const char *msg)
{
    send_json(req, code, json_pack("{s:s}", "error", msg));
}

/* ---- incidents ---- */

static json_t *summary(const cn_live *l, const json_t *inc)
{
    json_t *s = vw_summary(inc);

    json_object_set_new(s, "changed", json_integer((json_int_t)cn_live_changed(
                                          l, json_string_value(json_object_get(inc, "id")))));
    return s;
}

static void list_incidents(cn_server *s, struct evhttp_request *req)
{
    struct evkeyvalq q;
    const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    vw_filter f;
    const json_t **sel;
    json_t *list = json_array();
    size_t n;

    evhttp_parse_query_str(query ? query : "", &q);
    f = (vw_filter){.status = evhttp_find_header(&q, "status"),
                    .scenario = evhttp_find_header(&q, "scenario"),
                    .cluster = evhttp_find_header(&q, "cluster"),
                    .node = evhttp_find_header(&q, "node"),
                    .job = evhttp_find_header(&q, "job")};
    sel = vw_select(cn_live_incidents(s->live), &f, &n);
    for (size_t i = 0; i < n && i < 1000; i++)
        json_array_append_new(list, summary(s->live, sel[i]));
    free(sel);
    evhttp_clear_headers(&q);
    send_json(req, 200, json_pack("{s:I, s:b, s:o}", "seq",
                                  (json_int_t)cn_live_seq(s->live), "ready",
                                  cn_live_ready(s->live), "incidents", list));
}

static void get_incident(cn_server *s, struct evhttp_request *req, const char *id)
{
    const json_t *inc = vw_incidents_get(cn_live_incidents(s->live), id);
    const json_t *all = vw_trail_records(cn_live_trail(s->live));
    json_t *audit = json_array(), *r;
    size_t i;

    if (!inc) {
        json_decref(audit);
        fail(req, 404, "no such incident");
        return;
    }
    json_array_foreach(all, i, r) {
        const char *of = json_string_value(json_object_get(r, "incident"));
        if (of && !strcmp(of, id))
            json_array_append(audit, r);
    }
    send_json(req, 200, json_pack("{s:O, s:o, s:o, s:I}", "incident", inc,
                                  "actions", vw_actions(inc, cn_live_trail(s->live)),
                                  "audit", audit, "seq",
                                  (json_int_t)cn_live_seq(s->live)));
}

/* ---- the executor's routes, with the person's token ---- */

static void on_forwarded(void *arg, long status, const char *body, size_t len,
                         const char *error)
{
    struct evhttp_request *req = arg;
    char msg[300];

    if (error || !status) {
        snprintf(msg, sizeof msg, "the executor does not answer: %.200s",
                 error ? error : "no status");
        fail(req, 502, msg);
        return;
    }
    send_body(req, (int)status, "application/json", body ? body : "{}",
              body ? len : 2);
}

static void forward(cn_server *s, struct evhttp_request *req, const char *method,
                    const char *path)
{
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req),
                                          "Authorization");
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    char url[512], *body = NULL;
    cs_err err;

    if (!s->act_url[0]) {
        fail(req, 503, "no executor configured (cascade console --act-url)");
        return;
    }
    snprintf(url, sizeof url, "%s%s", s->act_url, path);
    if (len) {
        body = xmalloc(len + 1);
        evbuffer_copyout(in, body, len);
        body[len] = '\0';
    }
    httpc_req r = {.method = method, .url = url,
                   .content_type = body ? "application/json" : NULL,
                   .body = body, .bearer = auth + 7, .timeout_ms = 10000};
    if (httpc_send(s->client, &r, on_forwarded, req, &err))
        fail(req, 502, err.msg);
    free(body);
}

/* ---- health ---- */

static void take_facts(watched *w, const char *body, size_t len)
{
    static const char *const wanted[] = {
        "cascade_ready", "cascade_build_info", "cascade_redis_up",
        "cascade_kafka_up", "cascade_act_kafka_up", "cascade_webhook_kafka_up",
        "cascade_collector_kafka_up", "cascade_incidents_open",
        "cascade_kafka_consumer_lag", "cascade_act_approvals_pending",
        "cascade_signals_read_total", "cascade_collector_published_total"};
    char *copy = xmalloc(len + 1), *save = NULL;

    memcpy(copy, body, len);
    copy[len] = '\0';
    json_decref(w->facts);
    w->facts = json_object();
    for (char *line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        size_t n = strcspn(line, "{ ");
        char *sp = strrchr(line, ' ');
        json_t *prev;
        if (line[0] == '#' || !sp)
            continue;
        for (size_t i = 0; i < sizeof wanted / sizeof *wanted; i++) {
            if (strlen(wanted[i]) != n || strncmp(line, wanted[i], n))
                continue;
            if (!strcmp(wanted[i], "cascade_build_info")) {
                char *p = strstr(line, "process=\"");
                if (p)
                    json_object_set_new(w->facts, "process",
                                        json_stringn(p + 9, strcspn(p + 9, "\"")));
                continue;
            }
            /* labelled series summed: lag over partitions, open by scenario */
            prev = json_object_get(w->facts, wanted[i]);
            json_object_set_new(w->facts, wanted[i],
                                json_real(json_number_value(prev) + atof(sp + 1)));
        }
    }
    free(copy);
}

static void on_metrics(void *arg, long status, const char *body, size_t len,
                       const char *error)
{
    watched *w = arg;

    if (!error && status == 200 && body)
        take_facts(w, body, len);
}

static void on_readyz(void *arg, long status, const char *body, size_t len,
                      const char *error)
{
    watched *w = arg;

    w->ready = error ? -1 : status;
    snprintf(w->why, sizeof w->why, "%.*s", (int)(error ? strlen(error) : len),
             error ? error : body ? body : "");
    w->why[strcspn(w->why, "\n")] = '\0';
}

static void look(evutil_socket_t fd, short what, void *arg)
{
    cn_server *s = arg;
    char url[300];
    cs_err err;

    (void)fd, (void)what;
    for (size_t i = 0; i < s->nw; i++) {
        snprintf(url, sizeof url, "%s/readyz", s->w[i].url);
        httpc_send(s->client, &(httpc_req){.method = "GET", .url = url,
                                          .timeout_ms = 3000},
                   on_readyz, &s->w[i], &err);
        snprintf(url, sizeof url, "%s/metrics", s->w[i].url);
        httpc_send(s->client, &(httpc_req){.method = "GET", .url = url,
                                          .timeout_ms = 3000},
                   on_metrics, &s->w[i], &err);
    }
}

static void health(cn_server *s, struct evhttp_request *req)
{
    json_t *list = json_array();

    for (size_t i = 0; i < s->nw; i++)
        json_array_append_new(
            list, json_pack("{s:s, s:b, s:s, s:O*}", "url", s->w[i].url,
                            "ready", s->w[i].ready == 200, "why",
                            s->w[i].ready == 0 ? "not looked at yet" : s->w[i].why,
                            "facts", s->w[i].facts));
    send_json(req, 200, json_pack("{s:o, s:b}", "processes", list, "console_ready",
                                  cn_live_ready(s->live)));
}

/* The report (view/reporthtml.h) of the live view: ?since=7d. */
static void report(cn_server *s, struct evhttp_request *req)
{
    struct evkeyvalq q;
    const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    const char *since;
    int64_t now = ts_now(), from;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    json_t *st;

    evhttp_parse_query_str(query ? query : "", &q);
    since = evhttp_find_header(&q, "since");
    if (vw_since(since ? since : "7d", now, &from)) {
        evhttp_clear_headers(&q);
        fail(req, 400, "since is 7d, 12h, 90m or an RFC 3339 time");
        return;
    }
    evhttp_clear_headers(&q);
    st = vw_report(&(vw_report_in){.incs = cn_live_incidents(s->live),
                                   .trail = cn_live_trail(s->live),
                                   .since_us = from, .until_us = now});
    if (!(f = open_memstream(&buf, &len))) {
        json_decref(st);
        fail(req, 500, "out of memory");
        return;
    }
    vw_report_html(f, st);
    fclose(f);
    send_body(req, 200, "text/html; charset=utf-8", buf, len);
    free(buf);
    json_decref(st);
}

/* ---- routes ---- */

/* "/api/actions/ID/approve" -> "/v1/actions/ID/approve", or NULL. */
static const char *decision_path(const char *path, char *buf, size_t len)
{
    const char *id = path + strlen("/api/actions/"), *slash = strchr(id, '/');

    if (strncmp(path, "/api/actions/", 13) || !slash || slash == id ||
        (strcmp(slash, "/approve") && strcmp(slash, "/deny")))
        return NULL;
    for (const char *c = id; c < slash; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-'))
            return NULL;
    snprintf(buf, len, "/v1/actions/%s", id);
    return buf;
}

static void api(cn_server *s, struct evhttp_request *req, const char *path,
                const char *who)
{
    int get = evhttp_request_get_command(req) == EVHTTP_REQ_GET;
    char buf[200];
    const char *to;

    if (get && !strcmp(path, "/api/whoami"))
        send_json(req, 200, json_pack("{s:s}", "name", who));
    else if (get && !strcmp(path, "/api/incidents"))
        list_incidents(s, req);
    else if (get && !strncmp(path, "/api/incidents/", 15) && path[15])
        get_incident(s, req, path + 15);
    else if (get && !strcmp(path, "/api/approvals"))
        forward(s, req, "GET", "/v1/actions?state=pending");
    else if (get && !strcmp(path, "/api/health"))
        health(s, req);
    else if (get && !strcmp(path, "/api/report"))
        report(s, req);
    else if (!get && (to = decision_path(path, buf, sizeof buf))) {
        log_info("console", "%s: %s", who, path + 5);
        forward(s, req, "POST", to);
    } else
        fail(req, 404, "no such route");
}

static void on_request(struct evhttp_request *req, void *arg)
{
    cn_server *s = arg;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    const cn_asset *a;
    const char *who;

    if (!path)
        path = "/";
    if (strncmp(path, "/api/", 5)) {
        if (evhttp_request_get_command(req) != EVHTTP_REQ_GET ||
            !(a = cn_asset_find(!strcmp(path, "/") ? "/index.html" : path))) {
            fail(req, 404, "no such page");
            return;
        }
        send_body(req, 200, a->type, a->data, a->len);
        return;
    }
    if (!(who = apv_name_of(s->people, evhttp_request_get_input_headers(req)))) {
        fail(req, 401, "missing or unknown bearer token (the approvers file's)");
        return;
    }
    api(s, req, path, who);
}

cn_server *cn_start(struct event_base *base, cn_live *live, approvers *p,
                    const cn_opts *o, cs_err *err)
{
    cn_server *s = xcalloc(1, sizeof *s);
    struct timeval tv = {HEALTH_S, 0};

    s->live = live;
    s->people = p;
    str_copy(s->act_url, sizeof s->act_url, o->act_url ? o->act_url : "");
    for (size_t i = 0; o->watch && o->watch[i] && i < MAX_WATCH; i++)
        str_copy(s->w[s->nw++].url, sizeof s->w[0].url, o->watch[i]);
    if (!(s->client = httpc_new(base, err)))
        goto fail;
    s->tick = event_new(base, -1, EV_PERSIST, look, s);
    if (!s->tick || event_add(s->tick, &tv)) {
        cs_err_set(err, "console: cannot set up the event loop");
        goto fail;
    }
    look(-1, 0, s);
    s->http = hl_start(base, &(hl_opts){.name = "console", .listen_addr = o->listen,
                                        .port = o->port, .max_body = 16384,
                                        .on_request = on_request, .arg = s},
                       err);
    if (!s->http)
        goto fail;
    return s;
fail:
    cn_free(s);
    return NULL;
}

int cn_port(const cn_server *s)
{
    return hl_port(s->http);
}

void cn_free(cn_server *s)
{
    if (!s)
        return;
    /* the client first: a forwarded decision it drops is answered while
     * its request's listener is still there */
    httpc_free(s->client);
    hl_free(s->http);
    if (s->tick)
        event_free(s->tick);
    for (size_t i = 0; i < s->nw; i++)
        json_decref(s->w[i].facts);
    apv_free(s->people);
    free(s);
}
