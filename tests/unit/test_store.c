/* The store against real redis-servers: what a batch of window and hash
 * writes leaves in Redis (a private one, rproc), with consecutive writes
 * to one hash gathered into one command; the same through an ACL user's
 * password into a database other than 0, and read back from there; the
 * start-up check that refuses a wrong password and a Redis that evicts or
 * does not persist (CONFIG GET, or INFO where CONFIG is renamed away);
 * a batch applied whole or not at all (a transaction); and a batch
 * acknowledged only once a replica has it (wait_replicas). */
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/rconn.h"
#include "core/redisproc.h"
#include "core/str.h"
#include "correlate/store.h"
#include "core/ts.h"
#include "engine/engine.h"
#include "redis_srv.h"

static void on_done(void *arg)
{
    event_base_loopbreak(arg);
}

/* Sends what is queued and waits for Redis to acknowledge it; a batch
 * Redis refuses is retried for ever, so give up after 10 s. */
static void flush_wait(struct event_base *base, store *st)
{
    struct timeval limit = {10, 0};

    REQUIRE(store_flush(st, on_done, base) == 0);
    if (store_busy(st)) {
        event_base_loopexit(base, &limit);
        event_base_dispatch(base);
    }
    REQUIRE(!store_busy(st));
}

static redisReply *cmd(redisContext *rc, const char *fmt, const char *a)
{
    redisReply *r = redisCommand(rc, fmt, a);

    REQUIRE(r != NULL);
    return r;
}

/* HGET key field, "" when absent. */
static void check_field(redisContext *rc, const char *key, const char *field,
                        const char *want)
{
    redisReply *r = redisCommand(rc, "HGET %s %s", key, field);

    REQUIRE(r != NULL);
    CHECK_STR(r->type == REDIS_REPLY_STRING ? r->str : "", want);
    freeReplyObject(r);
}

static long long hlen(redisContext *rc, const char *key)
{
    redisReply *r = cmd(rc, "HLEN %s", key);
    long long n = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    freeReplyObject(r);
    return n;
}

/* Writes interleaved over two hashes and a window: the gathered commands
 * must leave what the writes one by one would. Then more hashes written
 * in turn than gather at once: each still ends as written. */
static void test_order(struct event_base *base, store *st, redisContext *rc)
{
    const eng_store_ops *o = store_ops();
    unsigned long sent = store_commands_sent(st);

    o->hash_put(st, "h", "a", "1");
    o->hash_put(st, "h", "b", "2");
    o->hash_put(st, "h", "d", "1");
    o->hash_put(st, "h", "d", "2"); /* the later value of one command wins */
    o->hash_put(st, "h", "e", "1");
    o->hash_del(st, "h", "a");
    o->hash_del(st, "h", "zz"); /* absent: nothing to delete */
    o->hash_del(st, "h", "e");
    o->hash_put(st, "h", "a", "3");
    o->hash_put(st, "h2", "x", "y"); /* another hash: not gathered into h */
    o->hash_put(st, "h", "c", "4");
    o->window_add(st, "w", 5, "m");
    o->hash_put(st, "h", "b", "5");
    o->hash_del(st, "h2", "x");
    o->hash_put(st, "h2", "x", "z");
    flush_wait(base, st);
    check_field(rc, "t:h", "a", "3");
    check_field(rc, "t:h", "b", "5");
    check_field(rc, "t:h", "c", "4");
    check_field(rc, "t:h", "d", "2");
    check_field(rc, "t:h", "e", "");
    CHECK_INT(hlen(rc, "t:h"), 4);
    check_field(rc, "t:h2", "x", "z");
    CHECK_INT(hlen(rc, "t:h2"), 1);
    CHECK_INT(hlen(rc, "h"), 0); /* the prefix goes on every key */
    redisReply *r = cmd(rc, "ZSCORE %s m", "t:w");
    CHECK_STR(r->type == REDIS_REPLY_STRING ? r->str : "", "5");
    freeReplyObject(r);
    /* [h a b d d e] [h del a zz e] [zadd] [h2 x] [h2 del x], then at the
     * flush [h a c b] [h2 x]: each hash gathers while others are written */
    CHECK_INT(store_commands_sent(st) - sent, 7);

    /* ten hashes in turn, three rounds, more than gather at once: the
     * oldest group open goes to make room; each hash ends as last
     * written (a delete in round two written over in round three) */
    char k[8], v[8];
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 10; i++) {
            snprintf(k, sizeof k, "r%d", i);
            snprintf(v, sizeof v, "%d", round * 10 + i);
            o->hash_put(st, k, "f", v);
            if (round == 1 && i == 4)
                o->hash_del(st, k, "f");
        }
    flush_wait(base, st);
    for (int i = 0; i < 10; i++) {
        snprintf(k, sizeof k, "t:r%d", i);
        snprintf(v, sizeof v, "%d", 20 + i);
        check_field(rc, k, "f", v);
    }
}

