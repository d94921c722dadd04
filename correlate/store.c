#include "correlate/store.h"

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/rconn.h"
#include "core/rlink.h"
#include "core/strmap.h"
#include "core/ts.h"

/* A batch's writes to one hash go as one HSET (or HDEL) with many fields,
 * up to these: Redis spends most of a one-field HSET on the command itself
 * (a million new threshold states in ten seconds kept it busy 40-80 ms per
 * batch of 10 000; gathered, 30-40 ms). The caps keep one command short
 * next to the batch it belongs to, and its buffer small. Up to
 * OPEN_GROUPS hashes gather at once: an incident's writes go to four
 * (its record, its state, the outbox, its job), one after the other, and
 * a burst of 10,000 openings was 50,000 commands gathered by one. */
/* A batch unacknowledged this long is reported; then after twice as
 * long, up to once a minute. */
#define STALL_FIRST_S 5
#define STALL_MAX_S 60

#define GROUP_MAX_FIELDS 1024
#define GROUP_MAX_BYTES (256 * 1024)
#define OPEN_GROUPS 8

typedef struct cmd {
    char *buf; /* RESP-formatted command */
    int len;
} cmd;

/* The command being built (an HSET or HDEL gathers more writes to its
 * hash): its key, and the arguments after the key already written as
 * Redis's protocol. */
struct group {
    const char *verb; /* NULL: none open */
    char *key;
    size_t keycap;
    int args;
    char *body;
    size_t len, cap;
    unsigned long opened; /* when, in the store's count: the oldest goes */
};

/* A flushed batch: its commands, kept until Redis acknowledged them all
 * (and its WAIT said enough replicas have them), for sending again. */
typedef struct batch {
    cmd *cmds;
    size_t n;
    store_done_fn done;
    void *arg;
    int64_t flushed_at; /* mono */
    size_t due;         /* replies due on this connection: 0 when unsent */
} batch;

struct store {
    rlink *link;
    char prefix[128];
    cmd *q;          /* queued for the next batch */
    size_t nq, capq;
    /* Batches sent and not yet acknowledged, oldest first: Redis answers
     * one connection's commands in order, so the replies are the first
     * one's, then the next one's. A batch is acknowledged only after every
     * one before it. */
    batch *fl;
    size_t nfl, capfl;
    size_t acked;    /* replies of the first batch in */
    size_t refused;  /* error replies in the first batch */
    int unconfirmed; /* its WAIT found too few replicas */
    int hold; /* a refused batch waits for its retry: nothing goes before */
    char first_refusal[160]; /* the first of them, for the one log line */
    struct event *stall;     /* says so while a batch waits (STALL_*) */
    int stall_s;             /* when the stall timer fires next, in s */
    strmap *trims;   /* key -> int64_t cutoff, coalesced per batch */
    unsigned long sent;
    unsigned long writes; /* HSET and HDEL fields queued, over all batches */
    struct group g[OPEN_GROUPS]; /* hash writes gathering, one hash each */
    struct group solo;           /* any other command, encoded alone */
    struct group *last;          /* the one written last: most writes' */
    unsigned long opened;
};

static void push(store *st, char *buf, int len)
{
    if (len < 0)
        abort();
    if (st->nq == st->capq) {
        st->capq = st->capq ? st->capq * 2 : 256;
        st->q = xrealloc(st->q, st->capq * sizeof *st->q);
    }
    st->q[st->nq++] = (cmd){buf, len};
}

/* Writes n in decimal at o; returns the end. */
static char *put_uint(char *o, size_t n)
{
    char tmp[24];
    int i = 0;

    do
        tmp[i++] = (char)('0' + n % 10);
    while ((n /= 10) > 0);
    while (i > 0)
        *o++ = tmp[--i];
    return o;
}

