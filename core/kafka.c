#include "core/kafka.h"

#include <errno.h>
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/dlvorder.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/secret.h"

#define KFK_POLL_MS 50

struct kfk_producer {
    kfk_link link; /* first: the opaque's (kfk_conf_watch) */
    rd_kafka_t *rk;
    struct event *timer, *wake;
    rd_kafka_queue_t *main_q;
    int pipefd[2];
    unsigned long failed;
    dlo *order;           /* each partition's last delivered offset */
    unsigned long reused; /* reports at an offset already reported */
};

/* ---- shared configuration ---------------------------------------------- */

/* Called from librdkafka's own threads: log_write emits one fprintf per
 * line, so lines from several threads stay whole. */
static void kfk_log_cb(const rd_kafka_t *rk, int level, const char *fac,
                       const char *buf)
{
    enum log_level lvl = level <= 3   ? LOG_LVL_ERROR
                         : level == 4 ? LOG_LVL_WARN
                         : level <= 6 ? LOG_LVL_INFO
                                      : LOG_LVL_DEBUG;

    /* kafka.properties go to every client, so a producer is given the
     * consumers' settings and the other way round, on purpose. */
    if (!strcmp(fac, "CONFWARN") && strstr(buf, "will be ignored by this"))
        lvl = LOG_LVL_DEBUG;
    LOG_AT(lvl, "kafka", "%s %s: %s", rd_kafka_name(rk), fac, buf);
}

static void kfk_error_cb(rd_kafka_t *rk, int code, const char *reason,
                         void *opaque)
{
    char fatal[256];

    (void)opaque;
    if (code == RD_KAFKA_RESP_ERR__FATAL) {
        rd_kafka_fatal_error(rk, fatal, sizeof fatal);
        log_error("kafka", "%s: fatal: %s", rd_kafka_name(rk), fatal);
        return;
    }
    /* librdkafka has already logged the failed connection itself. */
    if (code == RD_KAFKA_RESP_ERR__TRANSPORT)
        return;
    log_warn("kafka", "%s: %s: %s", rd_kafka_name(rk),
             rd_kafka_err2name((rd_kafka_resp_err_t)code), reason);
}

/* Whether a broker's connection is up in librdkafka's statistics
 * (brokers.NAME.state); the bootstrap and coordinator entries (nodeid
 * -1) are the same connections under another name. */
static int stats_up(const char *json, size_t len)
{
    json_t *st = json_loadb(json, len, 0, NULL), *b;
    const char *name;
    int up = 0;

    json_object_foreach(json_object_get(st, "brokers"), name, b) {
        const char *state = json_string_value(json_object_get(b, "state"));
        if (state && !strcmp(state, "UP") &&
            json_integer_value(json_object_get(b, "nodeid")) >= 0)
            up = 1;
    }
    json_decref(st);
    return up;
}

static int watch_stats_cb(rd_kafka_t *rk, char *json, size_t len,
                          void *opaque)
{
    kfk_link *l = opaque;
    int up = stats_up(json, len);

    if (up != l->up)
        LOG_AT(up ? LOG_LVL_INFO : LOG_LVL_WARN, "kafka",
               "%s: %s", rd_kafka_name(rk),
               up ? "connected to Kafka again" : "no broker connection up");
    l->up = up;
    return 0; /* librdkafka frees json */
}

