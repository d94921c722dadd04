/* kafka.properties and kafka.topic_prefix: what the config file takes
 * (core/config.c) and what librdkafka makes of it at start (core/kafka.c
 * kfk_props_check), each refusal at its FILE:LINE:COL with the reason;
 * secrets only by reference, read when a client is made and never
 * printed; the prefix before every topic and default group name. */
#include <librdkafka/rdkafka.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "core/config.h"
#include "core/kafka.h"
#include "core/topics.h"

static char dir[256];

static const char *write_file(const char *name, const char *text)
{
    static char path[300];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs(text, f);
    fclose(f);
    return path;
}

/* The message from the file's name on ("" when nothing was refused). */
static const char *after_dir(const cs_err *err)
{
    const char *at = strstr(err->msg, "c.yaml");
    return at ? at : err->msg;
}

/* Loads text over defaults, then checks its properties as a command does
 * at start; returns the first problem ("" when none). */
static const char *load(cs_config *c, const char *text)
{
    static cs_err err;

    cfg_defaults(c);
    err.msg[0] = '\0';
    if (cfg_load(c, write_file("c.yaml", text), &err) == 0 &&
        kfk_props_check(&c->kprops, &err) == 0)
        return "";
    return after_dir(&err);
}

static void test_accepted(void)
{
    cs_config c;
    char text[1024];
    const char *pw = write_file("pw", "from-a-file\n");

    setenv("TEST_KAFKA_SECRET", "from-the-env", 1);
    snprintf(text, sizeof text,
             "kafka:\n  brokers: k:9093\n  properties:\n"
             "    security.protocol: SASL_SSL\n"
             "    sasl.mechanisms: PLAIN\n"
             "    sasl.username: cascade\n"
             "    sasl.password: env:TEST_KAFKA_SECRET\n"
             "    ssl.key.password: file:%s\n"
             "    client.rack: rack-1\n"
             "    session.timeout.ms: 30000\n", pw);
    CHECK_STR(load(&c, text), "");
    CHECK_INT(c.kprops.n, 7);
    CHECK_STR(c.kprops.v[0].key, "security.protocol");
    CHECK_STR(c.kprops.v[3].value, "env:TEST_KAFKA_SECRET"); /* the reference */
    CHECK_INT(c.kprops.v[6].value_line, 10);

    /* Over cascade's own settings, the secrets read when a client is made. */
    const char *const mine[] = {"session.timeout.ms", "10000",
                                "client.id", "cascade-test", NULL};
    cs_err err;
    rd_kafka_conf_t *conf = kfk_conf_new(mine, &c.kprops, &err);
    char v[64];
    size_t len;
    REQUIRE(conf != NULL);
    len = sizeof v;
    CHECK(rd_kafka_conf_get(conf, "session.timeout.ms", v, &len) == RD_KAFKA_CONF_OK);
    CHECK_STR(v, "30000");
    len = sizeof v;
    CHECK(rd_kafka_conf_get(conf, "client.id", v, &len) == RD_KAFKA_CONF_OK);
    CHECK_STR(v, "cascade-test");
    len = sizeof v;
    CHECK(rd_kafka_conf_get(conf, "sasl.password", v, &len) == RD_KAFKA_CONF_OK);
    CHECK_STR(v, "from-the-env");
    len = sizeof v;
    CHECK(rd_kafka_conf_get(conf, "ssl.key.password", v, &len) == RD_KAFKA_CONF_OK);
    CHECK_STR(v, "from-a-file");
    rd_kafka_conf_destroy(conf);

    /* A later file's map replaces the whole map; no map keeps it. */
    cs_err e2;
    CHECK(cfg_load(&c, write_file("c.yaml", "kafka:\n  batch: 3\n"), &e2) == 0);
    CHECK_INT(c.kprops.n, 7);
    CHECK(cfg_load(&c, write_file("c.yaml", "kafka:\n  properties:\n"
                                  "    debug: broker\n"), &e2) == 0);
    CHECK_INT(c.kprops.n, 1);
    CHECK(cfg_load(&c, write_file("c.yaml", "kafka:\n  properties: {}\n"),
                   &e2) == 0);
    CHECK_INT(c.kprops.n, 0);
}

