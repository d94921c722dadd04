/* The executor contract. An executor (SLURM's tools, slurmrestd, the
 * HTTP vendors, the Kubernetes API) is one `executor`: its name, which
 * playbook operations it knows, the call, optionally the facts it reads
 * about a node or a job, and free. `cascade act` keeps the configured ones
 * in one table, in the order they are asked (actions/act.c, act_start);
 * adding an executor touches its own file and that table's one row. */
#ifndef CS_EXEC_H
#define CS_EXEC_H

#include <jansson.h>

#include "core/err.h"

/* How a call ended. Not HTTP codes: 0 is done. */
typedef enum exec_outcome {
    EXEC_OK = 0,
    EXEC_FAIL = 1,  /* refused or wrong: the same call would fail again */
    EXEC_RETRY = 2, /* transient (no answer, 429, 5xx): it may succeed
                     * later; a run treats it as a failure for now */
} exec_outcome;

/* What an executor calls back with when one call ends (once, from the
 * loop): detail says what happened (never with a secret in it); out is
 * what the call made ({"job": ID}, {"issue": KEY}) or NULL. */
typedef void (*exec_done_fn)(void *arg, exec_outcome oc, const char *detail,
                             json_t *out);

/* An HTTP answer that is not a success: worth trying again, or not. */
static inline exec_outcome exec_http_outcome(long status)
{
    return status == 0 || status == 429 || status >= 500 ? EXEC_RETRY
                                                          : EXEC_FAIL;
}

/* One playbook step to carry out. */
typedef struct exec_call {
    const char *op;         /* the step's operation ("slurm.drain", ...) */
    const json_t *args;     /* its arguments, templates filled */
    const json_t *target;   /* the action request's target and params */
    const json_t *params;
    const json_t *req;      /* the whole action request */
    const char *incident;   /* the incident's id, and the action's */
    const char *action;
    exec_done_fn done;
    void *arg;
} exec_call;

/* What preconditions and verifications read about a node or a job. */
typedef struct exec_query {
    const char *node, *job; /* either may be NULL */
    const char *ns;         /* Kubernetes namespace, or NULL */
    json_t *out;            /* fields are set here */
    exec_done_fn done;
    void *arg;
} exec_query;

typedef struct executor {
    const char *name;
    void *self;
    int http; /* its calls go through the shared HTTP client: freed after it */
    int (*knows)(const void *self, const char *op);
    /* 0: started, done will be called; -1: not started (err says why). */
    int (*call)(void *self, const exec_call *c, cs_err *err);
    /* NULL when it reads nothing (or another reads for it). */
    int (*facts)(void *self, const exec_query *q, cs_err *err);
    void (*free)(void *self);
} executor;

/* The calls an executor has in flight, so that stopping frees them: an
 * exec_link first in each call's struct, the head in the executor. */
typedef struct exec_link {
    struct exec_link *prev, *next;
} exec_link;

static inline void exec_link_add(exec_link **head, exec_link *l)
{
    l->prev = NULL;
    l->next = *head;
    if (*head)
        (*head)->prev = l;
    *head = l;
}

static inline void exec_link_del(exec_link **head, exec_link *l)
{
    if (l->prev)
        l->prev->next = l->next;
    else
        *head = l->next;
    if (l->next)
        l->next->prev = l->prev;
}

#endif
