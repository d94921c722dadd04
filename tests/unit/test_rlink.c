/* The Redis link against redis-servers of the test's own. Killed and
 * started again on the same socket: replies in the order sent, the hooks
 * at each loss and return, nothing of a lost connection reaching the
 * owner, and no hook once the link is freed. Over TCP, a connect refused
 * after it started is tried again too. With a password and an ACL user:
 * up only after AUTH and SELECT, the writes in the database named, and a
 * wrong password refused, said with the address and user and never the
 * password. With Sentinel: the master looked up (past a dead Sentinel),
 * and followed when it answers READONLY. Many megabytes sent at once:
 * answered in order, each once, and none of those still waiting sent on
 * the next connection after a loss. */
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/log.h"
#include "core/rlink.h"
#include "core/str.h"
#include "redis_srv.h"

/* The owner's side: what each hook saw. */
typedef struct owner {
    struct event_base *base;
    rlink *link;
    int ready, up, down, replies;
    char got[16][32]; /* the replies as text, in order */
    int resend;       /* on ready: send GET k */
} owner;

static int send_cmd(rlink *l, const char *fmt, const char *a)
{
    char *buf;
    int len = redisFormatCommand(&buf, fmt, a), rc;

    REQUIRE(len > 0);
    rc = rlink_send(l, buf, (size_t)len);
    free(buf); /* hiredis copied it */
    return rc;
}

static void on_ready(void *arg)
{
    owner *o = arg;

    o->ready++;
    if (o->resend)
        CHECK_INT(send_cmd(o->link, "GET %s", "k"), 0);
}

static void on_reply(void *arg, redisReply *r)
{
    owner *o = arg;
    char *t = o->got[o->replies++ % 16];

    REQUIRE(r != NULL);
    if (r->type == REDIS_REPLY_NIL)
        snprintf(t, sizeof o->got[0], "(nil)");
    else
        snprintf(t, sizeof o->got[0], "%s", r->str ? r->str : "?");
}

static void on_up(void *arg)
{
    ((owner *)arg)->up++;
}

static void on_down(void *arg)
{
    ((owner *)arg)->down++;
}

static const rlink_hooks hooks = {on_ready, on_reply, on_up, on_down};

/* A tick, so that the loop wakes while it waits on nothing else. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
}

/* Runs the loop until *n reaches want, at most secs seconds. */
static void spin(struct event_base *base, const int *n, int want, int secs)
{
    time_t end = time(NULL) + secs;

    while (*n < want && time(NULL) < end)
        event_base_loop(base, EVLOOP_ONCE);
}

/* The same for the owner's hooks, at most 10 s: whether it got there. */
static int wait_for(owner *o, const int *n, int want)
{
    spin(o->base, n, want, 10);
    return *n >= want;
}

