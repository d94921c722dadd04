#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "core/jmp.h"
#include "core/signal.h"
#include "core/ts.h"

static int parse(const char *line, sig *s, cs_err *err)
{
    return sig_parse_json(s, line, strlen(line), err);
}

static void expect_error(const char *line, const char *fragment)
{
    sig s;
    cs_err err = {{0}};
    int rc = parse(line, &s, &err);

    CHECK_INT(rc, -1);
    if (!strstr(err.msg, fragment))
        fprintf(stderr, "  reason was: %s (wanted '%s')\n", err.msg, fragment);
    CHECK(strstr(err.msg, fragment) != NULL);
}

static void test_ts(void)
{
    int64_t t;
    char buf[32];

    CHECK_INT(ts_parse_rfc3339("2026-03-02T08:00:00.000Z", &t), 0);
    ts_format(t, buf, sizeof buf);
    CHECK_STR(buf, "2026-03-02T08:00:00.000Z");
    CHECK_INT(ts_parse_rfc3339("2026-03-02T09:30:00.5+01:30", &t), 0);
    ts_format(t, buf, sizeof buf);
    CHECK_STR(buf, "2026-03-02T08:00:00.500Z");
    CHECK_INT(ts_parse_rfc3339("2024-02-29T00:00:00Z", &t), 0);
    CHECK_INT(ts_parse_rfc3339("2023-02-29T00:00:00Z", &t), -1);
    CHECK_INT(ts_parse_rfc3339("2026-03-02 08:00:00", &t), -1); /* no zone */
    CHECK_INT(ts_parse_rfc3339("0001-01-01T00:00:00Z", &t), -1);
    CHECK_INT(ts_from_epoch(1772438400.25, &t), 0);
    ts_format(t, buf, sizeof buf);
    CHECK_STR(buf, "2026-03-02T08:00:00.250Z");
    /* digit by digit, as snprintf wrote it: a spread of times from 1970
     * to 9999, and a buffer too short (truncated as snprintf does) */
    for (int64_t x = 0; x < 253402300799LL * TS_SEC; x += 3917777777777LL) {
        char want[80];
        time_t secs = (time_t)(x / TS_SEC);
        struct tm tm;
        gmtime_r(&secs, &tm);
        snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, (int)(x % TS_SEC / 1000));
        ts_format(x, buf, sizeof buf);
        CHECK_STR(buf, want);
    }
    ts_format(253402300799LL * TS_SEC + 999999, buf, sizeof buf);
    CHECK_STR(buf, "9999-12-31T23:59:59.999Z");
    ts_format(0, buf, 11);
    CHECK_STR(buf, "1970-01-01");
}

static void test_sources(void)
{
    static const char *const good[] = {
        "{\"ts\":\"2026-03-02T08:00:00Z\",\"source\":\"kernel\",\"host\":\"g1\","
        "\"line\":\"NVRM: Xid (PCI:0000:db:00): 79, GPU has fallen off the bus.\"}",
        "{\"ts\":1772438400,\"source\":\"app\",\"job\":42,\"line\":\"x\",\"rank\":3}",
        "{\"ts\":\"2026-03-02T08:00:00Z\",\"source\":\"ray\",\"line\":\"raylet\"}",
        "{\"ts\":\"2026-03-02T08:00:00Z\",\"source\":\"slurm\",\"record\":"
        "\"JobId=1 JobState=FAILED\"}",
        "{\"ts\":\"2026-03-02T08:00:00Z\",\"source\":\"k8s\",\"event\":"
        "{\"reason\":\"FailedScheduling\",\"message\":\"0/1 nodes\"}}",
        "{\"ts\":\"2026-03-02T08:00:00Z\",\"source\":\"alertmanager\",\"payload\":"
        "{\"version\":\"4\",\"status\":\"firing\",\"alerts\":[{\"status\":"
        "\"firing\",\"labels\":{\"alertname\":\"GPUXidError\"}}]}}",
        "{\"ts\":\"2026-03-02T08:00:00Z\",\"source\":\"metric\",\"name\":"
        "\"DCGM_FI_DEV_GPU_TEMP\",\"value\":68,\"labels\":{\"gpu\":\"0\"}}",
        "{\"ts\":\"2026-03-02T08:00:00Z\",\"source\":\"job\",\"job\":\"7\","
        "\"state\":\"RUNNING\",\"nodes\":[\"g1\"],\"priority\":\"elastic\","
        "\"config\":{\"batch_size\":8}}",
        "{\"ts\":\"2026-03-02T08:00:00Z\",\"source\":\"inventory\",\"host\":"
        "\"g1\",\"rack\":\"r1\",\"gpus\":8,\"canary\":true,"
        "\"addrs\":[\"10.0.0.1\",\"fe80::1%ib0\"]}",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        sig s;
        cs_err err = {{0}};
        int rc = parse(good[i], &s, &err);
        if (rc)
            fprintf(stderr, "  good[%zu]: %s\n", i, err.msg);
        CHECK_INT(rc, 0);
        CHECK_INT(s.source, (int)i);
        CHECK_STR(s.cluster, "default");
        sig_free(&s);
    }
    sig s;
    cs_err err;
    CHECK_INT(parse(good[1], &s, &err), 0);
    CHECK_STR(s.job, "42"); /* numeric job ids normalise to strings */
    CHECK_INT(s.rank, 3);
    sig_free(&s);
}