static void watch_error_cb(rd_kafka_t *rk, int code, const char *reason,
                           void *opaque)
{
    kfk_link *l = opaque;

    if (code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
        l->up = 0;
    kfk_error_cb(rk, code, reason, opaque);
}

void kfk_conf_watch(rd_kafka_conf_t *conf)
{
    char ms[16];

    snprintf(ms, sizeof ms, "%d", KFK_STATS_MS);
    rd_kafka_conf_set(conf, "statistics.interval.ms", ms, NULL, 0);
    rd_kafka_conf_set_stats_cb(conf, watch_stats_cb);
    rd_kafka_conf_set_error_cb(conf, watch_error_cb);
}

int kfk_producer_up(const kfk_producer *p)
{
    return p->link.up;
}

int kfk_producer_ready(const kfk_producer *p, char *why, size_t len)
{
    if (p->link.up)
        return 1;
    snprintf(why, len, "no connection to a Kafka broker up");
    return 0;
}

static int conf_set(rd_kafka_conf_t *conf, const char *key, const char *val,
                    cs_err *err)
{
    char why[256];

    if (rd_kafka_conf_set(conf, key, val, why, sizeof why) ==
        RD_KAFKA_CONF_OK)
        return 0;
    cs_err_set(err, "kafka config %s=%s: %s", key, val, why);
    return -1;
}

/* The longest secret a property may hold: a PEM key (ssl.key.pem). */
#define SECRET_MAX 8192

/* "FILE:LINE:COL: kafka.properties.KEY: why", at the key or the value. */
static void prop_problem(cs_err *err, const cfg_kprops *ps, const cfg_kprop *p,
                         int at_key, const char *why)
{
    cs_err_set(err, "%s:%d:%d: kafka.properties.%s: %s", ps->file,
               at_key ? p->key_line : p->value_line,
               at_key ? p->key_col : p->value_col, p->key, why);
}

/* One property onto conf; a secret's reference is read now, and the
 * text wiped once librdkafka has its copy. */
static int prop_set(rd_kafka_conf_t *conf, const cfg_kprops *ps,
                    const cfg_kprop *p, cs_err *err)
{
    char why[512], *secret = NULL;
    const char *val = p->value;
    rd_kafka_conf_res_t r;
    cs_err e;

    if (cfg_kprop_secret(p->key)) {
        secret = xmalloc(SECRET_MAX);
        if (secret_read(p->value, secret, SECRET_MAX, &e)) {
            prop_problem(err, ps, p, 0, e.msg);
            free(secret);
            return -1;
        }
        val = secret;
    }
    r = rd_kafka_conf_set(conf, p->key, val, why, sizeof why);
    if (r != RD_KAFKA_CONF_OK)
        /* librdkafka quotes the value it refused: never a secret's */
        prop_problem(err, ps, p, r == RD_KAFKA_CONF_UNKNOWN,
                     secret ? "librdkafka refused the secret's value" : why);
    if (secret) {
        explicit_bzero(secret, SECRET_MAX);
        free(secret);
    }
    return r == RD_KAFKA_CONF_OK ? 0 : -1;
}

static int props_apply(rd_kafka_conf_t *conf, const cfg_kprops *ps,
                       cs_err *err)
{
    for (size_t i = 0; ps && i < ps->n; i++)
        if (prop_set(conf, ps, &ps->v[i], err))
            return -1;
    return 0;
}

/* librdkafka before 2.6.1 puts the client nonce twice in SCRAM's
 * client-final-message (confluentinc/librdkafka#4895); Kafka 4 refuses
 * it as invalid credentials, Kafka 3 lets it pass. */
#define KFK_SCRAM_FIXED 0x02060100

static void scram_warn(const cfg_kprops *ps)
{
    for (size_t i = 0; ps && i < ps->n; i++) {
        const cfg_kprop *p = &ps->v[i];
        if ((strcmp(p->key, "sasl.mechanisms") &&
             strcmp(p->key, "sasl.mechanism")) ||
            strncasecmp(p->value, "SCRAM-", 6) ||
            rd_kafka_version() >= KFK_SCRAM_FIXED)
            continue;
        log_warn("kafka", "%s:%d:%d: sasl.mechanisms %s with librdkafka %s: "
                 "before 2.6.1 it sends the client nonce twice in SCRAM's "
                 "final message (confluentinc/librdkafka#4895), which Kafka "
                 "4.x refuses as invalid credentials (Kafka 3.x accepts it); "
                 "against Kafka 4 use SASL/PLAIN over TLS, or a newer "
                 "librdkafka", ps->file, p->value_line, p->value_col,
                 p->value, rd_kafka_version_str());
    }
}

int kfk_props_check(const cfg_kprops *ps, cs_err *err)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    int rc = props_apply(conf, ps, err);

    rd_kafka_conf_destroy(conf);
    if (rc == 0)
        scram_warn(ps);
    return rc;
}

