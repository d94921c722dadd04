/* The HTTP listener (core/hlisten.c): the port the system chose is read
 * back (IPv4, and IPv6 where the machine has it), requests reach the
 * callback, evhttp answers a body over the limit and a method other than
 * GET and POST without it, the connection limit holds a client back until
 * another connection closes, and a port already taken is an error that
 * names the listener, the address and the port. Slow clients lose their
 * connection at the request deadline. */
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
    test_ipv6(base);
    event_base_free(base);
    return check_report();
}