static void test_errors(void)
{
    expect_error("{\"ts\":\"2026-03-02T08:00:00Z\",\"source\":", "invalid JSON");
    expect_error("[1,2]", "must be a JSON object");
    expect_error("{\"source\":\"kernel\",\"line\":\"x\"}", "'ts' is required");
    expect_error("{\"ts\":\"yesterday\",\"source\":\"kernel\",\"line\":\"x\"}",
                 "not an RFC 3339 time");
    expect_error("{\"ts\":1,\"source\":\"syslog\",\"line\":\"x\"}",
                 "unknown source \"syslog\"");
    expect_error("{\"ts\":1,\"source\":\"kernel\"}", "'line' is required");
    expect_error("{\"ts\":1,\"source\":\"app\",\"line\":\"x\",\"rank\":-1}",
                 "'rank'");
    expect_error("{\"ts\":1,\"source\":\"job\",\"job\":\"1\",\"state\":\"DONE\"}",
                 "unknown job state");
    expect_error("{\"ts\":1,\"source\":\"job\",\"job\":\"1\",\"state\":\"FAILED\","
                 "\"nodes\":[\"a\",3]}", "'nodes'[1]");
    expect_error("{\"ts\":1,\"source\":\"metric\",\"name\":\"x\",\"value\":\"1\"}",
                 "'value' must be a number");
    expect_error("{\"ts\":1,\"source\":\"alertmanager\",\"payload\":{\"version\":"
                 "\"3\",\"alerts\":[]}}", "version must be \"4\"");
    expect_error("{\"ts\":1,\"source\":\"alertmanager\",\"payload\":{\"alerts\":"
                 "[{\"status\":\"firing\"}]}}", "alerts[0] needs a 'labels'");
    expect_error("{\"ts\":1,\"source\":\"k8s\",\"event\":{}}", "'reason'");
    expect_error("{\"ts\":1,\"source\":\"inventory\"}", "'host' is required");
    /* a planned-maintenance window: named field, what is wrong with it */
    expect_error("{\"ts\":1,\"source\":\"inventory\",\"host\":\"g1\","
                 "\"maintenance\":\"tonight\"}",
                 "'maintenance' must be an object or null");
    expect_error("{\"ts\":1,\"source\":\"inventory\",\"host\":\"g1\","
                 "\"maintenance\":{\"end\":\"2026-03-02T10:00:00Z\"}}",
                 "'maintenance.start' is required");
    expect_error("{\"ts\":1,\"source\":\"inventory\",\"host\":\"g1\","
                 "\"maintenance\":{\"start\":\"8am\",\"end\":1}}",
                 "'maintenance.start': \"8am\" is not an RFC 3339 time");
    expect_error("{\"ts\":1,\"source\":\"inventory\",\"host\":\"g1\","
                 "\"maintenance\":{\"start\":\"2026-03-02T10:00:00Z\","
                 "\"end\":\"2026-03-02T08:00:00Z\"}}",
                 "'maintenance.end' must be after its start");
    expect_error("{\"ts\":1,\"source\":\"inventory\",\"host\":\"g1\","
                 "\"nvlink_domain\":7}", "'nvlink_domain' must be a string");
    expect_error("{\"ts\":1,\"source\":\"inventory\",\"host\":\"g1\","
                 "\"addrs\":\"10.0.0.1\"}", "'addrs' must be an array");
    expect_error("{\"ts\":1,\"source\":\"inventory\",\"host\":\"g1\","
                 "\"addrs\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}",
                 "at most 4 addresses");
    expect_error("{\"ts\":1,\"source\":\"inventory\",\"host\":\"g1\","
                 "\"addrs\":[\"10.0.0.1\",\"10.0.0.2 x\"]}",
                 "'addrs[1]' must be an address");
    expect_error("{\"ts\":1,\"source\":\"inventory\",\"host\":\"g1\","
                 "\"addrs\":[7]}", "'addrs[0]' must be an address");
    expect_error("{\"ts\":1,\"ts\":2,\"source\":\"kernel\",\"line\":\"x\"}",
                 "duplicate");
}