static void run_ms(struct event_base *base, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

/* redis-server on the unix socket sock, no persistence. */
static pid_t server_unix(const char *dir, const char *sock)
{
    const char *argv[] = {"", "--port", "0", "--unixsocket", sock,
                          "--unixsocketperm", "700", "--save", "",
                          "--appendonly", "no", "--dir", dir, NULL};

    return srv_exec(argv);
}

/* A target of an address alone. */
static rtarget at(const char *addr)
{
    rtarget t;

    rt_init(&t);
    REQUIRE(rt_set_addr(&t, addr, NULL) == 0);
    return t;
}

static void test_restart(struct event_base *base, const char *dir)
{
    char sock[300];
    owner o = {.base = base};
    pid_t pid;

    snprintf(sock, sizeof sock, "%s/redis.sock", dir);
    pid = server_unix(dir, sock);
    rtarget t = at(sock);

    /* No hook from rlink_new; ready comes with the first connection. */
    o.link = rlink_new(base, &t, "test", &hooks, &o);
    CHECK_INT(o.ready + o.up + o.down, 0);
    REQUIRE(wait_for(&o, &o.up, 1));
    CHECK(rlink_up(o.link));
    CHECK_INT(o.ready, 1);
    CHECK_INT(send_cmd(o.link, "SET k %s", "v1"), 0);
    CHECK_INT(send_cmd(o.link, "GET %s", "k"), 0);
    REQUIRE(wait_for(&o, &o.replies, 2));
    CHECK_STR(o.got[0], "OK");
    CHECK_STR(o.got[1], "v1");

    /* Redis dies with a command unanswered: down, and no reply for it. */
    CHECK_INT(send_cmd(o.link, "BLPOP %s 0", "never"), 0);
    run_ms(base, 100);
    srv_kill(pid);
    REQUIRE(wait_for(&o, &o.down, 1));
    CHECK(!rlink_up(o.link));
    CHECK_INT(send_cmd(o.link, "GET %s", "k"), -1); /* no connection */
    run_ms(base, 400); /* the retries in it find no server */
    CHECK_INT(o.up, 1);
    CHECK_INT(o.replies, 2);

    /* Back on the same socket: up, then ready (the owner resends). */
    o.resend = 1;
    pid = server_unix(dir, sock);
    REQUIRE(wait_for(&o, &o.up, 2));
    CHECK(o.ready >= 1);
    CHECK(rlink_up(o.link));
    REQUIRE(wait_for(&o, &o.replies, 3));
    CHECK_STR(o.got[2], "(nil)"); /* the new server's, not the BLPOP's */
    CHECK_INT(o.down, 1);

    /* A retry asked for on a live link: ready again, no new connection. */
    int ready = o.ready;
    rlink_retry(o.link);
    REQUIRE(wait_for(&o, &o.ready, ready + 1));
    REQUIRE(wait_for(&o, &o.replies, 4));
    CHECK_INT(o.up, 2);
    CHECK_INT(o.down, 1);

    /* Freed with a reply pending: no hook runs, then or later. */
    o.resend = 0;
    CHECK_INT(send_cmd(o.link, "BLPOP %s 0", "never"), 0);
    run_ms(base, 100);
    rlink_free(o.link);
    run_ms(base, 100);
    CHECK_INT(o.replies, 4);
    CHECK_INT(o.down, 1);

    srv_kill(pid);
    unlink(sock);
}

/* ---- the pipeline window: many large commands at once ---- */

#define BIG 8192
#define NBIG 3000 /* 24 MB: far past the link's window */

typedef struct bulk {
    rlink *link;
    int replies, wrong, down, up;
    long long want; /* the next APPEND's answer: the log's length */
} bulk;

static void bulk_ready(void *arg)
{
    (void)arg;
}

/* Each APPEND answers the log's new length: in order, each once. */
static void bulk_reply(void *arg, redisReply *r)
{
    bulk *b = arg;

    b->replies++;
    b->want += BIG;
    if (r->type != REDIS_REPLY_INTEGER || r->integer != b->want)
        b->wrong++;
}

static void bulk_up(void *arg)
{
    ((bulk *)arg)->up++;
}

static void bulk_down(void *arg)
{
    ((bulk *)arg)->down++;
}

static const rlink_hooks bulk_hooks = {bulk_ready, bulk_reply, bulk_up,
                                       bulk_down};

static void send_bulk(bulk *b, int n)
{
    char *val = malloc(BIG + 1), *buf;

    REQUIRE(val != NULL);
    memset(val, 'x', BIG);
    val[BIG] = '\0';
    for (int i = 0; i < n; i++) {
        int len = redisFormatCommand(&buf, "APPEND log %s", val);
        REQUIRE(len > 0);
        CHECK_INT(rlink_send(b->link, buf, (size_t)len), 0);
        free(buf);
    }
    free(val);
}

/* 24 MB sent at once: every command answered, in order, once; a loss
 * with most of them still waiting: none of those goes on the next
 * connection, nor is answered (the owner sends again). */
static void test_pipeline(struct event_base *base, const char *dir)
{
    char sock[300];
    bulk b = {0};
    pid_t pid;

    snprintf(sock, sizeof sock, "%s/pipe.sock", dir);
    pid = server_unix(dir, sock);
    rtarget t = at(sock);
    b.link = rlink_new(base, &t, "test", &bulk_hooks, &b);
    spin(base, &b.up, 1, 10);
    REQUIRE(b.up == 1);

    send_bulk(&b, NBIG);
    spin(base, &b.replies, NBIG, 30);
    CHECK_INT(b.replies, NBIG);
    CHECK_INT(b.wrong, 0);

    /* again, and Redis killed after the first answers */
    send_bulk(&b, NBIG);
    spin(base, &b.replies, NBIG + 10, 10);
    srv_kill(pid);
    spin(base, &b.down, 1, 10);
    CHECK_INT(b.down, 1);
    int got = b.replies;
    CHECK(got >= NBIG + 10 && got < 2 * NBIG);

    /* a new server: nothing of the lost connection's goes or answers */
    pid = server_unix(dir, sock);
    spin(base, &b.up, 2, 10);
    CHECK_INT(b.up, 2);
    run_ms(base, 300);
    CHECK_INT(b.replies, got);
    b.want = 0; /* the new server's log starts empty */
    send_bulk(&b, 2);
    spin(base, &b.replies, got + 2, 10);
    CHECK_INT(b.replies, got + 2);
    CHECK_INT(b.wrong, 0);

    rlink_free(b.link);
    srv_kill(pid);
    unlink(sock);
}

/* Over TCP the connect to a port nobody listens on fails once the loop
 * runs, in hiredis' connect callback, with no disconnect callback after
 * it: the link must still try again, and find Redis once it listens. */
static void test_tcp_refused(struct event_base *base, const char *dir)
{
    owner o = {.base = base, .resend = 1};
    char addr[64], port[16];
    pid_t pid;

    int p = srv_free_port();
    rtarget t;

    snprintf(port, sizeof port, "%d", p);
    snprintf(addr, sizeof addr, "127.0.0.1:%s", port);
    t = at(addr);
    o.link = rlink_new(base, &t, "test", &hooks, &o);
    run_ms(base, 400);
    CHECK_INT(o.up, 0);
    pid = srv_start(dir, p, NULL);
    REQUIRE(wait_for(&o, &o.up, 1));
    REQUIRE(wait_for(&o, &o.replies, 1));
    CHECK_STR(o.got[0], "(nil)");
    run_ms(base, 100);
    CHECK_INT(o.replies, 1); /* none for the GETs of the refused attempts */
    rlink_free(o.link);
    srv_kill(pid);
}

/* What a captured log holds: 1 when it has what, 0 when not; freed. */
static int logged(char *text, const char *what)
{
    int has = strstr(text, what) != NULL;

    if (!has)
        fprintf(stderr, "log lacks '%s'; it was:\n%s", what, text);
    free(text);
    return has;
}

/* The value of key in db of the server on port, "" when none. */
static void check_value(int port, int db, const char *key, const char *want)
{
    redisContext *c = srv_client(port, "defpw");
    redisReply *r;
    char sel[32];

    snprintf(sel, sizeof sel, "SELECT %d", db);
    srv_do(c, sel);
    r = redisCommand(c, "GET %s", key);
    REQUIRE(r != NULL);
    CHECK_STR(r->type == REDIS_REPLY_STRING ? r->str : "", want);
    freeReplyObject(r);
    redisFree(c);
}

/* An ACL user with a password and a database other than 0: nothing goes
 * before AUTH and SELECT answered, and what goes lands in that database.
 * A wrong password and a missing one: never up, and the log says why with
 * the address and the user, never the password. */
static void test_auth(struct event_base *base, const char *dir)
{
    int port = srv_free_port();
    const char *extra[] = {"--requirepass", "defpw", NULL};
    pid_t pid = srv_start(dir, port, extra);
    redisContext *admin = srv_client(port, "defpw");
    char addr[64], want[160];
    owner o = {.base = base};
    rtarget t;
    check_capture cap;

    srv_do(admin, "ACL SETUSER cascade on >cascade-pw ~* &* +@all");
    redisFree(admin);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    t = srv_target(port, 5);
    o.link = rlink_new(base, &t, "test", &hooks, &o);
    CHECK_INT(send_cmd(o.link, "SET %s v", "k"), -1); /* not up yet */
    REQUIRE(wait_for(&o, &o.up, 1));
    CHECK_INT(o.ready, 1);
    CHECK_INT(send_cmd(o.link, "SET %s in-db-5", "k"), 0);
    REQUIRE(wait_for(&o, &o.replies, 1));
    CHECK_STR(o.got[0], "OK");
    check_value(port, 5, "k", "in-db-5");
    check_value(port, 0, "k", "");
    rlink_free(o.link);

    /* The default user's password alone: AUTH password. */
    o = (owner){.base = base};
    t = at(addr);
    str_copy(t.password, sizeof t.password, "defpw");
    o.link = rlink_new(base, &t, "test", &hooks, &o);
    REQUIRE(wait_for(&o, &o.up, 1));
    rlink_free(o.link);

    /* A wrong password: refused, tried again, never up. */
    o = (owner){.base = base};
    t = srv_target(port, 5);
    str_copy(t.password, sizeof t.password, "wrong-pw");
    check_stderr_begin(&cap);
    o.link = rlink_new(base, &t, "test", &hooks, &o);
    run_ms(base, 500);
    rlink_free(o.link);
    char *text = check_stderr_end(&cap);
    CHECK_INT(o.up + o.ready + o.replies, 0);
    CHECK(strstr(text, "wrong-pw") == NULL);
    snprintf(want, sizeof want, "redis 127.0.0.1:%d (user cascade, db 5): AUTH "
             "refused: WRONGPASS", port);
    CHECK(logged(text, want));

    /* None at all where one is wanted: the hint names the key. */
    o = (owner){.base = base};
    t = at(addr);
    check_stderr_begin(&cap);
    o.link = rlink_new(base, &t, "test", &hooks, &o);
    run_ms(base, 300);
    rlink_free(o.link);
    CHECK_INT(o.up, 0);
    CHECK(logged(check_stderr_end(&cap), "PING refused: NOAUTH Authentication "
                 "required. (it wants a password: set redis.password)"));
    srv_kill(pid);
}

/* The master from the Sentinels, the first of which is down; then the
 * master moves (the Sentinel is told of the new one, the old one made its
 * replica, as a failover leaves them): the write the old one answers
 * READONLY never reaches the owner, the link asks again, and the owner's
 * resend lands on the new master. */
static void test_sentinel(struct event_base *base, const char *dir)
{
    int m1 = srv_free_port(), m2 = srv_free_port(), s = srv_free_port();
    int dead = srv_free_port();
    const char *pw[] = {"--requirepass", "defpw", "--masterauth", "defpw",
                        NULL};
    pid_t p1 = srv_start(dir, m1, pw), p2 = srv_start(dir, m2, pw), ps;
    char cmd[128], want[160];
    int ok, replies;
    owner o = {.base = base, .resend = 1};
    rtarget t;
    check_capture cap;
    redisContext *c;

    ps = srv_sentinel(dir, s, "mymaster", m1);
    c = srv_client(s, NULL);
    srv_do(c, "SENTINEL SET mymaster auth-pass defpw");
    rt_init(&t);
    snprintf(t.sentinels[0], sizeof t.sentinels[0], "127.0.0.1:%d", dead);
    snprintf(t.sentinels[1], sizeof t.sentinels[1], "127.0.0.1:%d", s);
    t.nsentinels = 2;
    str_copy(t.master, sizeof t.master, "mymaster");
    str_copy(t.password, sizeof t.password, "defpw");
    check_stderr_begin(&cap);
    o.link = rlink_new(base, &t, "test", &hooks, &o);
    ok = wait_for(&o, &o.up, 1) && wait_for(&o, &o.replies, 1); /* ready's GET */
    snprintf(want, sizeof want, "redis: master of 'mymaster' is 127.0.0.1:%d",
             m1);
    CHECK(logged(check_stderr_end(&cap), want));
    REQUIRE(ok);

    /* The failover, as Sentinel would leave it. */
    snprintf(cmd, sizeof cmd, "SENTINEL MONITOR mymaster 127.0.0.1 %d 1", m2);
    srv_do(c, "SENTINEL REMOVE mymaster");
    srv_do(c, cmd);
    srv_do(c, "SENTINEL SET mymaster auth-pass defpw");
    redisFree(c);
    c = srv_client(m1, "defpw");
    snprintf(cmd, sizeof cmd, "REPLICAOF 127.0.0.1 %d", m2);
    srv_do(c, cmd);
    redisFree(c);
    o.resend = 0;
    check_stderr_begin(&cap);
    CHECK_INT(send_cmd(o.link, "SET %s moved", "k"), 0);
    ok = wait_for(&o, &o.down, 1);
    replies = o.replies; /* READONLY is the link's, not the owner's */
    o.resend = 1;
    ok = ok && wait_for(&o, &o.up, 2) && wait_for(&o, &o.replies, 2);
    snprintf(want, sizeof want, "redis: master of 'mymaster' is now "
             "127.0.0.1:%d (was 127.0.0.1:%d)", m2, m1);
    CHECK(logged(check_stderr_end(&cap), want));
    REQUIRE(ok);
    CHECK_INT(replies, 1);
    CHECK_INT(send_cmd(o.link, "SET %s moved", "k"), 0);
    REQUIRE(wait_for(&o, &o.replies, 3));
    CHECK_STR(o.got[2], "OK");
    check_value(m2, 0, "k", "moved");
    rlink_free(o.link);
    srv_kill(ps);
    srv_kill(p1);
    srv_kill(p2);
}

int main(void)
{
    char dir[256];
    struct event_base *base = event_base_new();
    struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);

    REQUIRE(base && tick);
    signal(SIGPIPE, SIG_IGN); /* writes to a killed Redis, as cascade does */
    event_add(tick, &(struct timeval){0, 20000});
    check_tmp_template(dir, sizeof dir, "cascade-rlink");
    REQUIRE(mkdtemp(dir) != NULL);
    test_restart(base, dir);
    test_pipeline(base, dir);
    test_tcp_refused(base, dir);
    test_auth(base, dir);
    test_sentinel(base, dir);
    srv_rmdir(dir);
    event_free(tick);
    event_base_free(base);
    return check_report();
}
