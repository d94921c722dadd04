/* Correlation engine: signals in, incidents out. Pure and single-threaded:
 * no sockets, no event loop, no clock but the signals' own time, so replay
 * and live runs make the same decisions and tests drive it directly.
 *
 * State writes (windows, jobs, inventory, incidents) leave through
 * eng_store_ops, which the correlator turns into pipelined Redis commands.
 * Every write is idempotent: window members start with the signal id, and
 * hash fields are overwritten with the full current value. */
#ifndef CS_ENGINE_H
#define CS_ENGINE_H

#include <jansson.h>
#include <stdint.h>

#include "core/err.h"
#include "core/signal.h"

typedef struct eng_store_ops {
    /* ZADD key ts member: one entry of a sliding window. */
    void (*window_add)(void *ctx, const char *key, int64_t ts,
                       const char *member);
    /* Entries of key older than `before` may be dropped. */
    void (*window_trim)(void *ctx, const char *key, int64_t before);
    /* HSET key field value. */
    void (*hash_put)(void *ctx, const char *key, const char *field,
                     const char *value);
    /* HDEL key field. */
    void (*hash_del)(void *ctx, const char *key, const char *field);
} eng_store_ops;

typedef struct engine engine;
struct pb_catalog;

/* Starts on the rule set built into the binary. */
engine *eng_new(const eng_store_ops *ops, void *ctx, cs_err *err);
/* The same over a catalog the caller owns and keeps until the engine is
 * freed (a test making thousands of engines loads the rules once). */
engine *eng_new_shared(const eng_store_ops *ops, void *ctx,
                       const struct pb_catalog *cat, cs_err *err);
void eng_free(engine *e);

/* Swaps the whole rule set (a catalog that loaded without a problem) and
 * takes ownership of it. Open incidents move to the new set's scenario of
 * the same id (keeping the old one when the new set lacks it); the old
 * set stays alive until eng_free, since windows and incidents still name
 * its strings. Open multi-line assemblies carry over. On error (the new
 * set's patterns do not compile) nothing changes and cat is freed. */
int eng_set_catalog(engine *e, struct pb_catalog *cat, cs_err *err);

/* Event time is per cluster (each cluster's signals come in order on its
 * own partition). A signal may be late by up to ENG_ALLOWED_LATENESS
 * behind its cluster's newest: it goes into its windows at its own time
 * and correlates as if on time. Later than that, the windows no longer
 * hold what it would be compared with. */
#define ENG_ALLOWED_LATENESS (2 * 3600 * INT64_C(1000000))
#define ENG_LATE (-1)
/* Nor may a signal come from the future: one stamped more than
 * ENG_MAX_AHEAD past the wall clock (a host's clock running fast, local
 * time written as Z, a year-9999 stamp) would carry its cluster's clock
 * with it, and every real signal after it would be "late" until a
 * restart. It is refused instead, and moves nothing. The wall clock is
 * eng_tick's (live) or eng_set_wall's (replay: a file of the past cannot
 * hold a later time than now either). Kafka's brokers guard the same way
 * (message.timestamp.after.max.ms). */
#define ENG_MAX_AHEAD (10 * 60 * INT64_C(1000000))
#define ENG_EARLY (-2)
/* A cluster costs its windows, jobs and seen ids (some 30 KB at least):
 * 50,000 distinct cluster labels took one process from 20 MB to 1.5 GB.
 * A signal of a cluster beyond the engine's limit (ENG_MAX_CLUSTERS
 * unless eng_set_max_clusters says otherwise) is refused, ENG_FULL;
 * clusters read back from Redis are kept whatever their number. */
#define ENG_MAX_CLUSTERS 4096
#define ENG_FULL (-3)

/* Feeds one signal. Returns 1 when it changed state, 0 when it was a
 * duplicate (same signal id seen within the window horizon) or carried
 * nothing the rules use; ENG_LATE when it was later than the allowed
 * lateness, ENG_EARLY when it was ahead of the wall clock by more than
 * ENG_MAX_AHEAD, ENG_FULL when its cluster would be one too many: each
 * changed nothing (the caller dead-letters or reports it). */
int eng_feed(engine *e, const sig *s);
void eng_set_max_clusters(engine *e, size_t n);
/* At most about n signal ids kept per cluster to count a redelivery once
 * (0, the default: every id for the 2-hour horizon, at 32 to 64 bytes an
 * id: 100k signals/s would hold 720M of them). Past it the oldest go
 * first (core/idset.h ids_limit): the horizon within which a signal
 * delivered again counts once shrinks to what n ids span, and a
 * warning says so once per cluster. */