/* A store's first write is a window entry: nothing gathered yet. */
static void test_first_zadd(struct event_base *base, const rtarget *t,
                            redisContext *rc)
{
    cs_err err;
    store *st = store_new(base, t, "f:", &err);

    REQUIRE(st != NULL);
    store_ops()->window_add(st, "w", 7, "m1");
    store_ops()->window_trim(st, "w", 3);
    store_ops()->hash_put(st, "h", "a", "1");
    flush_wait(base, st);
    redisReply *r = cmd(rc, "ZSCORE %s m1", "f:w");
    CHECK_STR(r->type == REDIS_REPLY_STRING ? r->str : "", "7");
    freeReplyObject(r);
    check_field(rc, "f:h", "a", "1");
    CHECK_INT(store_commands_sent(st), 3); /* ZADD, HSET, ZREMRANGEBYSCORE */
    store_free(st);
}

/* A storm of new states on one hash: a command per GROUP_MAX_FIELDS
 * fields, and a value past the byte cap is still sent whole. */
static void test_many(struct event_base *base, store *st, redisContext *rc)
{
    const eng_store_ops *o = store_ops();
    unsigned long sent = store_commands_sent(st), writes = store_hash_writes(st);
    static char big[300 * 1024];
    char f[32], v[32];

    for (int i = 0; i < 3000; i++) {
        snprintf(f, sizeof f, "job%d", i);
        snprintf(v, sizeof v, "v%d", i * 7);
        o->hash_put(st, "many", f, v);
    }
    flush_wait(base, st);
    CHECK_INT(hlen(rc, "t:many"), 3000);
    check_field(rc, "t:many", "job0", "v0");
    check_field(rc, "t:many", "job1024", "v7168");
    check_field(rc, "t:many", "job2999", "v20993");
    CHECK_INT(store_commands_sent(st) - sent, 3); /* 1024 + 1024 + 952 */
    CHECK_INT(store_hash_writes(st) - writes, 3000);

    memset(big, 'q', sizeof big - 1);
    sent = store_commands_sent(st);
    o->hash_put(st, "big", "small", "s");
    o->hash_put(st, "big", "huge", big);
    o->hash_put(st, "big", "after", "a");
    flush_wait(base, st);
    redisReply *r = cmd(rc, "HSTRLEN %s huge", "t:big");
    CHECK_INT(r->type == REDIS_REPLY_INTEGER ? r->integer : -1, sizeof big - 1);
    freeReplyObject(r);
    check_field(rc, "t:big", "small", "s");
    check_field(rc, "t:big", "after", "a");
    CHECK_INT(store_commands_sent(st) - sent, 3); /* over the cap: one each */
}

/* The lines of captured log text that hold what. */
static int count_lines(char *text, const char *what)
{
    int n = 0;

    for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
        n += strstr(l, what) != NULL;
    free(text);
    return n;
}

/* Runs the loop for ms, or until the batch is acknowledged when idle is
 * set. (A loop exit left pending by an earlier wait only ends one pass.) */
