#include "core/rlink.h"

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/redisaddr.h"
#include "core/str.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

struct rlink {
    struct event_base *base;
    char addr[512];
    char who[32];
    rlink_hooks hooks;
    void *arg;
    redisAsyncContext *ac; /* NULL: none, a retry is due */
    struct event *retry;
    int backoff_ms, up;
    unsigned gen; /* bumps on every loss: older replies are dropped */
};

static void schedule_retry(rlink *l)
{
    struct timeval tv = {l->backoff_ms / 1000, (l->backoff_ms % 1000) * 1000};

    log_warn(l->who, "redis at %s unavailable; retrying in %d ms", l->addr,
             l->backoff_ms);
    evtimer_add(l->retry, &tv);
    l->backoff_ms = l->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                       : l->backoff_ms * 2;
}

static void on_reply(redisAsyncContext *ac, void *r, void *priv)
{
    rlink *l = ac->data;

    if (!l || (unsigned)(uintptr_t)priv != l->gen || !r)
        return; /* freed, an old connection's, or a loss: the owner resends */
    l->hooks.reply(l->arg, r);
}

/* The connection is gone, and what was sent on it: try again. */
static void lost(rlink *l)
{
    l->ac = NULL; /* hiredis frees it */
    l->up = 0;
    l->gen++;
    if (l->hooks.down)
        l->hooks.down(l->arg);
    schedule_retry(l);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    rlink *l = ac->data;

    if (!l)
        return;
    if (status != REDIS_OK) {
        /* A connect that failed after it started (TCP): hiredis frees the
         * context on return and calls no disconnect callback for it. */
        log_warn(l->who, "redis connect failed: %s", ac->errstr);
        lost(l);
        return;
    }
    log_debug(l->who, "connected to redis at %s", l->addr);
    l->up = 1;
    if (l->hooks.up)
        l->hooks.up(l->arg);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    rlink *l = ac->data;

    (void)status;
    if (!l || l->ac != ac)
        return;
    lost(l);
}

/* 0: a context is attached (it connects in the background), -1: a retry
 * is scheduled. */
static int connect_now(rlink *l)
{
    redisAsyncContext *ac = raddr_connect_async(l->addr);

    if (!ac || ac->err) {
        if (ac)
            redisAsyncFree(ac);
        schedule_retry(l);
        return -1;
    }
    ac->data = l;
    redisLibeventAttach(ac, l->base);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    l->ac = ac;
    return 0;
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    rlink *l = arg;

    (void)fd;
    (void)what;
    if (l->ac || connect_now(l) == 0)
        l->hooks.ready(l->arg);
}

rlink *rlink_new(struct event_base *base, const char *addr, const char *who,
                 const rlink_hooks *hooks, void *arg)
{
    rlink *l = xcalloc(1, sizeof *l);

    l->base = base;
    str_copy(l->addr, sizeof l->addr, addr);
    str_copy(l->who, sizeof l->who, who);
    l->hooks = *hooks;
    l->arg = arg;
    l->backoff_ms = BACKOFF_MIN_MS;
    l->retry = evtimer_new(base, on_retry, l);
    connect_now(l); /* no ready: nothing can be pending yet */
    return l;
}

void rlink_free(rlink *l)
{
    if (!l)
        return;
    if (l->ac) {
        redisAsyncContext *ac = l->ac;
        ac->data = NULL; /* the callbacks run by the free find no link */
        l->ac = NULL;
        redisAsyncFree(ac);
    }
    event_free(l->retry);
    free(l);
}

int rlink_send(rlink *l, const char *buf, size_t len)
{
    if (!l->ac)
        return -1;
    if (redisAsyncFormattedCommand(l->ac, on_reply, (void *)(uintptr_t)l->gen,
                                   buf, len) != REDIS_OK) {
        log_warn(l->who, "cannot queue a redis command; will reconnect");
        return -1; /* it is closing: the owner sends again on ready */
    }
    return 0;
}

int rlink_up(const rlink *l)
{
    return l->up;
}

void rlink_retry(rlink *l)
{
    schedule_retry(l);
}

void rlink_settle(rlink *l)
{
    l->backoff_ms = BACKOFF_MIN_MS;
}
