#include "core/rlink.h"

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/cmdq.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/rconn.h"
#include "core/str.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
/* A Sentinel's answer, its connect included: one that is down or cut off
 * costs this much of a lookup, then the next is asked. */
#define SENTINEL_MS 1000
/* A connection up and through its handshake: a Redis that accepts and
 * never answers is given up on, and tried again. */
#define HELLO_MS 5000
/* Bytes sent and not yet answered on the data connection at most; the
 * rest wait in the link's queue (core/cmdq.h says why). A few hundred
 * commands: enough to keep Redis busy, small enough for hiredis's buffer. */
#define PIPE_BYTES (256 * 1024)

struct rlink {
    struct event_base *base;
    rtarget t;
    char addr[256]; /* the data connection's: t's, or the Sentinels' master */
    char who[32];
    rlink_hooks hooks;
    void *arg;
    redisAsyncContext *ac; /* the data connection; NULL: none, a retry is due */
    redisAsyncContext *sc; /* a Sentinel being asked; NULL: none */
    rconn_cmd hello[RCONN_HELLO_MAX], ask[2];
    int nhello, nask;
    int hello_at;          /* handshake replies come so far */
    int sentinel, asked;   /* the Sentinel asked; how many this round */
    struct event *retry, *deadline;
    int backoff_ms, up;
    unsigned gen; /* bumps on every loss: older replies are dropped */
    cmdq *q;      /* the data connection's commands in flight and waiting */
};

static void begin(rlink *l);

/* "ADDR (user U, db N)" of what the link reaches, for the log. */
static const char *where(const rlink *l, char *buf, size_t len)
{
    rt_describe(&l->t, l->addr[0] ? l->addr : NULL, buf, len);
    return buf;
}

static void schedule_retry(rlink *l)
{
    struct timeval tv = {l->backoff_ms / 1000, (l->backoff_ms % 1000) * 1000};
    char w[512];

    log_warn(l->who, "redis at %s unavailable; retrying in %d ms",
             where(l, w, sizeof w), l->backoff_ms);
    evtimer_add(l->retry, &tv);
    l->backoff_ms = l->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                       : l->backoff_ms * 2;
}

static void arm(rlink *l, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    evtimer_add(l->deadline, &tv);
}

/* Frees a context of ours: its callbacks, run by the free (now, or when
 * the callback it is in returns), find no link. */
static void drop_ctx(redisAsyncContext **ac)
{
    redisAsyncContext *c = *ac;

    *ac = NULL;
    if (c) {
        c->data = NULL;
        redisAsyncFree(c);
    }
}

/* The data connection is gone (already freed, or dropped here), and what
 * was sent on it: down when it was up, and a new one after the back-off. */
static void lost(rlink *l)
{
    int was_up = l->up;

    drop_ctx(&l->ac);
    evtimer_del(l->deadline);
    l->up = 0;
    l->gen++;
    cq_clear(l->q);
    if (was_up && l->hooks.down)
        l->hooks.down(l->arg);
    schedule_retry(l);
}

/* ---- the data connection ---- */

static void on_reply(redisAsyncContext *ac, void *r, void *priv);

/* One command to hiredis, in flight until answered: 0, or -1 when the
 * connection is closing (its loss follows; the owner sends again). */
static int put(rlink *l, const char *buf, size_t len)
{
    if (redisAsyncFormattedCommand(l->ac, on_reply, (void *)(uintptr_t)l->gen,
                                   buf, len) != REDIS_OK) {
        log_warn(l->who, "cannot queue a redis command; will reconnect");
        return -1;
    }
    cq_sent(l->q, len);
    return 0;
}

/* The commands waiting, as far as the window allows. */
static void pump(rlink *l)
{
    const char *buf;
    size_t len;

    while (l->ac && l->up && cq_next(l->q, &buf, &len))
        if (put(l, buf, len))
            return;
}

static void on_reply(redisAsyncContext *ac, void *r, void *priv)
{
    rlink *l = ac->data;
    char why[200];

    if (!l || (unsigned)(uintptr_t)priv != l->gen || !r)
        return; /* freed, an old connection's, or a loss: the owner resends */
    cq_answered(l->q);
    if (rconn_moved(r)) {
        snprintf(why, sizeof why, "answered '%.120s'", ((redisReply *)r)->str);
        rlink_reconnect(l, why);
        return;
    }
    l->hooks.reply(l->arg, r);
    pump(l); /* nothing when the hook dropped the connection */
}