/* Appends one bulk string ("$LEN\r\nDATA\r\n") with pre in front of it. */
static char *put_bulk(char *o, const char *pre, size_t pl, const char *v,
                      size_t vl)
{
    *o++ = '$';
    o = put_uint(o, pl + vl);
    *o++ = '\r', *o++ = '\n';
    memcpy(o, pre, pl);
    memcpy(o + pl, v, vl);
    o += pl + vl;
    *o++ = '\r', *o++ = '\n';
    return o;
}

/* Queues the open command, if any, encoded here as Redis's protocol:
 * formatting "HSET %s%s %s %s" for every write (hiredis parses the
 * format, then sprintf's each length) was an eighth of the correlator's
 * time with a million live keys. The buffer is malloc'd, as
 * redisFormatCommand's is. */
static void group_close(store *st, struct group *g)
{
    size_t pl, kl, vl;
    char *buf, *o;

    if (!g->verb)
        return;
    pl = strlen(st->prefix);
    kl = strlen(g->key);
    vl = strlen(g->verb);
    buf = xmalloc(64 + vl + pl + kl + g->len);
    o = buf;
    *o++ = '*';
    o = put_uint(o, 2 + (size_t)g->args);
    *o++ = '\r', *o++ = '\n';
    o = put_bulk(o, "", 0, g->verb, vl);
    o = put_bulk(o, st->prefix, pl, g->key, kl);
    memcpy(o, g->body, g->len);
    o += g->len;
    if (o - buf > INT_MAX)
        abort();
    push(st, buf, (int)(o - buf));
    g->verb = NULL;
    g->len = 0;
    g->args = 0;
}

/* Every group open, in the order they opened. */
static void groups_close(store *st)
{
    for (;;) {
        struct group *first = NULL;
        for (int i = 0; i < OPEN_GROUPS; i++)
            if (st->g[i].verb && (!first || st->g[i].opened < first->opened))
                first = &st->g[i];
        if (!first)
            return;
        group_close(st, first);
    }
}

/* The group a write to key joins: the one open on key, else a free one,
 * else the oldest, closed first. Each hash's writes stay in the order
 * made (a group on key is closed before another opens on it). Between
 * hashes the order changes: nothing of a batch is acted on (its outputs
 * published, its offsets committed) before Redis acknowledged all of it,
 * and a batch a crash cut short is made again either way, from the
 * signals after the last committed offset. */
static struct group *group_for(store *st, const char *key)
{
    struct group *free_g = NULL, *oldest = NULL;

    /* a storm's writes go to one hash in a row: one compare, not eight */
    if (st->last && st->last->verb && !strcmp(st->last->key, key))
        return st->last;
    for (int i = 0; i < OPEN_GROUPS; i++) {
        struct group *g = &st->g[i];
        if (!g->verb) {
            if (!free_g)
                free_g = g;
        } else if (!strcmp(g->key, key)) {
            return st->last = g;
        } else if (!oldest || g->opened < oldest->opened) {
            oldest = g;
        }
    }
    if (!free_g) {
        group_close(st, oldest);
        free_g = oldest;
    }
    return st->last = free_g;
}

/* Adds the arguments after the key (at most 2) of one command to g when
 * it is open with the same command on the same key, else closes g and
 * opens it anew. Only hash writes (HSET: field, value; HDEL: field) are
 * left open for more: Redis applies a command's fields in order, so the
 * hash ends as the separate writes would leave it. (HSET of many fields
 * needs Redis 4.0.) */
static void group_add(store *st, struct group *g, const char *verb,
                      const char *key, const char **args, int n)
{
    size_t lens[2], need = 0, kl;

    if (n < 0 || n > 2)
        abort();
    for (int i = 0; i < n; i++) {
        lens[i] = strlen(args[i]);
        need += lens[i] + 32;
    }
    if (g->verb && (strcmp(g->verb, verb) || strcmp(g->key, key) ||
                    g->args + n > GROUP_MAX_FIELDS * n ||
                    g->len + need > GROUP_MAX_BYTES))
        group_close(st, g);
    if (!g->verb) {
        kl = strlen(key);
        if (kl + 1 > g->keycap) {
            g->keycap = kl + 1;
            g->key = xrealloc(g->key, g->keycap);
        }
        memcpy(g->key, key, kl + 1);
        g->verb = verb;
        g->opened = ++st->opened;
    }
    if (g->len + need > g->cap) {
        g->cap = (g->len + need) * 2;
        g->body = xrealloc(g->body, g->cap);
    }
    for (int i = 0; i < n; i++)
        g->len = (size_t)(put_bulk(g->body + g->len, "", 0, args[i], lens[i]) -
                          g->body);
    g->args += n;
}

