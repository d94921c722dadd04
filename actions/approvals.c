#include "actions/approvals.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/hlisten.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/secret.h"
#include "core/str.h"

#define APV_MAX 256
#define APV_MAX_BODY 16384

typedef struct approver {
    char name[64];
    char token[256];
    unsigned classes; /* 1u << pb_class */
} approver;

struct approvers {
    approver v[APV_MAX];
    size_t n;
};

struct apv_server {
    hlisten *http;
    act *a;
    approvers *p;
};

/* ---- the approvers file ---- */

static int parse_classes(char *list, unsigned *out, cs_err *err)
{
    static const char *const names[] = {"read_only", "notify", "job", "change",
                                        "recovery", "destructive"};
    *out = 0;
    for (char *save = NULL, *c = strtok_r(list, ",", &save); c;
         c = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < sizeof names / sizeof *names; i++)
            if (!strcmp(c, names[i]))
                break;
        if (i == sizeof names / sizeof *names) {
            cs_err_set(err, "unknown playbook class '%.40s' (read_only, notify, "
                       "job, change, recovery, destructive)", c);
            return -1;
        }
        *out |= 1u << i;
    }
    return 0;
}

static int parse_line(approvers *p, char *line, cs_err *err)
{
    char *save = NULL, *name, *tok, *cls, *extra;
    approver *a;

    if (!(name = strtok_r(line, " \t", &save)) || *name == '#')
        return 0;
    tok = strtok_r(NULL, " \t", &save);
    cls = strtok_r(NULL, " \t", &save);
    extra = strtok_r(NULL, " \t", &save);
    if (!tok || !cls || (extra && *extra != '#')) {
        cs_err_set(err, "expected: NAME file:PATH|env:NAME CLASS,CLASS");
        return -1;
    }
    if (p->n == APV_MAX) {
        cs_err_set(err, "more than %d approvers", APV_MAX);
        return -1;
    }
    if (strlen(name) >= sizeof p->v[0].name) {
        cs_err_set(err, "name longer than %zu characters", sizeof p->v[0].name - 1);
        return -1;
    }
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->v[i].name, name)) {
            cs_err_set(err, "%s is listed twice", name);
            return -1;
        }
    a = &p->v[p->n];
    str_copy(a->name, sizeof a->name, name);
    if (secret_read(tok, a->token, sizeof a->token, err) ||
        parse_classes(cls, &a->classes, err))
        return -1;
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->v[i].token, a->token)) {
            cs_err_set(err, "%s has the same token as %s", name, p->v[i].name);
            return -1;
        }
    p->n++;
    return 0;
}

approvers *apv_load(const char *path, cs_err *err)
{
    approvers *p = xcalloc(1, sizeof *p);
    FILE *f = fopen(path, "r");
    char line[1024];
    int no = 0;

    if (!f) {
        cs_err_set(err, "%s: %s", path, strerror(errno));
        goto fail;
    }
    while (fgets(line, sizeof line, f)) {
        no++;
        line[strcspn(line, "\r\n")] = 0;
        if (parse_line(p, line, err)) {
            cs_err_prefix(err, "%s:%d: ", path, no);
            goto fail;
        }
    }
    fclose(f);
    if (!p->n) {
        cs_err_set(err, "%s: no approvers", path);
        apv_free(p);
        return NULL;
    }
    return p;
fail:
    if (f)
        fclose(f);
    apv_free(p);
    return NULL;
}

size_t apv_count(const approvers *p)
{
    return p->n;
}

void apv_free(approvers *p)
{
    if (p)
        explicit_bzero(p, sizeof *p);
    free(p);
}

/* ---- HTTP ---- */

static void reply(struct evhttp_request *req, int code, json_t *body)
{
    char *txt = json_dumps(body, JSON_COMPACT);
    struct evbuffer *out = evhttp_request_get_output_buffer(req);
    static const struct { int code; const char *why; } reasons[] = {
        {200, "OK"}, {400, "Bad Request"}, {401, "Unauthorized"},
        {403, "Forbidden"}, {404, "Not Found"}, {405, "Method Not Allowed"},
        {409, "Conflict"}, {413, "Payload Too Large"},
        {431, "Request Header Fields Too Large"}, {503, "Service Unavailable"}};
    const char *why = "Error";

    for (size_t i = 0; i < sizeof reasons / sizeof *reasons; i++)
        if (reasons[i].code == code)
            why = reasons[i].why;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "application/json");
    evbuffer_add_printf(out, "%s\n", txt ? txt : "{}");
    evhttp_send_reply(req, code, why, NULL);
    free(txt);
    json_decref(body);
}

