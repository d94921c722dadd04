/* The approvals API's listener (actions/approvals.c on core/hlisten.h),
 * with no executor behind it: no request here gets as far as one. The
 * token is judged on a request's head, so an unknown one is refused before
 * the body is read; header fields over the limit are refused at once, and
 * two Content-Length fields too; clients past the connection limit wait,
 * and slow or silent connections are closed at the request deadline; a
 * token sent in a query string never reaches the log. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "actions/approvals.h"
#include "check.h"
#include "rawhttp.h"

#define TOKEN "alice-secret-token"

static approvers *load_approvers(void)
{
    char path[256];
    cs_err err = {{0}};
    approvers *p;
    int fd;

    setenv("APV_TEST_TOKEN", TOKEN, 1);
    check_tmp_template(path, sizeof path, "cascade-approvers");
    fd = mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(dprintf(fd, "alice env:APV_TEST_TOKEN change,job\n") > 0);
    close(fd);
    p = apv_load(path, &err);
    unlink(path);
    REQUIRE(p != NULL);
    return p;
}

static apv_server *start(struct event_base *base)
{
    cs_err err = {{0}};
    apv_server *s = apv_start(base, NULL, load_approvers(),
                              &(apv_opts){.max_connections = 4,
                                          .request_timeout_s = 1},
                              &err);

    REQUIRE(s != NULL);
    return s;
}

/* A head declaring 100 kB, and nothing after it: the answer comes. */
static void test_token_first(struct event_base *base, int port)
{
    raw r;

    CHECK_INT(raw_ask(base, port,
                      "POST /v1/actions/act-1/approve HTTP/1.1\r\nHost: x\r\n"
                      "Content-Length: 100000\r\n\r\n", &r), 401);
    CHECK(strstr(r.got, "Connection: close") != NULL);
    raw_close(&r);
    CHECK_INT(raw_ask(base, port,
                      "POST /v1/actions/act-1/deny HTTP/1.1\r\nHost: x\r\n"
                      "Authorization: Bearer nope\r\n"
                      "Content-Length: 100000\r\n\r\n", &r), 401);
    raw_close(&r);
    /* a body sent anywhere needs a token too */
    CHECK_INT(raw_ask(base, port,
                      "GET /healthz HTTP/1.1\r\nHost: x\r\n"
                      "Content-Length: 100000\r\n\r\n", &r), 401);
    raw_close(&r);
    CHECK_INT(raw_ask(base, port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                      &r), 200);
    raw_close(&r);
}

static void test_query_not_logged(struct event_base *base, int port)
{
    check_capture cap;
    char *log;
    raw r;

    check_stderr_begin(&cap);
    CHECK_INT(raw_ask(base, port,
                      "POST /v1/actions/act-1/approve?token=" TOKEN
                      " HTTP/1.1\r\nHost: x\r\n\r\n", &r), 401);
    raw_close(&r);
    log = check_stderr_end(&cap);
    fputs(log, stderr);
    CHECK(strstr(log, TOKEN) == NULL);
    CHECK(strstr(log, "POST /v1/actions/act-1/approve?<redacted>: 401") !=
          NULL);
    free(log);
}

static void test_head_limits(struct event_base *base, int port)
{
    static char big[100000];
    raw r;

    snprintf(big, sizeof big, "POST /v1/actions/act-1/approve HTTP/1.1\r\n"
             "Authorization: Bearer " TOKEN "\r\nX-Big: %0*d\r\n\r\n",
             90000, 0);
    CHECK_INT(raw_ask(base, port, big, &r), 431);
    raw_close(&r);
    CHECK_INT(raw_ask(base, port,
                      "POST /v1/actions/act-1/approve HTTP/1.1\r\nHost: x\r\n"
                      "Authorization: Bearer " TOKEN "\r\nContent-Length: 2\r\n"
                      "Content-Length: 3\r\n\r\n{}", &r), 400);
    CHECK(strstr(r.got, "Content-Length") != NULL);
    raw_close(&r);
}

/* Four slow clients (a header line every 300 ms, the head never ended)
 * fill the four connections; a fifth waits, and is answered once the
 * deadline (1 s) has closed them. A silent connection is closed too. */
static void test_slow_clients(struct event_base *base, int port)
{
    raw slow[4], r;
    int idle = 0;

    for (int i = 0; i < 4; i++)
        trickle(&slow[i], base, port);
    run_until(base, &idle, 300);
    raw_open(&r, base, port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK_INT(raw_status(&r, 500), 0); /* waits: all four taken */
    CHECK_INT(raw_status(&r, 3000), 200);
    raw_close(&r);
    for (int i = 0; i < 4; i++) {
        CHECK(run_until(base, &slow[i].closed, 1000));
        raw_close(&slow[i]);
    }
    raw_open(&r, base, port, "");
    CHECK(run_until(base, &r.closed, 2500));
    raw_close(&r);
}

int main(void)
{
    struct event_base *base = event_base_new();
    apv_server *s;

    signal(SIGPIPE, SIG_IGN);
    REQUIRE(base != NULL);
    s = start(base);
    test_token_first(base, apv_port(s));
    test_query_not_logged(base, apv_port(s));
    test_head_limits(base, apv_port(s));
    test_slow_clients(base, apv_port(s));
    apv_stop(s);
    event_base_free(base);
    return check_report();
}
