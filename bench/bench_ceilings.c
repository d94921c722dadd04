/* The machine's ceilings, measured the way cascade meets them, so that
 * cascade's own figures can be read as a fraction of them:
 *
 *   kafka.consume     messages/s a librdkafka batch consumer reads from a
 *                     broker over TCP (`cascade broker`), 200-byte
 *                     messages preloaded on cascade.signals
 *   redis.roundtrip   unpipelined ZADDs/s from one client (one round trip
 *                     per window update: what cascade must not do)
 *   redis.pipelined   ZADD window updates/s sent in pipelines of 1000
 *
 * usage: bench_ceilings --brokers ADDR --redis ADDR [--messages N]
 *                       [--updates N] [--runs N]
 * Prints one line per figure: name median min max runs. */
#include <hiredis/hiredis.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/benchutil.h"
#include "core/kafka.h"
#include "core/rconn.h"

#define MAX_RUNS 32

static void report(const char *name, double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    printf("%s %.0f %.0f %.0f %d\n", name, v[n / 2], v[0], v[n - 1], n);
    fflush(stdout);
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *brokers,
                          const char *group)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[256];
    rd_kafka_t *rk;

    rd_kafka_conf_set(conf, "bootstrap.servers", brokers, errstr, sizeof errstr);
    if (group) {
        rd_kafka_conf_set(conf, "group.id", group, errstr, sizeof errstr);
        rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", errstr,
                          sizeof errstr);
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr,
                          sizeof errstr);
    } else {
        rd_kafka_conf_set(conf, "linger.ms", "20", errstr, sizeof errstr);
        rd_kafka_conf_set(conf, "batch.num.messages", "10000", errstr,
                          sizeof errstr);
    }
    if (!(rk = rd_kafka_new(type, conf, errstr, sizeof errstr)))
        fprintf(stderr, "bench_ceilings: %s\n", errstr);
    return rk;
}

static int preload(const char *brokers, long n)
{
    rd_kafka_t *p = client(RD_KAFKA_PRODUCER, brokers, NULL);
    char msg[200], key[32];

    if (!p)
        return -1;
    memset(msg, 'x', sizeof msg);
    for (long i = 0; i < n; i++) {
        snprintf(key, sizeof key, "node%04ld", i % 1000);
        while (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(KFK_TOPIC_SIGNALS),
                                 RD_KAFKA_V_KEY(key, strlen(key)),
                                 RD_KAFKA_V_VALUE(msg, sizeof msg),
                                 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                 RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
            rd_kafka_poll(p, 10);
        rd_kafka_poll(p, 0);
    }
    rd_kafka_flush(p, 60000);
    rd_kafka_destroy(p);
    return 0;
}

/* One fresh group reads the whole topic: messages/s from the first
 * message to the last. */
static double consume(const char *brokers, long n, int run)
{
    char group[64];
    rd_kafka_t *c;
    rd_kafka_topic_partition_list_t *t;
    rd_kafka_queue_t *q;
    rd_kafka_message_t *batch[10000];
    long got = 0;
    double t0 = 0, t1 = 0;

    snprintf(group, sizeof group, "bench-ceiling-%d-%ld", run, (long)time(NULL));
    if (!(c = client(RD_KAFKA_CONSUMER, brokers, group)))
        return 0;
    rd_kafka_poll_set_consumer(c);
    t = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(t, KFK_TOPIC_SIGNALS, RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(c, t);
    rd_kafka_topic_partition_list_destroy(t);
    q = rd_kafka_queue_get_consumer(c);
    for (double deadline = bench_now() + 120; got < n && bench_now() < deadline;) {
        ssize_t k = rd_kafka_consume_batch_queue(q, 1000, batch, 10000);
        for (ssize_t i = 0; i < k; i++) {
            if (!batch[i]->err) {
                if (!got++)
                    t0 = bench_now();
                t1 = bench_now();
            }
            rd_kafka_message_destroy(batch[i]);
        }
    }
    rd_kafka_queue_destroy(q);
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    if (got < n) {
        fprintf(stderr, "bench_ceilings: read %ld of %ld messages\n", got, n);
        return 0;
    }
    return t1 > t0 ? (double)(got - 1) / (t1 - t0) : 0;
}

static double redis_updates(redisContext *r, long n, int pipeline)
{
    char key[64], member[64], score[32];
    double t0 = bench_now();
    long sent = 0, read = 0;
    redisReply *reply;

    while (read < n) {
        for (; sent < n && sent - read < pipeline; sent++) {
            snprintf(key, sizeof key, "bench:w:node%04ld", sent % 1000);
            snprintf(member, sizeof member, "sig-%ld", sent);
            snprintf(score, sizeof score, "%ld", 1714521600000L + sent);
            redisAppendCommand(r, "ZADD %s %s %s", key, score, member);
        }
        if (redisGetReply(r, (void **)&reply) != REDIS_OK) {
            fprintf(stderr, "bench_ceilings: redis: %s\n", r->errstr);
            return 0;
        }
        freeReplyObject(reply);
        read++;
    }
    reply = redisCommand(r, "FLUSHDB");
    freeReplyObject(reply);
    return (double)n / (bench_now() - t0);
}

int main(int argc, char **argv)
{
    const char *brokers = NULL, *raddr = NULL;
    long messages = 1000000, updates = 500000;
    int runs = 3;
    double v[MAX_RUNS];
    redisContext *r;
    rtarget t;
    cs_err err;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--brokers") && i + 1 < argc)
            brokers = argv[++i];
        else if (!strcmp(argv[i], "--redis") && i + 1 < argc)
            raddr = argv[++i];
        else if (!strcmp(argv[i], "--messages") && i + 1 < argc)
            messages = atol(argv[++i]);
        else if (!strcmp(argv[i], "--updates") && i + 1 < argc)
            updates = atol(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_ceilings --brokers ADDR --redis ADDR "
                            "[--messages N] [--updates N] [--runs N<=%d]\n",
                    MAX_RUNS);
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    if (!brokers || !raddr || runs < 1 || runs > MAX_RUNS || messages < 2 ||
        updates < 1000) {
        fprintf(stderr, "bench_ceilings: --brokers and --redis are required\n");
        return 2;
    }
    if (preload(brokers, messages))
        return 1;
    for (int i = 0; i < runs; i++)
        if ((v[i] = consume(brokers, messages, i)) <= 0)
            return 1;
    report("kafka.consume", v, runs);
    rt_init(&t);
    if (rt_set_addr(&t, raddr, &err) ||
        !(r = rconn_open(&t, NULL, 0, &err))) {
        fprintf(stderr, "bench_ceilings: %s\n", err.msg);
        return 1;
    }
    for (int i = 0; i < runs; i++)
        if ((v[i] = redis_updates(r, updates / 25, 1)) <= 0)
            return 1;
    report("redis.roundtrip", v, runs);
    for (int i = 0; i < runs; i++)
        if ((v[i] = redis_updates(r, updates, 1000)) <= 0)
            return 1;
    report("redis.pipelined", v, runs);
    redisFree(r);
    return 0;
}