/* Any command but a hash write goes alone, at once: its key is a window,
 * never a hash gathering (Redis refuses a sorted-set command on a hash),
 * so the order against the groups does not matter. argv: the command, its
 * key (the store's prefix goes in front), at most 2 more. */
static void push_argv(store *st, int argc, const char **argv)
{
    group_add(st, &st->solo, argv[0], argv[1], argv + 2, argc - 2);
    group_close(st, &st->solo);
}

static void window_add(void *ctx, const char *key, int64_t ts,
                       const char *member)
{
    char score[32];

    snprintf(score, sizeof score, "%lld", (long long)ts);
    push_argv(ctx, 4, (const char *[]){"ZADD", key, score, member});
}

static void window_trim(void *ctx, const char *key, int64_t before)
{
    store *st = ctx;
    int64_t *cut = strmap_get(st->trims, key);

    if (!cut) {
        cut = xmalloc(sizeof *cut);
        *cut = before;
        strmap_put(st->trims, key, cut);
    } else if (before > *cut) {
        *cut = before;
    }
}

static void hash_put(void *ctx, const char *key, const char *field,
                     const char *value)
{
    store *st = ctx;

    group_add(st, group_for(st, key), "HSET", key,
              (const char *[]){field, value}, 2);
    st->writes++;
}

static void hash_del(void *ctx, const char *key, const char *field)
{
    store *st = ctx;

    group_add(st, group_for(st, key), "HDEL", key, (const char *[]){field}, 1);
    st->writes++;
}

static const eng_store_ops ops = {window_add, window_trim, hash_put, hash_del};

const eng_store_ops *store_ops(void)
{
    return &ops;
}

/* One ZREMRANGEBYSCORE per window key per batch, not per signal. */
static void queue_trims(store *st)
{
    size_t pos = 0;
    const char *key;
    void *v;

    while (strmap_next(st->trims, &pos, &key, &v)) {
        char hi[32];
        snprintf(hi, sizeof hi, "(%lld", (long long)*(int64_t *)v);
        push_argv(st, 4, (const char *[]){"ZREMRANGEBYSCORE", key, "-inf", hi});
    }
    strmap_free(st->trims, free);
    st->trims = strmap_new();
}

static void free_cmds(cmd *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].buf); /* malloc'd by group_close */
    free(v);
}

static void stall_arm(store *st)
{
    struct timeval first = {STALL_FIRST_S, 0};

    st->stall_s = STALL_FIRST_S;
    evtimer_add(st->stall, &first);
}

/* The first batch is acknowledged: it goes, and its owner is told. The
 * next ones answered already (an empty batch needs no reply) follow. */
static void batch_acked(store *st)
{
    while (st->nfl > 0 && st->fl[0].due == st->acked &&
           (st->acked > 0 || st->fl[0].n == 0)) {
        batch b = st->fl[0];
        if (st->stall_s > STALL_FIRST_S)
            log_info("store", "redis acknowledged the batch after %lld s",
                     (long long)((ts_mono() - b.flushed_at) / 1000000));
        memmove(st->fl, st->fl + 1, --st->nfl * sizeof *st->fl);
        st->acked = 0;
        free_cmds(b.cmds, b.n);
        rlink_settle(st->link);
        evtimer_del(st->stall);
        if (st->nfl > 0)
            stall_arm(st);
        else
            st->stall_s = 0;
        /* may flush another batch: it goes to the end */
        if (b.done)
            b.done(b.arg);
    }
}