static void test_msgpack(void)
{
    const char *line = "{\"ts\":\"2026-03-02T08:00:00Z\",\"source\":\"job\","
                       "\"job\":\"7\",\"state\":\"FAILED\",\"nodes\":[\"g1\",\"g2\"],"
                       "\"config\":{\"batch_size\":64,\"lr\":0.5,\"x\":null}}";
    sig a, b;
    cs_err err;
    char *buf;
    size_t len;

    CHECK_INT(parse(line, &a, &err), 0);
    CHECK_INT(sig_to_msgpack(&a, &buf, &len), 0);
    CHECK_INT(sig_parse_msgpack(&b, buf, len, &err), 0);
    json_t *bo = sig_json(&b);
    CHECK(json_equal(a.obj, bo));
    json_decref(bo);
    CHECK(a.id == b.id); /* the id survives the wire */
    sig_free(&b);
    /* Every truncation of the encoding is rejected, never half-read. */
    int rejected = 0;
    for (size_t cut = 0; cut < len; cut++)
        rejected += sig_parse_msgpack(&b, buf, cut, &err) == -1;
    CHECK_INT(rejected, len);
    CHECK(strstr(err.msg, "truncated") != NULL);
    /* Trailing garbage is an error too. */
    char *longer = malloc(len + 1);
    memcpy(longer, buf, len);
    longer[len] = '\xc0';
    CHECK_INT(sig_parse_msgpack(&b, longer, len + 1, &err), -1);
    CHECK(strstr(err.msg, "trailing") != NULL);
    free(longer);
    /* Found by fuzzing: a forged 2^32-entry map header must be refused
     * before the decoder allocates for it, and an empty key is fine. */
    CHECK_INT(sig_parse_msgpack(&b, "\xdf\xff\xff\xff\xff\xa1", 6, &err), -1);
    CHECK(strstr(err.msg, "claims 8589934590 elements") != NULL);
    CHECK_INT(sig_parse_msgpack(&b, "\x81\xa0\xa1x", 4, &err), -1);
    CHECK(strstr(err.msg, "'ts' is required") != NULL);
    free(buf);
    sig_free(&a);

    /* found by fuzzing: a config key over 255 bytes must survive the wire */
    char big[600];
    snprintf(big, sizeof big, "{\"ts\":1,\"source\":\"job\",\"job\":\"1\","
             "\"state\":\"RUNNING\",\"config\":{\"%0300d\":1}}", 0);
    CHECK_INT(parse(big, &a, &err), 0);
    sig_to_msgpack(&a, &buf, &len);
    CHECK_INT(sig_parse_msgpack(&b, buf, len, &err), 0);
    bo = sig_json(&b);
    CHECK(json_equal(a.obj, bo));
    json_decref(bo);
    sig_free(&b);
    free(buf);
    sig_free(&a);
}

/* A collector's own id is taken as it is; without one the object's hash
 * is the id, so two equal objects are the same signal. */
