#include "core/redisproc.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/str.h"

struct rproc {
    pid_t pid;
    char dir[256];
    char sock[300];
};

static int ping(const char *sock)
{
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectUnixWithTimeout(sock, tv);
    int ok = 0;

    if (c && !c->err) {
        redisReply *r = redisCommand(c, "PING");
        ok = r && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

static void child_exec(const rproc *r)
{
    const char *bin = getenv("CASCADE_REDIS_SERVER");
    char logfile[320];

    snprintf(logfile, sizeof logfile, "%s/redis.log", r->dir);
    /* The server must not hold our stdout: a caller reading it to EOF
     * would wait on the server. It also dies with us if we crash. */
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, STDIN_FILENO);
        dup2(devnull, STDOUT_FILENO);
        dup2(devnull, STDERR_FILENO);
        if (devnull > STDERR_FILENO)
            close(devnull);
    }
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (!bin)
        bin = "redis-server";
    execlp(bin, bin, "--port", "0", "--unixsocket", r->sock,
           "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
           "--dir", r->dir, "--daemonize", "no", "--loglevel", "warning",
           "--logfile", logfile, (char *)NULL);
    _exit(127); /* rproc_start reports the exit status */
}

rproc *rproc_start(cs_err *err)
{
    rproc *r = calloc(1, sizeof *r);
    const char *tmp = getenv("TMPDIR");
    int status;

    if (!r) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    snprintf(r->dir, sizeof r->dir, "%s/cascade-redis-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(r->dir)) {
        cs_err_set(err, "cannot create a folder for redis: %s", strerror(errno));
        goto fail;
    }
    snprintf(r->sock, sizeof r->sock, "%s/redis.sock", r->dir);
    r->pid = fork();
    if (r->pid < 0) {
        cs_err_set(err, "fork: %s", strerror(errno));
        goto fail;
    }
    if (r->pid == 0)
        child_exec(r);
    for (int i = 0; i < 200; i++) {
        if (ping(r->sock)) {
            log_debug("redis", "private redis-server (pid %d) on %s", (int)r->pid,
                     r->sock);
            return r;
        }
        if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
            r->pid = 0;
            cs_err_set(err, "redis-server exited at start (status %d%s)",
                       WEXITSTATUS(status),
                       WEXITSTATUS(status) == 127
                           ? ": not installed? run deploy/setup.sh" : "");
            goto fail;
        }
        nanosleep(&(struct timespec){0, 50000000}, NULL);
    }
    cs_err_set(err, "redis-server did not answer on %s within 10 s", r->sock);
fail:
    rproc_stop(r);
    return NULL;
}

const char *rproc_socket(const rproc *r)
{
    return r->sock;
}

void rproc_target(const rproc *r, rtarget *t)
{
    rt_init(t);
    str_copy(t->addr, sizeof t->addr, r->sock);
    t->require_durable = 0;
}

void rproc_stop(rproc *r)
{
    if (!r)
        return;
    if (r->pid > 0) {
        kill(r->pid, SIGTERM);
        waitpid(r->pid, NULL, 0);
    }
    if (r->sock[0])
        unlink(r->sock);
    if (r->dir[0]) {
        char logfile[320];
        snprintf(logfile, sizeof logfile, "%s/redis.log", r->dir);
        unlink(logfile);
    }
    if (r->dir[0])
        rmdir(r->dir);
    free(r);
}