static void run_for(struct event_base *base, store *st, int ms, int idle)
{
    int64_t end = ts_mono() + (int64_t)ms * 1000;

    while (ts_mono() < end && !(idle && !store_busy(st)))
        event_base_loop(base, EVLOOP_ONCE);
}

/* A Redis that refuses writes (OOM, a full disk) is told once per batch
 * with the count: it was told once per command per retry (13,734 lines
 * in 10 s). */
static void test_refusals_told_once(struct event_base *base, store *st,
                                    redisContext *rc)
{
    const eng_store_ops *o = store_ops();
    char key[32];
    check_capture c;
    int lines;

    freeReplyObject(redisCommand(rc, "CONFIG SET maxmemory-policy noeviction"));
    freeReplyObject(redisCommand(rc, "CONFIG SET maxmemory 1"));
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "refused%d", i);
        o->hash_put(st, key, "f", "v"); /* a command each */
    }
    check_stderr_begin(&c);
    REQUIRE(store_flush(st, NULL, NULL) == 0);
    run_for(base, st, 1000, 0); /* refused, then again after 100, 200, 400 ms */
    freeReplyObject(redisCommand(rc, "CONFIG SET maxmemory 0"));
    run_for(base, st, 5000, 1);
    lines = count_lines(check_stderr_end(&c), "redis refused");
    CHECK(!store_busy(st));
    CHECK(lines >= 1 && lines <= 8);
    if (lines > 8)
        fprintf(stderr, "%d lines for the refusals\n", lines);
}

/* The most commands a client of rc's Redis has queued in a transaction
 * (CLIENT LIST's multi=, -1 outside one). */
static long queued_in_multi(redisContext *rc)
{
    redisReply *r = redisCommand(rc, "CLIENT LIST");
    long most = -1;

    REQUIRE(r != NULL && r->type == REDIS_REPLY_STRING);
    for (const char *p = r->str; (p = strstr(p, " multi=")); p++)
        if (atol(p + 7) > most)
            most = atol(p + 7);
    freeReplyObject(r);
    return most;
}

/* A store of its own, connected, with a 3 MB batch queued (40,000
 * fields of "tx:big", twelve times the link's window). */
static store *big_batch(struct event_base *base, const rtarget *t)
{
    const eng_store_ops *o = store_ops();
    char field[32], value[64];
    cs_err err;
    store *st;

    REQUIRE((st = store_new(base, t, "tx:", &err)) != NULL);
    event_base_loopexit(base, &(struct timeval){0, 200000});
    event_base_dispatch(base); /* connected */
    for (int i = 0; i < 40000; i++) {
        snprintf(field, sizeof field, "f%d", i);
        snprintf(value, sizeof value, "%048d", i);
        o->hash_put(st, "big", field, value);
    }
    return st;
}

/* A batch is one transaction: a correlator gone while its pipeline was
 * on the way (here its store freed, the connection closed, with Redis
 * holding part of the batch queued) leaves none of the batch in Redis;
 * sent whole, all of it is there. */
static void test_transaction(struct event_base *base, const rtarget *t,
                             redisContext *rc)
{
    int64_t end = ts_mono() + 10 * 1000000;
    store *st = big_batch(base, t);
    long queued = -1;

    REQUIRE(store_flush(st, NULL, NULL) == 0);
    while (ts_mono() < end && (queued = queued_in_multi(rc)) <= 0)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    CHECK(queued > 0); /* part of the batch is in Redis, queued */
    CHECK(queued < 40000);
    store_free(st); /* the process gone: the rest never sent */
    for (int i = 0; i < 100 && queued_in_multi(rc) > 0; i++)
        usleep(10000);
    CHECK_INT(hlen(rc, "tx:big"), 0);

    st = big_batch(base, t);
    flush_wait(base, st);
    store_free(st);
    CHECK_INT(hlen(rc, "tx:big"), 40000);
}

/* A batch's done callback: appends its letter to the order they ran in. */
typedef struct mark {
    char *order;
    char letter;
} mark;

