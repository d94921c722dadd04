/* Kafka plumbing shared by collectors, the correlator and the executors:
 * an embedded broker for development, a producer that never blocks the
 * event loop, and a consumer-group reader driven by libevent that hands out
 * one batch at a time and commits only when the caller says the batch is
 * durable elsewhere (at-least-once). */
#ifndef CS_KAFKA_H
#define CS_KAFKA_H

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stddef.h>

#include "core/err.h"

struct event_base;

#define KFK_TOPIC_SIGNALS "cascade.signals"
#define KFK_TOPIC_INCIDENTS "cascade.incidents"
#define KFK_TOPIC_ACTIONS "cascade.actions"
#define KFK_TOPIC_DEADLETTER "cascade.deadletter"
#define KFK_TOPIC_AUDIT "cascade.audit"

/* The record a message that cannot be used becomes on the dead-letter
 * topic: where it was read, why it was refused, and its bytes as hex
 * (capped at 4 KiB; raw bytes may not be text). */
json_t *kfk_dead_letter(const rd_kafka_message_t *m, const char *reason);

/* Embedded Kafka-protocol broker: librdkafka's mock cluster, one broker on
 * 127.0.0.1 so other processes (kcat) can connect. Creates the five topics
 * above with `partitions` partitions each (64 when 0). Development and
 * tests only: no disk, and about 5 MiB kept per partition. */
typedef struct kfk_broker kfk_broker;
kfk_broker *kfk_broker_start(int partitions, cs_err *err);
/* "127.0.0.1:PORT" */
const char *kfk_broker_bootstrap(const kfk_broker *b);
/* Turns Nagle off on the broker's sockets, now and every 100 ms from the
 * loop (the mock cluster leaves it on: 40 ms per pipelined response). */
int kfk_broker_attach(kfk_broker *b, struct event_base *base);
void kfk_broker_stop(kfk_broker *b);

/* Latency against throughput (kafka.linger_ms, kafka.fetch_wait_ms): how
 * long a producer waits to fill a batch, and how long a fetch waits for
 * data at the broker. A real broker answers a waiting fetch as soon as
 * data arrives; the embedded one only when the wait is over, so with it
 * the fetch wait bounds detection latency (bench/latency.sh sets 1, or 0:
 * a fetch that answers at once, polling). */
#define KFK_DEFAULT_LINGER_MS 5
#define KFK_DEFAULT_FETCH_WAIT_MS 100

/* Idempotent producer; delivery failures are logged and counted. */
typedef struct kfk_producer kfk_producer;
kfk_producer *kfk_producer_new(const char *brokers, cs_err *err);
kfk_producer *kfk_producer_new_linger(const char *brokers, int linger_ms,
                                      cs_err *err);
/* codec: lz4 for the live producers (the cheapest: 15 % more alerts/s
 * through the webhook than zstd), zstd for a collector's backlog (about
 * 4x, against lz4's 3x: more of it fits the embedded broker). */
kfk_producer *kfk_producer_new_codec(const char *brokers, int linger_ms,
                                     const char *codec, cs_err *err);

/* kfk_produce returns one of these, or -1 on any other error (err set). */
enum { KFK_OK = 0, KFK_QUEUE_FULL = 1 };
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
/* Serves delivery reports without blocking. */
void kfk_producer_poll(kfk_producer *p);
/* Serves delivery reports for up to timeout_ms: blocking, so only for
 * command-line paths (file publishing) that have no event loop. */
void kfk_producer_wait(kfk_producer *p, int timeout_ms);
/* Polls every 50 ms from `base`; at most one attachment per producer. */
int kfk_producer_attach(kfk_producer *p, struct event_base *base);
/* Blocking; only at shutdown. 0 when everything was delivered (or failed
 * definitively), -1 when messages were still queued at the timeout. */
int kfk_producer_flush(kfk_producer *p, int timeout_ms);
/* Delivery failures so far. */
unsigned long kfk_producer_failed(const kfk_producer *p);
/* Flushes up to 5 s first. NULL is fine. */
/* Fetches the topics' metadata now (blocking, startup only), so the first
 * message to each does not wait for it. */
int kfk_producer_warm(kfk_producer *p, const char *const *topics,
                      int timeout_ms, cs_err *err);
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
kfk_consumer *kfk_consumer_new(struct event_base *base, const char *brokers,
                               const char *group, const char *topic,
                               size_t max_batch, kfk_batch_fn fn, void *arg,
                               cs_err *err);
/* The same with fetch.wait.max.ms given (kafka.fetch_wait_ms). */
kfk_consumer *kfk_consumer_new_wait(struct event_base *base,
                                    const char *brokers, const char *group,
                                    const char *topic, size_t max_batch,
                                    kfk_batch_fn fn, void *arg,
                                    int fetch_wait_ms, cs_err *err);
/* Stores and asynchronously commits the offsets of the held batch, then
 * releases it. A commit failure surfaces later in the log; -1 only when the
 * offsets could not be stored (e.g. partitions revoked meanwhile). */
int kfk_consumer_commit_held(kfk_consumer *c, cs_err *err);
/* Drops the held batch without committing. */
void kfk_consumer_release(kfk_consumer *c);
/* Called with the partitions this member owns (sorted) whenever a
 * rebalance changed them, and the topic's partition count. It runs from
 * the loop, only while no batch is held, before any message of a newly
 * owned partition is handed out. Eager rebalances revoke everything before
 * assigning: fn then sees only the new assignment. */
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
/* Leaves the group (blocking, shutdown only). NULL is fine. */
void kfk_consumer_free(kfk_consumer *c);

#endif