static void test_given_id(void)
{
    sig a, b, c;
    cs_err err;

    REQUIRE(parse("{\"ts\":1,\"source\":\"kernel\",\"line\":\"x\","
                  "\"id\":\"00000000deadbeef\"}", &a, &err) == 0);
    CHECK(a.id == 0xdeadbeefULL);
    REQUIRE(parse("{\"ts\":1,\"source\":\"kernel\",\"line\":\"x\"}", &b,
                  &err) == 0);
    REQUIRE(parse("{\"line\":\"x\",\"source\":\"kernel\",\"ts\":1}", &c,
                  &err) == 0);
    CHECK(b.id == c.id);
    CHECK(b.id != a.id);
    sig_free(&a);
    sig_free(&b);
    sig_free(&c);
    expect_error("{\"ts\":1,\"source\":\"kernel\",\"line\":\"x\",\"id\":7}",
                 "field 'id' must be 16 lowercase hex digits");
    expect_error("{\"ts\":1,\"source\":\"kernel\",\"line\":\"x\",\"id\":"
                 "\"00000000DEADBEEF\"}", "field 'id'");
    expect_error("{\"ts\":1,\"source\":\"kernel\",\"line\":\"x\",\"id\":"
                 "\"abc\"}", "field 'id'");
}

/* sig_adopt_json takes the caller's reference: the signal's object is the
 * one given, normalised in place; on error the reference is released. */
static void test_adopt(void)
{
    json_t *o = json_pack("{s:s, s:s, s:s}", "ts", "2026-03-02T08:00:00Z",
                          "source", "app", "line", "x");
    json_t *bad = json_pack("{s:s, s:s}", "ts", "yesterday", "source", "app");
    sig s;
    cs_err err;

    CHECK_INT(sig_adopt_json(&s, o, &err), 0);
    CHECK(s.obj == o);
    CHECK_STR(json_string_value(json_object_get(o, "cluster")), "default");
    sig_free(&s); /* releases o */
    json_incref(bad);
    CHECK_INT(sig_adopt_json(&s, bad, &err), -1);
    CHECK_INT(bad->refcount, 1); /* only the reference kept here */
    json_decref(bad);
}

/* JSON text -> msgpack bytes, as a collector would send it. */
static char *wire(const char *json, size_t *len)
{
    json_t *o = json_loads(json, JSON_ALLOW_NUL, NULL);
    msgpack_sbuffer sb;
    msgpack_packer pk;

    if (!o) {
        fprintf(stderr, "test_signal: bad test input %s\n", json);
        exit(1);
    }
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    jmp_pack(&pk, o);
    json_decref(o);
    *len = sb.size;
    return sb.data;
}

/* Decodes json's wire form both ways; returns whether the plain path
 * (no JSON object) took it. Both must agree on everything. */
static int both_ways(const char *json)
{
    size_t len;
    char *buf = wire(json, &len);
    sig s, g;
    cs_err err = {{0}}, gerr = {{0}};
    int rc = sig_parse_msgpack(&s, buf, len, &err);
    json_t *o = jmp_unpack(buf, len, &gerr);
    int grc = sig_adopt_json(&g, o, &gerr), plain = 0;

    CHECK_INT(rc, grc);
    if (rc == 0 && grc == 0) {
        json_t *j = sig_json(&s);
        char *x = json_dumps(j, JSON_COMPACT), *y = json_dumps(g.obj, JSON_COMPACT);
        plain = s.obj == NULL;
        CHECK(s.ts == g.ts && s.id == g.id && s.source == g.source &&
              s.rank == g.rank);
        CHECK_STR(s.cluster, g.cluster);
        CHECK_STR(s.line, g.line);
        CHECK((s.host == NULL) == (g.host == NULL));
        CHECK((s.job == NULL) == (g.job == NULL));
        if (s.host && g.host)
            CHECK_STR(s.host, g.host);
        if (s.job && g.job)
            CHECK_STR(s.job, g.job);
        CHECK((s.job_name == NULL) == (g.job_name == NULL));
        if (s.job_name && g.job_name)
            CHECK_STR(s.job_name, g.job_name);
        CHECK_STR(x, y); /* key order too: a report's head is stored */
        free(x);
        free(y);
        json_decref(j);
        sig_free(&g);
    } else {
        CHECK_STR(err.msg, gerr.msg);
    }
    sig_free(&s);
    free(buf);
    return plain;
}

