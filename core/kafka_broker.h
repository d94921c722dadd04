/* The embedded Kafka-protocol broker of `cascade dev`, `cascade broker`
 * and the quick tests: librdkafka's mock cluster. Production runs a real
 * Apache Kafka. */
#ifndef CS_KAFKA_BROKER_H
#define CS_KAFKA_BROKER_H

#include "core/err.h"

struct event_base;

/* Embedded Kafka-protocol broker: librdkafka's mock cluster, one broker on
 * 127.0.0.1 so other processes (kcat) can connect. Creates cascade's five
 * topics (core/topics.h, under the process's prefix) with `partitions`
 * partitions each (64 when 0), replication 1. Development and tests only:
 * no disk, about 5 MiB kept per partition, and no admin requests
 * (CreateTopics, DescribeConfigs). */
typedef struct kfk_broker kfk_broker;
kfk_broker *kfk_broker_start(int partitions, cs_err *err);
/* "127.0.0.1:PORT" */
const char *kfk_broker_bootstrap(const kfk_broker *b);
/* Turns Nagle off on the broker's sockets, now and every 100 ms from the
 * loop (the mock cluster leaves it on: 40 ms per pipelined response). */
int kfk_broker_attach(kfk_broker *b, struct event_base *base);
/* Takes the broker down (its connections closed, new ones refused) or
 * up again on the same address: for tests of what an outage does. */
void kfk_broker_set_down(kfk_broker *b, int down);
void kfk_broker_stop(kfk_broker *b);

#endif
