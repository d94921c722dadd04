#include "core/proc.h"
#include "core/mem.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define OUT_MAX_DEFAULT (1u << 20)

extern char **environ;

typedef struct sink {
    int fd;
    struct event *ev;
    char *buf;
    size_t len, cap;
    int cut; /* more was written than kept */
} sink;

struct proc {
    pid_t pid;
    int pidfd, infd;
    struct event *exit_ev, *in_ev, *timer;
    const char *input;
    size_t inlen, inoff;
    sink out, err;
    size_t out_max;
    int exited, status, timed_out;
    proc_done_fn fn;
    void *arg;
};

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void drop_event(struct event **ev)
{
    if (*ev)
        event_free(*ev);
    *ev = NULL;
}

static void proc_free(proc *p)
{
    drop_event(&p->exit_ev);
    drop_event(&p->in_ev);
    drop_event(&p->timer);
    drop_event(&p->out.ev);
    drop_event(&p->err.ev);
    close_fd(&p->pidfd);
    close_fd(&p->infd);
    close_fd(&p->out.fd);
    close_fd(&p->err.fd);
    free(p->out.buf);
    free(p->err.buf);
    free(p);
}

/* Done once the child exited and both pipes reached end of file: output
 * written just before exit is never cut off. */
static void maybe_done(proc *p)
{
    proc_result r;

    if (!p->exited || p->out.fd >= 0 || p->err.fd >= 0)
        return;
    r.status = p->status;
    r.timed_out = p->timed_out;
    r.out = p->out.buf ? p->out.buf : "";
    r.outlen = p->out.len;
    r.err = p->err.buf ? p->err.buf : "";
    r.errlen = p->err.len;
    r.out_cut = p->out.cut;
    p->fn(p->arg, &r);
    proc_free(p);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    proc *p = arg;
    sink *s = fd == p->out.fd ? &p->out : &p->err;
    char chunk[8192];
    ssize_t n;

    (void)what;
    n = read(fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        drop_event(&s->ev);
        close_fd(&s->fd);
        maybe_done(p);
        return;
    }
    size_t max = s == &p->out ? p->out_max : OUT_MAX_DEFAULT;

    if (s->len + (size_t)n > max) {
        s->cut = 1;
        n = (ssize_t)(max - s->len);
    }
    if (s->len + (size_t)n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        while (cap < s->len + (size_t)n + 1)
            cap *= 2;
        s->buf = xrealloc(s->buf, cap);
        s->cap = cap;
    }
    if (n > 0) {
        memcpy(s->buf + s->len, chunk, (size_t)n);
        s->len += (size_t)n;
        s->buf[s->len] = 0;
    }
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    proc *p = arg;
    ssize_t n;

    (void)what;
    n = write(fd, p->input + p->inoff, p->inlen - p->inoff);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n > 0)
        p->inoff += (size_t)n;
    /* done, or the program closed its stdin (EPIPE): it will say why */
    if (n < 0 || p->inoff == p->inlen) {
        drop_event(&p->in_ev);
        close_fd(&p->infd);
    }
}

static void on_exit_ready(evutil_socket_t fd, short what, void *arg)
{
    proc *p = arg;
    int st;

    (void)fd;
    (void)what;
    if (waitpid(p->pid, &st, WNOHANG) <= 0)
        return;
    p->exited = 1;
    p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    drop_event(&p->exit_ev);
    drop_event(&p->timer);
    maybe_done(p);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    proc *p = arg;

    (void)fd;
    (void)what;
    p->timed_out = 1;
    kill(p->pid, SIGKILL);
}

static int nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int spawn(proc *p, char *const argv[], char *const envp[], cs_err *err)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    int rc = -1, e;

    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
        cs_err_set(err, "pipe: %s", strerror(errno));
        goto out;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
    e = posix_spawnp(&p->pid, argv[0], &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    if (e) {
        cs_err_set(err, "cannot run %s: %s", argv[0], strerror(e));
        goto out;
    }
    p->infd = in[1];
    p->out.fd = out[0];
    p->err.fd = errp[0];
    in[1] = out[0] = errp[0] = -1;
    rc = 0;
out:
    for (int i = 0; i < 2; i++) {
        close_fd(&in[i]);
        close_fd(&out[i]);
        close_fd(&errp[i]);
    }
    return rc;
}

proc *proc_run(struct event_base *base, char *const argv[], const char *input,
               size_t inlen, int timeout_ms, proc_done_fn fn, void *arg,
               cs_err *err)
{
    return proc_run_env(base, argv, environ, input, inlen, timeout_ms, fn, arg,
                        err);
}

proc *proc_run_env(struct event_base *base, char *const argv[],
                   char *const envp[], const char *input, size_t inlen,
                   int timeout_ms, proc_done_fn fn, void *arg, cs_err *err)
{
    proc *p = xcalloc(1, sizeof *p);
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};

    p->pidfd = p->infd = p->out.fd = p->err.fd = -1;
    p->out_max = OUT_MAX_DEFAULT;
    p->fn = fn;
    p->arg = arg;
    p->input = input;
    p->inlen = input ? inlen : 0;
    if (spawn(p, argv, envp, err))
        goto fail;
    p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
    if (p->pidfd < 0) {
        cs_err_set(err, "pidfd_open: %s", strerror(errno));
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        goto fail;
    }
    if (nonblock(p->infd) || nonblock(p->out.fd) || nonblock(p->err.fd)) {
        cs_err_set(err, "fcntl: %s", strerror(errno));
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        goto fail;
    }
    p->exit_ev = event_new(base, p->pidfd, EV_READ | EV_PERSIST, on_exit_ready, p);
    p->out.ev = event_new(base, p->out.fd, EV_READ | EV_PERSIST, on_read, p);
    p->err.ev = event_new(base, p->err.fd, EV_READ | EV_PERSIST, on_read, p);
    p->timer = evtimer_new(base, on_deadline, p);
    event_add(p->exit_ev, NULL);
    event_add(p->out.ev, NULL);
    event_add(p->err.ev, NULL);
    evtimer_add(p->timer, &tv);
    if (p->inlen) {
        p->in_ev = event_new(base, p->infd, EV_WRITE | EV_PERSIST, on_write, p);
        event_add(p->in_ev, NULL);
    } else {
        close_fd(&p->infd);
    }
    return p;
fail:
    proc_free(p);
    return NULL;
}

void proc_cancel(proc *p)
{
    if (!p)
        return;
    if (!p->exited) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
    }
    proc_free(p);
}

void proc_max_output(proc *p, size_t bytes)
{
    p->out_max = bytes;
}