static void test_plain(void)
{
#define LINE "\"ts\":\"2026-03-02T08:00:00.25Z\",\"id\":\"00000000deadbeef\","
    /* the common case: read without a JSON object */
    CHECK(both_ways("{" LINE "\"source\":\"app\",\"host\":\"g1\","
                    "\"job\":\"42\",\"rank\":3,\"line\":\"NCCL WARN x\"}"));
    CHECK(both_ways("{" LINE "\"source\":\"kernel\",\"cluster\":\"c1\","
                    "\"host\":\"g1\",\"line\":\"NVRM: Xid 79\"}"));
    CHECK(both_ways("{\"line\":\"x\",\"source\":\"ray\"," LINE
                    "\"job_name\":\"train\"}"));
    CHECK(both_ways("{" LINE "\"source\":\"app\",\"line\":\"x\","
                    "\"rank\":1000000}"));
    /* the lowest and highest plain bytes, inside the word-wise check */
    CHECK(both_ways("{" LINE "\"source\":\"app\",\"line\":"
                    "\"0123456789\\u0001abcdef0123456789\\u007fabcdef\"}"));
    /* anything else goes the general way, with the same result */
    const char *general[] = {
        "{" LINE "\"source\":\"app\",\"host\":null,\"line\":\"x\"}",
        "{" LINE "\"source\":\"app\",\"team\":\"a\",\"line\":\"x\"}",
        "{" LINE "\"source\":\"kernel\",\"rank\":2,\"line\":\"x\"}",
        "{" LINE "\"source\":\"app\",\"rank\":1000001,\"line\":\"x\"}",
        "{" LINE "\"source\":\"app\",\"rank\":\"2\",\"line\":\"x\"}",
        "{" LINE "\"source\":\"app\",\"job\":7,\"line\":\"x\"}",
        "{" LINE "\"source\":\"app\",\"host\":\"\",\"line\":\"x\"}",
        "{" LINE "\"source\":\"app\",\"line\":\"\"}",
        "{" LINE "\"source\":\"app\",\"line\":\"caf\u00e9\"}",
        "{" LINE "\"source\":\"app\",\"line\":\"a\\u0000b\"}",
        /* a NUL or a byte over 0x7f at each place of an 8-byte word */
        "{" LINE "\"source\":\"app\",\"line\":\"0123456789abcdef\\u0000xx\"}",
        "{" LINE "\"source\":\"app\",\"line\":\"0123456789abcde\\u0000fxx\"}",
        "{" LINE "\"source\":\"app\",\"line\":\"012345678\\u0000abcdefxx\"}",
        "{" LINE "\"source\":\"app\",\"line\":\"0123456789abcdef\\u0080xx\"}",
        "{" LINE "\"source\":\"app\",\"line\":\"01234567\u00ff89abcdefxx\"}",
        "{" LINE "\"source\":\"app\",\"host\":\"01234567\\u0000\",\"line\":\"x\"}",
        "{" LINE "\"source\":\"slurm\",\"line\":\"x\"}",
        "{" LINE "\"source\":\"apps\",\"line\":\"x\"}",
        "{" LINE "\"source\":\"app\"}",
        "{\"ts\":\"soon\",\"id\":\"00000000deadbeef\",\"source\":\"app\","
        "\"line\":\"x\"}",
        "{\"ts\":1772438400,\"id\":\"00000000deadbeef\",\"source\":\"app\","
        "\"line\":\"x\"}",
        "{\"ts\":\"2026-03-02T08:00:00Z\",\"id\":\"00000000DEADBEEF\","
        "\"source\":\"app\",\"line\":\"x\"}",
        "{\"ts\":\"2026-03-02T08:00:00Z\",\"source\":\"app\",\"line\":\"x\"}",
    };
    for (size_t i = 0; i < sizeof general / sizeof *general; i++)
        if (both_ways(general[i])) {
            fprintf(stderr, "  plain path took: %s\n", general[i]);
            CHECK(0);
        }
#undef LINE
    /* a field given twice (JSON text cannot say it; msgpack can) */
    static const char twice[] =
        "\x85\xa2ts\xb4" "2026-03-02T08:00:00Z" "\xa6source\xa3" "app"
        "\xa2id\xb0" "00000000deadbeef" "\xa4line\xa1x\xa4line\xa1y";
    sig s;
    cs_err err;
    CHECK_INT(sig_parse_msgpack(&s, twice, sizeof twice - 1, &err), 0);
    CHECK(s.obj != NULL); /* the general way: the later value wins */
    CHECK_STR(s.line, "y");
    sig_free(&s);
}

