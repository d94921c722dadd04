/* Kafka plumbing shared by collectors, the correlator and the executors:
 * a producer that never blocks the event loop, and a consumer-group reader
 * driven by libevent that hands out one batch at a time and commits only
 * when the caller says the batch is durable elsewhere (at-least-once).
 * Each is made from an options struct, and given the operator's
 * kafka.properties (core/config.h) over cascade's own settings. The
 * embedded broker for development is kafka_broker.h, topic creation and
 * checks kafka_admin.h. */
#ifndef CS_KAFKA_H
#define CS_KAFKA_H

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stddef.h>

#include "core/config.h"
#include "core/err.h"
#include "core/topics.h"

struct event_base;


/* The record a message that cannot be used becomes on the dead-letter
 * topic: where it was read, why it was refused, and its bytes as hex
 * (capped at 4 KiB; raw bytes may not be text). */
json_t *kfk_dead_letter(const rd_kafka_message_t *m, const char *reason);

/* Checks kafka.properties against librdkafka at start, before any client
 * is made: an unknown property, a value it refuses, or a secret that
 * cannot be read is -1, with err "FILE:LINE:COL: kafka.properties.KEY:
 * why". Warns of what this librdkafka is known to get wrong with them
 * (SCRAM against Kafka 4 before 2.6.1). */
int kfk_props_check(const cfg_kprops *props, cs_err *err);


/* Idempotent producer; delivery failures are logged and counted. */
typedef struct kfk_producer kfk_producer;
typedef struct kfk_producer_opts {
    const char *brokers; /* bootstrap servers */
    const cfg_kprops *props; /* kafka.properties (NULL: none) */
    int linger_ms;       /* kafka.linger_ms */
    /* lz4 for the live producers (the cheapest: 15 % more alerts/s
     * through the webhook than zstd), zstd for a collector's backlog
     * (about 4x, against lz4's 3x: more of it fits the embedded broker). */
    const char *codec;
} kfk_producer_opts;
/* brokers, KFK_DEFAULT_LINGER_MS, lz4. */
kfk_producer_opts kfk_producer_defaults(const char *brokers);
kfk_producer *kfk_producer_open(const kfk_producer_opts *o, cs_err *err);

/* kfk_produce returns one of these, or -1 on any other error (err set).
 * KFK_TOO_BIG: key and value are over KFK_MESSAGE_MAX_BYTES with their
 * framing (err says how big): no retry can help, so the caller refuses
 * it (a 413, a dead letter with its place) and goes on. */
enum { KFK_OK = 0, KFK_QUEUE_FULL = 1, KFK_TOO_BIG = 2 };
/* Whether a message of this key and value is within the limit: for a
 * caller that must refuse a whole set before producing any of it. */
int kfk_fits(size_t keylen, size_t len);
/* Copies key and payload. key may be NULL (keylen 0). */
int kfk_produce(kfk_producer *p, const char *topic, const char *key,
                size_t keylen, const void *val, size_t len, cs_err *err);
/* Delivery tracking for at-least-once hand-offs (the correlator commits
 * its input offsets only once its outputs are delivered). A tracker counts
 * the messages produced through it that still await a delivery report, and
 * those that failed definitively. In-flight messages hold a reference, so
 * the owner may release it while reports are outstanding. Reports are
 * served on the thread that polls the producer (the event loop). */
typedef struct kfk_tracker kfk_tracker;
kfk_tracker *kfk_tracker_new(void);
void kfk_tracker_release(kfk_tracker *t);
unsigned long kfk_tracker_pending(const kfk_tracker *t);
/* fn(arg) each time the last pending message of t is reported, delivered
 * or not (from the delivery report, on the thread that polls: the loop's
 * own with kfk_producer_attach). */
void kfk_tracker_on_done(kfk_tracker *t, void (*fn)(void *), void *arg);
/* Returns the failures counted since the last call and resets them. */
unsigned long kfk_tracker_take_failed(kfk_tracker *t);
/* As kfk_produce, counted by t. */
int kfk_produce_tracked(kfk_producer *p, const char *topic, const char *key,
                        size_t keylen, const void *val, size_t len,
                        kfk_tracker *t, cs_err *err);
/* As kfk_produce_tracked, to one partition (KFK_ANY_PARTITION: the
 * partitioner's choice by key). */
#define KFK_ANY_PARTITION (-1)
int kfk_produce_tracked_to(kfk_producer *p, const char *topic,
                           int32_t partition, const char *key, size_t keylen,
                           const void *val, size_t len, kfk_tracker *t,
                           cs_err *err);
/* As kfk_produce_tracked (t may be NULL), but takes the payload
 * (malloc'd) instead of copying it: the producer frees it once done with
 * it, or it is freed here when refused. For messages too big to hold
 * twice. */
