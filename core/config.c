#include "core/config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/topics.h"
#include "core/str.h"
#include "core/ydoc.h"

void cfg_defaults(cs_config *c)
{
    memset(c, 0, sizeof *c);
    rt_init(&c->redis);
    /* Each batch waits for Redis, Kafka's delivery and the commit; under a
     * backlog, 1000 a batch spent half the drain waiting. A caught-up
     * consumer's batches are what has arrived, far fewer. */
    c->batch = 10000;
    c->linger_ms = KFK_LINGER_UNSET; /* each producer's own (topics.h) */
    c->fetch_wait_ms = KFK_DEFAULT_FETCH_WAIT_MS;
    str_copy(c->listen, sizeof c->listen, "127.0.0.1");
    c->port = 9095;
    c->max_body = 1 << 20;
    c->max_headers = 16 << 10;
    c->max_connections = 256;
    c->timeout_s = 10;
    c->request_timeout_s = 30;
    c->max_alerts = 5000;
    c->max_output = 16 << 20;
    /* under the 10 s (at least) Alertmanager gives a notification and its
     * retries */
    c->ack_timeout_s = 5;
    c->log_level = LOG_LVL_INFO;
    c->max_clusters = 4096; /* engine/engine.h ENG_MAX_CLUSTERS */
    /* 256 MiB tables: the 2-hour horizon up to 1,165 signals/s, 40 s or
     * more at 100k/s (engine/engine.h eng_set_max_seen) */
    c->max_seen_ids = 8388608;
    snprintf(c->metrics_listen, sizeof c->metrics_listen, "127.0.0.1");
}

#define C(f) offsetof(cs_config, f)
#define BUF(n, f) {n, YD_BUF, 0, C(f), 0, sizeof(((cs_config *)0)->f), 0, 0, 0, 0}
#define INT(n, f, lo, hi) {n, YD_INT, 0, C(f), lo, hi, 0, 0, 0, 0}
#define SIZE(n, f, lo, hi) {n, YD_SIZE, 0, C(f), lo, hi, 0, 0, 0, 0}

static const char *const levels[] = {"error", "warn", "info", "debug"};

static int read_token_file(yd_doc *d, const yd_key *k, yaml_node_t *v,
                           void *obj);
static int read_prefix(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj);
static int read_properties(yd_doc *d, const yd_key *k, yaml_node_t *v,
                           void *obj);

static const yd_key kafka_keys[] = {
    BUF("brokers", brokers),
    BUF("group", group),
    INT("batch", batch, 1, 100000),
    INT("linger_ms", linger_ms, 0, 1000),
    INT("fetch_wait_ms", fetch_wait_ms, 0, 10000),
    {"topic_prefix", YD_BUF, 0, C(topic_prefix), 0,
     sizeof(((cs_config *)0)->topic_prefix), 0, 0, 0, read_prefix},
    BUF("instance_id", instance_id),
    {"properties", YD_MAP, 0, 0, 0, 0, 0, 0,
     "properties must be a mapping of librdkafka properties "
     "(security.protocol: SASL_SSL, ...)", read_properties},
};
static const yd_key webhook_keys[] = {
    BUF("listen", listen),
    INT("port", port, 0, 65535),
    BUF("token", token),
    {"token_file", YD_SCALAR, 0, C(token), 0, sizeof(((cs_config *)0)->token),
     0, 0, 0, read_token_file},
    SIZE("max_body", max_body, 1024, 1LL << 30),
    SIZE("max_headers", max_headers, 1024, 1 << 20),
    INT("max_connections", max_connections, 1, 65535),
    INT("timeout_s", timeout_s, 1, 3600),
    INT("request_timeout_s", request_timeout_s, 1, 3600),
    INT("max_alerts", max_alerts, 1, 1000000),
    SIZE("max_output", max_output, 64 << 10, 1LL << 32),
    INT("ack_timeout_s", ack_timeout_s, 1, 300),
};
static const char *const formats[] = {"text", "json"};
static const yd_key log_keys[] = {
    {"level", YD_ENUM, 0, C(log_level), 0, 0, levels, 4, 0, 0},
    {"format", YD_ENUM, 0, C(log_format), 0, 0, formats, 2, 0, 0}};
static const yd_key rules_keys[] = {BUF("dir", rules_dir)};
static const yd_key correlate_keys[] = {
    INT("max_clusters", max_clusters, 1, 1000000),
    INT("max_seen_ids", max_seen_ids, 0, 1073741824)};