/* The first batch's replies are all in: acknowledged, or sent again. */
static void batch_answered(store *st)
{
    size_t refused = st->refused;
    int unconfirmed = st->unconfirmed;

    st->refused = 0;
    st->unconfirmed = 0;
    if (refused) {
        log_error("store", "redis refused %zu of the batch's %zu commands "
                  "(the first: %s); the batch goes again after a back-off",
                  refused, st->fl[0].n, st->first_refusal);
        st->acked = 0;
        if (st->nfl > 1) /* the later batches' replies are still coming */
            rlink_reconnect(st->link, "refused a write; every batch not "
                            "acknowledged goes again");
        else {
            st->hold = 1;
            rlink_retry(st->link);
        }
    } else if (unconfirmed) {
        /* Kept by the master alone, a failover could take it back: the
         * master may have changed (the Sentinels are asked again). */
        rlink_reconnect(st->link, "has the batch on too few replicas");
    } else {
        batch_acked(st);
    }
}

/* OOM, a full disk: the write did not happen. The batch is not
 * acknowledged; it is sent again after a back-off. Told once per batch:
 * a full disk answered every command, 13,734 lines in 10 s. (READONLY
 * and the like are the link's: a failover.) */
static void refused(store *st, const redisReply *reply)
{
    if (!st->refused++)
        snprintf(st->first_refusal, sizeof st->first_refusal, "%s",
                 reply->type == REDIS_REPLY_ERROR ? reply->str
                                                  : "the transaction was aborted");
}

/* Replies come in the order sent, those of a lost connection never: the
 * first batch's MULTI, its commands' QUEUED, its EXEC's array of their
 * answers, then its WAIT's, then the next batch's. */
static void on_reply(void *arg, redisReply *reply)
{
    store *st = arg;
    size_t at, n;

    if (st->nfl == 0 || st->fl[0].due == 0)
        return; /* not ours: cannot happen while replies come in order */
    at = st->acked++;
    n = st->fl[0].n;
    if (at == n + 2) {
        st->unconfirmed = !rlink_waited(st->link, reply);
    } else if (at == n + 1) { /* EXEC: its commands' answers, or why not */
        if (reply->type == REDIS_REPLY_ARRAY) {
            for (size_t i = 0; i < reply->elements; i++)
                if (reply->element[i]->type == REDIS_REPLY_ERROR)
                    refused(st, reply->element[i]);
        } else if (!st->refused) { /* EXECABORT says no more than those */
            refused(st, reply);
        }
    } else if (reply->type == REDIS_REPLY_ERROR) { /* queueing refused */
        refused(st, reply);
    }
    if (st->acked == st->fl[0].due)
        batch_answered(st);
}

/* One batch as one transaction, and its WAIT when one is wanted: 0, or
 * -1 when the link went down (everything goes again on ready). Redis
 * applies a transaction whole or not at all, so a correlator killed
 * while its pipeline was on the way leaves none of the batch behind.
 * Without it Redis kept the commands that had arrived, and the batch fed
 * again after the restart met part of its own writes: signal ids in the
 * windows whose incidents' counts had not arrived, skipped as seen
 * (tests/unit/test_restart.c). */
static int send_batch(store *st, batch *b)
{
    static const char multi[] = "*1\r\n$5\r\nMULTI\r\n",
                      exec[] = "*1\r\n$4\r\nEXEC\r\n";

    b->due = 0;
    if (!b->n)
        return 0;
    if (rlink_send(st->link, multi, sizeof multi - 1) != 0)
        return -1;
    for (size_t i = 0; i < b->n; i++) {
        if (rlink_send(st->link, b->cmds[i].buf, (size_t)b->cmds[i].len) != 0)
            return -1;
        st->sent++;
    }
    if (rlink_send(st->link, exec, sizeof exec - 1) != 0)
        return -1;
    b->due = b->n + 2;
    if (rlink_send_wait(st->link) == 1)
        b->due++;
    return 0;
}

/* Every batch not acknowledged, in order, on a new connection or after a
 * refusal. */