/* sig_log_msgpack against the object path it replaces in the collector:
 * the object {ts, source, line, host, job, cluster, id}, normalised and
 * encoded, must give the same bytes; a text that is not UTF-8 is refused
 * (the collector then takes the object path, which replaces the bytes). */
static void log_same(const char *ts, sig_source src, const char *line,
                     const char *host, const char *job, const char *cluster)
{
    const char *id = "0123456789abcdef";
    json_t *o = json_pack("{s:s, s:s, s:s}", "ts", ts, "source",
                          sig_source_name(src), "line", line);
    char *a = NULL, *b = NULL;
    size_t alen = 0, blen = 0;
    cs_err err;
    sig s, back;

    if (host && host[0])
        json_object_set_new(o, "host", json_string(host));
    if (job && job[0])
        json_object_set_new(o, "job", json_string(job));
    if (cluster)
        json_object_set_new(o, "cluster", json_string(cluster));
    json_object_set_new(o, "id", json_string(id));
    REQUIRE(sig_adopt_json(&s, o, &err) == 0);
    REQUIRE(sig_to_msgpack(&s, &b, &blen) == 0);
    CHECK_INT(sig_log_msgpack(ts, src, line, host, job, cluster, id, &a,
                              &alen), 0);
    CHECK_INT(alen, blen);
    CHECK(a && b && alen == blen && !memcmp(a, b, alen));
    /* and the correlator reads it as that signal */
    REQUIRE(sig_parse_msgpack(&back, a, alen, &err) == 0);
    CHECK_STR(back.line, line);
    CHECK_STR(back.cluster, cluster ? cluster : "default");
    CHECK_STR(back.host ? back.host : "", host ? host : "");
    sig_free(&back);
    sig_free(&s);
    free(a);
    free(b);
}

static void test_log_msgpack(void)
{
    const char *ts = "2026-03-02T08:00:00.123456Z";
    char *out = NULL;
    size_t len = 0;

    log_same(ts, SRC_KERNEL, "NVRM: Xid (PCI:0000:3b:00): 79", "g1", NULL,
             NULL);
    log_same(ts, SRC_APP, "step 5 | loss 2.1", "g1", "7", NULL);
    log_same(ts, SRC_APP, "step 5", "g1", "", "c1"); /* empty job: left out */
    log_same(ts, SRC_SLURM, "error: Nodes g[1-3] not responding", NULL, NULL,
             NULL);
    log_same(ts, SRC_RAY, "caf\xc3\xa9 \xe3\x82\xb8 \xf0\x9f\x98\x80", "h\xc3\xa9",
             "j\xe3\x82\xb8", "c\xc3\xa9");
    log_same(ts, SRC_APP, "x", "g1", "7", "prod");
    /* a long line: str16 and str32 lengths */
    {
        char *big = malloc(70000);
        REQUIRE(big != NULL);
        memset(big, 'x', 69999);
        big[69999] = '\0';
        log_same(ts, SRC_APP, big + 69999 - 300, "g1", NULL, NULL);
        log_same(ts, SRC_APP, big, "g1", NULL, NULL);
        free(big);
    }
    /* not UTF-8, in each text: refused */
    CHECK_INT(sig_log_msgpack(ts, SRC_APP, "a\xc3", "g1", "7", "c", "0123456789abcdef",
                              &out, &len), -1);
    CHECK_INT(sig_log_msgpack(ts, SRC_APP, "a", "g\xff", "7", "c", "0123456789abcdef",
                              &out, &len), -1);
    CHECK_INT(sig_log_msgpack(ts, SRC_APP, "a", "g1", "\xed\xa0\x80", "c",
                              "0123456789abcdef", &out, &len), -1);
    CHECK_INT(sig_log_msgpack(ts, SRC_APP, "a", "g1", "7", "\xc0\xaf",
                              "0123456789abcdef", &out, &len), -1);
    /* an empty line or cluster "" is an error the object path words */
    CHECK_INT(sig_log_msgpack(ts, SRC_APP, "", "g1", "7", NULL,
                              "0123456789abcdef", &out, &len), -1);
    CHECK_INT(sig_log_msgpack(ts, SRC_APP, "a", "g1", "7", "",
                              "0123456789abcdef", &out, &len), -1);
    CHECK(out == NULL);
}

