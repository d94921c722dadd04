/* The live correlator: a consumer-group reader on cascade.signals, the
 * engine, and the Redis store on one event loop. Per Kafka batch: decode
 * and feed every signal, send the batch's writes as one Redis pipeline,
 * and only when Redis acknowledged them publish the changed incidents and
 * new actions, then commit the offsets (at-least-once). */
#ifndef CS_CORRELATOR_H
#define CS_CORRELATOR_H

#include <event2/event.h>

#include "core/err.h"
#include "core/kafka.h"
#include "core/metrics.h"
#include "core/rtarget.h"

typedef struct corr_opts {
    const char *brokers;
    const cfg_kprops *props; /* kafka.properties (NULL: none) */
    const char *instance_id; /* kafka.instance_id (NULL: dynamic member) */
    const rtarget *redis; /* borrowed: it outlives the correlator */
    const char *group;   /* consumer group; default KFK_GROUP_CORRELATE */
    size_t batch;        /* max signals per batch; default 1000 */
    int fetch_wait_ms;   /* kafka.fetch_wait_ms (0: answer at once) */
    struct pb_catalog *rules; /* rule set (taken over); NULL: built-in */
    size_t max_clusters; /* 0: the engine's default (ENG_MAX_CLUSTERS) */
    size_t max_seen;     /* a cluster's seen ids (0: no limit) */
    /* Partitions of cascade.incidents and cascade.actions (0: unknown,
     * the partitioner picks by key). A cluster's outputs go to one
     * partition of each, chosen as its signals' is: a batch's outputs
     * then take a produce request per cluster, not per incident. */
    int32_t incident_parts, action_parts;
} corr_opts;

typedef struct correlator correlator;
struct pb_catalog;

/* out: where incidents, actions and dead letters go. Refuses to start
 * when the signals topic's partition count is not the one the state in
 * Redis was built with (recorded there by the first correlator: a
 * cluster's state belongs to the partition its key hashes to). */
correlator *corr_start(struct event_base *base, const corr_opts *o,
                       kfk_producer *out, cs_err *err);
/* Swaps the rule set (SIGHUP); takes cat over. See eng_set_catalog. */
int corr_set_catalog(correlator *c, struct pb_catalog *cat, cs_err *err);
/* Whether the backlog is done: every owned partition read to where it
 * ended when first asked, the last batch's outputs delivered and its
 * offsets handed to Kafka. */
int corr_drained(correlator *c);
/* Waits (blocking, up to timeout_ms) for the last offsets' commit. */
int corr_commit_wait(correlator *c, int timeout_ms, cs_err *err);
/* Signals fed, dead letters, incident updates published, and signals the
 * broker deleted before they were read. */
void corr_stats(const correlator *c, unsigned long *signals,
                unsigned long *dead, unsigned long *incidents,
                unsigned long long *lost);
/* Whether it stopped the loop on a fault of its own (the state could
 * not be read, the partition count changed, fenced by another member
 * of its instance id): the process should exit non-zero. */
int corr_failed(const correlator *c);
/* Its metrics families (correlate/cmetrics.h), for /metrics. */
void corr_metrics(const correlator *c, mx_out *o);
/* Whether it is ready (Redis connected, partitions assigned, their state
 * restored); 0 with the reason in why. */
int corr_ready(const correlator *c, char *why, size_t len);
void corr_free(correlator *c);

#endif
