/* Redis servers and Sentinels of a test's own, on loopback ports nobody
 * else uses, in the test's folder: started with the arguments a test
 * gives (a password, ACL users, a replica's master), waited for, killed.
 * $CASCADE_REDIS_SERVER names the server binary (default redis-server). */
#ifndef CS_TEST_REDIS_SRV_H
#define CS_TEST_REDIS_SRV_H

#include <arpa/inet.h>
#include <dirent.h>
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
#include "core/rtarget.h"
#include "core/str.h"

/* A TCP port nothing is bound to, for now, from below the kernel's
 * ephemeral range (32768 up): a port bind(0) handed out can be taken
 * again by an outgoing connection of a test running alongside before our
 * server binds it; below the range only a deliberate bind takes it. */
static inline int srv_free_port(void)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    unsigned seed = (unsigned)getpid() * 2654435761u ^ (unsigned)now.tv_nsec;
    for (int tries = 0; tries < 500; tries++) {
        int port = 10000 + (int)(rand_r(&seed) % 22000);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        REQUIRE(fd >= 0);
        int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok)
            return port;
    }
    REQUIRE(!"no free port below 32000");
    return -1;
}

/* argv[0] is replaced by the server binary; NULL-terminated. The server
 * dies with the test. */
static inline pid_t srv_exec(const char **argv)
{
    const char *bin = getenv("CASCADE_REDIS_SERVER");
    pid_t pid = fork();

    REQUIRE(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        argv[0] = bin ? bin : "redis-server";
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Until something answers on 127.0.0.1:port (an error, NOAUTH, is an
 * answer), at most 10 s. */
static inline void srv_wait(int port)
{
    struct timeval tv = {0, 200000};

    for (int i = 0; i < 200; i++) {
        redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
        redisReply *r = c && !c->err ? redisCommand(c, "PING") : NULL;
        int up = r != NULL;
        freeReplyObject(r);
        if (c)
            redisFree(c);
        if (up)
            return;
        usleep(50000);
    }
    REQUIRE(!"a redis-server of the test's came up");
}

/* redis-server on 127.0.0.1:port, no persistence, dir for its files, then
 * extra (NULL-terminated, at most 16); waits until it answers. */
static inline pid_t srv_start(const char *dir, int port, const char **extra)
{
    const char *argv[32] = {"", "--port", NULL, "--bind", "127.0.0.1",
                            "--save", "", "--appendonly", "no", "--dir", dir};
    char p[16];
    int n = 11;
    pid_t pid;

    snprintf(p, sizeof p, "%d", port);
    argv[2] = p;
    for (int i = 0; extra && extra[i] && n < 30; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    pid = srv_exec(argv);
    srv_wait(port);
    return pid;
}

/* A Sentinel on port watching master NAME at 127.0.0.1:master_port
 * (quorum 1, down after 1 s), its config file in dir. */
static inline pid_t srv_sentinel(const char *dir, int port, const char *name,
                                 int master_port)
{
    char conf[300], p[16];
    const char *argv[] = {"", conf, "--sentinel", "--port", p, NULL};
    FILE *f;
    pid_t pid;

    snprintf(conf, sizeof conf, "%s/sentinel-%d.conf", dir, port);
    snprintf(p, sizeof p, "%d", port);
    REQUIRE((f = fopen(conf, "w")) != NULL);
    fprintf(f, "bind 127.0.0.1\ndir %s\n"
               "sentinel monitor %s 127.0.0.1 %d 1\n"
               "sentinel down-after-milliseconds %s 1000\n"
               "sentinel failover-timeout %s 5000\n",
            dir, name, master_port, name, name);
    fclose(f);
    pid = srv_exec(argv);
    srv_wait(port);
    return pid;
}

/* Removes a test's scratch directory and the files its servers left in
 * it (Sentinel configs, dumps). */
static inline void srv_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];

    while (d && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static inline void srv_kill(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* A blocking client of the test's on port, as the default user or with
 * AUTH pass (NULL: none). */
static inline redisContext *srv_client(int port, const char *pass)
{
    redisContext *c = redisConnect("127.0.0.1", port);

    REQUIRE(c && !c->err);
    if (pass) {
        redisReply *r = redisCommand(c, "AUTH %s", pass);
        REQUIRE(r && r->type != REDIS_REPLY_ERROR);
        freeReplyObject(r);
    }
    return c;
}

/* Runs a command for its effect; the reply must not be an error. */
static inline void srv_do(redisContext *c, const char *cmd)
{
    redisReply *r = redisCommand(c, cmd);

    if (!r || r->type == REDIS_REPLY_ERROR)
        fprintf(stderr, "%s: %s\n", cmd, r ? r->str : c->errstr);
    REQUIRE(r && r->type != REDIS_REPLY_ERROR);
    freeReplyObject(r);
}

/* A target on 127.0.0.1:port as the ACL user cascade (password
 * cascade-pw, which the test gives the server) in database db. */
static inline rtarget srv_target(int port, int db)
{
    rtarget t;
    char addr[64];

    rt_init(&t);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    REQUIRE(rt_set_addr(&t, addr, NULL) == 0);
    str_copy(t.user, sizeof t.user, "cascade");
    str_copy(t.password, sizeof t.password, "cascade-pw");
    t.db = db;
    return t;
}

#endif
