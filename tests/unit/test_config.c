/* Config loading: defaults, every key, and the file:line:col of each kind
 * of mistake; a failed load leaves the running config untouched. */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "core/config.h"
#include "core/topics.h"
#include "core/log.h"
#include "core/str.h"

static char dir[200];

static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* Loads text; returns the error message ("" when it loaded). */
static const char *load(cs_config *c, const char *text)
{
    static cs_err err;
    const char *path = write_file("c.yaml", text);

    if (cfg_load(c, path, &err) == 0)
        return "";
    /* messages name the file: strip the directory for the checks */
    return strstr(err.msg, "c.yaml") ? strstr(err.msg, "c.yaml") : err.msg;
}

static void test_full_file(void)
{
    cs_config c;
    const char *tok = write_file("tok", "from-file\n");
    char text[1024];

    cfg_defaults(&c);
    CHECK_STR(c.group, ""); /* the default group, after kafka.topic_prefix */
    CHECK_STR(c.instance_id, "");
    CHECK_INT(c.port, 9095);
    CHECK_STR(c.listen, "127.0.0.1");
    CHECK_INT(c.request_timeout_s, 30);
    CHECK_INT(c.max_alerts, 5000);
    CHECK_INT(c.max_output, 16 << 20);
    CHECK_INT(c.ack_timeout_s, 5);
    snprintf(text, sizeof text,
             "# comment\n"
             "kafka:\n  brokers: \"k1:9092,k2:9092\"\n  group: g\n  batch: 50\n"
             "  instance_id: correlate-1\n"
             "redis:\n  address: /run/r.sock\n"
             "webhook:\n  listen: 0.0.0.0\n  port: 0\n  token_file: %s\n"
             "  max_body: 64KiB\n  max_headers: 2048\n  max_connections: 9\n"
             "  timeout_s: 3\n  request_timeout_s: 12\n  max_alerts: 40\n"
             "  max_output: 2MiB\n  ack_timeout_s: 8\n"
             "log:\n  level: debug\n"
             "correlate:\n  max_clusters: 64\n", tok);
    CHECK_STR(load(&c, text), "");
    CHECK_STR(c.brokers, "k1:9092,k2:9092");
    CHECK_STR(c.group, "g");
    CHECK_STR(c.instance_id, "correlate-1");
    CHECK_INT(c.batch, 50);
    CHECK_STR(c.redis.addr, "/run/r.sock");
    CHECK_STR(c.listen, "0.0.0.0");
    CHECK_INT(c.port, 0);
    CHECK_STR(c.token, "from-file");
    CHECK_INT(c.max_body, 65536);
    CHECK_INT(c.max_headers, 2048);
    CHECK_INT(c.max_connections, 9);
    CHECK_INT(c.timeout_s, 3);
    CHECK_INT(c.request_timeout_s, 12);
    CHECK_INT(c.max_alerts, 40);
    CHECK_INT(c.max_output, 2 << 20);
    CHECK_INT(c.ack_timeout_s, 8);
    CHECK_INT(c.log_level, LOG_LVL_DEBUG);
    CHECK_INT(c.max_clusters, 64);
    /* a partial file keeps what it does not name */
    CHECK_STR(load(&c, "kafka:\n  batch: 7\n"), "");
    CHECK_INT(c.batch, 7);
    CHECK_INT(c.linger_ms, KFK_LINGER_UNSET); /* each producer its own */
    CHECK_INT(c.fetch_wait_ms, 100);
    CHECK_STR(load(&c, "kafka:\n  linger_ms: 0\n  fetch_wait_ms: 1\n"), "");
    CHECK_INT(c.linger_ms, 0);
    CHECK_INT(c.fetch_wait_ms, 1);
    CHECK_STR(load(&c, "kafka:\n  fetch_wait_ms: 0\n"), ""); /* polling */
    CHECK_INT(c.fetch_wait_ms, 0);
    CHECK_STR(c.group, "g");
    CHECK_STR(load(&c, ""), ""); /* empty: nothing changes */
    CHECK_INT(c.batch, 7);
}

