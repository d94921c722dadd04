/* The streamable HTTP transport (mcp/http.h). */
#include "mcp/http.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "core/hlisten.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/str.h"
#include "mcp/rpc.h"

#define MAX_SESSIONS 64
#define MAX_BODY (256 * 1024)

typedef struct sess {
    char id[33]; /* "" when free */
    mcp_session s;
    unsigned long used; /* the tick of its last message: the oldest goes */
} sess;

/* A tool call for the worker, then its answer for the loop. */
typedef struct job {
    struct evhttp_request *req;
    json_t *msg, *answer;
    mcp_session s; /* a copy: the worker reads only the agent */
    struct job *next;
} job;

struct mcp_http {
    hlisten *http;
    const mcp_env *env;
    char token[256], agent[96];
    sess sess[MAX_SESSIONS];
    unsigned long tick;
    /* the worker: jobs in (todo), answers out (done, with a byte on the
     * pipe to wake the loop) */
    pthread_t worker;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *todo, *done;
    int stopping, started, pipefd[2];
    struct event *wake;
};

/* ---- answers ---- */

static void send_json(struct evhttp_request *req, int code, const json_t *body,
                      const char *session)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    char *txt = body ? json_dumps(body, JSON_COMPACT) : NULL;
    struct evbuffer *out = evbuffer_new();

    if (session)
        evhttp_add_header(h, "Mcp-Session-Id", session);
    if (txt) {
        evhttp_add_header(h, "Content-Type", "application/json");
        evbuffer_add(out, txt, strlen(txt));
    }
    evhttp_send_reply(req, code, code == 200 ? "OK" : code == 202 ? "Accepted"
                                : "Error", out);
    evbuffer_free(out);
    free(txt);
}

/* An HTTP error with a JSON-RPC error body, as the protocol's clients
 * read one. */
static void refuse(struct evhttp_request *req, int code, const char *msg)
{
    json_t *b = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
                          "error", "code", -32000, "message", msg);
    char uri[256];

    log_warn("mcp", "%s: %d: %s", hl_log_uri(req, uri, sizeof uri), code, msg);
    send_json(req, code, b, NULL);
    json_decref(b);
}

/* ---- the worker ---- */

static void *work(void *arg)
{
    mcp_http *h = arg;
    job *j;

    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->todo && !h->stopping)
            pthread_cond_wait(&h->cv, &h->mu);
        if (!h->todo)
            break;
        j = h->todo;
        h->todo = j->next;
        pthread_mutex_unlock(&h->mu);
        j->answer = mcp_handle(h->env, &j->s, j->msg);
        pthread_mutex_lock(&h->mu);
        j->next = h->done;
        h->done = j;
        (void)!write(h->pipefd[1], "x", 1);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static void job_free(job *j)
{
    json_decref(j->msg);
    json_decref(j->answer);
    free(j);
}

/* On the loop: the answers the worker finished. */
static void on_done(evutil_socket_t fd, short what, void *arg)
{
    mcp_http *h = arg;
    char buf[64];
    job *j;

    (void)what;
    while (read(fd, buf, sizeof buf) > 0)
        ;
    pthread_mutex_lock(&h->mu);
    j = h->done;
    h->done = NULL;
    pthread_mutex_unlock(&h->mu);
    while (j) {
        job *next = j->next;
        send_json(j->req, 200, j->answer, NULL);
        job_free(j);
        j = next;
    }
}

static void enqueue(mcp_http *h, struct evhttp_request *req, json_t *msg,
                    const mcp_session *s)
{
    job *j = xcalloc(1, sizeof *j), **tail;

    j->req = req;
    j->msg = msg;
    j->s = *s;
    pthread_mutex_lock(&h->mu);
    for (tail = &h->todo; *tail; tail = &(*tail)->next)
        ;
    *tail = j;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* ---- sessions ---- */

static sess *session_new(mcp_http *h)
{
    sess *s = &h->sess[0];
    unsigned char raw[16];

    for (int i = 0; i < MAX_SESSIONS; i++) {
        if (!h->sess[i].id[0]) {
            s = &h->sess[i];
            break;
        }
        if (h->sess[i].used < s->used)
            s = &h->sess[i]; /* full: the one silent longest goes */
    }
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return NULL;
    for (int i = 0; i < 16; i++)
        snprintf(s->id + 2 * i, 3, "%02x", raw[i]);
    mcp_session_init(&s->s, h->agent[0] ? h->agent : NULL);
    s->used = ++h->tick;
    return s;
}

static sess *session_find(mcp_http *h, const char *id)
{
    for (int i = 0; id && i < MAX_SESSIONS; i++)
        if (h->sess[i].id[0] && !strcmp(h->sess[i].id, id)) {
            h->sess[i].used = ++h->tick;
            return &h->sess[i];
        }
    return NULL;
}

/* ---- requests ---- */

/* Whether an Origin header names this machine (or there is none). */
static int origin_ok(const char *o)
{
    static const char *const local[] = {"localhost", "127.0.0.1", "[::1]"};

    if (!o)
        return 1;
    if (!strncmp(o, "http://", 7))
        o += 7;
    else if (!strncmp(o, "https://", 8))
        o += 8;
    else
        return 0;
    for (size_t i = 0; i < sizeof local / sizeof *local; i++) {
        size_t n = strlen(local[i]);
        if (!strncmp(o, local[i], n) && (!o[n] || o[n] == ':' || o[n] == '/'))
            return 1;
    }
    return 0;
}

/* The message of a POST, parsed; NULL when answered (an error). */
static json_t *message_of(struct evhttp_request *req)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    json_error_t jerr;
    json_t *msg, *err;

    msg = json_loadb((const char *)evbuffer_pullup(in, -1), len, 0, &jerr);
    if (!msg) {
        err = mcp_parse_error(jerr.text);
        send_json(req, 400, err, NULL);
        json_decref(err);
    }
    return msg;
}