/* Settings as {key, value} pairs terminated by a NULL key, then props. */
rd_kafka_conf_t *kfk_conf_new(const char *const *kv, const cfg_kprops *props,
                              cs_err *err)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();

    rd_kafka_conf_set_log_cb(conf, kfk_log_cb);
    rd_kafka_conf_set_error_cb(conf, kfk_error_cb);
    for (; kv[0]; kv += 2) {
        if (conf_set(conf, kv[0], kv[1], err)) {
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
    }
    if (props_apply(conf, props, err)) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return conf;
}

/* rd_kafka_new takes ownership of conf only when it succeeds. */
rd_kafka_t *kfk_client_new(rd_kafka_type_t type, rd_kafka_conf_t *conf,
                           cs_err *err)
{
    char why[256];
    rd_kafka_t *rk = rd_kafka_new(type, conf, why, sizeof why);

    if (!rk) {
        rd_kafka_conf_destroy(conf);
        cs_err_set(err, "kafka client: %s", why);
    }
    return rk;
}

json_t *kfk_dead_letter(const rd_kafka_message_t *m, const char *reason)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *p = m->payload;
    size_t n = m->len > 4096 ? 4096 : m->len;
    char *hex = xmalloc(2 * n + 1);
    json_t *d;

    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[p[i] >> 4];
        hex[2 * i + 1] = digits[p[i] & 15];
    }
    hex[2 * n] = 0;
    d = json_pack("{s:s, s:i, s:I, s:s, s:s, s:I}", "topic",
                  rd_kafka_topic_name(m->rkt), "partition", m->partition,
                  "offset", (json_int_t)m->offset, "reason", reason,
                  "raw_hex", hex, "bytes", (json_int_t)m->len);
    free(hex);
    return d;
}

/* ---- producer ----------------------------------------------------------- */

struct kfk_tracker {
    unsigned long refs, pending, failed;
    void (*done)(void *);
    void *done_arg;
};

void kfk_tracker_on_done(kfk_tracker *t, void (*fn)(void *), void *arg)
{
    t->done = fn;
    t->done_arg = arg;
}

kfk_tracker *kfk_tracker_new(void)
{
    kfk_tracker *t = calloc(1, sizeof *t);
    if (t)
        t->refs = 1;
    return t;
}

static void tracker_unref(kfk_tracker *t)
{
    if (--t->refs == 0)
        free(t);
}

void kfk_tracker_release(kfk_tracker *t)
{
    if (t)
        tracker_unref(t);
}

unsigned long kfk_tracker_pending(const kfk_tracker *t)
{
    return t->pending;
}

unsigned long kfk_tracker_take_failed(kfk_tracker *t)
{
    unsigned long n = t->failed;
    t->failed = 0;
    return n;
}

static void tracker_report(kfk_tracker *t, int failed)
{
    t->pending--;
    if (failed)
        t->failed++;
    if (!t->pending && t->done && t->refs > 1) /* refs 1: released */
        t->done(t->done_arg);
    tracker_unref(t);
}

static void reused_log(const kfk_producer *p, const rd_kafka_message_t *m)
{
    const char *topic = rd_kafka_topic_name(m->rkt);
    char at[64];

    if (m->offset < 0)
        snprintf(at, sizeof at, "without an offset");
    else
        snprintf(at, sizeof at, "at offset %lld, not after %lld",
                 (long long)m->offset,
                 (long long)dlo_last(p->order, topic, m->partition));
    log_error("kafka", "delivery to %s [%d] reported %s: the broker took "
              "the message for a duplicate of a batch it has and may have "
              "kept another in its place; counted as failed, for its "
              "sender to retry (%lu so far; a delivery report not after "
              "the last one reported)", topic, (int)m->partition, at,
              p->reused);
}