static void on_hello(redisAsyncContext *ac, void *r, void *priv)
{
    rlink *l = ac->data;
    const rconn_cmd *c;
    cs_err err;

    if (!l || (unsigned)(uintptr_t)priv != l->gen || !r)
        return;
    c = &l->hello[l->hello_at++];
    if (rconn_hello_ok(&l->t, l->addr, c, r, &err)) {
        /* A replica where the master was: a failover under way, not a
         * mistake of the operator's. */
        if (!strcmp(c->argv[0], "ROLE"))
            log_warn(l->who, "%s", err.msg);
        else
            log_error(l->who, "%s", err.msg);
        lost(l);
        return;
    }
    if (l->hello_at < l->nhello)
        return;
    evtimer_del(l->deadline);
    log_debug(l->who, "connected to redis at %s", l->addr);
    l->up = 1;
    if (l->hooks.up)
        l->hooks.up(l->arg);
    l->hooks.ready(l->arg);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    rlink *l = ac->data;

    if (!l || ac != l->ac || status == REDIS_OK)
        return;
    /* A connect that failed after it started (TCP): hiredis frees the
     * context on return and calls no disconnect callback for it. */
    log_warn(l->who, "redis connect to %s failed: %s", l->addr, ac->errstr);
    l->ac = NULL;
    lost(l);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    rlink *l = ac->data;

    (void)status;
    if (!l || l->ac != ac)
        return;
    l->ac = NULL; /* hiredis frees it */
    lost(l);
}

/* A new context of ours on the loop: its callbacks find l in its data. */
static void attach(rlink *l, redisAsyncContext *ac,
                   redisConnectCallback *on_conn,
                   redisDisconnectCallback *on_disc)
{
    ac->data = l;
    redisLibeventAttach(ac, l->base);
    redisAsyncSetConnectCallback(ac, on_conn);
    redisAsyncSetDisconnectCallback(ac, on_disc);
}

/* Connects to l->addr; the handshake goes out at once (hiredis holds it
 * until the connection is made) and ready comes when it answered. */
static void connect_master(rlink *l)
{
    redisAsyncContext *ac = rconn_async(l->addr);
    void *gen = (void *)(uintptr_t)l->gen;

    if (!ac || ac->err) {
        log_warn(l->who, "redis connect to %s failed: %s", l->addr,
                 ac ? ac->errstr : "not an address");
        if (ac)
            redisAsyncFree(ac);
        schedule_retry(l);
        return;
    }
    attach(l, ac, on_connect, on_disconnect);
    l->ac = ac;
    l->hello_at = 0;
    for (int i = 0; i < l->nhello; i++)
        redisAsyncCommandArgv(ac, on_hello, gen, l->hello[i].argc,
                              l->hello[i].argv, NULL);
    arm(l, HELLO_MS);
}

/* ---- the Sentinels ---- */

static void ask_sentinel(rlink *l);

/* The Sentinel asked did not answer: the next one, or, when every one
 * of this round failed, a retry after the back-off. */
static void sentinel_failed(rlink *l, const char *why)
{
    drop_ctx(&l->sc);
    log_warn(l->who, "%s", why);
    l->sentinel = (l->sentinel + 1) % l->t.nsentinels;
    if (++l->asked < l->t.nsentinels) {
        ask_sentinel(l);
        return;
    }
    evtimer_del(l->deadline);
    log_warn(l->who, "no sentinel named the master '%s'", l->t.master);
    schedule_retry(l);
}

static void found_master(rlink *l, const char *addr)
{
    if (strcmp(addr, l->addr)) {
        if (l->addr[0])
            log_info(l->who, "redis: master of '%s' is now %s (was %s)",
                     l->t.master, addr, l->addr);
        else
            log_info(l->who, "redis: master of '%s' is %s", l->t.master,
                     addr);
        str_copy(l->addr, sizeof l->addr, addr);
    }
    connect_master(l);
}

static void on_sentinel_reply(redisAsyncContext *ac, void *r, void *priv)
{
    rlink *l = ac->data;
    int i = (int)(uintptr_t)priv;
    char addr[256];
    cs_err err;

    if (!l || ac != l->sc || !r)
        return; /* a loss is told by the disconnect */
    if (rconn_answer(&l->t, l->t.sentinels[l->sentinel], &l->ask[i], r, addr,
                     sizeof addr, &err)) {
        sentinel_failed(l, err.msg);
        return;
    }
    if (i + 1 < l->nask)
        return; /* AUTH went through; the lookup's answer follows */
    drop_ctx(&l->sc);
    evtimer_del(l->deadline);
    found_master(l, addr);
}

static void sentinel_gone(rlink *l, const char *errstr)
{
    char why[800];

    snprintf(why, sizeof why, "sentinel %s: %s", l->t.sentinels[l->sentinel],
             errstr);
    sentinel_failed(l, why);
}

static void on_sentinel_connect(const redisAsyncContext *ac, int status)
{
    rlink *l = ac->data;

    if (!l || ac != l->sc || status == REDIS_OK)
        return;
    l->sc = NULL; /* hiredis frees it on return */
    sentinel_gone(l, ac->errstr);
}

