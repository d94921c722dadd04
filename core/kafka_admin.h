/* Creating and checking cascade's topics (`cascade kafka init`, `cascade
 * kafka check`) with librdkafka's admin API: metadata for what exists, its
 * partition count and replication factor, DescribeConfigs for its
 * settings, CreateTopics for what is missing. An existing topic is never
 * changed: its partition count least of all, since the correlators' state
 * is per partition of the signals topic. Blocking: command-line paths
 * only. */
#ifndef CS_KAFKA_ADMIN_H
#define CS_KAFKA_ADMIN_H

#include <stddef.h>

#include "core/config.h"
#include "core/err.h"
#include "core/topics.h"

typedef struct kfk_admin kfk_admin;

/* An admin client of brokers with kafka.properties (props may be NULL). */
kfk_admin *kfk_admin_open(const char *brokers, const cfg_kprops *props,
                          cs_err *err);
void kfk_admin_free(kfk_admin *a);

/* What kfk_admin_apply found, the worst of its topics. */
enum { KFK_ADMIN_OK = 0, KFK_ADMIN_DIFFERS = 1, KFK_ADMIN_FAILED = 2 };

/* One line per topic, "TOPIC: what was found". */
typedef void (*kfk_admin_say)(void *arg, const char *line);

/* Compares each of the n planned topics with what the brokers hold and
 * tells say() about each: created, as planned, missing, what differs
 * (partitions, replication, each planned config's value), or why it could
 * not be told. With create, the missing ones are created as planned. A
 * broker that has no DescribeConfigs (the embedded one) leaves the
 * configs unchecked, which is said but not counted as a difference.
 * Returns KFK_ADMIN_OK when every topic is as planned, KFK_ADMIN_DIFFERS
 * when one is missing (check) or differs, KFK_ADMIN_FAILED when the
 * brokers did not answer or a request failed. */
int kfk_admin_apply(kfk_admin *a, const topic_plan *plans, size_t n,
                    int create, int timeout_ms, kfk_admin_say say, void *arg);

#endif