static void send_inflight(void *arg)
{
    store *st = arg;

    st->acked = 0;
    st->hold = 0;
    for (size_t i = 0; i < st->nfl; i++)
        if (send_batch(st, &st->fl[i]))
            return;
    batch_acked(st); /* empty batches at the head */
}

static void on_down(void *arg)
{
    store *st = arg;

    st->acked = 0;
    st->refused = 0;
    st->unconfirmed = 0;
    for (size_t i = 0; i < st->nfl; i++)
        st->fl[i].due = 0;
}

/* A batch Redis has not acknowledged: said after STALL_FIRST_S, then at
 * growing intervals, so a stall is never silent (it was, for minutes:
 * the correlator then commits nothing and reads nothing). */
static void on_stall(evutil_socket_t fd, short what, void *arg)
{
    store *st = arg;
    struct timeval next;

    (void)fd;
    (void)what;
    if (st->nfl == 0)
        return;
    log_warn("store", "redis has not acknowledged the batch for %lld s (%zu "
             "commands, %zu answered, %zu batches behind it, link %s); "
             "nothing is committed until it does",
             (long long)((ts_mono() - st->fl[0].flushed_at) / 1000000),
             st->fl[0].n, st->acked, st->nfl - 1,
             rlink_up(st->link) ? "up" : "down");
    st->stall_s = st->stall_s * 2 > STALL_MAX_S ? STALL_MAX_S : st->stall_s * 2;
    next = (struct timeval){st->stall_s, 0};
    evtimer_add(st->stall, &next);
}

static const rlink_hooks hooks = {
    .ready = send_inflight, .reply = on_reply, .down = on_down};

store *store_new(struct event_base *base, const rtarget *t, const char *prefix,
                 cs_err *err)
{
    store *st = calloc(1, sizeof *st);

    if (!st) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    snprintf(st->prefix, sizeof st->prefix, "%s", prefix ? prefix : "");
    st->trims = strmap_new();
    st->stall = evtimer_new(base, on_stall, st);
    st->link = rlink_new(base, t, "store", &hooks, st);
    return st;
}

void store_free(store *st)
{
    if (!st)
        return;
    rlink_free(st->link);
    if (st->stall)
        event_free(st->stall);
    free_cmds(st->q, st->nq);
    for (size_t i = 0; i < st->nfl; i++)
        free_cmds(st->fl[i].cmds, st->fl[i].n);
    free(st->fl);
    strmap_free(st->trims, free);
    for (int i = 0; i < OPEN_GROUPS; i++) {
        free(st->g[i].key);
        free(st->g[i].body);
    }
    free(st->solo.key);
    free(st->solo.body);
    free(st);
}

int store_flush(store *st, store_done_fn done, void *arg)
{
    batch *b;

    groups_close(st);
    queue_trims(st);
    if (st->nq == 0 && st->nfl == 0) { /* nothing to wait for */
        if (done)
            done(arg);
        return 0;
    }
    if (st->nfl == st->capfl) {
        st->capfl = st->capfl ? st->capfl * 2 : 4;
        st->fl = xrealloc(st->fl, st->capfl * sizeof *st->fl);
    }
    b = &st->fl[st->nfl++];
    *b = (batch){st->q, st->nq, done, arg, ts_mono(), 0};
    st->q = NULL;
    st->nq = st->capq = 0;
    if (st->nfl == 1)
        stall_arm(st);
    /* not up, or a refused batch waiting: it goes with them on ready */
    if (rlink_up(st->link) && !st->hold)
        send_batch(st, b);
    batch_acked(st); /* an empty batch at the head */
    return 0;
}

int store_busy(const store *st)
{
    return st->nfl > 0;
}

unsigned long store_commands_sent(const store *st)
{
    return st->sent;
}

unsigned long store_hash_writes(const store *st)
{
    return st->writes;
}

