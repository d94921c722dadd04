/* The executor service (`cascade act`): consumes cascade.actions, applies
 * the guardrails, runs a playbook's steps through the executors, verifies,
 * rolls back on failure, and writes every request, decision, approval,
 * refusal, step and result to cascade.audit.
 *
 * Exactly once per action id, whatever Kafka redelivers: every action has
 * a journal in Redis (act:ID) that is written, and acknowledged, before a
 * step starts and after it ends, together with an audit record Kafka has
 * confirmed. Every entry carries a seal (actions/seal.h); one that does
 * not verify is refused, never run. A process killed mid-step finds the step marked running when
 * the request comes again; it does not run it a second time, says so in
 * the audit topic, and lets the verification decide. Offsets are committed
 * once every action of a batch is in a durable state (done, failed,
 * refused, proposed, or waiting for a human). */
#ifndef CS_ACT_H
#define CS_ACT_H

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "actions/excfg.h"
#include "core/err.h"
#include "core/metrics.h"
#include "core/kafka.h"
#include "core/rtarget.h"
#include "rules/playbooks.h"

struct event_base;

typedef struct act_opts {
    const char *brokers, *group; /* group: default KFK_GROUP_ACT */
    const rtarget *redis;     /* the journal's Redis (read at start) */
    const cfg_kprops *props;  /* kafka.properties (NULL: none) */
    const char *instance_id;  /* kafka.instance_id (NULL: dynamic member) */
    const pb_catalog *rules; /* borrowed; outlives the service */
    pb_mode mode;            /* the operator's mode for every playbook... */
    const ex_conf *ex;       /* ...but those its modes name; the HTTP
                              * executors (NULL: none); borrowed */
    pb_backend scheduler;    /* PB_ON_SLURM or PB_ON_K8S */
    const char *canary;      /* nodes that may take changes alone, "a,b" */
    const char *slurm_bin;   /* "" = PATH */
    int approval_ttl_s;      /* a pending approval expires after this */
    int verify_poll_ms;      /* how often a verification reads facts */
    /* The journal's seal key (a secret's text, at least SEAL_KEY_MIN
     * bytes; copied): NULL makes one for this process alone, and a
     * restart then refuses the entries it finds (docs/ACTIONS.md). */
    const char *journal_key;
} act_opts;

typedef struct act_stats {
    unsigned long requests, done, failed, refused, proposed, waiting,
        duplicates, resumed, dead, expired;
} act_stats;

typedef struct act act;

/* Checks at once (blocking) that Redis takes the credentials and keeps
 * what it is given (core/rconn.h, rconn_check): NULL with err when not. */
act *act_start(struct event_base *base, const act_opts *o, kfk_producer *prod,
               cs_err *err);
void act_get_stats(const act *a, act_stats *s);
/* Its metric families (the counts above, the journal's link, the
 * consumer's partitions and lag), for /metrics (core/obsrv.h). */
void act_metrics(const act *a, mx_out *o);
/* Whether it is ready: its journal read back and Redis connected, its
 * consumer holding partitions, not failed. 0 with the reason in why. */
int act_ready(const act *a, char *why, size_t len);
/* A human's decision on a waiting action: approve runs it now, deny ends
 * it. who is the person ("alice"); classes, the playbook classes they may
 * approve (1u << pb_class); a denial needs a reason. fn is called once:
 * status 200 once the decision is recorded (journal and audit), else 400
 * (no reason), 403 (not theirs to approve), 404 (no such action), 409 (not
 * waiting: running, done, denied, expired) or 503 (stopping). */
typedef void (*act_decided_fn)(void *arg, int status, const char *msg);
void act_decide(act *a, const char *id, int approve, const char *who,
                unsigned classes, const char *reason, act_decided_fn fn,
                void *arg);
/* An action's journal as JSON ({state, phase, step, who, why, request,
 * ...}): status 200, 404 (unknown id) or 503 (stopping). */
typedef void (*act_lookup_fn)(void *arg, int status, const json_t *journal);
void act_lookup(act *a, const char *id, act_lookup_fn fn, void *arg);
/* The journal of the actions in a state: "pending" (waiting for a human,
 * soonest to expire first: expires_ms) or "running" (oldest first:
 * started_ms), at most limit (0: 1000); each entry as act_lookup gives it
 * with its "id". fn gets 200 and the array, or 503 (Redis gone). -1 for
 * another state (fn never called). */
typedef void (*act_list_fn)(void *arg, int status, const json_t *entries);
int act_list(act *a, const char *state, size_t limit, act_list_fn fn,
             void *arg);
/* The same read with a blocking connection (the command line: works with
 * no executor running). NULL with err. */
json_t *act_list_sync(redisContext *c, const char *state, size_t limit,
                      cs_err *err);
/* A journal entry (HGETALL's reply) as JSON: its fields, the request
 * parsed, the seal left out; NULL for none. */
json_t *act_journal_json(const redisReply *reply);
/* Whether it stopped the loop because its Kafka consumer failed for good
 * (fenced by another executor of its instance id): exit non-zero. */
int act_failed(const act *a);
/* Stops consuming; actions in flight are left to their journal. */
void act_free(act *a);

#endif
