/* Guardrails (docs/ACTIONS.md): whether an action request may
 * run now, must wait for a human, or is only proposed; and whether a
 * playbook's checks hold on what an executor read from the scheduler.
 * Decisions only: the executor acts and audits. The budget ledger lives
 * in memory, owned by the executor's event loop. */
#ifndef CS_GUARD_H
#define CS_GUARD_H

#include <stdint.h>

#include <jansson.h>

#include "rules/playbooks.h"

typedef enum {
    GUARD_RUN,      /* act now */
    GUARD_APPROVAL, /* wait for a human's approval */
    GUARD_SHADOW,   /* propose only (shadow mode) */
} guard_verdict;

typedef struct guard_req {
    const pb_playbook *pb;
    pb_mode mode;       /* the operator's mode for it: never above pb->mode */
    pb_approval approval; /* what the executor requires (guard_required);
                           * never less than the playbook's own and its
                           * class's, whatever is passed here */
    const char *approval_why; /* where a hitl comes from, or NULL */
    int approved;       /* a human approved this action */
    int canary;         /* its node is on the canary list */
    const char *cluster, *rack; /* rack may be NULL or "" */
    int64_t now;        /* ms */
} guard_req;

typedef struct guard_decision {
    guard_verdict verdict;
    char why[256]; /* for the audit record and the operator */
} guard_decision;

typedef struct guard guard;

/* The approval an action needs, decided from the executor's own catalog:
 * the strictest of the playbook's least, its class's (a change is never
 * auto, a destructive one always hitl), and what the incident's scenario
 * asks for the playbook (with root_actions, its root scenario's too; a
 * scenario that does not propose it, or that the catalog lacks, gives no
 * ground to act alone: hitl). asked, the request's own field, can only
 * make it stricter. why says where a hitl comes from. */
pb_approval guard_required(const pb_catalog *c, const pb_playbook *pb,
                           const char *scenario, const char *root,
                           pb_approval asked, char *why, size_t len);

guard *guard_new(void);
void guard_free(guard *g);
guard_decision guard_check(guard *g, const guard_req *r);
/* The action ran: it counts against its budgets from r->now on. Recovery
 * counts against none. */
void guard_record(guard *g, const guard_req *r);
/* A budget's use now, for the metrics: the playbook, its scope
 * ("CLUSTER" or "CLUSTER/RACK"; "CLUSTER/?" for nodes of no known rack),
 * the window (ms), and the actions counted in it against the most. */
typedef struct guard_use {
    const char *playbook, *scope;
    int64_t window;
    int used, max;
} guard_use;
typedef void (*guard_use_fn)(void *arg, const guard_use *u);
/* fn for every budget an action has counted against since the start
 * (pruned to its window first). */
void guard_each_use(guard *g, int64_t now, guard_use_fn fn, void *arg);
/* Whether every check holds on facts, an object of field -> value (a
 * string, or an integer for node.jobs). 0: yes; -1: no, with the first
 * failing check in why (a field missing from facts fails its check). */
int guard_checks(const pb_check *v, int n, const json_t *facts, char *why,
                 size_t len);

#endif
