/* What every executor (SLURM, the HTTP vendors, Kubernetes) calls back
 * with when one playbook call ends: ok 1 done, 0 failed (detail says why,
 * never with a secret in it); out is what the call made ({"job": ID},
 * {"issue": KEY}) or NULL. Called once, from the loop. */
#ifndef CS_EXEC_H
#define CS_EXEC_H

#include <jansson.h>

typedef void (*exec_done_fn)(void *arg, int ok, const char *detail,
                             json_t *out);

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