/* sig_metric_msgpack against the object path it replaces in the
 * remote-write receiver: the object {ts, id, source, cluster, host, name,
 * value, labels, job} built by json_pack and json_object_set_new (a
 * repeated label keeps its place, takes the last value) must encode to
 * the same bytes. */
static void metric_same(const char *host, double value,
                        const char *const *lk, const char *const *lv,
                        size_t n, const char *job)
{
    const char *ts = "2026-03-02T08:00:00.123Z", *id = "00000000deadbeef";
    json_t *labels = json_object(), *o;
    char *a = NULL, *b = NULL;
    size_t alen = 0, blen = 0;
    cs_err err;
    sig s, back;

    for (size_t i = 0; i < n; i++)
        json_object_set_new(labels, lk[i], json_string(lv[i]));
    o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:f, s:o}", "ts", ts, "id",
                  id, "source", "metric", "cluster", "prod", "host", host,
                  "name", "DCGM_FI_DEV_GPU_TEMP", "value", value, "labels",
                  labels);
    if (job)
        json_object_set_new(o, "job", json_string(job));
    REQUIRE(sig_adopt_json(&s, o, &err) == 0);
    REQUIRE(sig_to_msgpack(&s, &b, &blen) == 0);
    CHECK_INT(sig_metric_msgpack(ts, id, "prod", host, "DCGM_FI_DEV_GPU_TEMP",
                                 value, lk, lv, n, job, &a, &alen), 0);
    CHECK_INT(alen, blen);
    CHECK(a && b && alen == blen && !memcmp(a, b, alen));
    REQUIRE(sig_parse_msgpack(&back, a, alen, &err) == 0);
    CHECK(back.source == SRC_METRIC);
    CHECK(back.value == value);
    CHECK_STR(back.host, host);
    CHECK(back.id == 0xdeadbeefULL);
    sig_free(&back);
    sig_free(&s);
    free(a);
    free(b);
}

static void test_metric_msgpack(void)
{
    const char *k1[] = {"gpu", "UUID", "scrape_job"};
    const char *v1[] = {"3", "GPU-5f3c", "dcgm"};
    const char *k2[] = {"gpu", "UUID", "gpu", "modelName"};
    const char *v2[] = {"3", "GPU-5f3c", "4", "NVIDIA H100 80GB HBM3"};
    const char *k3[] = {"l\xc3\xa9"};
    const char *v3[] = {"\xe3\x82\xb8"};
    const char *bad[] = {"a\xc3"};
    char *out = NULL;
    size_t len = 0;

    metric_same("g1", 71.0, k1, v1, 3, NULL);
    metric_same("g1", -0.5, k1, v1, 3, "4711");
    metric_same("g1", 1e300, NULL, NULL, 0, NULL);
    metric_same("g1", 3, k2, v2, 4, NULL); /* gpu twice: first place, last value */
    metric_same("h\xc3\xa9", 0, k3, v3, 1, "j");
    /* what the object path refuses, refused */
    CHECK_INT(sig_metric_msgpack("t", "0000000000000000", "", "g1", "n", 1,
                                 NULL, NULL, 0, NULL, &out, &len), -1);
    CHECK_INT(sig_metric_msgpack("t", "0000000000000000", "c", "", "n", 1,
                                 NULL, NULL, 0, NULL, &out, &len), -1);
    CHECK_INT(sig_metric_msgpack("t", "0000000000000000", "c", "g1", "n",
                                 NAN, NULL, NULL, 0, NULL, &out, &len), -1);
    CHECK_INT(sig_metric_msgpack("t", "0000000000000000", "c", "g1", "n", 1,
                                 bad, k1, 1, NULL, &out, &len), -1);
    CHECK_INT(sig_metric_msgpack("t", "0000000000000000", "c", "g1", "n", 1,
                                 NULL, NULL, 0, "\xff", &out, &len), -1);
    CHECK(out == NULL);
}

int main(void)
{
    test_plain();
    test_adopt();
    test_ts();
    test_given_id();
    test_sources();
    test_errors();
    test_msgpack();
    test_log_msgpack();
    test_metric_msgpack();
    return check_report();
}