static void test_errors(void)
{
    cs_config c, before;

    cfg_defaults(&c);
    before = c;
    CHECK_STR(load(&c, "kafka:\n  batch: 10\n  brokrs: x\n"),
              "c.yaml:3:3: unknown key 'brokrs' in 'kafka' (known: brokers, "
              "group, batch, linger_ms, fetch_wait_ms, topic_prefix, "
              "instance_id, properties)");
    CHECK(memcmp(&c, &before, sizeof c) == 0); /* batch: 10 not applied */
    CHECK(strstr(load(&c, "kafka:\n  fetch_wait_ms: -1\n"),
                 "c.yaml:2:18: ") != NULL);
    CHECK_STR(load(&c, "webhook:\n  port: 70000\n"),
              "c.yaml:2:9: webhook.port: expected an integer from 0 to 65535, "
              "got '70000'");
    CHECK_STR(load(&c, "webhook:\n  port: 80a\n"),
              "c.yaml:2:9: webhook.port: expected an integer from 0 to 65535, "
              "got '80a'");
    /* the metrics section: a port a process listens on, checked the same */
    CHECK_STR(load(&c, "metrics:\n  listen: 0.0.0.0\n  correlate: 99999\n"),
              "c.yaml:3:14: metrics.correlate: expected an integer from 0 to "
              "65535, got '99999'");
    CHECK_STR(load(&c, "metrics:\n  corelate: 9464\n"),
              "c.yaml:2:3: unknown key 'corelate' in 'metrics' (known: listen, "
              "correlate, dev, ingest, act)");
    {
        cs_config m;
        cfg_defaults(&m);
        CHECK_STR(load(&m, "metrics:\n  listen: 0.0.0.0\n  act: 9466\n"), "");
        CHECK_STR(m.metrics_listen, "0.0.0.0");
        CHECK_INT(m.metrics_act, 9466);
        CHECK_INT(m.metrics_correlate, 0); /* none unless asked for */
    }
    CHECK_STR(load(&c, "logs:\n  level: info\n"),
              "c.yaml:1:1: unknown key 'logs' in the top level (known: kafka, "
              "redis, webhook, log, rules, correlate, collect, metrics, act)");
    CHECK_STR(load(&c, "log:\n  level: loud\n"),
              "c.yaml:2:10: log.level: 'loud' is not one of error, warn, info, "
              "debug");
    CHECK_STR(load(&c, "kafka:\n  brokers: [a\n"),
              "c.yaml:3:1: YAML: did not find expected ',' or ']' while "
              "parsing a flow sequence");
    CHECK_STR(load(&c, "kafka:\n  group: a\n  group: b\n"),
              "c.yaml:3:3: 'group' given twice in 'kafka'");
    CHECK_STR(load(&c, "kafka: 3\n"),
              "c.yaml:1:8: section 'kafka' must be a mapping of keys");
    CHECK_STR(load(&c, "- a\n"),
              "c.yaml:1:1: the top level must be a mapping (kafka, redis, "
              "webhook, log, rules, correlate, collect, metrics, act)");
    CHECK_STR(load(&c, "kafka:\n  brokers:\n    a: b\n"),
              "c.yaml:3:5: kafka.brokers: expected a single value, got a mapping");
    CHECK_STR(load(&c, "webhook:\n  token: a\n  token_file: /nonexistent\n"),
              "c.yaml:3:3: webhook: give token or token_file, not both");
    CHECK_STR(load(&c, "webhook:\n  max_body: 1MiB\n  ack_timeout_s: 0\n"),
              "c.yaml:3:18: webhook.ack_timeout_s: expected an integer from 1 "
              "to 300, got '0'");
    CHECK_STR(load(&c, "webhook:\n  max_body: 3MB\n"),
              "c.yaml:2:13: webhook.max_body: expected a size from 1024 to "
              "1073741824 bytes (\"64KiB\", \"1MiB\" allowed), got '3MB'");
    /* a second document was silently not read */
    CHECK_STR(load(&c, "kafka:\n  batch: 5\n---\nkafka:\n  batch: 7\n"),
              "c.yaml:3:1: YAML: a second document (after '---'): a file "
              "holds one");
    {
        /* nested thousands deep: a reload froze the loop for 21 s */
        static char deep[40000];
        size_t n = 0;
        n += (size_t)snprintf(deep, sizeof deep, "kafka:\n  brokers: ");
        for (int i = 0; i < 10000; i++)
            deep[n++] = '[';
        deep[n++] = '\n';
        CHECK_STR(load(&c, deep), "c.yaml:2:74: YAML: nested deeper than 64 "
                                  "levels");
    }
    /* 2^54 KiB is 2^64 bytes: it wrapped to 1024 and was taken */
    CHECK_STR(load(&c, "webhook:\n  max_body: 18014398509481985KiB\n"),
              "c.yaml:2:13: webhook.max_body: expected a size from 1024 to "
              "1073741824 bytes (\"64KiB\", \"1MiB\" allowed), got "
              "'18014398509481985KiB'");
    CHECK(strstr(load(&c, "webhook:\n  token_file: /nonexistent/t\n"),
                 "c.yaml:2:15: token_file '/nonexistent/t': No such file"));
    CHECK(memcmp(&c, &before, sizeof c) == 0);
}

