/* The HTTP listener (core/hlisten.c): the port the system chose is read
 * back (IPv4, and IPv6 where the machine has it), requests reach the
 * callback, evhttp answers a body over the limit and a method other than
 * GET and POST without it, the connection limit holds a client back until
 * another connection closes, and a port already taken is an error that
 * names the listener, the address and the port. Slow clients lose their
 * connection at the request deadline; a request's head is judged before
 * its body is read (on_headers, two Content-Length fields, header fields
 * over the limit), and a refused one is answered without it. */
#include <errno.h>
#include <signal.h>

#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/util.h>

#include "check.h"
#include "rawhttp.h"
#include "core/hlisten.h"
#include "core/mem.h"

#define MAX_BODY 1024

typedef struct answer {
    struct event_base *base;
    int done, code;
    char body[256];
} answer;

/* The server's callback: "METHOD PATH BODYLEN". */
static void on_request(struct evhttp_request *req, void *arg)
{
    int *calls = arg;

    (*calls)++;
    evbuffer_add_printf(evhttp_request_get_output_buffer(req), "%s %s %zu",
                        evhttp_request_get_command(req) == EVHTTP_REQ_GET
                            ? "GET" : "POST",
                        evhttp_request_get_uri(req),
                        evbuffer_get_length(evhttp_request_get_input_buffer(req)));
    evhttp_send_reply(req, 200, "OK", NULL);
}

/* ---- client ------------------------------------------------------------- */

static void on_answer(struct evhttp_request *req, void *arg)
{
    answer *a = arg;
    int n;

    a->done = 1;
    if (req) {
        a->code = evhttp_request_get_response_code(req);
        n = evbuffer_remove(evhttp_request_get_input_buffer(req), a->body,
                            sizeof a->body - 1);
        a->body[n > 0 ? n : 0] = '\0';
    }
    event_base_loopbreak(a->base);
}

static int wait_answer(answer *a, int ms)
{
    return run_until(a->base, &a->done, ms);
}

static struct evhttp_connection *send_request(struct event_base *base,
                                              int port, answer *a,
                                              enum evhttp_cmd_type cmd,
                                              size_t body_len)
{
    struct evhttp_connection *conn =
        evhttp_connection_base_new(base, NULL, "127.0.0.1", (ev_uint16_t)port);
    struct evhttp_request *req = evhttp_request_new(on_answer, a);
    char *body = xcalloc(body_len, 1);

    memset(a, 0, sizeof *a);
    a->base = base;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Host", "x");
    evbuffer_add(evhttp_request_get_output_buffer(req), body, body_len);
    free(body);
    REQUIRE(evhttp_make_request(conn, req, cmd, "/x") == 0);
    return conn;
}

static void ask(struct event_base *base, int port, answer *a,
                enum evhttp_cmd_type cmd, size_t body_len)
{
    struct evhttp_connection *conn = send_request(base, port, a, cmd, body_len);

    REQUIRE(wait_answer(a, 10000));
    evhttp_connection_free(conn);
}

/* ---- cases -------------------------------------------------------------- */

static hlisten *start(struct event_base *base, const char *addr, int port,
                      int max_conns, int *calls, cs_err *err)
{
    return hl_start(base, &(hl_opts){.name = "test", .listen_addr = addr,
                                     .port = port, .max_body = MAX_BODY,
                                     .max_connections = max_conns,
                                     .on_request = on_request, .arg = calls},
                    err);
}

static void test_requests(struct event_base *base, int port, int *calls)
{
    answer a;

    ask(base, port, &a, EVHTTP_REQ_GET, 0);
    CHECK_INT(a.code, 200);
    CHECK_STR(a.body, "GET /x 0");
    ask(base, port, &a, EVHTTP_REQ_POST, MAX_BODY);
    CHECK_INT(a.code, 200);
    CHECK_STR(a.body, "POST /x 1024");
    CHECK_INT(*calls, 2);
    /* evhttp's own answers: the callback never sees these */
    ask(base, port, &a, EVHTTP_REQ_POST, 64 * MAX_BODY);
    CHECK_INT(a.code, 413);
    ask(base, port, &a, EVHTTP_REQ_PUT, 0);
    CHECK_INT(a.code, 501);
    CHECK_INT(*calls, 2);
}