static void on_done_mark(void *arg)
{
    mark *m = arg;
    size_t n = strlen(m->order);

    m->order[n] = m->letter;
    m->order[n + 1] = '\0';
}

/* Two batches, each a write of field to "fl" (v1, then v2), flushed
 * without waiting: their done callbacks append 'a' and 'b' to order. */
static void two_batches(store *st, const char *field, char *order)
{
    static mark a, b;

    a = (mark){order, 'a'};
    b = (mark){order, 'b'};
    order[0] = '\0';
    store_ops()->hash_put(st, "fl", field, "v1");
    REQUIRE(store_flush(st, on_done_mark, &a) == 0);
    store_ops()->hash_put(st, "fl", field, "v2");
    REQUIRE(store_flush(st, on_done_mark, &b) == 0);
}

/* Turns the loop for about ms without waiting for an event: the batches
 * go out, replies are read, nothing blocks on a Redis that is paused. */
static void spin(struct event_base *base, int ms)
{
    for (int i = 0; i < ms; i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        usleep(1000);
    }
}

/* Batches flushed without waiting (the correlator feeds the next while
 * Redis applies the last): acknowledged in order, an empty one in its
 * turn, the last write of a field wins; a connection killed with them in
 * flight sends them all again, in order; a refusal with two in flight
 * sends both again once Redis takes writes. */
static void test_in_flight(struct event_base *base, store *st,
                           redisContext *rc)
{
    char order[8];
    mark c = {order, 'c'};

    two_batches(st, "x", order);
    REQUIRE(store_flush(st, on_done_mark, &c) == 0); /* empty */
    CHECK(store_busy(st));
    run_for(base, st, 5000, 1);
    CHECK_STR(order, "abc");
    check_field(rc, "t:fl", "x", "v2");

    /* killed: the writes go again on the new connection */
    freeReplyObject(redisCommand(rc, "CLIENT PAUSE 2000 WRITE"));
    two_batches(st, "y", order);
    spin(base, 50); /* sent, not answered */
    CHECK(store_busy(st));
    CHECK_STR(order, "");
    freeReplyObject(redisCommand(rc, "CLIENT KILL TYPE normal SKIPME yes"));
    freeReplyObject(redisCommand(rc, "CLIENT UNPAUSE"));
    run_for(base, st, 5000, 1);
    CHECK_STR(order, "ab");
    check_field(rc, "t:fl", "y", "v2");

    /* refused with a second batch behind: both again, in order */
    freeReplyObject(redisCommand(rc, "CONFIG SET maxmemory 1"));
    two_batches(st, "z", order);
    spin(base, 300); /* refused, sent again, refused */
    CHECK_STR(order, "");
    CHECK(store_busy(st));
    freeReplyObject(redisCommand(rc, "CONFIG SET maxmemory 0"));
    run_for(base, st, 8000, 1);
    CHECK_STR(order, "ab");
    check_field(rc, "t:fl", "z", "v2");
}

/* A Redis that stops answering is reported after a few seconds, not
 * after minutes: here writes are paused for 6.5 s. */
static void test_stall_told(struct event_base *base, store *st,
                            redisContext *rc)
{
    check_capture c;
    int lines;

    freeReplyObject(redisCommand(rc, "CLIENT PAUSE 6500 WRITE"));
    store_ops()->hash_put(st, "paused", "f", "v");
    check_stderr_begin(&c);
    REQUIRE(store_flush(st, NULL, NULL) == 0);
    run_for(base, st, 10000, 1);
    lines = count_lines(check_stderr_end(&c),
                        "redis has not acknowledged the batch for 5 s");
    CHECK(!store_busy(st));
    CHECK_INT(lines, 1);
    check_field(rc, "t:paused", "f", "v");
}

static int count_entry(void *arg, const char *key, const char *field,
                       const char *value)
{
    (void)key, (void)field, (void)value;
    ++*(int *)arg;
    return 0;
}

/* Writes and their read-back through the user's password, in its
 * database; a wrong password refused by name of address and user. */
