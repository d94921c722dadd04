#include "actions/journal.h"

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/redisaddr.h"
#include "core/str.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

typedef struct jcmd {
    char *buf;
    long long len;
    jr_reply_fn fn;
    void *arg;
} jcmd;

struct journal {
    struct event_base *base;
    char addr[512];
    redisAsyncContext *ac;
    struct event *retry;
    int backoff_ms, up;
    unsigned gen;
    jcmd *q;          /* FIFO: [head, sent) in flight, [sent, tail) waiting */
    size_t head, sent, tail, cap;
};

static void connect_now(journal *j);

static void on_reply(redisAsyncContext *ac, void *r, void *priv)
{
    journal *j = ac->data;
    jcmd c;

    if (!j || (unsigned)(uintptr_t)priv != j->gen || !r)
        return; /* an old connection's reply, or a disconnect: resent */
    c = j->q[j->head++];
    if (c.fn)
        c.fn(c.arg, r);
    free(c.buf);
    if (j->head == j->tail)
        j->head = j->sent = j->tail = 0;
}

static void send_waiting(journal *j)
{
    while (j->ac && j->sent < j->tail) {
        jcmd *c = &j->q[j->sent];
        if (redisAsyncFormattedCommand(j->ac, on_reply, (void *)(uintptr_t)j->gen,
                                       c->buf, (size_t)c->len) != REDIS_OK)
            return; /* the disconnect callback resends */
        j->sent++;
    }
}

static void schedule_retry(journal *j)
{
    struct timeval tv = {j->backoff_ms / 1000, (j->backoff_ms % 1000) * 1000};

    log_warn("journal", "redis at %s unavailable; retrying in %d ms", j->addr,
             j->backoff_ms);
    evtimer_add(j->retry, &tv);
    j->backoff_ms = j->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                       : j->backoff_ms * 2;
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    connect_now(arg);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    journal *j = ac->data;

    if (status != REDIS_OK || !j)
        return; /* the disconnect callback follows */
    j->up = 1;
    j->backoff_ms = BACKOFF_MIN_MS;
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    journal *j = ac->data;

    (void)status;
    if (!j || j->ac != ac)
        return;
    j->ac = NULL;
    j->up = 0;
    j->gen++;
    j->sent = j->head; /* unanswered commands go out again */
    schedule_retry(j);
}

static void connect_now(journal *j)
{
    redisAsyncContext *ac = raddr_connect_async(j->addr);

    if (!ac || ac->err) {
        if (ac)
            redisAsyncFree(ac);
        schedule_retry(j);
        return;
    }
    ac->data = j;
    redisLibeventAttach(ac, j->base);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    j->ac = ac;
    send_waiting(j);
}

journal *jr_new(struct event_base *base, const char *addr, cs_err *err)
{
    journal *j = calloc(1, sizeof *j);

    if (!j) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    j->base = base;
    str_copy(j->addr, sizeof j->addr, addr);
    j->backoff_ms = BACKOFF_MIN_MS;
    j->retry = evtimer_new(base, on_retry, j);
    connect_now(j);
    return j;
}

void jr_cmd(journal *j, jr_reply_fn fn, void *arg, int argc, const char **argv)
{
    jcmd c = {.fn = fn, .arg = arg};

    c.len = redisFormatCommandArgv(&c.buf, argc, argv, NULL);
    if (c.len < 0)
        abort();
    if (j->tail == j->cap) {
        if (j->head > 0) { /* slide the live part to the front */
            memmove(j->q, j->q + j->head, (j->tail - j->head) * sizeof *j->q);
            j->tail -= j->head;
            j->sent -= j->head;
            j->head = 0;
        }
        if (j->tail == j->cap) {
            j->cap = j->cap ? j->cap * 2 : 64;
            j->q = xrealloc(j->q, j->cap * sizeof *j->q);
        }
    }
    j->q[j->tail++] = c;
    send_waiting(j);
}

unsigned long jr_pending(const journal *j)
{
    return (unsigned long)(j->tail - j->head);
}

int jr_connected(const journal *j)
{
    return j->up;
}

void jr_free(journal *j)
{
    if (!j)
        return;
    if (j->ac) {
        redisAsyncContext *ac = j->ac;
        ac->data = NULL;
        j->ac = NULL;
        redisAsyncFree(ac);
    }
    for (size_t i = j->head; i < j->tail; i++) {
        if (j->q[i].fn)
            j->q[i].fn(j->q[i].arg, NULL);
        free(j->q[i].buf);
    }
    free(j->q);
    event_free(j->retry);
    free(j);
}
