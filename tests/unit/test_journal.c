/* The executor's journal against a real redis-server: its start-up check
 * refuses a Redis that does not persist, and a wrong password, said with
 * the address and the user. */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions/journal.h"
#include "check.h"
#include "core/str.h"
#include "redis_srv.h"

static rtarget target(int port)
{
    rtarget t;
    char addr[64];

    rt_init(&t);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    REQUIRE(rt_set_addr(&t, addr, NULL) == 0);
    str_copy(t.user, sizeof t.user, "cascade");
    str_copy(t.password, sizeof t.password, "cascade-pw");
    t.db = 2;
    return t;
}

static void test_check(int port)
{
    rtarget t = target(port);
    cs_err err;

    CHECK_INT(jr_check(&t, &err), -1); /* --appendonly no */
    CHECK(strstr(err.msg, "does not persist") != NULL);
    t.require_durable = 0;
    CHECK_INT(jr_check(&t, &err), 0);
    str_copy(t.password, sizeof t.password, "wrong");
    CHECK_INT(jr_check(&t, &err), -1);
    CHECK(strstr(err.msg, "(user cascade, db 2): AUTH refused: WRONGPASS") !=
          NULL);
}

int main(void)
{
    char dir[256], rm[300];
    int port = srv_free_port();
    pid_t pid;
    redisContext *admin;

    check_tmp_template(dir, sizeof dir, "cascade-journal");
    REQUIRE(mkdtemp(dir) != NULL);
    pid = srv_start(dir, port, (const char *[]){"--requirepass", "defpw",
                    NULL});
    admin = srv_client(port, "defpw");
    srv_do(admin, "ACL SETUSER cascade on >cascade-pw ~* &* +@all");
    redisFree(admin);
    test_check(port);
    srv_kill(pid);
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    if (system(rm) != 0)
        fprintf(stderr, "test_journal: %s left behind\n", dir);
    return check_report();
}