static void test_taken(struct event_base *base, int port)
{
    cs_err err = {{0}};
    char want[128];
    int calls = 0;

    REQUIRE(start(base, "127.0.0.1", port, 0, &calls, &err) == NULL);
    snprintf(want, sizeof want, "test cannot listen on 127.0.0.1:%d: %s", port,
             strerror(EADDRINUSE));
    CHECK_STR(err.msg, want);
    REQUIRE(start(base, NULL, 65536, 0, &calls, &err) == NULL);
    CHECK_STR(err.msg, "test port 65536 is out of range");
}

/* One connection allowed: a second client waits until the first closes. */
static void test_conn_limit(struct event_base *base)
{
    cs_err err = {{0}};
    int calls = 0;
    hlisten *h = start(base, NULL, 0, 1, &calls, &err);
    struct evhttp_connection *conn;
    struct bufferevent *held;
    answer idle = {.base = base}, a;

    REQUIRE(h != NULL);
    held = hold_connection(base, hl_port(h));
    wait_answer(&idle, 300); /* the server accepts it: now full */
    conn = send_request(base, hl_port(h), &a, EVHTTP_REQ_GET, 0);
    CHECK(!wait_answer(&a, 700));
    bufferevent_free(held);
    REQUIRE(wait_answer(&a, 5000));
    CHECK_INT(a.code, 200);
    evhttp_connection_free(conn);
    hl_free(h);
}

/* ---- the request deadline ----------------------------------------------- */

/* Four trickling clients fill a listener of four connections; each gets
 * one second for its request, so a client behind them is answered soon
 * after, and the tricklers find their connections closed. */
static void test_deadline(struct event_base *base)
{
    cs_err err = {{0}};
    int calls = 0, idle = 0;
    hlisten *h = hl_start(base, &(hl_opts){.name = "test", .max_connections = 4,
                                           .request_deadline_s = 1,
                                           .on_request = on_request,
                                           .arg = &calls}, &err);
    struct evhttp_connection *conn;
    raw slow[4];
    answer a;

    REQUIRE(h != NULL);
    for (int i = 0; i < 4; i++)
        trickle(&slow[i], base, hl_port(h));
    run_until(base, &idle, 300); /* the server accepts them: now full */
    conn = send_request(base, hl_port(h), &a, EVHTTP_REQ_GET, 0);
    CHECK(wait_answer(&a, 4000));
    CHECK_INT(a.code, 200);
    for (int i = 0; i < 4; i++) {
        CHECK(run_until(base, &slow[i].closed, 1000));
        raw_close(&slow[i]);
    }
    evhttp_connection_free(conn);
    hl_free(h);
}

/* ---- the head, judged before the body ----------------------------------- */

typedef struct judged {
    int calls, heads;
    char seen[128];
} judged;

/* Refuses a request without "X-Key: k"; notes what it saw. */
static int on_headers(const hl_head *hd, void *arg)
{
    judged *j = arg;
    const char *key = evhttp_find_header(hd->headers, "X-Key");

    j->heads++;
    snprintf(j->seen, sizeof j->seen, "%s %s %s %d", hd->method, hd->uri,
             hd->path, hd->has_body);
    return key && !strcmp(key, "k") ? 0 : 401;
}

static void on_judged_request(struct evhttp_request *req, void *arg)
{
    on_request(req, &((judged *)arg)->calls);
}

static void on_refused(struct evhttp_request *req, int code, const char *why,
                       void *arg)
{
    (void)arg;
    evbuffer_add_printf(evhttp_request_get_output_buffer(req), "refused %s",
                        why ? why : "-");
    evhttp_send_reply(req, code, NULL, NULL);
}

static hlisten *start_judged(struct event_base *base, judged *j)
{
    cs_err err = {{0}};
    hlisten *h = hl_start(base, &(hl_opts){.name = "test",
                                           .max_body = MAX_BODY,
                                           .on_request = on_judged_request,
                                           .on_headers = on_headers,
                                           .on_refused = on_refused,
                                           .arg = j}, &err);

    REQUIRE(h != NULL);
    return h;
}

/* A refused request is answered from its head alone: the client sends a
 * head declaring a megabyte and nothing more. */