static void post(mcp_http *h, struct evhttp_request *req,
                 const struct evkeyvalq *in)
{
    const char *sid = evhttp_find_header(in, "Mcp-Session-Id");
    const char *ver = evhttp_find_header(in, "MCP-Protocol-Version");
    const char *method;
    json_t *msg, *answer;
    sess *s;

    if (ver && !mcp_version_known(ver)) {
        refuse(req, 400, "unsupported MCP-Protocol-Version");
        return;
    }
    if (!(msg = message_of(req)))
        return;
    method = json_string_value(json_object_get(msg, "method"));
    if (method && !strcmp(method, "initialize")) {
        if (!(s = session_new(h))) {
            json_decref(msg);
            refuse(req, 500, "no randomness for a session id");
            return;
        }
        answer = mcp_handle(h->env, &s->s, msg);
        log_info("mcp", "session %.8s... for %s (protocol %s)", s->id,
                 s->s.agent, s->s.version);
        send_json(req, 200, answer, s->id);
        json_decref(answer);
        json_decref(msg);
        return;
    }
    if (!sid || !(s = session_find(h, sid))) {
        json_decref(msg);
        refuse(req, sid ? 404 : 400, sid ? "no such session (initialize again)"
                                         : "Mcp-Session-Id header required");
        return;
    }
    if (method && json_object_get(msg, "id") && !strcmp(method, "tools/call")) {
        enqueue(h, req, msg, &s->s); /* the worker answers */
        return;
    }
    answer = mcp_handle(h->env, &s->s, msg);
    send_json(req, answer ? 200 : 202, answer, NULL);
    json_decref(answer);
    json_decref(msg);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    mcp_http *h = arg;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    const struct evkeyvalq *in = evhttp_request_get_input_headers(req);

    if (!path || strcmp(path, "/mcp")) {
        refuse(req, 404, "the endpoint is /mcp");
        return;
    }
    if (!origin_ok(evhttp_find_header(in, "Origin"))) {
        refuse(req, 403, "Origin is not of this machine");
        return;
    }
    if (h->token[0] && !hl_bearer_ok(in, h->token, strlen(h->token))) {
        refuse(req, 401, "missing or unknown bearer token");
        return;
    }
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
        refuse(req, 405, "POST only: the server opens no stream of its own");
        return;
    }
    post(h, req, in);
}

mcp_http *mcp_http_start(struct event_base *base, const mcp_env *env,
                         const mcp_http_opts *o, cs_err *err)
{
    mcp_http *h = xcalloc(1, sizeof *h);

    h->env = env;
    h->pipefd[0] = h->pipefd[1] = -1;
    str_copy(h->token, sizeof h->token, o->token ? o->token : "");
    str_copy(h->agent, sizeof h->agent, o->agent ? o->agent : "");
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    if (pipe2(h->pipefd, O_NONBLOCK | O_CLOEXEC) ||
        !(h->wake = event_new(base, h->pipefd[0], EV_READ | EV_PERSIST, on_done, h)) ||
        event_add(h->wake, NULL)) {
        cs_err_set(err, "mcp: cannot set up the event loop");
        goto fail;
    }
    if (pthread_create(&h->worker, NULL, work, h)) {
        cs_err_set(err, "mcp: cannot start its worker thread");
        goto fail;
    }
    h->started = 1;
    h->http = hl_start(base, &(hl_opts){.name = "mcp", .listen_addr = o->listen,
                                        .port = o->port, .max_body = MAX_BODY,
                                        .timeout_s = 60, .request_deadline_s = 60,
                                        .on_request = on_request, .arg = h},
                       err);
    if (!h->http)
        goto fail;
    return h;
fail:
    mcp_http_free(h);
    return NULL;
}

int mcp_http_port(const mcp_http *h)
{
    return hl_port(h->http);
}

void mcp_http_free(mcp_http *h)
{
    job *j;

    if (!h)
        return;
    if (h->started) {
        pthread_mutex_lock(&h->mu);
        h->stopping = 1;
        while ((j = h->todo)) { /* not started: dropped */
            h->todo = j->next;
            job_free(j);
        }
        pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->worker, NULL);
    }
    /* answers not sent go with their connections */
    while ((j = h->done)) {
        h->done = j->next;
        job_free(j);
    }
    hl_free(h->http);
    if (h->wake)
        event_free(h->wake);
    for (int i = 0; i < 2; i++)
        if (h->pipefd[i] >= 0)
            close(h->pipefd[i]);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    explicit_bzero(h->token, sizeof h->token);
    free(h);
}
