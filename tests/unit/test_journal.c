/* The executor's journal against real redis-servers: its start-up check
 * (a wrong password, a Redis that does not persist), its commands through
 * an ACL user into a database other than 0, and with wait_replicas 1 no
 * callback of a write before a replica has it: nothing while there is no
 * replica (and no later read's either: callbacks keep their order), then
 * every one in order once a replica has caught up, the write on it. */
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions/journal.h"
#include "check.h"
#include "core/rconn.h"
#include "core/str.h"
#include "core/ts.h"
#include "redis_srv.h"

typedef struct seen {
    int n;
    char what[8][64]; /* each callback's reply as text, in order */
    int replica_port; /* the write must be there when its callback runs */
    char on_replica[64];
} seen;

static void on_reply(void *arg, redisReply *r)
{
    seen *s = arg;
    char *t = s->what[s->n++ % 8];

    REQUIRE(r != NULL);
    if (r->type == REDIS_REPLY_INTEGER)
        snprintf(t, sizeof s->what[0], "int");
    else
        snprintf(t, sizeof s->what[0], "%s", r->str ? r->str : "?");
}

/* The HSET's callback: the field as the replica has it now ("" when
 * there is no replica to ask: the check after the run says so). */
static void on_write(void *arg, redisReply *r)
{
    seen *s = arg;
    redisContext *c = redisConnect("127.0.0.1", s->replica_port);
    redisReply *v = NULL;

    on_reply(arg, r);
    if (c && !c->err) {
        freeReplyObject(redisCommand(c, "SELECT 2"));
        v = redisCommand(c, "HGET cascade:act:t state");
    }
    str_copy(s->on_replica, sizeof s->on_replica,
             v && v->type == REDIS_REPLY_STRING ? v->str : "");
    freeReplyObject(v);
    if (c)
        redisFree(c);
}

static void run_for(struct event_base *base, int ms, const int *until,
                    int want)
{
    int64_t end = ts_mono() + (int64_t)ms * 1000;

    while (ts_mono() < end && !(until && *until >= want))
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

static void test_check(int port)
{
    rtarget t = srv_target(port, 2);
    cs_err err;

    CHECK_INT(rconn_check(&t, &err), -1); /* --appendonly no */
    CHECK(strstr(err.msg, "does not persist") != NULL);
    t.require_durable = 0;
    CHECK_INT(rconn_check(&t, &err), 0);
    str_copy(t.password, sizeof t.password, "wrong");
    CHECK_INT(rconn_check(&t, &err), -1);
    CHECK(strstr(err.msg, "(user cascade, db 2): AUTH refused: WRONGPASS") !=
          NULL);
}

static void test_wait(struct event_base *base, int port, const char *dir)
{
    rtarget t = srv_target(port, 2);
    seen s = {.replica_port = srv_free_port()};
    cs_err err;
    journal *j;
    char master[16];
    const char *hset[] = {"HSET", "cascade:act:t", "state", "running"};
    const char *hget[] = {"HGET", "cascade:act:t", "state"};
    const char *zadd[] = {"ZADD", "cascade:act:active", "1", "t"};
    check_capture cap;

    t.wait_replicas = 1;
    t.wait_timeout_ms = 100;
    REQUIRE((j = jr_new(base, &t, &err)) != NULL);
    jr_cmd(j, on_write, &s, 4, hset);
    jr_cmd(j, on_reply, &s, 3, hget);
    jr_cmd(j, on_reply, &s, 4, zadd);
    check_stderr_begin(&cap);
    run_for(base, 800, NULL, 0);
    CHECK_INT(s.n, 0);
    CHECK_INT(jr_pending(j), 3);
    snprintf(master, sizeof master, "%d", port);
    const char *extra[] = {"--replicaof", "127.0.0.1", master, "--masterauth",
                           "defpw", NULL};
    pid_t pid = srv_start(dir, s.replica_port, extra);
    run_for(base, 8000, &s.n, 3);
    char *text = check_stderr_end(&cap);
    CHECK(strstr(text, "has a journal write on too few replicas; connecting "
                       "again") != NULL);
    free(text);
    CHECK_INT(s.n, 3);
    CHECK_STR(s.what[0], "int");
    CHECK_STR(s.on_replica, "running");
    CHECK_STR(s.what[1], "running");
    CHECK_STR(s.what[2], "int");
    CHECK_INT(jr_pending(j), 0);
    jr_free(j);
    srv_kill(pid);
}

int main(void)
{
    struct event_base *base = event_base_new();
    char dir[256], rm[300];
    int port = srv_free_port();
    pid_t pid;
    redisContext *admin;

    REQUIRE(base != NULL);
    check_tmp_template(dir, sizeof dir, "cascade-journal");
    REQUIRE(mkdtemp(dir) != NULL);
    pid = srv_start(dir, port, (const char *[]){"--requirepass", "defpw",
                    "--repl-diskless-sync-delay", "0", NULL});
    admin = srv_client(port, "defpw");
    srv_do(admin, "ACL SETUSER cascade on >cascade-pw ~* &* +@all");
    redisFree(admin);
    test_check(port);
    test_wait(base, port, dir);
    srv_kill(pid);
    event_base_free(base);
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    if (system(rm) != 0)
        fprintf(stderr, "test_journal: %s left behind\n", dir);
    return check_report();
}