static void test_acl_db(struct event_base *base, int port, redisContext *admin)
{
    rtarget t = srv_target(port, 3);
    store_restore_fns fns = {.hash = count_entry};
    store *st;
    cs_err err;
    redisReply *r;
    int n = 0;

    REQUIRE((st = store_new(base, &t, "", &err)) != NULL);
    store_ops()->hash_put(st, "cascade:{c1}:incident", "i1", "open");
    flush_wait(base, st);
    store_free(st);
    srv_do(admin, "SELECT 3");
    r = cmd(admin, "HGET %s i1", "cascade:{c1}:incident");
    CHECK_STR(r->type == REDIS_REPLY_STRING ? r->str : "", "open");
    freeReplyObject(r);
    srv_do(admin, "SELECT 0");
    CHECK_INT(hlen(admin, "cascade:{c1}:incident"), 0);
    CHECK_INT(store_restore(&t, "", &fns, &n, &err), 1);
    CHECK_INT(n, 1);

    str_copy(t.password, sizeof t.password, "not-the-pw");
    CHECK_INT(rconn_check(&t, &err), -1);
    CHECK(strstr(err.msg, "not-the-pw") == NULL);
    char want[128];
    snprintf(want, sizeof want, "redis 127.0.0.1:%d (user cascade, db 3): "
             "AUTH refused: WRONGPASS", port);
    CHECK(!strncmp(err.msg, want, strlen(want)));
    CHECK_INT(store_restore(&t, "", &fns, &n, &err), -1);
}