/* The redis block: every key, secrets named and read, what the keys mean
 * together, each mistake at its line, and no secret printed. */
static void test_redis(void)
{
    cs_config c;
    char text[1024], *printed = NULL;
    size_t len = 0;
    FILE *mem;
    const char *pw = write_file("redis.pw", "file-secret\n");

    cfg_defaults(&c);
    CHECK(!rt_configured(&c.redis));
    CHECK_INT(c.redis.require_durable, 1);
    CHECK_INT(c.redis.wait_timeout_ms, 1000);
    setenv("CASCADE_TEST_SENTINEL_PW", "env-secret", 1);
    snprintf(text, sizeof text,
             "redis:\n  user: cascade\n  password: file:%s\n  db: 3\n"
             "  sentinels: [\"10.0.0.1:26379\", s2:26380]\n"
             "  master: mymaster\n"
             "  sentinel_password: env:CASCADE_TEST_SENTINEL_PW\n"
             "  wait_replicas: 1\n  wait_timeout_ms: 250\n"
             "  require_durable: false\n", pw);
    CHECK_STR(load(&c, text), "");
    CHECK(rt_configured(&c.redis));
    CHECK_STR(c.redis.addr, "");
    CHECK_STR(c.redis.user, "cascade");
    CHECK_STR(c.redis.password, "file-secret");
    CHECK_INT(c.redis.db, 3);
    CHECK_INT(c.redis.nsentinels, 2);
    CHECK_STR(c.redis.sentinels[0], "10.0.0.1:26379");
    CHECK_STR(c.redis.sentinels[1], "s2:26380");
    CHECK_STR(c.redis.master, "mymaster");
    CHECK_STR(c.redis.sentinel_password, "env-secret");
    CHECK_INT(c.redis.wait_replicas, 1);
    CHECK_INT(c.redis.wait_timeout_ms, 250);
    CHECK_INT(c.redis.require_durable, 0);

    /* printed: the secrets redacted, the rest as loaded */
    REQUIRE((mem = open_memstream(&printed, &len)) != NULL);
    cfg_print(&c, mem);
    fclose(mem);
    CHECK(strstr(printed, "file-secret") == NULL);
    CHECK(strstr(printed, "env-secret") == NULL);
    CHECK(strstr(printed, "  password: \"<set>\"\n") != NULL);
    CHECK(strstr(printed, "  sentinel_password: \"<set>\"\n") != NULL);
    CHECK(strstr(printed, "  sentinels: [\"10.0.0.1:26379\", \"s2:26380\"]\n"
                          "  master: \"mymaster\"\n") != NULL);
    CHECK(strstr(printed, "  db: 3\n") != NULL);
    CHECK(strstr(printed, "  require_durable: false\n") != NULL);
    free(printed);

    /* what cascade config prints with no secret set loads again */
    CHECK_STR(load(&c, "redis:\n  user: \"\"\n  password: \"\"\n"), "");
    CHECK_STR(c.redis.password, "");
    CHECK_STR(load(&c, "redis:\n  password: file:c.yaml-nonexistent\n"),
              "c.yaml:2:13: redis.password: secret file c.yaml-nonexistent: No "
              "such file or directory");
    str_copy(c.redis.password, sizeof c.redis.password, "file-secret");

    /* the flag's address replaces the Sentinels, the credentials stay */
    CHECK_INT(rt_set_addr(&c.redis, "unix:/run/r.sock", NULL), 0);
    CHECK_INT(c.redis.nsentinels, 0);
    CHECK_STR(c.redis.password, "file-secret");
    CHECK_INT(rt_set_addr(&c.redis, "host:99999", NULL), -1);
    CHECK_INT(rt_set_addr(&c.redis, ":6379", NULL), -1);
    CHECK_STR(c.redis.addr, "unix:/run/r.sock");
    unsetenv("CASCADE_TEST_SENTINEL_PW");
    rt_wipe(&c.redis);
    CHECK_STR(c.redis.password, "");
}