static void error_reply(struct evhttp_request *req, int code, const char *msg)
{
    json_t *b = json_pack("{s:s}", "error", msg);

    reply(req, code, b ? b : json_pack("{s:s}", "error", "refused"));
}

static void fail(struct evhttp_request *req, int code, const char *msg)
{
    char uri[256];

    log_warn("approvals", "%s %s: %d: %s",
             evhttp_request_get_command(req) == EVHTTP_REQ_GET ? "GET" : "POST",
             hl_log_uri(req, uri, sizeof uri), code, msg);
    error_reply(req, code, msg);
}

static const approver *find(const approvers *p, const struct evkeyvalq *headers)
{
    const char *h = evhttp_find_header(headers, "Authorization");
    const approver *found = NULL;

    if (!h || strncasecmp(h, "Bearer ", 7))
        return NULL;
    for (h += 7; *h == ' '; h++)
        ;
    /* every entry compared, so the time says nothing of who matched */
    for (size_t i = 0; i < p->n; i++)
        if (str_secret_equal(h, strlen(h), p->v[i].token, strlen(p->v[i].token)))
            found = &p->v[i];
    return found;
}

const char *apv_name_of(const approvers *p, const struct evkeyvalq *headers)
{
    const approver *a = find(p, headers);
    return a ? a->name : NULL;
}

typedef struct pending_reply {
    struct evhttp_request *req;
    char id[32], by[64], reason[512];
    int approve;
} pending_reply;

/* The decision is logged once act_decide has checked who may make it:
 * what was recorded, or that it was refused and why. */
static void on_decided(void *arg, int status, const char *msg)
{
    pending_reply *pr = arg;

    if (status == 200) {
        log_info("approvals", "%s %s %s%s%s", pr->by,
                 pr->approve ? "approves" : "denies", pr->id,
                 pr->reason[0] ? ": " : "", pr->reason);
        reply(pr->req, 200, json_pack("{s:s, s:s, s:s}", "action", pr->id,
                                      "decision", pr->approve ? "approved"
                                                              : "denied",
                                      "by", pr->by));
    } else {
        msg = msg ? msg : "refused";
        log_warn("approvals", "%s's %s of %s refused: %d: %s", pr->by,
                 pr->approve ? "approval" : "denial", pr->id, status, msg);
        error_reply(pr->req, status, msg);
    }
    free(pr);
}

static void on_looked_up(void *arg, int status, const json_t *journal)
{
    struct evhttp_request *req = arg;

    if (status == 200)
        reply(req, 200, json_deep_copy(journal));
    else
        fail(req, status, status == 404 ? "no such action"
                                        : "the executor is stopping");
}