static const yd_key metrics_keys[] = {
    BUF("listen", metrics_listen), INT("correlate", metrics_correlate, 0, 65535),
    INT("dev", metrics_dev, 0, 65535), INT("ingest", metrics_ingest, 0, 65535),
    INT("act", metrics_act, 0, 65535)};

static int read_section(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj);
static int read_redis(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj);

/* The collectors' section is theirs to read and check (ingest/colcfg.h),
 * and the executor's (act: actions/excfg.h): a mapping is all the process
 * configuration asks of them. */
static int read_collect(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    (void)d;
    (void)k;
    (void)v;
    (void)obj;
    return 0;
}

#define SECTION_BY(n, fn) {n, YD_MAP, 0, 0, 0, 0, 0, 0, \
                           "section '" n "' must be a mapping of keys", fn}
#define SECTION(n) SECTION_BY(n, read_section)
/* In the order of sections[]. */
static const yd_key root_keys[] = {SECTION("kafka"),
                                   SECTION_BY("redis", read_redis),
                                   SECTION("webhook"), SECTION("log"),
                                   SECTION("rules"), SECTION("correlate"),
                                   SECTION_BY("collect", read_collect),
                                   SECTION("metrics"),
                                   SECTION_BY("act", read_collect)};
static const yd_table sections[] = {
    YD_TABLE("'kafka'", kafka_keys),
    {"'redis'", NULL, 0}, /* core/rtarget.h reads it */
    YD_TABLE("'webhook'", webhook_keys), YD_TABLE("'log'", log_keys),
    YD_TABLE("'rules'", rules_keys), YD_TABLE("'correlate'", correlate_keys),
    {"'collect'", NULL, 0}, /* ingest/colcfg.h reads it */
    YD_TABLE("'metrics'", metrics_keys),
    {"'act'", NULL, 0}}; /* the executor's, actions/excfg.h reads it */
static const yd_table root = YD_TABLE("the top level", root_keys);

static int read_token_file(yd_doc *d, const yd_key *k, yaml_node_t *v,
                           void *obj)
{
    const char *path = yd_scalar(v);
    char *dst = (char *)obj + k->off, buf[512];
    size_t len = (size_t)k->max, got;
    FILE *f = fopen(path, "r");

    if (!f) {
        yd_problem(d, v, "token_file '%s': %s", path, strerror(errno));
        return -1;
    }
    got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    if (!buf[0] || strlen(buf) >= len) {
        yd_problem(d, v, "token_file '%s': empty or longer than %zu bytes",
                   path, len - 1);
        return -1;
    }
    str_copy(dst, len, buf);
    explicit_bzero(buf, sizeof buf);
    return 0;
}

static int read_prefix(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    cs_err e;

    if (topic_prefix_check(yd_scalar(v), &e)) {
        yd_problem(d, v, "kafka.topic_prefix: %s", e.msg);
        return -1;
    }
    str_copy((char *)obj + k->off, (size_t)k->max, yd_scalar(v));
    return 0;
}

/* librdkafka properties cascade sets itself, and why none may change
 * them: each is a delivery guarantee or a setting of its own. */
static const struct owned {
    const char *key, *why;
} owned[] = {
    {"bootstrap.servers", "give kafka.brokers (--brokers)"},
    {"metadata.broker.list", "give kafka.brokers (--brokers)"},
    {"group.id", "give kafka.group (--group)"},
    {"group.instance.id", "give kafka.instance_id (--instance-id)"},
    {"enable.auto.commit", "cascade commits an offset only once what its "
     "batch made is durable (in Redis, acknowledged by Kafka)"},
    {"auto.commit.enable", "cascade commits an offset only once what its "
     "batch made is durable (in Redis, acknowledged by Kafka)"},
    {"enable.auto.offset.store", "cascade stores an offset only once what "
     "its batch made is durable (in Redis, acknowledged by Kafka)"},
    {"auto.offset.reset", "a group without offsets starts at the earliest "
     "message: a new consumer reads the backlog instead of skipping it"},
    {"enable.idempotence", "cascade's producers are idempotent: a retried "
     "batch is neither written twice nor out of order"},
    {"acks", "an idempotent producer waits for every in-sync replica (all)"},
    {"request.required.acks", "an idempotent producer waits for every "
     "in-sync replica (all)"},
    {"transactional.id", "cascade's producers are not transactional"},
    {"partitioner", "the correlators map a cluster to its partition as "
     "librdkafka's default partitioner does (CRC-32 of the key); another "
     "would put a cluster's signals where its state is not"},
    {"message.max.bytes", "cascade's size limits derive from it (1000000, "
     "core/topics.h)"},
    {"allow.auto.create.topics", "cascade's topics are made by cascade "
     "kafka init with their partitions and retention, never by a broker's "
     "defaults"},
    {"linger.ms", "give kafka.linger_ms"},
    {"queue.buffering.max.ms", "give kafka.linger_ms"},
    {"fetch.wait.max.ms", "give kafka.fetch_wait_ms"},
    {"log.queue", "librdkafka's log goes to cascade's log as it happens"},
};