static void test_refused(void)
{
    cs_config c;

    /* librdkafka's own words, at the key for an unknown property... */
    CHECK_STR(load(&c, "kafka:\n  properties:\n    no.such.thing: 1\n"),
              "c.yaml:3:5: kafka.properties.no.such.thing: No such "
              "configuration property: \"no.such.thing\"");
    /* ...at the value for a bad one */
    CHECK_STR(load(&c, "kafka:\n  properties:\n    session.timeout.ms: soon\n"),
              "c.yaml:3:25: kafka.properties.session.timeout.ms: Invalid "
              "value for configuration property \"session.timeout.ms\"");
    CHECK_STR(load(&c, "kafka:\n  properties:\n    security.protocol: tls\n"),
              "c.yaml:3:24: kafka.properties.security.protocol: Invalid "
              "value \"tls\" for configuration property \"security.protocol\"");
    /* keys cascade owns, with the reason */
    CHECK_STR(load(&c, "kafka:\n  properties:\n    group.id: g\n"),
              "c.yaml:3:5: kafka.properties.group.id is cascade's to set: "
              "give kafka.group (--group)");
    CHECK_STR(load(&c, "kafka:\n  properties:\n    bootstrap.servers: x:1\n"),
              "c.yaml:3:5: kafka.properties.bootstrap.servers is cascade's to "
              "set: give kafka.brokers (--brokers)");
    CHECK(strstr(load(&c, "kafka:\n  properties:\n    enable.auto.commit: "
                          "true\n"),
                 "c.yaml:3:5: kafka.properties.enable.auto.commit is "
                 "cascade's to set: cascade commits an offset only once") != NULL);
    CHECK(strstr(load(&c, "kafka:\n  properties:\n    enable.idempotence: "
                          "false\n"),
                 "kafka.properties.enable.idempotence is cascade's") != NULL);
    CHECK(strstr(load(&c, "kafka:\n  properties:\n    partitioner: murmur2\n"),
                 "kafka.properties.partitioner is cascade's") != NULL);
    /* a secret's value is never written in the file */
    CHECK_STR(load(&c, "kafka:\n  properties:\n    sasl.password: hunter2\n"),
              "c.yaml:3:20: kafka.properties.sasl.password is a secret: name "
              "it as file:PATH or env:NAME, never the value itself");
    CHECK(strstr(load(&c, "kafka:\n  properties:\n"
                          "    sasl.oauthbearer.client.secret: s3cret\n"),
                 "is a secret: name it as file:PATH or env:NAME") != NULL);
    CHECK_STR(load(&c, "kafka:\n  properties:\n    ssl.key.pem: file:/k.pem\n"),
              "c.yaml:3:18: kafka.properties.ssl.key.pem takes env:NAME only; "
              "for a key in a file give ssl.key.location");
    /* a reference that cannot be read, at load */
    unsetenv("TEST_KAFKA_NOT_SET");
    CHECK_STR(load(&c, "kafka:\n  properties:\n"
                       "    sasl.password: env:TEST_KAFKA_NOT_SET\n"),
              "c.yaml:3:20: kafka.properties.sasl.password: environment "
              "variable TEST_KAFKA_NOT_SET is not set");
    CHECK(strstr(load(&c, "kafka:\n  properties:\n"
                          "    ssl.keystore.password: file:/nonexistent/pw\n"),
                 "c.yaml:3:28: kafka.properties.ssl.keystore.password: secret "
                 "file /nonexistent/pw: No such file") != NULL);
    /* the shape of the map */
    CHECK_STR(load(&c, "kafka:\n  properties:\n    debug: all\n    debug: "
                       "broker\n"),
              "c.yaml:4:5: kafka.properties: 'debug' given twice");
    CHECK_STR(load(&c, "kafka:\n  properties:\n    debug: [a, b]\n"),
              "c.yaml:3:12: kafka.properties.debug: expected a single value "
              "of at most 1023 bytes");
    CHECK_STR(load(&c, "kafka:\n  properties: debug\n"),
              "c.yaml:2:15: kafka.properties must be a mapping of librdkafka "
              "properties (security.protocol: SASL_SSL, ...)");
    char many[4096] = "kafka:\n  properties:\n";
    for (int i = 0; i <= CFG_MAX_KPROPS; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many),
                 "    k%d: v\n", i);
    CHECK_STR(load(&c, many), "c.yaml:3:5: kafka.properties: 33 properties, "
                              "at most 32");
}

/* cascade config shows a secret as its reference, never its value. */
static void test_redacted(void)
{
    cs_config c;
    char *out = NULL;
    size_t len = 0;
    FILE *f;

    setenv("TEST_KAFKA_SECRET", "never-printed", 1);
    CHECK_STR(load(&c, "kafka:\n  properties:\n"
                       "    sasl.password: env:TEST_KAFKA_SECRET\n"
                       "    sasl.username: \"a\\\"b\"\n"), "");
    REQUIRE((f = open_memstream(&out, &len)) != NULL);
    cfg_print(&c, f);
    fclose(f);
    CHECK(strstr(out, "    sasl.password: \"env:TEST_KAFKA_SECRET\"   # secret, "
                      "read at start\n") != NULL);
    CHECK(strstr(out, "never-printed") == NULL);
    CHECK(strstr(out, "    sasl.username: \"a\\\"b\"\n") != NULL);
    free(out);
}

/* SCRAM with a librdkafka that Kafka 4 refuses: said at start. */
static void test_scram_warning(void)
{
    cs_config c;
    check_capture cap;
    char *log;

    check_stderr_begin(&cap);
    CHECK_STR(load(&c, "kafka:\n  properties:\n"
                       "    sasl.mechanisms: SCRAM-SHA-512\n"), "");
    log = check_stderr_end(&cap);
    if (rd_kafka_version() < 0x02060100)
        CHECK(strstr(log, "c.yaml:3:22: sasl.mechanisms SCRAM-SHA-512 with "
                          "librdkafka ") != NULL &&
              strstr(log, "confluentinc/librdkafka#4895") != NULL);
    else
        CHECK(strstr(log, "4895") == NULL);
    free(log);
    check_stderr_begin(&cap);
    CHECK_STR(load(&c, "kafka:\n  properties:\n    sasl.mechanisms: PLAIN\n"),
              "");
    log = check_stderr_end(&cap);
    CHECK(strstr(log, "4895") == NULL);
    free(log);
}