int kfk_produce_take(kfk_producer *p, const char *topic, const char *key,
                     size_t keylen, void *val, size_t len, kfk_tracker *t,
                     cs_err *err);
/* Serves delivery reports without blocking. */
void kfk_producer_poll(kfk_producer *p);
/* Serves delivery reports for up to timeout_ms: blocking, so only for
 * command-line paths (file publishing) that have no event loop. */
void kfk_producer_wait(kfk_producer *p, int timeout_ms);
/* Polls every 50 ms from `base`; at most one attachment per producer. */
int kfk_producer_attach(kfk_producer *p, struct event_base *base);
/* Undoes the attachment: its events are freed, so the base may go first
 * (kfk_producer_free does it too). NULL is fine. */
void kfk_producer_detach(kfk_producer *p);
/* Blocking; only at shutdown. 0 when everything was delivered (or failed
 * definitively), -1 when messages were still queued at the timeout. */
int kfk_producer_flush(kfk_producer *p, int timeout_ms);
/* Delivery failures so far. */
unsigned long kfk_producer_failed(const kfk_producer *p);
/* Asks for the metadata of each topic (NULL after the last) now
 * (blocking: start-up only), so that the first message to each does not
 * wait for it, and checks that they exist: -1 when the brokers do not
 * answer within timeout_ms, or a topic does not exist (err names it and
 * says to run `cascade kafka init`) or may not be described. counts (may
 * be NULL) takes each topic's partition count. */
int kfk_producer_topics(kfk_producer *p, const char *const *topics,
                        int32_t *counts, int timeout_ms, cs_err *err);
/* Flushes up to 5 s first. NULL is fine. */
void kfk_producer_free(kfk_producer *p);

/* High-level consumer in group `group` subscribed to `topic`, with manual
 * offset store and commit, starting at the earliest offset when the group
 * has none. Driven by `base` without blocking it: on_batch is called from
 * the loop with 1..max_batch messages. The consumer keeps ownership of the
 * messages, and delivers no further batch, until kfk_consumer_release() or
 * kfk_consumer_commit_held() (backpressure: the callee may wait for async
 * acks first). Messages carrying errors are logged and never passed on.
 * Holding a batch longer than max.poll.interval.ms (5 min) makes the
 * broker evict the consumer from the group. */
typedef struct kfk_consumer kfk_consumer;
typedef void (*kfk_batch_fn)(void *arg, rd_kafka_message_t **msgs, size_t n);
typedef struct kfk_consumer_opts {
    const char *brokers, *group, *topic;
    const cfg_kprops *props; /* kafka.properties (NULL: none) */
    /* group.instance.id (kafka.instance_id; NULL or "": none): static
     * membership. A restart within the session timeout gets its
     * partitions back without a rebalance; a second consumer with the
     * same id fences the first, which then stops (on_fatal). */
    const char *instance_id;
    size_t max_batch;  /* messages a batch at most, at least 1 */
    int fetch_wait_ms; /* kafka.fetch_wait_ms */
    kfk_batch_fn on_batch;
    /* Called once, from the loop, when the client can no longer work
     * (librdkafka's fatal errors: fenced by another member of the same
     * instance id), with the reason; no batch is handed out after. NULL:
     * only logged. */
    void (*on_fatal)(void *arg, const char *reason);
    void *arg;         /* on_batch's and on_fatal's */
} kfk_consumer_opts;
/* brokers, group and topic, KFK_DEFAULT_FETCH_WAIT_MS; the rest zero. */
kfk_consumer_opts kfk_consumer_defaults(const char *brokers, const char *group,
                                        const char *topic);
kfk_consumer *kfk_consumer_open(struct event_base *base,
                                const kfk_consumer_opts *o, cs_err *err);
/* Stores and asynchronously commits the offsets of the held batch, then
 * releases it. A commit failure surfaces later in the log; -1 only when the
 * offsets could not be stored (e.g. partitions revoked meanwhile). */
int kfk_consumer_commit_held(kfk_consumer *c, cs_err *err);
/* Drops the held batch without committing. */
void kfk_consumer_release(kfk_consumer *c);
/* Lets the held batch go before its commit: its offsets are kept in a
 * ticket, its messages freed, and the next batch may be handed out
 * (the correlator feeds it while Redis stores the last). Tickets are
 * committed (or dropped) in the order taken. A rebalance while a ticket
 * is out changes librdkafka's assignment at once, but the assignment
 * callback, and every message after it, waits until the last ticket is
 * committed or dropped: the callee's state of the ticket's batch is
 * then written. */