/* "/v1/actions/ID/approve" -> id, verb (1 approve, 0 deny, 2 read) */
static int route(const char *path, char *id, size_t idlen, int *approve)
{
    const char *p = path, *slash;

    if (strncmp(p, "/v1/actions/", 12))
        return -1;
    p += 12;
    if (!(slash = strchr(p, '/')))
        slash = p + strlen(p);
    if (slash == p || (size_t)(slash - p) >= idlen)
        return -1;
    snprintf(id, idlen, "%.*s", (int)(slash - p), p);
    if (!*slash)
        *approve = 2;
    else if (!strcmp(slash, "/approve"))
        *approve = 1;
    else if (!strcmp(slash, "/deny"))
        *approve = 0;
    else
        return -1;
    for (const char *c = id; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-'))
            return -1;
    return 0;
}

static void on_listed(void *arg, int status, const json_t *entries)
{
    struct evhttp_request *req = arg;

    if (status == 200)
        reply(req, 200, json_pack("{s:O}", "actions", entries));
    else
        fail(req, status, "the journal cannot be read now (Redis)");
}

/* GET /v1/actions?state=pending|running[&limit=N]: behind a token, as the
 * decisions are (the list shows every waiting request). */
static void list_actions(apv_server *s, struct evhttp_request *req)
{
    struct evkeyvalq q;
    const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    const char *state, *limit;
    long n = 0;

    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
        fail(req, 405, "use GET");
        return;
    }
    if (!find(s->p, evhttp_request_get_input_headers(req))) {
        fail(req, 401, "missing or unknown bearer token");
        return;
    }
    /* parsing "" too: it is what initializes q */
    if (evhttp_parse_query_str(query ? query : "", &q)) {
        evhttp_clear_headers(&q);
        fail(req, 400, "the query cannot be read");
        return;
    }
    state = evhttp_find_header(&q, "state");
    limit = evhttp_find_header(&q, "limit");
    if (limit) {
        char *end;
        n = strtol(limit, &end, 10);
        if (!*limit || *end || n < 1 || n > 1000)
            n = -1;
    }
    if (n < 0)
        fail(req, 400, "limit is 1 to 1000");
    else if (act_list(s->a, state ? state : "pending", (size_t)n, on_listed, req))
        fail(req, 400, "state is pending or running (finished actions are on "
             "cascade.audit: cascade incidents show)");
    evhttp_clear_headers(&q);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    apv_server *s = arg;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    const approver *u;
    char id[32], reason[512] = "";
    int approve;
    size_t len = evbuffer_get_length(in);

    if (!path)
        path = "/";
    if (!strcmp(path, "/healthz")) {
        reply(req, 200, json_pack("{s:s}", "status", "ok"));
        return;
    }
    if (!strcmp(path, "/v1/actions")) {
        list_actions(s, req);
        return;
    }
    if (route(path, id, sizeof id, &approve)) {
        fail(req, 404, "no such route (GET /v1/actions?state=pending|running, "
             "GET /v1/actions/ID, POST /v1/actions/ID/approve or /deny)");
        return;
    }
    if (approve == 2) {
        /* read-only, and what the Slack message links to: the journal
         * holds the request and its state, never a secret */
        if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
            fail(req, 405, "use GET");
            return;
        }
        act_lookup(s->a, id, on_looked_up, req);
        return;
    }
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        fail(req, 405, "use POST");
        return;
    }
    if (!(u = find(s->p, evhttp_request_get_input_headers(req)))) {
        fail(req, 401, "missing or unknown bearer token");
        return;
    }
    if (len > APV_MAX_BODY) {
        fail(req, 413, "body over 16 KiB");
        return;
    }
    if (len) {
        json_error_t jerr;
        json_t *b = json_loadb((const char *)evbuffer_pullup(in, -1), len, 0, &jerr);
        json_t *r = json_object_get(b, "reason");
        if (!json_is_object(b) || (r && !json_is_string(r) && !json_is_null(r))) {
            char msg[300];
            snprintf(msg, sizeof msg, "body must be {\"reason\": \"...\"}%s%.200s",
                     b ? "" : ": ", b ? "" : jerr.text);
            json_decref(b);
            fail(req, 400, msg);
            return;
        }
        if (json_is_string(r))
            str_copy(reason, sizeof reason, json_string_value(r));
        json_decref(b);
    }
    pending_reply *pr = xcalloc(1, sizeof *pr);
    pr->req = req;
    pr->approve = approve;
    str_copy(pr->id, sizeof pr->id, id);
    str_copy(pr->by, sizeof pr->by, u->name);
    str_copy(pr->reason, sizeof pr->reason, reason);
    act_decide(s->a, id, approve, u->name, u->classes, reason, on_decided, pr);
}

/* A decision, and any request with a body, needs a known token before
 * its body is read: without one the body is never read. */
static int on_headers(const hl_head *head, void *arg)
{
    const apv_server *s = arg;
    char id[32];
    int approve;

    if (!head->has_body &&
        (strcmp(head->method, "POST") ||
         route(head->path, id, sizeof id, &approve) || approve == 2))
        return 0;
    return find(s->p, head->headers) ? 0 : 401;
}

static void on_refused(struct evhttp_request *req, int code, const char *why,
                       void *arg)
{
    (void)arg;
    fail(req, code, why ? why : "missing or unknown bearer token");
}

apv_server *apv_start(struct event_base *base, act *a, approvers *p,
                      const apv_opts *o, cs_err *err)
{
    apv_server *s = xcalloc(1, sizeof *s);

    s->a = a;
    s->p = p;
    /* evhttp refuses bodies past twice the limit on its own; on_request
     * answers those in between with its own 413. */
    s->http = hl_start(base, &(hl_opts){.name = "approvals",
                                        .listen_addr = o->listen,
                                        .port = o->port,
                                        .max_body = APV_MAX_BODY * 2,
                                        .max_connections = o->max_connections,
                                        .timeout_s = 10,
                                        .request_deadline_s =
                                            o->request_timeout_s,
                                        .on_request = on_request,
                                        .on_headers = on_headers,
                                        .on_refused = on_refused,
                                        .arg = s},
                       err);
    if (!s->http) {
        apv_stop(s);
        return NULL;
    }
    return s;
}

int apv_port(const apv_server *s)
{
    return hl_port(s->http);
}

void apv_stop(apv_server *s)
{
    if (!s)
        return;
    hl_free(s->http);
    apv_free(s->p);
    free(s);
}