static void test_redis_errors(void)
{
    cs_config c, before;

    cfg_defaults(&c);
    before = c;
    /* a password is named, never written */
    CHECK_STR(load(&c, "redis:\n  address: r:6379\n  password: hunter2\n"),
              "c.yaml:3:13: redis.password: a secret must be file:PATH or "
              "env:NAME (never the value itself)");
    unsetenv("CASCADE_TEST_NO_SUCH_PW");
    CHECK_STR(load(&c, "redis:\n  password: env:CASCADE_TEST_NO_SUCH_PW\n"),
              "c.yaml:2:13: redis.password: environment variable "
              "CASCADE_TEST_NO_SUCH_PW is not set");
    CHECK(strstr(load(&c, "redis:\n  sentinel_password: file:/nonexistent/pw\n"),
                 "c.yaml:2:22: redis.sentinel_password: secret file "
                 "/nonexistent/pw: No such file") != NULL);
    CHECK_STR(load(&c, "redis:\n  address: r:6379\n  sentinels: [a:1]\n"
                       "  master: m\n"),
              "c.yaml:3:14: redis.address and redis.sentinels: give one (the "
              "Sentinels name the master's address)");
    CHECK_STR(load(&c, "redis:\n  sentinels:\n    - a:26379\n"),
              "c.yaml:3:5: redis.sentinels needs redis.master (the name the "
              "Sentinels know it by)");
    CHECK_STR(load(&c, "redis:\n  address: r\n  master: m\n"),
              "c.yaml:3:11: redis.master without redis.sentinels");
    CHECK_STR(load(&c, "redis:\n  address: r\n  user: u\n"),
              "c.yaml:3:9: redis.user needs redis.password (AUTH user "
              "password)");
    CHECK_STR(load(&c, "redis:\n  sentinels: [a:1, b]\n  master: m\n"),
              "c.yaml:2:20: redis.sentinels: 'b' is not host:port");
    CHECK_STR(load(&c, "redis:\n  sentinels: a:1\n"),
              "c.yaml:2:14: redis.sentinels must be a list");
    CHECK_STR(load(&c, "redis:\n  address: \"r:port\"\n"),
              "c.yaml:2:12: redis.address: 'r:port' is not host:port, host, a "
              "socket path or unix:PATH");
    CHECK_STR(load(&c, "redis:\n  db: -1\n"),
              "c.yaml:2:7: redis.db: expected an integer from 0 to 65535, got "
              "'-1'");
    CHECK_STR(load(&c, "redis:\n  wait_timeout_ms: 0\n"),
              "c.yaml:2:20: redis.wait_timeout_ms: expected an integer from 1 "
              "to 60000, got '0'");
    CHECK_STR(load(&c, "redis:\n  require_durable: no\n"),
              "c.yaml:2:20: redis.require_durable: expected true or false, got "
              "'no'");
    CHECK_STR(load(&c, "redis:\n  adress: r\n"),
              "c.yaml:2:3: unknown key 'adress' in 'redis' (known: address, "
              "user, password, db, sentinels, master, sentinel_password, "
              "wait_replicas, wait_timeout_ms, require_durable)");
    CHECK_STR(load(&c, "redis: r:6379\n"),
              "c.yaml:1:8: section 'redis' must be a mapping of keys");
    CHECK(memcmp(&c, &before, sizeof c) == 0);
}

int main(void)
{
    cs_err err;

    check_tmp_template(dir, sizeof dir, "cascade-cfg");
    if (!mkdtemp(dir))
        return 1;
    test_full_file();
    test_errors();
    test_redis();
    test_redis_errors();
    CHECK(cfg_load(&(cs_config){0}, "/nonexistent.yaml", &err) == -1);
    CHECK_STR(err.msg, "/nonexistent.yaml: No such file or directory");
    unlink(write_file("c.yaml", ""));
    unlink(write_file("tok", ""));
    unlink(write_file("redis.pw", ""));
    rmdir(dir);
    return check_report();
}
