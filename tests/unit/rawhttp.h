/* A test's HTTP clients that write bytes of their own choosing, on the
 * loop the server under test runs on: one that holds a connection and says
 * nothing, one that sends a head it wrote and reads the answer's head
 * back, and one that trickles a header line every 300 ms and never ends
 * its head. */
#ifndef CS_TEST_RAWHTTP_H
#define CS_TEST_RAWHTTP_H

#include <stdio.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>

#include "check.h"

static inline void rh_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

/* Runs the loop until *flag is set or ms pass; returns *flag. */
static inline int run_until(struct event_base *base, const int *flag, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    struct event *t = evtimer_new(base, rh_timeout, base);

    evtimer_add(t, &tv);
    while (!*flag && evtimer_pending(t, NULL))
        event_base_dispatch(base);
    event_free(t);
    return *flag;
}

/* A client that connects and says nothing: it holds one connection. */
static inline struct bufferevent *hold_connection(struct event_base *base,
                                                  int port)
{
    struct bufferevent *b = bufferevent_socket_new(base, -1,
                                                   BEV_OPT_CLOSE_ON_FREE);
    struct sockaddr_storage ss;
    int len = sizeof ss;
    char addr[32];

    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    REQUIRE(b != NULL);
    REQUIRE(evutil_parse_sockaddr_port(addr, (struct sockaddr *)&ss, &len) == 0);
    REQUIRE(bufferevent_socket_connect(b, (struct sockaddr *)&ss, len) == 0);
    return b;
}

/* A client writing bytes of its own choosing, reading the answer back. */
typedef struct raw {
    struct event_base *base;
    struct bufferevent *b;
    struct event *drip;   /* a trickler's next line */
    char got[4096];
    size_t n;
    int answered, closed; /* a status line came; the server closed */
} raw;

static inline void raw_read(struct bufferevent *b, void *arg)
{
    raw *r = arg;

    r->n += bufferevent_read(b, r->got + r->n, sizeof r->got - 1 - r->n);
    r->got[r->n] = '\0';
    if (strstr(r->got, "\r\n\r\n")) {
        r->answered = 1;
        event_base_loopbreak(r->base);
    }
}

static inline void raw_event(struct bufferevent *b, short what, void *arg)
{
    raw *r = arg;

    (void)b;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        r->closed = 1;
        event_base_loopbreak(r->base);
    }
}

static inline void raw_open(raw *r, struct event_base *base, int port,
                     const char *text)
{
    memset(r, 0, sizeof *r);
    r->base = base;
    r->b = hold_connection(base, port);
    bufferevent_setcb(r->b, raw_read, NULL, raw_event, r);
    bufferevent_enable(r->b, EV_READ | EV_WRITE);
    bufferevent_write(r->b, text, strlen(text));
}

/* Sends more on the connection; the next answer is awaited afresh. */
static inline void raw_send(raw *r, const char *text)
{
    r->answered = 0;
    r->n = 0;
    bufferevent_write(r->b, text, strlen(text));
}

static inline void raw_close(raw *r)
{
    if (r->drip)
        event_free(r->drip);
    bufferevent_free(r->b);
}

/* The answer's status code, 0 when none came within ms. */
static inline int raw_status(raw *r, int ms)
{
    int code = 0;

    run_until(r->base, &r->answered, ms);
    if (r->answered)
        sscanf(r->got, "HTTP/1.%*d %d", &code);
    return code;
}

static inline void drip(evutil_socket_t fd, short what, void *arg)
{
    raw *r = arg;

    (void)fd;
    (void)what;
    bufferevent_write(r->b, "X-Slow: 1\r\n", 11);
}

/* A client that sends a header line every 300 ms and never ends its head:
 * each byte restarts the listener's timeout. */
static inline void trickle(raw *r, struct event_base *base, int port)
{
    struct timeval tv = {0, 300 * 1000};

    raw_open(r, base, port, "GET /slow HTTP/1.1\r\nHost: x\r\n");
    r->drip = event_new(base, -1, EV_PERSIST, drip, r);
    event_add(r->drip, &tv);
}

/* Asks with a raw head; the status code, 0 if none came within 2 s. */
static inline int raw_ask(struct event_base *base, int port, const char *text,
                   raw *r)
{
    int code;

    raw_open(r, base, port, text);
    code = raw_status(r, 2000);
    if (!code)
        fprintf(stderr, "no answer to %.40s...\n", text);
    return code;
}

#endif