/* Runs on the thread that polls (the loop, or flush at shutdown). */
static void kfk_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m,
                      void *opaque)
{
    kfk_producer *p = opaque;

    (void)rk;
    /* a success at an offset already reported is a message the broker
     * dropped as a duplicate (core/dlvorder.h): failed, to be retried */
    int reused = !m->err && dlo_check(p->order, rd_kafka_topic_name(m->rkt),
                                      m->partition, m->offset);
    if (m->_private)
        tracker_report(m->_private,
                       m->err != RD_KAFKA_RESP_ERR_NO_ERROR || reused);
    if (reused) {
        if (p->reused++ % 1000 == 0)
            reused_log(p, m);
        return;
    }
    /* purged by kfk_producer_free, after its flush said how many */
    if (!m->err || m->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE ||
        m->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
        return;
    /* First failure and then one line per thousand: an outage must not
     * turn into a log flood. */
    if (p->failed++ % 1000 == 0)
        log_error("kafka", "delivery to %s failed: %s (%lu failures so far)",
                  rd_kafka_topic_name(m->rkt), rd_kafka_err2str(m->err),
                  p->failed);
}

kfk_producer_opts kfk_producer_defaults(const char *brokers)
{
    return (kfk_producer_opts){.brokers = brokers,
                               .linger_ms = KFK_DEFAULT_LINGER_MS,
                               .codec = "lz4"};
}

kfk_producer *kfk_producer_open(const kfk_producer_opts *o, cs_err *err)
{
    char linger[16], max_bytes[16];
    const char *const kv[] = {"bootstrap.servers", o->brokers,
                              "client.id", "cascade-producer",
                              /* small requests, answered one by one: no
                               * reason to hold them back (the broker side
                               * is kfk_broker_attach) */
                              "socket.nagle.disable", "true",
                              "enable.idempotence", "true",
                              /* A topic the broker made on a first
                               * message would have its defaults, not
                               * cascade kafka init's partitions. */
                              "allow.auto.create.topics", "false",
                              /* Signals are text: a batch compresses
                               * 3-4x, which is 3-4x the backlog the
                               * embedded broker keeps (5 MiB per partition,
                               * fixed in librdkafka's mock cluster). The
                               * fastest level: a collector shares the
                               * machine with what reads its output. */
                              "compression.codec", o->codec ? o->codec : "lz4",
                              "compression.level", "1",
                              "linger.ms", linger,
                              "message.max.bytes", max_bytes, NULL};

    snprintf(linger, sizeof linger, "%d", o->linger_ms);
    snprintf(max_bytes, sizeof max_bytes, "%d", KFK_MESSAGE_MAX_BYTES);
    kfk_producer *p = calloc(1, sizeof *p);
    rd_kafka_conf_t *conf;

    if (!p) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    p->pipefd[0] = p->pipefd[1] = -1; /* until attached to a loop */
    p->link.up = 1;
    p->order = dlo_new();
    if (!(conf = kfk_conf_new(kv, o->props, err)))
        goto fail;
    kfk_conf_watch(conf);
    rd_kafka_conf_set_opaque(conf, p);
    rd_kafka_conf_set_dr_msg_cb(conf, kfk_dr_cb);
    if (!(p->rk = kfk_client_new(RD_KAFKA_PRODUCER, conf, err)))
        goto fail;
    return p;
fail:
    dlo_free(p->order);
    free(p);
    return NULL;
}

/* What librdkafka counts beside key and value against message.max.bytes
 * (a record's varints and attributes), with room to spare. */
#define RECORD_FRAMING 512

int kfk_fits(size_t keylen, size_t len)
{
    return len + keylen + RECORD_FRAMING <= KFK_MESSAGE_MAX_BYTES;
}

static int produce(kfk_producer *p, const char *topic, int32_t partition,
                   const char *key, size_t keylen, void *val, size_t len,
                   int flags, kfk_tracker *t, cs_err *err)
{
    rd_kafka_resp_err_t e;

    /* Checked here, before librdkafka: its refusal reads like any other
     * error, and the callers retried it. */
    if (!kfk_fits(keylen, len)) {
        cs_err_set(err, "a message of %zu bytes for %s is over the %d-byte "
                   "message limit", len + keylen, topic,
                   KFK_MESSAGE_MAX_BYTES);
        return KFK_TOO_BIG;
    }
    e = rd_kafka_producev(
        p->rk, RD_KAFKA_V_TOPIC(topic),
        RD_KAFKA_V_PARTITION(partition == KFK_ANY_PARTITION
                                 ? RD_KAFKA_PARTITION_UA
                                 : partition),
        RD_KAFKA_V_KEY(key, keylen),
        RD_KAFKA_V_VALUE(val, len), RD_KAFKA_V_MSGFLAGS(flags),
        RD_KAFKA_V_OPAQUE(t), RD_KAFKA_V_END);

    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (t) {
            t->refs++;
            t->pending++;
        }
        return KFK_OK;
    }
    if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
        return KFK_QUEUE_FULL;
    cs_err_set(err, "producing to %s: %s", topic, rd_kafka_err2str(e));
    if (e == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE)
        return KFK_TOO_BIG;
    return -1;
}

