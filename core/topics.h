/* cascade's Kafka topics and consumer groups, the clients' default latency
 * settings, and what `cascade kafka init` makes of each topic: what a
 * config file or a test needs to know without linking a Kafka client.
 *
 * The names are process config: kafka.topic_prefix goes before each
 * topic and each default group name, so that several installations (or
 * parallel test runs) share one Kafka cluster. topic_set_prefix sets it
 * once at start, before any client is made; without it the names are
 * the plain ones ("cascade.signals", "cascade-correlate"). */
#ifndef CS_TOPICS_H
#define CS_TOPICS_H

#include "core/err.h"

enum topic_id {
    TOPIC_SIGNALS,
    TOPIC_INCIDENTS,
    TOPIC_ACTIONS,
    TOPIC_DEADLETTER,
    TOPIC_AUDIT,
    TOPIC_COUNT
};

/* The consumer groups' default names (kafka.group, --group replace them). */
enum topic_group { GROUP_CORRELATE, GROUP_ACT, GROUP_DRY_RUN, GROUP_COUNT };

/* A prefix leaves room for the longest name under Kafka's 249. */
#define TOPIC_PREFIX_MAX 200

/* Whether prefix ("" included) is one a topic name may start with:
 * Kafka's characters (ASCII letters, digits, '.', '_', '-') and at most
 * TOPIC_PREFIX_MAX bytes. -1 with the reason. */
int topic_prefix_check(const char *prefix, cs_err *err);
/* Sets the prefix of every name (checked as above). Start-up only: names
 * handed out before keep the old prefix. */
int topic_set_prefix(const char *prefix, cs_err *err);
const char *topic_prefix(void);
const char *topic_name(enum topic_id t);
const char *topic_group(enum topic_group g);

#define KFK_TOPIC_SIGNALS topic_name(TOPIC_SIGNALS)
#define KFK_TOPIC_INCIDENTS topic_name(TOPIC_INCIDENTS)
#define KFK_TOPIC_ACTIONS topic_name(TOPIC_ACTIONS)
#define KFK_TOPIC_DEADLETTER topic_name(TOPIC_DEADLETTER)
#define KFK_TOPIC_AUDIT topic_name(TOPIC_AUDIT)
#define KFK_GROUP_CORRELATE topic_group(GROUP_CORRELATE)
#define KFK_GROUP_ACT topic_group(GROUP_ACT)
#define KFK_GROUP_DRY_RUN topic_group(GROUP_DRY_RUN)

/* What `cascade kafka init` creates and `cascade kafka check` compares
 * (docs/ARCHITECTURE.md, "Kafka topics"). Every topic gets the same
 * partition count: the signals topic's is fixed once correlators run
 * (a cluster's state belongs to the partition its key hashes to), the
 * others' bound how many executors or readers share the work. */
#define TOPIC_CONFIGS 3
typedef struct topic_config {
    const char *key; /* retention.ms, min.insync.replicas, cleanup.policy */
    char value[24];
} topic_config;
typedef struct topic_plan {
    const char *name;
    int partitions;
    int replication;
    topic_config configs[TOPIC_CONFIGS];
} topic_plan;

#define TOPIC_DEFAULT_PARTITIONS 64
#define TOPIC_DEFAULT_REPLICATION 3

/* The plan for every topic with this partition count and replication
 * factor (min.insync.replicas: 2 from 3 replicas up, else 1). */
void topic_plans(topic_plan out[TOPIC_COUNT], int partitions, int replication);

/* Latency against throughput (kafka.linger_ms, kafka.fetch_wait_ms): how
 * long a producer waits to fill a batch, and how long a fetch waits for
 * data at the broker. A real broker answers a waiting fetch as soon as
 * data arrives; the embedded one only when the wait is over, so with it
 * the fetch wait bounds detection latency (bench/latency.sh sets 1, or 0:
 * a fetch that answers at once, polling). */
/* The largest message cascade produces, set as every producer's
 * message.max.bytes (librdkafka's default; a broker's default
 * message.max.bytes, 1048588, is above it). Everything sized for Kafka
 * derives from it: SIG_MAX_BYTES (core/signal.h) keeps room for the key
 * and the record's framing. */
#define KFK_MESSAGE_MAX_BYTES 1000000
/* Room a message's key and framing take beside its value. */
#define KFK_RECORD_OVERHEAD 8192

#define KFK_DEFAULT_LINGER_MS 5
/* kafka.linger_ms not given: each producer's own. The collectors and the
 * webhook stream, and a few ms fill their batches; the correlator's
 * outputs come in one burst per batch that it then waits for, where a
 * linger is only delay (10 ms of every 30 ms batch cycle on the dense
 * bench log at 5 ms: librdkafka lingers per partition). */
#define KFK_LINGER_UNSET (-1)
#define KFK_CORRELATOR_LINGER_MS 0
#define KFK_DEFAULT_FETCH_WAIT_MS 100

#endif
