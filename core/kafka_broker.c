/* The embedded broker (core/kafka_broker.h). */
#include "core/kafka_broker.h"

#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <event2/event.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "core/kafka.h"
#include "core/log.h"

/* Kafka's ApiKey of Metadata requests (librdkafka's names are private). */
#define KFK_API_METADATA 3

struct kfk_broker {
    rd_kafka_t *rk; /* owns the mock cluster */
    rd_kafka_mock_cluster_t *mc;
    char bootstrap[128];
    struct event *sweep;
};

/* The mock cluster has no CreateTopics (`cascade kafka init` cannot make
 * them there): the topics are made here, under the process's prefix. */
static int broker_topics(kfk_broker *b, int partitions, cs_err *err)
{
    rd_kafka_resp_err_t e;

    for (int i = 0; i < TOPIC_COUNT; i++) {
        const char *topic = topic_name((enum topic_id)i);
        e = rd_kafka_mock_topic_create(b->mc, topic, partitions, 1);
        if (e) {
            cs_err_set(err, "embedded broker: creating %s: %s", topic,
                       rd_kafka_err2str(e));
            return -1;
        }
    }
    return 0;
}

kfk_broker *kfk_broker_start(int partitions, cs_err *err)
{
    /* The host handle creates and owns the cluster; it also points its own
     * bootstrap list at it, so it never looks for a real broker. */
    static const char *const kv[] = {"client.id", "cascade-broker",
                                     "test.mock.num.brokers", "1", NULL};
    kfk_broker *b = calloc(1, sizeof *b);
    rd_kafka_conf_t *conf;

    if (!b) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    if (partitions <= 0)
        partitions = TOPIC_DEFAULT_PARTITIONS;
    if (!(conf = kfk_conf_new(kv, NULL, err)) ||
        !(b->rk = kfk_client_new(RD_KAFKA_PRODUCER, conf, err)))
        goto fail;
    if (!(b->mc = rd_kafka_handle_mock_cluster(b->rk))) {
        cs_err_set(err, "embedded broker: could not start the mock cluster");
        goto fail;
    }
    /* The mock cluster answers Metadata up to version 2, which cannot say
     * allow.auto.create.topics=false: every topic a client asked about
     * was made, with 4 partitions, and a missing one never told. Its
     * handler reads and writes the fields up to version 8; 4 carries the
     * flag. */
    if (rd_kafka_mock_set_apiversion(b->mc, KFK_API_METADATA, 0, 4)) {
        cs_err_set(err, "embedded broker: cannot raise its Metadata version");
        goto fail;
    }
    if (broker_topics(b, partitions, err))
        goto fail;
    snprintf(b->bootstrap, sizeof b->bootstrap, "%s",
             rd_kafka_mock_cluster_bootstraps(b->mc));
    log_info("kafka", "embedded broker on %s, %d partitions per topic%s%s",
             b->bootstrap, partitions, topic_prefix()[0] ? ", topics under " : "",
             topic_prefix());
    return b;
fail:
    kfk_broker_stop(b);
    return NULL;
}

const char *kfk_broker_bootstrap(const kfk_broker *b)
{
    return b->bootstrap;
}

/* The mock cluster writes its responses with Nagle on: a response that
 * follows one the client has not acknowledged yet waits for the client's
 * delayed ACK, about 40 ms (seen as 50 ms per correlator batch). Its
 * sockets are private to librdkafka, so every TCP socket of this process
 * gets TCP_NODELAY, new ones within the sweep period. Ours gain from it
 * too (request/response everywhere). */
#define KFK_SWEEP_MS 100

static void nodelay_sweep(evutil_socket_t fd, short what, void *arg)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    int one = 1;

    (void)fd;
    (void)what;
    (void)arg;
    if (!d)
        return;
    while ((de = readdir(d))) {
        struct stat st;
        int n = atoi(de->d_name);
        if (de->d_name[0] == '.' || fstat(n, &st) || !S_ISSOCK(st.st_mode))
            continue;
        (void)setsockopt(n, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    closedir(d);
}

int kfk_broker_attach(kfk_broker *b, struct event_base *base)
{
    struct timeval tv = {0, KFK_SWEEP_MS * 1000};

    b->sweep = event_new(base, -1, EV_PERSIST, nodelay_sweep, b);
    if (!b->sweep || event_add(b->sweep, &tv))
        return -1;
    nodelay_sweep(-1, 0, b);
    return 0;
}

void kfk_broker_set_down(kfk_broker *b, int down)
{
    /* one broker, id 1 (test.mock.num.brokers) */
    rd_kafka_resp_err_t e = down ? rd_kafka_mock_broker_set_down(b->mc, 1)
                                 : rd_kafka_mock_broker_set_up(b->mc, 1);

    if (e)
        log_warn("kafka", "embedded broker: %s: %s", down ? "down" : "up",
                 rd_kafka_err2str(e));
    else
        log_info("kafka", "embedded broker %s", down ? "down" : "up again");
}

void kfk_broker_stop(kfk_broker *b)
{
    if (!b)
        return;
    if (b->sweep)
        event_free(b->sweep);
    if (b->rk)
        rd_kafka_destroy(b->rk);
    free(b);
}