static void test_head_refused(struct event_base *base)
{
    judged j = {0};
    hlisten *h = start_judged(base, &j);
    raw r;

    CHECK_INT(raw_ask(base, hl_port(h),
                      "POST /in?q=1 HTTP/1.1\r\nHost: x\r\n"
                      "Content-Length: 1000000\r\n\r\n", &r), 401);
    CHECK_STR(j.seen, "POST /in?q=1 /in 1");
    CHECK(strstr(r.got, "refused -") != NULL);
    CHECK(strstr(r.got, "Connection: close") != NULL);
    CHECK(run_until(base, &r.closed, 2000));
    raw_close(&r);
    /* with the key: the body is read and the request served */
    CHECK_INT(raw_ask(base, hl_port(h),
                      "POST /in HTTP/1.1\r\nHost: x\r\nX-Key: k\r\n"
                      "Content-Length: 5\r\n\r\nhello", &r), 200);
    CHECK(strstr(r.got, "POST /in 5") != NULL);
    /* the next request on that connection is judged too */
    raw_send(&r, "GET /again HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK_INT(raw_status(&r, 2000), 401);
    raw_close(&r);
    /* and so is one sent before the answer to the one before it */
    raw_open(&r, base, hl_port(h),
             "POST /in HTTP/1.1\r\nX-Key: k\r\nContent-Length: 2\r\n\r\nhi"
             "POST /in HTTP/1.1\r\nContent-Length: 9\r\n\r\nsmuggled!");
    CHECK(run_until(base, &r.closed, 2000));
    CHECK(strstr(r.got, "HTTP/1.1 200") != NULL);
    CHECK(strstr(r.got, "HTTP/1.1 401") != NULL);
    CHECK(strstr(r.got, "POST /in 9") == NULL);
    raw_close(&r);
    CHECK_INT(j.calls, 2);
    CHECK_INT(j.heads, 5);
    hl_free(h);
}

/* Two Content-Length fields make a request invalid (RFC 9112 6.3); header
 * fields over max_headers are refused with 431, before any body. */
static void test_head_limits(struct event_base *base)
{
    judged j = {0};
    hlisten *h = start_judged(base, &j);
    char big[40000];
    raw r;

    CHECK_INT(raw_ask(base, hl_port(h),
                      "POST /in HTTP/1.1\r\nX-Key: k\r\nContent-Length: 5\r\n"
                      "Content-Length: 6\r\n\r\nhello!", &r), 400);
    CHECK(strstr(r.got, "refused two Content-Length fields") != NULL);
    raw_close(&r);
    snprintf(big, sizeof big, "POST /in HTTP/1.1\r\nX-Key: k\r\n"
             "Content-Length: 1000000\r\nX-Big: %0*d\r\n\r\n", 30000, 0);
    CHECK_INT(raw_ask(base, hl_port(h), big, &r), 431);
    raw_close(&r);
    CHECK_INT(j.calls, 0);
    CHECK_INT(j.heads, 0);
    hl_free(h);
}

static void test_ipv6(struct event_base *base)
{
    cs_err err = {{0}};
    int calls = 0;
    hlisten *h = start(base, "::1", 0, 0, &calls, &err);

    if (!h) {
        printf("no IPv6 loopback here (%s): IPv6 readback not checked\n",
               err.msg);
        return;
    }
    CHECK(hl_port(h) > 0);
    hl_free(h);
}

int main(void)
{
    cs_err err = {{0}};
    struct event_base *base = event_base_new();
    int calls = 0;
    hlisten *h;

    /* a client that gives up on a 413 must not kill the process */
    signal(SIGPIPE, SIG_IGN);
    REQUIRE(base != NULL);
    h = start(base, "127.0.0.1", 0, 0, &calls, &err);
    REQUIRE(h != NULL);
    REQUIRE(hl_port(h) > 0);
    test_requests(base, hl_port(h), &calls);
    test_taken(base, hl_port(h));
    hl_free(h);
    hl_free(NULL);
    test_conn_limit(base);
    test_deadline(base);
    test_head_refused(base);
    test_head_limits(base);
    test_ipv6(base);
    event_base_free(base);
    return check_report();
}
