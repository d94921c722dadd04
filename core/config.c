#include "core/config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/topics.h"
#include "core/log.h"
#include "core/str.h"
#include "core/ydoc.h"

void cfg_defaults(cs_config *c)
{
    memset(c, 0, sizeof *c);
    str_copy(c->group, sizeof c->group, "cascade-correlate");
    /* Each batch waits for Redis, Kafka's delivery and the commit; under a
     * backlog, 1000 a batch spent half the drain waiting. A caught-up
     * consumer's batches are what has arrived, far fewer. */
    c->batch = 10000;
    c->linger_ms = KFK_DEFAULT_LINGER_MS;
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
    c->log_level = LOG_LVL_INFO;
    c->max_clusters = 4096; /* engine/engine.h ENG_MAX_CLUSTERS */
}

#define C(f) offsetof(cs_config, f)
#define BUF(n, f) {n, YD_BUF, 0, C(f), 0, sizeof(((cs_config *)0)->f), 0, 0, 0, 0}
#define INT(n, f, lo, hi) {n, YD_INT, 0, C(f), lo, hi, 0, 0, 0, 0}
#define SIZE(n, f, lo, hi) {n, YD_SIZE, 0, C(f), lo, hi, 0, 0, 0, 0}

static const char *const levels[] = {"error", "warn", "info", "debug"};

static int read_token_file(yd_doc *d, const yd_key *k, yaml_node_t *v,
                           void *obj);

static const yd_key kafka_keys[] = {
    BUF("brokers", brokers),
    BUF("group", group),
    INT("batch", batch, 1, 100000),
    INT("linger_ms", linger_ms, 0, 1000),
    INT("fetch_wait_ms", fetch_wait_ms, 0, 10000),
};
static const yd_key redis_keys[] = {BUF("address", redis)};
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
};
static const yd_key log_keys[] = {
    {"level", YD_ENUM, 0, C(log_level), 0, 0, levels, 4, 0, 0}};
static const yd_key rules_keys[] = {BUF("dir", rules_dir)};
static const yd_key correlate_keys[] = {
    INT("max_clusters", max_clusters, 1, 1000000)};

static int read_section(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj);

#define SECTION(n) {n, YD_MAP, 0, 0, 0, 0, 0, 0, \
                    "section '" n "' must be a mapping of keys", read_section}
/* In the order of sections[]. */
static const yd_key root_keys[] = {SECTION("kafka"), SECTION("redis"),
                                   SECTION("webhook"), SECTION("log"),
                                   SECTION("rules"), SECTION("correlate")};
static const yd_table sections[] = {
    YD_TABLE("'kafka'", kafka_keys), YD_TABLE("'redis'", redis_keys),
    YD_TABLE("'webhook'", webhook_keys), YD_TABLE("'log'", log_keys),
    YD_TABLE("'rules'", rules_keys), YD_TABLE("'correlate'", correlate_keys)};
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
    return rc;
}

void cfg_print(const cs_config *c, void *stdio_file)
{
    FILE *f = stdio_file;

    fprintf(f, "kafka:\n  brokers: \"%s\"%s\n  group: %s\n  batch: %d\n"
               "  linger_ms: %d\n  fetch_wait_ms: %d\n",
            c->brokers, c->brokers[0] ? "" : "   # embedded broker", c->group,
            c->batch, c->linger_ms, c->fetch_wait_ms);
    fprintf(f, "redis:\n  address: \"%s\"%s\n", c->redis,
            c->redis[0] ? "" : "   # private redis-server");
    fprintf(f, "webhook:\n  listen: %s\n  port: %d\n  token: %s\n"
               "  max_body: %zu\n  max_headers: %zu\n  max_connections: %d\n"
               "  timeout_s: %d\n  request_timeout_s: %d\n  max_alerts: %d\n"
               "  max_output: %zu\n",
            c->listen, c->port, c->token[0] ? "\"<set>\"" : "\"\"", c->max_body,
            c->max_headers, c->max_connections, c->timeout_s,
            c->request_timeout_s, c->max_alerts, c->max_output);
    fprintf(f, "log:\n  level: %s\n",
            c->log_level >= 0 && c->log_level <= 3 ? levels[c->log_level] : "?");
    fprintf(f, "rules:\n  dir: \"%s\"%s\n", c->rules_dir,
            c->rules_dir[0] ? "" : "   # built-in rule set");
    fprintf(f, "correlate:\n  max_clusters: %d\n", c->max_clusters);
}
