/* cascade's Kafka topics and the clients' default latency settings: what a
 * config file or a test needs to know without linking a Kafka client. */
#ifndef CS_TOPICS_H
#define CS_TOPICS_H

#define KFK_TOPIC_SIGNALS "cascade.signals"
#define KFK_TOPIC_INCIDENTS "cascade.incidents"
#define KFK_TOPIC_ACTIONS "cascade.actions"
#define KFK_TOPIC_DEADLETTER "cascade.deadletter"
#define KFK_TOPIC_AUDIT "cascade.audit"

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
#define KFK_DEFAULT_FETCH_WAIT_MS 100

#endif