int kfk_produce_tracked(kfk_producer *p, const char *topic, const char *key,
                        size_t keylen, const void *val, size_t len,
                        kfk_tracker *t, cs_err *err)
{
    return produce(p, topic, KFK_ANY_PARTITION, key, keylen, (void *)val,
                   len, RD_KAFKA_MSG_F_COPY, t, err);
}

int kfk_produce_tracked_to(kfk_producer *p, const char *topic,
                           int32_t partition, const char *key, size_t keylen,
                           const void *val, size_t len, kfk_tracker *t,
                           cs_err *err)
{
    return produce(p, topic, partition, key, keylen, (void *)val, len,
                   RD_KAFKA_MSG_F_COPY, t, err);
}

int kfk_produce(kfk_producer *p, const char *topic, const char *key,
                size_t keylen, const void *val, size_t len, cs_err *err)
{
    return kfk_produce_tracked(p, topic, key, keylen, val, len, NULL, err);
}

int kfk_produce_take(kfk_producer *p, const char *topic, const char *key,
                     size_t keylen, void *val, size_t len, kfk_tracker *t,
                     cs_err *err)
{
    int rc = produce(p, topic, KFK_ANY_PARTITION, key, keylen, val, len,
                     RD_KAFKA_MSG_F_FREE, t, err);

    if (rc != KFK_OK) /* librdkafka took it only if it took the message */
        free(val);
    return rc;
}

void kfk_producer_poll(kfk_producer *p)
{
    rd_kafka_poll(p->rk, 0);
}

void kfk_producer_wait(kfk_producer *p, int timeout_ms)
{
    rd_kafka_poll(p->rk, timeout_ms);
}

static void producer_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    kfk_producer_poll(arg);
}

static void producer_wake(evutil_socket_t fd, short what, void *arg)
{
    char buf[64];

    (void)what;
    while (read(fd, buf, sizeof buf) > 0)
        ;
    kfk_producer_poll(arg);
}

/* Delivery reports wake the loop through a pipe librdkafka writes to when
 * its queue fills: whoever waits for a confirmation (the executor's
 * write-ahead, the correlator's commit) hears of it at once, not at the
 * next poll tick. */
static int producer_wake_on_reports(kfk_producer *p, struct event_base *base)
{
    if (pipe2(p->pipefd, O_NONBLOCK | O_CLOEXEC)) {
        p->pipefd[0] = p->pipefd[1] = -1;
        return -1;
    }
    p->wake = event_new(base, p->pipefd[0], EV_READ | EV_PERSIST,
                        producer_wake, p);
    if (!p->wake || event_add(p->wake, NULL))
        return -1;
    p->main_q = rd_kafka_queue_get_main(p->rk);
    rd_kafka_queue_io_event_enable(p->main_q, p->pipefd[1], "p", 1);
    return 0;
}

int kfk_producer_attach(kfk_producer *p, struct event_base *base)
{
    struct timeval tv = {0, KFK_POLL_MS * 1000};

    if (p->timer)
        return -1;
    if (producer_wake_on_reports(p, base))
        log_warn("kafka", "delivery reports are polled every %d ms (no "
                 "wake-up pipe)", KFK_POLL_MS);
    p->timer = event_new(base, -1, EV_PERSIST, producer_tick, p);
    if (!p->timer || event_add(p->timer, &tv)) {
        log_error("kafka", "cannot schedule the producer poll timer");
        return -1;
    }
    return 0;
}