/* CONFIG SET name value, then rconn_check's err ("" when it passed). */
static const char *ping_after(redisContext *admin, const rtarget *t,
                              const char *name, const char *value)
{
    static cs_err err;

    if (name) {
        redisReply *r = redisCommand(admin, "CONFIG SET %s %s", name, value);
        REQUIRE(r && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    return rconn_check(t, &err) ? err.msg : "";
}

/* A Redis that evicts or does not persist is refused with what to
 * change, unless require_durable is off. */
static void test_durable(int port, redisContext *admin, const char *dir)
{
    rtarget t = srv_target(port, 3);
    const char *e;

    ping_after(admin, &t, "appendonly", "yes");
    CHECK_STR(ping_after(admin, &t, "maxmemory-policy", "noeviction"), "");
    e = ping_after(admin, &t, "maxmemory-policy", "allkeys-lru");
    CHECK(strstr(e, "evicts keys (maxmemory-policy allkeys-lru): cascade's "
                    "state and journal could be lost; set maxmemory-policy "
                    "noeviction in its configuration, or "
                    "redis.require_durable: false") != NULL);
    t.require_durable = 0;
    CHECK_STR(ping_after(admin, &t, NULL, NULL), "");
    t.require_durable = 1;
    ping_after(admin, &t, "maxmemory-policy", "noeviction");
    e = ping_after(admin, &t, "appendonly", "no");
    CHECK(strstr(e, "does not persist (appendonly no, save \"\"): cascade's "
                    "state") != NULL);
    CHECK(strstr(e, "set appendonly yes (or a save schedule)") != NULL);
    t.require_durable = 0;
    CHECK_STR(ping_after(admin, &t, NULL, NULL), "");
    t.require_durable = 1;
    CHECK_STR(ping_after(admin, &t, "save", "3600 1"), "");
    ping_after(admin, &t, "save", "");

    /* CONFIG renamed away, as managed Redis does: INFO tells. */
    int p2 = srv_free_port();
    const char *extra[] = {"--rename-command", "CONFIG", "", "--appendonly",
                           "yes", "--maxmemory-policy", "volatile-lru", NULL};
    pid_t pid = srv_start(dir, p2, extra);
    char addr[64];
    rt_init(&t);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", p2);
    REQUIRE(rt_set_addr(&t, addr, NULL) == 0);
    e = ping_after(admin, &t, NULL, NULL);
    CHECK(strstr(e, "evicts keys (maxmemory-policy volatile-lru)") != NULL);
    srv_kill(pid);
    const char *extra2[] = {"--rename-command", "CONFIG", "", NULL};
    pid = srv_start(dir, p2, extra2);
    e = ping_after(admin, &t, NULL, NULL);
    CHECK(strstr(e, "does not persist (INFO: aof_enabled:0; a save schedule "
                    "shows only to CONFIG GET, refused: ERR unknown command "
                    "'CONFIG'") != NULL);
    CHECK(strstr(e, "set appendonly yes (or allow the user +config|get to "
                    "see a save schedule)") != NULL);
    srv_kill(pid);
}

static void on_done_flag(void *arg)
{
    *(int *)arg = 1;
}

/* wait_replicas 1: a batch no replica has is not acknowledged, and goes
 * again until one does. */
static void test_wait(struct event_base *base, int port, const char *dir)
{
    rtarget t = srv_target(port, 3);
    store *st;
    cs_err err;
    int done = 0, rport = srv_free_port();
    char master[16];
    check_capture cap;

    t.wait_replicas = 1;
    t.wait_timeout_ms = 100;
    REQUIRE((st = store_new(base, &t, "w:", &err)) != NULL);
    store_ops()->hash_put(st, "h", "f", "v1");
    check_stderr_begin(&cap);
    REQUIRE(store_flush(st, on_done_flag, &done) == 0);
    run_for(base, st, 1000, 1);
    snprintf(master, sizeof master, "%d", port);
    const char *extra[] = {"--replicaof", "127.0.0.1", master, "--masterauth",
                           "defpw", NULL};
    pid_t pid = srv_start(dir, rport, extra);
    int before = done;
    run_for(base, st, 8000, 1);
    char *text = check_stderr_end(&cap);
    CHECK_INT(before, 0);
    CHECK_INT(done, 1);
    CHECK(strstr(text, "0 of the 1 replicas wanted confirmed the writes within "
                       "100 ms") != NULL);
    free(text);
    redisContext *c = srv_client(rport, NULL);
    srv_do(c, "SELECT 3");
    check_field(c, "w:h", "f", "v1");
    redisFree(c);
    store_free(st);
    srv_kill(pid);
}

int main(void)
{
    cs_err err;
    rproc *rp = rproc_start(&err);
    struct event_base *base = event_base_new();
    store *st;
    redisContext *rc, *admin;
    rtarget t;
    char dir[256];
    int port;
    pid_t pid;

    signal(SIGPIPE, SIG_IGN); /* a connection Redis killed, as cascade does */
    if (!rp) {
        fprintf(stderr, "test_store: %s\n", err.msg);
        return 1;
    }
    REQUIRE(base != NULL);
    rproc_target(rp, &t);
    REQUIRE((st = store_new(base, &t, "t:", &err)) != NULL);
    REQUIRE((rc = redisConnectUnix(rproc_socket(rp))) != NULL && !rc->err);
    test_first_zadd(base, &t, rc);
    test_order(base, st, rc);
    test_many(base, st, rc);
    test_refusals_told_once(base, st, rc);
    test_in_flight(base, st, rc);
    test_stall_told(base, st, rc);
    test_transaction(base, &t, rc);
    redisFree(rc);
    store_free(st);

    check_tmp_template(dir, sizeof dir, "cascade-store");
    REQUIRE(mkdtemp(dir) != NULL);
    port = srv_free_port();
    /* no wait before a replica's sync (5 s by default) */
    pid = srv_start(dir, port, (const char *[]){"--requirepass", "defpw",
                    "--repl-diskless-sync-delay", "0", NULL});
    admin = srv_client(port, "defpw");
    srv_do(admin, "ACL SETUSER cascade on >cascade-pw ~* &* +@all");
    test_acl_db(base, port, admin);
    test_durable(port, admin, dir);
    test_wait(base, port, dir);
    redisFree(admin);
    srv_kill(pid);
    char rm[300];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    if (system(rm) != 0)
        fprintf(stderr, "test_store: %s left behind\n", dir);
    event_base_free(base);
    rproc_stop(rp);
    return check_report();
}
