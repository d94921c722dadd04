/* Approvals over HTTP, on the executor's loop. Who may approve what comes
 * from an approvers file, one person per line:
 *
 *   # name   token                     may approve (playbook classes)
 *   alice    file:/etc/cascade/alice   change,job,recovery
 *   bob      env:CASCADE_TOKEN_BOB     change,job,recovery,destructive
 *
 * A token is read from a file or the environment, never written in the
 * file itself, and never logged. Routes (Authorization: Bearer TOKEN):
 *   POST /v1/actions/ID/approve   body optional: {"reason": "..."}
 *   POST /v1/actions/ID/deny      body: {"reason": "..."} (required)
 *   GET  /healthz
 * Answers: 200 {"action", "decision", "by"}; 400 bad body or no reason;
 * 401 unknown token; 403 not theirs to approve; 404 no such action; 409
 * not waiting for a decision. */
#ifndef CS_APPROVALS_H
#define CS_APPROVALS_H

#include "actions/act.h"
#include "core/err.h"

struct event_base;

typedef struct approvers approvers;

/* err: "PATH:LINE: what" for the first problem. */
approvers *apv_load(const char *path, cs_err *err);
size_t apv_count(const approvers *p);
/* The name of the approver whose token headers carry (Authorization:
 * Bearer TOKEN, compared in constant time), or NULL: for another server
 * that takes the same people (the console). */
struct evkeyvalq;
const char *apv_name_of(const approvers *p, const struct evkeyvalq *headers);
void apv_free(approvers *p);

typedef struct apv_server apv_server;

typedef struct apv_opts {
    const char *listen;    /* default 127.0.0.1 */
    int port;              /* 0: an ephemeral port (apv_port) */
    int max_connections;   /* 0: the listener's default (256) */
    int request_timeout_s; /* 0: the listener's default (30) */
} apv_opts;

/* Takes ownership of p. */
apv_server *apv_start(struct event_base *base, act *a, approvers *p,
                      const apv_opts *o, cs_err *err);
int apv_port(const apv_server *s);
void apv_stop(apv_server *s);

#endif