int kfk_producer_flush(kfk_producer *p, int timeout_ms)
{
    int left;

    rd_kafka_flush(p->rk, timeout_ms);
    left = rd_kafka_outq_len(p->rk);
    if (left > 0) {
        log_warn("kafka", "%d messages still queued after %d ms", left,
                 timeout_ms);
        return -1;
    }
    return 0;
}

unsigned long kfk_producer_failed(const kfk_producer *p)
{
    return p->failed;
}

int kfk_topic_meta(rd_kafka_t *rk, const char *topic, int timeout_ms,
                   int32_t *partitions, int *replication, cs_err *err)
{
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    const struct rd_kafka_metadata_topic *mt;
    rd_kafka_resp_err_t e;
    int rc = -1;

    if (!t) {
        cs_err_set(err, "topic %s: %s", topic,
                   rd_kafka_err2str(rd_kafka_last_error()));
        return -1;
    }
    e = rd_kafka_metadata(rk, 0, t, &md, timeout_ms);
    mt = !e && md->topic_cnt == 1 ? &md->topics[0] : NULL;
    if (e) {
        cs_err_set(err, "no answer from the Kafka brokers in %d ms (%s): "
                   "they are down, unreachable, or refused this client "
                   "(the log above says why)", timeout_ms, rd_kafka_err2str(e));
        rc = KFK_NO_ANSWER;
    } else if (!mt)
        cs_err_set(err, "topic %s: the brokers did not describe it", topic);
    else if (mt->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
        rc = 0;
    /* a topic just made may have no leader yet: it exists */
    else if (mt->err && mt->err != RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE)
        cs_err_set(err, "topic %s: %s", topic, rd_kafka_err2str(mt->err));
    else
        rc = 1;
    if (rc == 1) {
        *partitions = mt->partition_cnt;
        *replication = mt->partition_cnt ? INT32_MAX : 0;
        for (int i = 0; i < mt->partition_cnt; i++)
            if (mt->partitions[i].replica_cnt < *replication)
                *replication = mt->partitions[i].replica_cnt;
    }
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
    return rc;
}

int kfk_producer_topics(kfk_producer *p, const char *const *topics,
                        int32_t *counts, int timeout_ms, cs_err *err)
{
    int32_t n;
    int replicas, rc;

    for (size_t i = 0; topics[i]; i++) {
        rc = kfk_topic_meta(p->rk, topics[i], timeout_ms, &n, &replicas, err);
        if (rc < 0) /* KFK_NO_ANSWER too */
            return -1;
        if (rc == 0) {
            cs_err_set(err, "topic %s does not exist: create cascade's "
                       "topics with `cascade kafka init` (the same brokers "
                       "and kafka.topic_prefix)", topics[i]);
            return -1;
        }
        if (counts)
            counts[i] = n;
    }
    return 0;
}

void kfk_producer_detach(kfk_producer *p)
{
    if (!p)
        return;
    if (p->timer)
        event_free(p->timer);
    p->timer = NULL;
    if (p->main_q) {
        rd_kafka_queue_io_event_enable(p->main_q, -1, NULL, 0);
        rd_kafka_queue_destroy(p->main_q);
    }
    p->main_q = NULL;
    if (p->wake)
        event_free(p->wake);
    p->wake = NULL;
}

void kfk_producer_free(kfk_producer *p)
{
    if (!p)
        return;
    kfk_producer_detach(p);
    /* What is still queued then is dropped (the flush says how much) and
     * its reports served: the trackers that count it let go, which they
     * would not if destroying dropped it unreported. */
    if (kfk_producer_flush(p, 5000)) {
        rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_flush(p->rk, 1000);
    }
    for (int i = 0; i < 2; i++)
        if (p->pipefd[i] >= 0)
            close(p->pipefd[i]);
    rd_kafka_destroy(p->rk);
    dlo_free(p->order);
    free(p);
}