int cfg_kprop_secret(const char *key)
{
    size_t n = strlen(key);

    return (n >= 8 && !strcmp(key + n - 8, "password")) ||
           (n >= 6 && !strcmp(key + n - 6, "secret")) ||
           !strcmp(key, "ssl.key.pem");
}

/* One entry of kafka.properties: a key cascade leaves to the operator,
 * a single value, and a secret only by reference. */
static int read_property(yd_doc *d, yaml_node_t *kn, yaml_node_t *v,
                         cfg_kprop *p)
{
    const char *key = yd_scalar(kn), *val = yd_scalar(v);

    if (!key || !*key || strlen(key) >= sizeof p->key) {
        yd_problem(d, kn, "kafka.properties: a key is a librdkafka property "
                   "name (at most %zu bytes)", sizeof p->key - 1);
        return -1;
    }
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++)
        if (!strcmp(key, owned[i].key)) {
            yd_problem(d, kn, "kafka.properties.%s is cascade's to set: %s",
                       key, owned[i].why);
            return -1;
        }
    if (!val || !*val || strlen(val) >= sizeof p->value) {
        yd_problem(d, v, "kafka.properties.%s: expected a single value of at "
                   "most %zu bytes", key, sizeof p->value - 1);
        return -1;
    }
    if (cfg_kprop_secret(key) && strncmp(val, "env:", 4) &&
        strncmp(val, "file:", 5)) {
        yd_problem(d, v, "kafka.properties.%s is a secret: name it as "
                   "file:PATH or env:NAME, never the value itself", key);
        return -1;
    }
    /* A secret file is read to its first line: a PEM key is more. */
    if (!strcmp(key, "ssl.key.pem") && strncmp(val, "env:", 4)) {
        yd_problem(d, v, "kafka.properties.ssl.key.pem takes env:NAME only; "
                   "for a key in a file give ssl.key.location");
        return -1;
    }
    str_copy(p->key, sizeof p->key, key);
    str_copy(p->value, sizeof p->value, val);
    p->key_line = (int)kn->start_mark.line + 1;
    p->key_col = (int)kn->start_mark.column + 1;
    p->value_line = (int)v->start_mark.line + 1;
    p->value_col = (int)v->start_mark.column + 1;
    return 0;
}

/* The whole map replaces what an earlier file set. */
static int read_properties(yd_doc *d, const yd_key *k, yaml_node_t *v,
                           void *obj)
{
    cfg_kprops *ps = &((cs_config *)obj)->kprops;
    size_t n = yd_len(v);

    (void)k;
    if (n > CFG_MAX_KPROPS) {
        yd_problem(d, v, "kafka.properties: %zu properties, at most %d", n,
                   CFG_MAX_KPROPS);
        return -1;
    }
    memset(ps, 0, sizeof *ps);
    str_copy(ps->file, sizeof ps->file, yd_name(d));
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *kn = yd_pair_key(d, v, i);
        for (size_t j = 0; j < i; j++)
            if (yd_scalar(kn) && !strcmp(ps->v[j].key, yd_scalar(kn))) {
                yd_problem(d, kn, "kafka.properties: '%s' given twice",
                           ps->v[j].key);
                return -1;
            }
        if (read_property(d, kn, yd_pair_value(d, v, i), &ps->v[i]))
            return -1;
        ps->n++;
    }
    return 0;
}

/* token and token_file name the same secret: one of them. */
static int token_twice(yd_doc *d, yaml_node_t *map)
{
    int seen = 0;

    for (size_t i = 0; i < yd_len(map); i++) {
        const char *name = yd_scalar(yd_pair_key(d, map, i));
        if (name && (!strcmp(name, "token") || !strcmp(name, "token_file")) &&
            seen++) {
            yd_problem(d, yd_pair_key(d, map, i),
                       "webhook: give token or token_file, not both");
            return 1;
        }
    }
    return 0;
}

static int read_section(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    const yd_table *t = &sections[k - root_keys];
    char prefix[32];

    if (t->keys == webhook_keys && token_twice(d, v))
        return -1;
    snprintf(prefix, sizeof prefix, "%s.", k->name);
    return yd_read(d, v, t, prefix, obj) ? -1 : 0;
}

