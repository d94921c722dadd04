/* Runs a program (scontrol, sbatch, a node agent) without blocking the
 * event loop: pipes for its input and output, a pidfd for its exit, a
 * timer that kills it when it overruns. One callback, always from the
 * loop, never from inside proc_run. */
#ifndef CS_PROC_H
#define CS_PROC_H

#include <stddef.h>

#include "core/err.h"

struct event_base;

typedef struct proc_result {
    /* the exit code; 128 + N when signal N ended it; -1 when it could not
     * be started (reason in out) */
    int status;
    int timed_out;  /* killed at the deadline */
    const char *out; /* stdout, NUL-terminated, at most 1 MiB kept (or
                        proc_max_output's) */
    size_t outlen;
    int out_cut;     /* stdout was longer: what is past the limit is gone */
    const char *err; /* stderr, the same */
    size_t errlen;
} proc_result;

typedef void (*proc_done_fn)(void *arg, const proc_result *r);

typedef struct proc proc;

/* argv[0] is looked up in PATH. input (may be NULL) is written to its
 * stdin, which is then closed. The result is valid during fn only. */
proc *proc_run(struct event_base *base, char *const argv[], const char *input,
               size_t inlen, int timeout_ms, proc_done_fn fn, void *arg,
               cs_err *err);
/* As proc_run, with envp (NULL-terminated "K=V") as its whole
 * environment instead of the executor's. */
proc *proc_run_env(struct event_base *base, char *const argv[],
                   char *const envp[], const char *input, size_t inlen,
                   int timeout_ms, proc_done_fn fn, void *arg, cs_err *err);
/* Keeps up to bytes of its stdout instead of 1 MiB (a squeue --json of
 * a busy controller is tens of MiB). Call right after proc_run: nothing
 * is read before the loop runs. */
void proc_max_output(proc *p, size_t bytes);
/* Kills the program and frees everything; fn is not called. */
void proc_cancel(proc *p);

#endif
