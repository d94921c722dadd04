/* Reading a topic once, from a time to its end, without joining a
 * consumer group (nothing committed, no member to rebalance): what the
 * command line's views of incidents and the audit trail read, against a
 * running deployment or one that has stopped. Blocking: not for a loop. */
#ifndef CS_KAFKA_SCAN_H
#define CS_KAFKA_SCAN_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>

#include "core/config.h"
#include "core/err.h"

typedef struct kfk_scan_opts {
    const char *brokers;
    const cfg_kprops *props; /* kafka.properties (NULL: none) */
    const char *topic;
    /* Messages whose timestamp is this (ms since the epoch) or later; 0:
     * every message. The older ones are skipped here; with seek, each
     * partition is read only from where the broker says since_ms starts
     * (ListOffsets by time) when it can say (a real Kafka: the embedded
     * broker answers -1 to any time, and is then read from the start). */
    int64_t since_ms;
    int seek;
    int timeout_ms; /* the whole scan's limit */
    /* Each message, partition by partition in offset order (partitions
     * interleave); nonzero stops the scan. */
    int (*fn)(void *arg, const rd_kafka_message_t *m);
    void *arg;
} kfk_scan_opts;

/* 0 once every partition was read to the end it had when the scan
 * began; -1 with err (the brokers do not answer, no such topic, the
 * limit reached). count (may be NULL) gets the messages handed to fn. */
int kfk_scan(const kfk_scan_opts *o, unsigned long *count, cs_err *err);

#endif