static void test_prefix(void)
{
    cs_config c;
    cs_err err;
    topic_plan p[TOPIC_COUNT];

    CHECK_STR(KFK_TOPIC_SIGNALS, "cascade.signals");
    CHECK_STR(KFK_GROUP_CORRELATE, "cascade-correlate");
    CHECK_STR(load(&c, "kafka:\n  topic_prefix: site-a.\n"), "");
    CHECK_STR(c.topic_prefix, "site-a.");
    CHECK_STR(load(&c, "kafka:\n  topic_prefix: \"a b\"\n"),
              "c.yaml:2:17: kafka.topic_prefix: 'a b': character 2 is not one "
              "a Kafka topic name may hold (ASCII letters, digits, '.', '_', "
              "'-')");
    CHECK(topic_prefix_check("ü", &err) == -1);
    char long_prefix[TOPIC_PREFIX_MAX + 2];
    memset(long_prefix, 'a', sizeof long_prefix - 1);
    long_prefix[sizeof long_prefix - 1] = '\0';
    CHECK(topic_set_prefix(long_prefix, &err) == -1);
    CHECK_STR(KFK_TOPIC_SIGNALS, "cascade.signals"); /* unchanged */

    REQUIRE(topic_set_prefix("site-a.", &err) == 0);
    CHECK_STR(topic_prefix(), "site-a.");
    CHECK_STR(KFK_TOPIC_SIGNALS, "site-a.cascade.signals");
    CHECK_STR(KFK_TOPIC_AUDIT, "site-a.cascade.audit");
    CHECK_STR(KFK_GROUP_CORRELATE, "site-a.cascade-correlate");
    CHECK_STR(KFK_GROUP_ACT, "site-a.cascade-act");
    CHECK_STR(KFK_GROUP_DRY_RUN, "site-a.cascade-actions-dry-run");
    topic_plans(p, 12, 3);
    CHECK_STR(p[TOPIC_DEADLETTER].name, "site-a.cascade.deadletter");
    REQUIRE(topic_set_prefix("", &err) == 0);
    CHECK_STR(KFK_TOPIC_SIGNALS, "cascade.signals");
    CHECK_STR(KFK_GROUP_ACT, "cascade-act");
    /* the default group is shown with the prefix it will have */
    CHECK_STR(load(&c, "kafka:\n  topic_prefix: t1-\n"), "");
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    cfg_print(&c, f);
    fclose(f);
    CHECK(strstr(out, "  group: \"\"   # t1-cascade-correlate\n") != NULL);
    CHECK(strstr(out, "  topic_prefix: \"t1-\"\n") != NULL);
    free(out);
}

static void test_plans(void)
{
    topic_plan p[TOPIC_COUNT];

    topic_plans(p, 64, 3);
    CHECK_STR(p[TOPIC_SIGNALS].name, "cascade.signals");
    CHECK_INT(p[TOPIC_SIGNALS].partitions, 64);
    CHECK_INT(p[TOPIC_SIGNALS].replication, 3);
    CHECK_STR(p[TOPIC_SIGNALS].configs[0].key, "retention.ms");
    CHECK_STR(p[TOPIC_SIGNALS].configs[0].value, "604800000");   /* 7 d */
    CHECK_STR(p[TOPIC_INCIDENTS].configs[0].value, "2592000000"); /* 30 d */
    CHECK_STR(p[TOPIC_DEADLETTER].configs[0].value, "2592000000");
    CHECK_STR(p[TOPIC_AUDIT].configs[0].value, "7776000000");    /* 90 d */
    CHECK_STR(p[TOPIC_SIGNALS].configs[1].key, "min.insync.replicas");
    CHECK_STR(p[TOPIC_SIGNALS].configs[1].value, "2");
    CHECK_STR(p[TOPIC_AUDIT].configs[2].key, "cleanup.policy");
    CHECK_STR(p[TOPIC_AUDIT].configs[2].value, "delete");
    topic_plans(p, 1, 1); /* one broker: one replica must do */
    CHECK_STR(p[TOPIC_ACTIONS].configs[1].value, "1");
    topic_plans(p, 1, 2);
    CHECK_STR(p[TOPIC_ACTIONS].configs[1].value, "1");
}

int main(void)
{
    char tmpl[256];

    check_tmp_template(tmpl, sizeof tmpl, "cascade-kcfg");
    REQUIRE(mkdtemp(tmpl) != NULL);
    snprintf(dir, sizeof dir, "%s", tmpl);
    test_accepted();
    test_refused();
    test_redacted();
    test_scram_warning();
    test_prefix();
    test_plans();
    unlink(write_file("c.yaml", ""));
    unlink(write_file("pw", ""));
    rmdir(dir);
    return check_report();
}