static void on_sentinel_disconnect(const redisAsyncContext *ac, int status)
{
    rlink *l = ac->data;

    (void)status;
    if (!l || ac != l->sc)
        return;
    l->sc = NULL; /* hiredis frees it */
    sentinel_gone(l, ac->errstr[0] ? ac->errstr : "connection closed");
}

static void ask_sentinel(rlink *l)
{
    redisAsyncContext *sc = rconn_async(l->t.sentinels[l->sentinel]);

    if (!sc || sc->err) {
        char e[128];
        str_copy(e, sizeof e, sc ? sc->errstr : "out of memory");
        if (sc)
            redisAsyncFree(sc);
        sentinel_gone(l, e);
        return;
    }
    attach(l, sc, on_sentinel_connect, on_sentinel_disconnect);
    l->sc = sc;
    for (int i = 0; i < l->nask; i++)
        redisAsyncCommandArgv(sc, on_sentinel_reply, (void *)(uintptr_t)i,
                              l->ask[i].argc, l->ask[i].argv, NULL);
    arm(l, SENTINEL_MS);
}

/* ---- timers ---- */

/* A new connection: the master from the Sentinels first, or straight to
 * the address. */
static void begin(rlink *l)
{
    if (!l->t.nsentinels) {
        str_copy(l->addr, sizeof l->addr, l->t.addr);
        connect_master(l);
        return;
    }
    l->asked = 0;
    ask_sentinel(l);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    rlink *l = arg;
    char w[512], why[600];

    (void)fd;
    (void)what;
    if (l->sc) {
        snprintf(why, sizeof why, "no answer within %d ms", SENTINEL_MS);
        sentinel_gone(l, why);
    } else if (l->ac && !l->up) {
        log_warn(l->who, "redis at %s: not connected and through its "
                 "handshake within %d ms", where(l, w, sizeof w), HELLO_MS);
        lost(l);
    }
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    rlink *l = arg;

    (void)fd;
    (void)what;
    if (l->ac && l->up)
        l->hooks.ready(l->arg);
    else if (!l->ac && !l->sc)
        begin(l);
    /* else a connection is on its way: ready comes with its handshake */
}

/* ---- the owner's side ---- */

rlink *rlink_new(struct event_base *base, const rtarget *t, const char *who,
                 const rlink_hooks *hooks, void *arg)
{
    rlink *l = xcalloc(1, sizeof *l);

    l->base = base;
    l->t = *t;
    str_copy(l->who, sizeof l->who, who);
    l->hooks = *hooks;
    l->arg = arg;
    l->backoff_ms = BACKOFF_MIN_MS;
    l->nhello = rconn_hello(&l->t, l->hello);
    l->nask = rconn_ask(&l->t, l->ask);
    l->retry = evtimer_new(base, on_retry, l);
    l->deadline = evtimer_new(base, on_deadline, l);
    l->q = cq_new(PIPE_BYTES);
    begin(l); /* no hook runs before the loop does */
    return l;
}

void rlink_free(rlink *l)
{
    if (!l)
        return;
    drop_ctx(&l->sc);
    drop_ctx(&l->ac);
    event_free(l->retry);
    event_free(l->deadline);
    cq_free(l->q);
    rt_wipe(&l->t);
    explicit_bzero(l->hello, sizeof l->hello);
    explicit_bzero(l->ask, sizeof l->ask);
    free(l);
}

int rlink_send(rlink *l, const char *buf, size_t len)
{
    if (!l->ac || !l->up)
        return -1;
    if (!cq_may_send(l->q)) {
        cq_hold(l->q, buf, len); /* goes as answers make room */
        return 0;
    }
    return put(l, buf, len);
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

void rlink_reconnect(rlink *l, const char *why)
{
    char w[512];

    if (!l->ac)
        return; /* already lost: a retry is due */
    log_warn(l->who, "redis at %s %s; connecting again%s",
             where(l, w, sizeof w), why,
             l->t.nsentinels ? " through the sentinels" : "");
    lost(l);
}

int rlink_waits(const rlink *l)
{
    return l->t.wait_replicas;
}

int rlink_send_wait(rlink *l)
{
    rconn_cmd w;
    char *cmd;
    int len, rc;

    if (!rconn_wait(&l->t, &w))
        return 0;
    /* formatted, to keep its place behind the commands still waiting */
    len = redisFormatCommandArgv(&cmd, w.argc, w.argv, NULL);
    if (len < 0)
        abort(); /* out of memory: see core/mem.h */
    rc = rlink_send(l, cmd, (size_t)len);
    redisFreeCommand(cmd);
    return rc ? -1 : 1;
}

int rlink_waited(rlink *l, const redisReply *reply)
{
    char w[512];
    cs_err err;

    if (rconn_waited(&l->t, reply, &err))
        return 1;
    log_warn(l->who, "redis at %s: %s", where(l, w, sizeof w), err.msg);
    return 0;
}
