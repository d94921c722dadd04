/* What the Kubernetes collector tells of each object version it sees
 * (listed or watched): pure, no I/O, so that a unit test and a fuzzer
 * drive it with recorded API objects.
 *
 * Derive, don't diff: each version of an object is turned into every
 * signal it implies, each with its time from the object and an id from
 * what it tells; the ids this process already published are skipped.
 * After a restart or a relist the same versions give the same ids, which
 * the correlator counts once. What each kind gives (docs/COLLECTORS.md):
 *
 * - Events (core/v1 or events.k8s.io/v1): a `k8s` signal, the object as
 *   the API returns it (managedFields dropped), for each new count of it;
 *   host from a Node it regards, else its source host, else the node of
 *   the Pod it regards; job from the Pod's Job or the Job it regards;
 * - Pods (of Jobs): the index pod -> (job, node); a container terminated
 *   OOMKilled becomes a derived Event "OOMKilled: Container C in pod NS/P
 *   was OOMKilled (exit code 137)"; a pod's own reason (Evicted, a node
 *   shutdown's Terminated) "REASON: MESSAGE";
 * - Jobs (batch/v1): `job` signals PENDING (created), RUNNING (started),
 *   and its end: COMPLETED, FAILED, TIMEOUT (DeadlineExceeded), or
 *   CANCELLED when deleted before it ended; nodes from its pods, GPUs
 *   from its pod template's limits x parallelism, team and job_name from
 *   labels, priority from its priorityClassName, config from the first
 *   container's command, args and env (ingest/jobconf.h's rules);
 * - Nodes: `inventory` (rack and canary from labels, GPUs allocatable)
 *   when first seen and when it changes, and a derived NodeNotReady /
 *   NodeReady Event on each Ready transition;
 * - Kueue Workloads: PREEMPTED for the Job it admits when evicted by a
 *   preemption.
 *
 * Derived Events carry reportingComponent "cascade.io/k8s". Events and
 * derived Events pass the edge filter (keep) unless it is NULL; every
 * signal older than max_age_s is skipped (the correlator would refuse
 * it as too late). */
#ifndef CS_K8SOBJ_H
#define CS_K8SOBJ_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

typedef enum {
    KO_NODES,
    KO_PODS,
    KO_JOBS,
    KO_EVENTS,
    KO_WORKLOADS,
    KO_NKINDS
} ko_kind;

typedef struct ko_opts {
    const char *team_label;     /* NULL: cascade.io/team */
    const char *job_name_label; /* NULL: cascade.io/job-name */
    const char *rack_label;     /* NULL: cascade.io/rack */
    const char *canary_label;   /* NULL: cascade.io/canary ("true") */
    const char *const *reserved; /* priority classes told as reserved */
    size_t nreserved;            /* (others: elastic; none: no priority) */
    int64_t max_age_s;           /* 0: 7200 */
    /* The edge filter over "REASON: MESSAGE"; NULL keeps everything. */
    int (*keep)(void *arg, const char *text);
    void *keep_arg;
} ko_opts;

typedef struct ko_stats {
    unsigned long objects;  /* versions applied */
    unsigned long signals;  /* handed to emit and taken */
    unsigned long repeats;  /* already told by this process */
    unsigned long filtered; /* by the edge filter */
    unsigned long old;      /* older than max_age_s */
} ko_stats;

/* Takes sig (a signal object, without cluster). -1: it could not be
 * published; ko_apply stops there and returns -1, and what it did not
 * tell is told when the object comes again. */
typedef int (*ko_emit_fn)(void *arg, json_t *sig);

typedef struct ko_index ko_index;

ko_index *ko_new(const ko_opts *o);
void ko_free(ko_index *x);
const char *ko_kind_name(ko_kind k);
/* type: ADDED, MODIFIED or DELETED; obj: the object (borrowed; an
 * Event's is published itself, its managedFields dropped). now: the
 * wall clock in seconds (max age; a deleted Job's end when the object
 * has no deletionTimestamp). */
int ko_apply(ko_index *x, ko_kind k, const char *type, json_t *obj,
             int64_t now, ko_emit_fn fn, void *arg);
/* The edge filter on an Event's reason and message, for a reader that
 * decides before it builds the object: 1 to keep it (then ko_apply
 * it), 0 when it is dropped (counted as an object applied and
 * filtered). */
int ko_keep_event(ko_index *x, const char *reason, const char *message);
/* A Pod version that tells nothing but where it runs (no container
 * OOMKilled, no reason of its own), for a reader that decides that
 * before it builds the object: the index updated as ko_apply would. */
int ko_pod_seen(ko_index *x, const char *type, const char *ns,
                const char *name, const char *job, const char *node,
                int64_t now);
/* Forgets which ids were told (a delivery failed: tell them again). */
void ko_forget(ko_index *x);
/* Drops deleted pods' index entries after 10 min and told ids after
 * max_age_s. */
void ko_expire(ko_index *x, int64_t now);
void ko_get_stats(const ko_index *x, ko_stats *st);
size_t ko_pods(const ko_index *x);

#endif
