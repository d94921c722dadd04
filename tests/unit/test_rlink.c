/* The Redis link against a redis-server of the test's own, killed and
 * started again on the same socket: replies in the order sent, the hooks
 * at each loss and return, nothing of a lost connection reaching the
 * owner, and no hook once the link is freed. Over TCP, a connect refused
 * after it started is tried again too. */
#include <arpa/inet.h>
#include <event2/event.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/rlink.h"

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

/* Runs the loop until *n reaches want, at most 10 s. */
static int wait_for(owner *o, const int *n, int want)
{
    time_t end = time(NULL) + 10;

    while (*n < want && time(NULL) < end)
        event_base_loop(o->base, EVLOOP_ONCE);
    return *n >= want;
}

static void run_ms(struct event_base *base, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

/* redis-server on the unix socket sock, else on 127.0.0.1:port; no
 * persistence. The link waits for it to answer. */
static pid_t server_start(const char *dir, const char *sock, const char *port)
{
    const char *bin = getenv("CASCADE_REDIS_SERVER");
    pid_t pid = fork();

    REQUIRE(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (!bin)
            bin = "redis-server";
        if (sock)
            execlp(bin, bin, "--port", "0", "--unixsocket", sock,
                   "--unixsocketperm", "700", "--save", "", "--appendonly",
                   "no", "--dir", dir, (char *)NULL);
        else
            execlp(bin, bin, "--port", port, "--bind", "127.0.0.1", "--save",
                   "", "--appendonly", "no", "--dir", dir, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void server_kill(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* A TCP port nothing listens on, for now. */
static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    REQUIRE(fd >= 0);
    REQUIRE(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    REQUIRE(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void test_restart(struct event_base *base, const char *dir)
{
    char sock[300];
    owner o = {.base = base};
    pid_t pid;

    snprintf(sock, sizeof sock, "%s/redis.sock", dir);
    pid = server_start(dir, sock, NULL);

    /* The first connection: no ready (nothing can be pending yet). */
    o.link = rlink_new(base, sock, "test", &hooks, &o);
    CHECK_INT(o.ready + o.up + o.down, 0);
    REQUIRE(wait_for(&o, &o.up, 1));
    CHECK(rlink_up(o.link));
    CHECK_INT(send_cmd(o.link, "SET k %s", "v1"), 0);
    CHECK_INT(send_cmd(o.link, "GET %s", "k"), 0);
    REQUIRE(wait_for(&o, &o.replies, 2));
    CHECK_STR(o.got[0], "OK");
    CHECK_STR(o.got[1], "v1");

    /* Redis dies with a command unanswered: down, and no reply for it. */
    CHECK_INT(send_cmd(o.link, "BLPOP %s 0", "never"), 0);
    run_ms(base, 100);
    server_kill(pid);
    REQUIRE(wait_for(&o, &o.down, 1));
    CHECK(!rlink_up(o.link));
    CHECK_INT(send_cmd(o.link, "GET %s", "k"), -1); /* no connection */
    run_ms(base, 400); /* the retries in it find no server */
    CHECK_INT(o.up, 1);
    CHECK_INT(o.replies, 2);

    /* Back on the same socket: ready (the owner resends), then up. */
    o.resend = 1;
    pid = server_start(dir, sock, NULL);
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

    server_kill(pid);
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

    snprintf(port, sizeof port, "%d", free_port());
    snprintf(addr, sizeof addr, "127.0.0.1:%s", port);
    o.link = rlink_new(base, addr, "test", &hooks, &o);
    run_ms(base, 400);
    CHECK_INT(o.up, 0);
    pid = server_start(dir, NULL, port);
    REQUIRE(wait_for(&o, &o.up, 1));
    REQUIRE(wait_for(&o, &o.replies, 1));
    CHECK_STR(o.got[0], "(nil)");
    run_ms(base, 100);
    CHECK_INT(o.replies, 1); /* none for the GETs of the refused attempts */
    rlink_free(o.link);
    server_kill(pid);
}

int main(void)
{
    char dir[256];
    struct event_base *base = event_base_new();
    struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);

    REQUIRE(base && tick);
    event_add(tick, &(struct timeval){0, 20000});
    check_tmp_template(dir, sizeof dir, "cascade-rlink");
    REQUIRE(mkdtemp(dir) != NULL);
    test_restart(base, dir);
    test_tcp_refused(base, dir);
    rmdir(dir);
    event_free(tick);
    event_base_free(base);
    return check_report();
}