static int read_redis(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    char prefix[32];

    snprintf(prefix, sizeof prefix, "%s.", k->name);
    return rt_read_yaml(d, v, prefix, &((cs_config *)obj)->redis) ? -1 : 0;
}

int cfg_load(cs_config *c, const char *path, cs_err *err)
{
    yd_doc *d;
    cs_config next = *c;
    int rc = 0;

    err->msg[0] = '\0';
    if (!(d = yd_parse_file(path, yd_sink_first, err)))
        return -1;
    if (yd_root(d)) /* an empty file: the values as they are */
        rc = yd_read(d, yd_root(d), &root, NULL, &next) ? -1 : 0;
    yd_free(d);
    if (rc == 0)
        *c = next;
    explicit_bzero(next.token, sizeof next.token);
    rt_wipe(&next.redis);
    return rc;
}

/* A double-quoted YAML scalar. */
static void print_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void print_kafka(FILE *f, const cs_config *c)
{
    fprintf(f, "kafka:\n  brokers: \"%s\"%s\n", c->brokers,
            c->brokers[0] ? "" : "   # none: only cascade dev starts one");
    if (c->group[0])
        fprintf(f, "  group: %s\n", c->group);
    else
        fprintf(f, "  group: \"\"   # %scascade-correlate\n", c->topic_prefix);
    fprintf(f, "  batch: %d\n", c->batch);
    if (c->linger_ms == KFK_LINGER_UNSET)
        fprintf(f, "  # linger_ms: unset: %d for the collectors and the "
                   "webhook, %d for the correlator\n",
                KFK_DEFAULT_LINGER_MS, KFK_CORRELATOR_LINGER_MS);
    else
        fprintf(f, "  linger_ms: %d\n", c->linger_ms);
    fprintf(f, "  fetch_wait_ms: %d\n"
               "  topic_prefix: \"%s\"\n  instance_id: \"%s\"%s\n",
            c->fetch_wait_ms, c->topic_prefix,
            c->instance_id,
            c->instance_id[0] ? "" : "   # dynamic group membership");
    fprintf(f, "  properties:%s\n", c->kprops.n ? "" : " {}");
    for (size_t i = 0; i < c->kprops.n; i++) {
        const cfg_kprop *p = &c->kprops.v[i];
        fprintf(f, "    %s: ", p->key);
        print_quoted(f, p->value);
        fputs(cfg_kprop_secret(p->key) ? "   # secret, read at start\n" : "\n",
              f);
    }
}

void cfg_print(const cs_config *c, void *stdio_file)
{
    FILE *f = stdio_file;

    print_kafka(f, c);
    rt_print(&c->redis, f, "private redis-server");
    fprintf(f, "webhook:\n  listen: %s\n  port: %d\n  token: %s\n"
               "  max_body: %zu\n  max_headers: %zu\n  max_connections: %d\n"
               "  timeout_s: %d\n  request_timeout_s: %d\n  max_alerts: %d\n"
               "  max_output: %zu\n  ack_timeout_s: %d\n",
            c->listen, c->port, c->token[0] ? "\"<set>\"" : "\"\"", c->max_body,
            c->max_headers, c->max_connections, c->timeout_s,
            c->request_timeout_s, c->max_alerts, c->max_output,
            c->ack_timeout_s);
    fprintf(f, "log:\n  level: %s\n  format: %s\n",
            c->log_level >= 0 && c->log_level <= 3 ? levels[c->log_level] : "?",
            formats[c->log_format == 1]);
    fprintf(f, "rules:\n  dir: \"%s\"%s\n", c->rules_dir,
            c->rules_dir[0] ? "" : "   # built-in rule set");
    fprintf(f, "correlate:\n  max_clusters: %d\n  max_seen_ids: %d\n",
            c->max_clusters, c->max_seen_ids);
    fprintf(f, "metrics:\n  listen: %s\n  correlate: %d\n  dev: %d\n"
               "  ingest: %d\n  act: %d\n",
            c->metrics_listen, c->metrics_correlate, c->metrics_dev,
            c->metrics_ingest, c->metrics_act);
}

void cfg_reference(void *stdio_file)
{
    cs_config c;
    char title[64];

    cfg_defaults(&c);
    for (size_t i = 0; i < sizeof sections / sizeof *sections; i++) {
        if (!sections[i].keys)
            continue; /* redis, collect, act: their own readers' tables */
        snprintf(title, sizeof title, "`%s`", root_keys[i].name);
        yd_reference(stdio_file, &sections[i], title, &c);
    }
}
