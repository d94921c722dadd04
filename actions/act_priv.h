/* The executor service's insides, shared by its files and private to
 * actions/: the service (act.c: the consumer, batches and their commit,
 * start and resume, freeing), a run of one action request (run.c: the
 * guardrails' decision, preconditions, steps, verification, rollback, the
 * journal and the audit), and a human's decisions (decisions.c: approve,
 * deny, expiry). */
#ifndef CS_ACT_PRIV_H
#define CS_ACT_PRIV_H

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <jansson.h>

#include "actions/act.h"
#include "actions/exec.h"
#include "actions/guard.h"
#include "core/httpc.h"
#include "actions/journal.h"
#include "actions/seal.h"
#include "core/kafka.h"
#include "core/strmap.h"
#include "rules/playbooks.h"

#define KEY_PREFIX "cascade:act:"
#define LEDGER_KEY KEY_PREFIX "ledger"   /* zset: "ID|playbook|cluster|rack" */
#define PENDING_KEY KEY_PREFIX "pending" /* zset: ID by expiry (ms) */
#define ACTIVE_KEY KEY_PREFIX "active"   /* zset: ID by start (ms) */
#define LEDGER_SPAN_MS (24LL * 3600 * 1000) /* the longest budget window */
#define SYNC_POLL_MS 2
/* Actions in flight at once. Past it the consumer pauses: a storm of
 * requests queues on Kafka, where it is durable and visible as lag, not
 * in this process, where every HTTP call would wait for a connection
 * until its timeout ran out. */
#define ACT_MAX_RUNNING 64

enum { PH_STEPS, PH_VERIFY, PH_ROLLBACK };

typedef struct run run;
typedef void (*run_fn)(run *r);

struct run {
    act *a;
    run *next;
    char id[32];
    json_t *req, *target, *params; /* target, params: borrowed from req */
    const pb_playbook *pb;
    char who[96];          /* "engine" or "human:NAME" */
    seal_entry jr;         /* the sealed fields as journaled */
    int approved, in_batch, durable;
    int owner;             /* this run acts for its id (no other may) */
    int phase, step, interrupted; /* interrupted: the step found running */
    const pb_calls *calls;
    json_t *before, *facts;
    int64_t verify_deadline;
    char failure[512], new_job[64];
    kfk_tracker *trk;
    int jr_wait;           /* journal writes not yet acknowledged */
    run_fn then;           /* what runs once both are durable */
    run_fn facts_fn;       /* what runs once facts are read */
    struct event *timer;
    act_decided_fn decided; /* a human's decision waits on this run */
    void *decided_arg;
};

struct act {
    struct event_base *base;
    act_opts o;
    char canary[1024], group[128];
    kfk_producer *prod;
    kfk_consumer *cons;
    kfk_tracker *btrk; /* the held batch's dead letters */
    journal *jr;
    seal *seal;   /* what every journal entry is sealed with */
    guard *g;
    httpc *http;  /* the HTTP executors' client; NULL without a config */
    /* The executors configured here, in the order a step's operation is
     * offered to them (act_start). */
    executor ex[8];
    size_t nex;
    run *runs;
    size_t batch_left, nruns;
    int holding, ready, closing, throttled;
    int failed; /* the Kafka client failed for good (act_failed) */
    struct event *sweep, *commit_timer;
    act_stats st;
    long pending; /* PENDING_KEY's size at the last sweep; -1: not read yet */
    /* "playbook\tstate" -> unsigned long: how runs ended, counted by
     * run_finish_state, shown by act_metrics */
    strmap *outcomes;
};


/* ---- run.c ---- */
int64_t run_now_ms(void);
const char *run_req_str(const run *r, const char *k);
void run_key_of(char *buf, size_t len, const char *id, const char *suffix);
/* fn once the run's journal writes are acknowledged and its audit records
 * delivered; from the loop, never re-entered. */
void run_after(run *r, run_fn fn);
/* Journal fields of the run (NULL-terminated pairs), and any command. */
void run_jr_set(run *r, ...);
void run_jr_run(run *r, int argc, const char **argv);
void run_audit(run *r, const char *event, const char *detail, json_t *extra);
void run_commit_timer(evutil_socket_t fd, short what, void *arg);
/* Commits the held batch once every run of it is durable. */
void run_try_commit(act *a);
/* Pauses the consumer while ACT_MAX_RUNNING runs are in flight. */
void run_throttle(act *a);
run *run_new(act *a, json_t *req);
void run_free(run *r);
/* Reads the run's journal, then goes on from where it stands. */
void run_load(run *r);
/* Takes the journal entry in reply (HGETALL) as the run's when its seal
 * verifies and it names the playbook version the run has: NULL; else why
 * not. The run's request becomes the entry's. */
const char *run_jr_check(run *r, const redisReply *reply, char *why,
                         size_t len);
/* Ends a run whose journal entry failed run_jr_check: refused, audited
 * with what the entry claimed, never run. */
void run_jr_refuse(run *r, const redisReply *reply, const char *why);
void run_finish_state(run *r, const char *state, const char *event,
                      const char *detail, json_t *extra);
int run_running_here(const act *a, const run *self);
/* The guardrails' answer for the run, and what follows from it. */
void run_decide(run *r);
/* Why a request cannot be used, or NULL. */
const char *run_invalid(const act *a, const json_t *req, char *why,
                        size_t len);

/* ---- decisions.c ---- */
/* The sweep of approvals past their time (a timer of the service). */
void dec_sweep(evutil_socket_t fd, short what, void *arg);

#endif