static long restore_zset(redisContext *c, const char *key, const char *name,
                         const store_restore_fns *fns, void *arg)
{
    redisReply *r = redisCommand(c, "ZRANGE %s 0 -1 WITHSCORES", key);
    long n = 0;

    if (r && r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i + 1 < r->elements; i += 2) {
            int64_t ts = strtoll(r->element[i + 1]->str, NULL, 10);
            if (fns->window(arg, name, ts, r->element[i]->str) == 0)
                n++;
        }
    }
    freeReplyObject(r);
    return n;
}

/* HSCAN, not HGETALL: a large hash must not become one huge reply. */
static long restore_hash(redisContext *c, const char *key, const char *name,
                         const store_restore_fns *fns, void *arg)
{
    char cursor[32] = "0";
    long n = 0;

    do {
        redisReply *r = redisCommand(c, "HSCAN %s %s COUNT 1000", key, cursor);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            freeReplyObject(r);
            return n;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        for (size_t i = 0; i + 1 < r->element[1]->elements; i += 2)
            if (fns->hash(arg, name, r->element[1]->element[i]->str,
                          r->element[1]->element[i + 1]->str) == 0)
                n++;
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return n;
}

static long restore_key(redisContext *c, const char *key, const char *prefix,
                        const store_restore_fns *fns, void *arg)
{
    const char *name = key + strlen(prefix);
    redisReply *t;
    long n = 0;

    if (fns->wants_key && !fns->wants_key(arg, name))
        return 0;
    t = redisCommand(c, "TYPE %s", key);

    if (t && t->type == REDIS_REPLY_STATUS) {
        if (strcmp(t->str, "zset") == 0 && fns->window)
            n = restore_zset(c, key, name, fns, arg);
        else if (strcmp(t->str, "hash") == 0 && fns->hash &&
                 (!fns->wants_hash || fns->wants_hash(arg, name)))
            n = restore_hash(c, key, name, fns, arg);
    }
    freeReplyObject(t);
    return n;
}

long store_partitions(const rtarget *t, const char *topic, long count,
                      cs_err *err)
{
    char addr[256];
    redisContext *c = rconn_open(t, addr, sizeof addr, err);
    redisReply *set, *get = NULL;
    long n = -1;

    if (!c)
        return -1;
    set = redisCommand(c, "HSETNX %s %s %ld", STORE_META, topic, count);
    if (set && set->type != REDIS_REPLY_ERROR)
        get = redisCommand(c, "HGET %s %s", STORE_META, topic);
    if (get && get->type == REDIS_REPLY_STRING) {
        char *end;
        n = strtol(get->str, &end, 10);
        if (*end || n <= 0) {
            cs_err_set(err, "redis at %s: %s field %s holds '%.40s', not a "
                       "partition count", addr, STORE_META, topic, get->str);
            n = -1;
        }
    } else {
        cs_err_set(err, "redis at %s: recording %s's partition count in %s: "
                   "%s", addr, topic, STORE_META,
                   get && get->type == REDIS_REPLY_ERROR ? get->str
                   : set && set->type == REDIS_REPLY_ERROR ? set->str
                                                          : c->errstr);
    }
    freeReplyObject(set);
    freeReplyObject(get);
    redisFree(c);
    return n;
}

long store_restore(const rtarget *t, const char *prefix,
                   const store_restore_fns *fns, void *arg, cs_err *err)
{
    char addr[256], pattern[256], cursor[32] = "0";
    redisContext *c = rconn_open(t, addr, sizeof addr, err);
    long n = 0;

    if (!c)
        return -1;
    snprintf(pattern, sizeof pattern, "%scascade:{*}:*", prefix);
    do {
        redisReply *r = redisCommand(c, "SCAN %s MATCH %s COUNT 1000", cursor,
                                     pattern);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            cs_err_set(err, "SCAN failed on %s: %s", addr,
                       r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
            freeReplyObject(r);
            n = -1;
            break;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements; i++)
            n += restore_key(c, r->element[1]->element[i]->str, prefix, fns,
                             arg);
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    redisFree(c);
    return n;
}

int store_up(const store *st)
{
    return rlink_up(st->link);
}