typedef struct kfk_ticket kfk_ticket;
kfk_ticket *kfk_consumer_detach(kfk_consumer *c);
/* As kfk_consumer_commit_held, for a detached batch; frees t. */
int kfk_consumer_commit_ticket(kfk_consumer *c, kfk_ticket *t, cs_err *err);
/* Frees t without committing (NULL is fine). */
void kfk_ticket_drop(kfk_consumer *c, kfk_ticket *t);
/* Called with the partitions this member owns (sorted) whenever a
 * rebalance changed them, and the topic's partition count. It runs from
 * the loop, only while no batch is held and no ticket is out, before any
 * message of a newly owned partition is handed out. Eager rebalances
 * revoke everything before assigning: fn then sees only the new
 * assignment. */
typedef void (*kfk_assign_fn)(void *arg, const int32_t *parts, size_t n,
                              int32_t partition_cnt);
void kfk_consumer_on_assign(kfk_consumer *c, kfk_assign_fn fn, void *arg);
/* While paused no batch is handed out (the consumer stays in the group). */
void kfk_consumer_pause(kfk_consumer *c, int paused);
/* The partition a producer's default partitioner (consistent_random) puts
 * a non-empty key in: CRC-32 of the key modulo the partition count. */
int32_t kfk_partition_of(const char *key, size_t len, int32_t partition_cnt);
/* Whether every owned partition was read up to where it ended at the
 * first call (since the last rebalance) and no batch is held: the backlog
 * there was is drained. The first call asks the broker (blocking, up to
 * 5 s: for a drain-and-exit, not the steady state). */
int kfk_consumer_caught_up(kfk_consumer *c);
/* Commits the stored offsets and waits up to timeout_ms for the broker's
 * answer (blocking: shutdown only). */
int kfk_consumer_commit_wait(kfk_consumer *c, int timeout_ms, cs_err *err);
/* Messages the broker deleted before this consumer read them, since it
 * started: holes in a partition's offsets (from the group's commit at
 * assignment, then from message to message), and (at a drain's start)
 * what lay before a partition's log start that its group never read. */
unsigned long long kfk_consumer_lost(const kfk_consumer *c);
/* Every owned partition's lag as samples of f (a gauge labelled
 * "partition"): the high watermark librdkafka last fetched (cached,
 * nothing asked of the broker) less the next offset to read; a partition
 * whose lag is unknown yet is left out. The one writer of every
 * consumer's lag family (the correlator's, the executor's). */
struct mx_out;
struct mx_family;
void kfk_consumer_lag_write(const kfk_consumer *c, struct mx_out *o,
                            const struct mx_family *f);
/* How many partitions the consumer owns now. */
size_t kfk_consumer_owned(const kfk_consumer *c);
/* Whether a rebalance's assignment is made in librdkafka but its callback
 * waits for the tickets out. Meanwhile the consumer reads nothing from its
 * queue, so a further rebalance of the group (another member joining)
 * also waits for those tickets. */
int kfk_consumer_assign_waiting(const kfk_consumer *c);
/* Leaves the group (blocking, shutdown only). NULL is fine. */
void kfk_consumer_free(kfk_consumer *c);

/* Whether the client is connected to Kafka now, for /readyz and a
 * *_kafka_up gauge: 0 from librdkafka's all-brokers-down error (at once)
 * until its statistics (every KFK_STATS_MS) show a broker's connection up
 * again; 1 while they show one. Starts at 1: every process has had the
 * brokers answer (topics checked, group joined) before it serves. */
int kfk_producer_up(const kfk_producer *p);
int kfk_consumer_up(const kfk_consumer *c);
/* /readyz's check of a process whose work is producing (the receivers,
 * the collectors): kfk_producer_up, else 0 with the reason in why. */
int kfk_producer_ready(const kfk_producer *p, char *why, size_t len);

/* For core's Kafka files: the connection state of a producer or consumer,
 * the first member of the struct its opaque points to, kept by the
 * callbacks kfk_conf_watch sets (on the thread that polls: the loop). */
#define KFK_STATS_MS 2000
typedef struct kfk_link {
    int up;
} kfk_link;
void kfk_conf_watch(rd_kafka_conf_t *conf);

/* For core's Kafka files: a configuration from key/value pairs (NULL
 * last) with props over them (NULL: none), logging through core/log.h,
 * and a client made from it (the configuration is consumed either
 * way). */
rd_kafka_conf_t *kfk_conf_new(const char *const *kv, const cfg_kprops *props,
                              cs_err *err);
rd_kafka_t *kfk_client_new(rd_kafka_type_t type, rd_kafka_conf_t *conf,
                           cs_err *err);
/* One topic's metadata (blocking): 1 with its partition count and its
 * replication factor (the fewest replicas a partition has), 0 when it
 * does not exist, -1 when the brokers refuse to describe it and
 * KFK_NO_ANSWER when they do not answer (err says which). */
enum { KFK_NO_ANSWER = -2 };
int kfk_topic_meta(rd_kafka_t *rk, const char *topic, int timeout_ms,
                   int32_t *partitions, int *replication, cs_err *err);

#endif