void eng_set_max_seen(engine *e, size_t n);
typedef struct eng_seen {
    size_t ids;             /* held now, every cluster */
    unsigned long long evicted; /* dropped by the limit before the horizon */
    int64_t horizon;        /* the shortest span (us) a cluster's kept ids
                             * still cover, at most the 2-hour horizon */
} eng_seen;
void eng_seen_stats(const engine *e, eng_seen *out);
/* Why s was refused (ENG_LATE, ENG_EARLY or ENG_FULL), in words: its
 * time and the time it was measured against, or the cluster limit. */
void eng_refusal_reason(const engine *e, const sig *s, char *buf, size_t len);

/* The wall clock (us) that bounds how far ahead a signal may be; 0 (the
 * start): no bound. eng_tick sets it too. */
void eng_set_wall(engine *e, int64_t wall);
/* Live: the wall clock (us), so that timers (a job's absent progress)
 * fire when nothing arrives. Each cluster goes over to the wall clock
 * once its own stream has caught up with it (within a minute); until
 * then, while its backlog is read, its event time decides, as in replay,
 * whatever the other clusters do. */
void eng_tick(engine *e, int64_t wall);
/* The end of a stream (replay): multi-line reports still waiting for more
 * lines are complete. */
void eng_drain(engine *e);

/* Restart: the state records read back from Redis, in any order, then
 * eng_restore_done once. Windows are sorted sets (cascade:{C}:w:node:H);
 * jobs, inventory, incident state and open multi-line assemblies are
 * hashes, the ones eng_restore_wants accepts (the public incidents hash is
 * output, not state). A record that cannot be read returns -1 with the
 * reason in err and is skipped. */
int eng_restore_window(engine *e, const char *key, int64_t ts,
                       const char *member);
int eng_restore_wants(const char *key);
int eng_restore_hash(engine *e, const char *key, const char *field,
                     const char *value, cs_err *err);
/* Relinks what was restored; returns the open incidents it holds. */
size_t eng_restore_done(engine *e);
/* Forgets all state (not the rule set): before the state of the clusters
 * a correlator owns now is read back after a rebalance. Writes already
 * handed to the store stay queued. -1 (err set) leaves e as it was. */
int eng_reset(engine *e, cs_err *err);

/* A long-running correlator forgets what can no longer change: incidents
 * and finished jobs untouched for the horizon (2 h of event time), in
 * memory and in their state records. Replay never prunes: its output is
 * every incident. Returns how many were dropped. */
size_t eng_prune(engine *e);
/* The same for a live loop: the incidents, series and name windows now,
 * and a walk over the jobs begun, which eng_prune_step goes on with
 * `budget` jobs at a time (*done once it is over): a walk over millions
 * of jobs at once held the loop for a large part of a second. Their
 * deletions join the next batch's writes. Both return how many went. */
size_t eng_prune_begin(engine *e);
size_t eng_prune_step(engine *e, size_t budget, int *done);

/* Calls fn for every incident changed since the last call, in a stable
 * order, with its JSON (docs/FORMATS.md incident format), the same serialised
 * compactly (what the store got; callers publish it as it is) and the
 * actions not published before. Also writes each to the store, with the
 * correlation states the signals since the last call changed (each once).
 * Call it once per batch, before the store's pipeline goes out. */
typedef void (*eng_change_fn)(void *arg, const char *incident_id,
                              json_t *incident, const char *text,
                              json_t *new_actions);
void eng_flush(engine *e, eng_change_fn fn, void *arg);

/* Inside eng_flush's callback: what the publication is to the incident
 * (its first, a change, its resolution, its reopening). */
enum { ENG_OPENED, ENG_UPDATED, ENG_RESOLVED, ENG_REOPENED };
int eng_flush_kind(const engine *e);
/* Calls fn with the scenario of every incident published open (merged
 * ones apart): the open incidents an operator sees. */
void eng_each_open(const engine *e, void (*fn)(const char *scenario, void *arg),
                   void *arg);

/* All incidents, ordered by opening time then id (the replay output). */
json_t *eng_incidents(engine *e);
size_t eng_incident_count(const engine *e);

/* Calls report(arg, detector, id) for every scenario id a detector opens
 * by name that cat lacks; returns how many. With the built-in catalog
 * there must be none (eng_new fails otherwise: a typo in a detector is
 * caught the moment an engine is made); a rule folder of its own may
 * lack some, and those detectors then open nothing of them. */
size_t eng_check_scenarios(const struct pb_catalog *cat,
                           void (*report)(void *arg, const char *detector,
                                          const char *id),
                           void *arg);


#endif
