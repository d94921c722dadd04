/* The remote-write decoder (ingest/rwdecode.h): bodies written by hand
 * (rwbody.h) to signals, what is kept, renamed, dropped and refused, and
 * the bodies refused whole. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/signal.h"
#include "core/ts.h"
#include "ingest/rwdecode.h"
#include "rwbody.h"

#define NOW_MS 1772438400000LL /* 2026-03-02T08:00:00Z */
#define NOW_US (NOW_MS * 1000)

static int decode(const rwd *d, const pbuf *wr, rwd_result *r, cs_err *err)
{
    size_t len;
    char *body = rw_snap(wr, &len);
    int code;

    REQUIRE(body != NULL);
    code = rwd_decode(d, body, len, NOW_US, r, err);
    free(body);
    return code;
}

static void sig_of(const rwd_result *r, size_t i, sig *s)
{
    cs_err err = {{0}};

    REQUIRE(i < r->n);
    REQUIRE(sig_parse_msgpack(s, r->msgs[i].val, r->msgs[i].len, &err) == 0);
}

static const char *lab(const sig *s, const char *k)
{
    return json_string_value(json_object_get(s->labels, k));
}

/* dcgm-exporter's series as Prometheus sends it: labels sorted by byte,
 * so DCGM_FI_DRIVER_VERSION, Hostname and UUID come before __name__. */
static void dcgm_series(pbuf *wr, const char *name, const char *host,
                        double v, int64_t ms)
{
    pbuf ts = {.n = 0};

    pb_label(&ts, "DCGM_FI_DRIVER_VERSION", "550.54.15");
    if (host)
        pb_label(&ts, "Hostname", host);
    pb_label(&ts, "UUID", "GPU-5fd4a4bc-1111");
    pb_label(&ts, "__name__", name);
    pb_label(&ts, "cluster", "c9");
    pb_label(&ts, "gpu", "3");
    pb_label(&ts, "instance", "10.0.0.7:9400");
    pb_label(&ts, "job", "dcgm");
    pb_sample(&ts, v, ms);
    pb_series(wr, &ts);
}

static void test_dcgm_sample(void)
{
    rwd *d = rwd_new(&(rwd_opts){0}, NULL);
    pbuf wr = {.n = 0};
    cs_err err = {{0}};
    rwd_result r;
    sig s;

    dcgm_series(&wr, "DCGM_FI_DEV_GPU_TEMP", "gpu-020", 94, NOW_MS - 5000);
    CHECK_INT(decode(d, &wr, &r, &err), 0);
    CHECK_INT(r.n, 1);
    CHECK_INT(r.series, 1);
    CHECK_INT(r.samples, 1);
    CHECK_STR(r.msgs[0].key, "c9");
    sig_of(&r, 0, &s);
    CHECK(s.source == SRC_METRIC);
    CHECK_STR(s.name, "DCGM_FI_DEV_GPU_TEMP");
    CHECK_STR(s.host, "gpu-020");
    CHECK_STR(s.cluster, "c9");
    CHECK(s.value == 94.0);
    CHECK_INT(s.ts, (NOW_MS - 5000) * 1000);
    CHECK_STR(lab(&s, "scrape_job"), "dcgm");
    CHECK_STR(lab(&s, "gpu"), "3");
    CHECK_STR(lab(&s, "DCGM_FI_DRIVER_VERSION"), "550.54.15");
    CHECK(!json_object_get(s.labels, "job"));
    CHECK(!json_object_get(s.labels, "__name__"));
    CHECK(!json_object_get(s.labels, "cluster"));
    CHECK(s.job == NULL);
    sig_free(&s);
    rwd_result_free(&r);
    rwd_free(d);
}

/* The same sample decoded twice has the same id (a retried request is a
 * redelivery); another time, another id. */
static void test_ids(void)
{
    rwd *d = rwd_new(&(rwd_opts){0}, NULL);
    pbuf a = {.n = 0}, b = {.n = 0};
    cs_err err = {{0}};
    rwd_result r1, r2, r3;
    sig s1, s2, s3;

    dcgm_series(&a, "DCGM_FI_DEV_GPU_TEMP", "gpu-020", 94, NOW_MS);
    dcgm_series(&b, "DCGM_FI_DEV_GPU_TEMP", "gpu-020", 94, NOW_MS + 1);
    REQUIRE(decode(d, &a, &r1, &err) == 0 && decode(d, &a, &r2, &err) == 0 &&
            decode(d, &b, &r3, &err) == 0);
    sig_of(&r1, 0, &s1);
    sig_of(&r2, 0, &s2);
    sig_of(&r3, 0, &s3);
    CHECK(s1.id == s2.id);
    CHECK(s1.id != s3.id);
    sig_free(&s1);
    sig_free(&s2);
    sig_free(&s3);
    rwd_result_free(&r1);
    rwd_result_free(&r2);
    rwd_result_free(&r3);
    rwd_free(d);
}

static void test_filter_rename_allow(void)
{
    const char *allow[] = {"DCGM_FI_DEV_XID_ERRORS"};
    rwd *d = rwd_new(&(rwd_opts){.allow = allow, .nallow = 1}, NULL);
    rwd *all = rwd_new(&(rwd_opts){.all = 1}, NULL);
    pbuf wr = {.n = 0};
    cs_err err = {{0}};
    rwd_result r;
    sig s;

    dcgm_series(&wr, "DCGM_FI_DEV_FB_FREE", "gpu-1", 80000, NOW_MS);
    dcgm_series(&wr, "node_load1", "gpu-1", 3, NOW_MS);
    dcgm_series(&wr, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gpu-1", 64, NOW_MS);
    dcgm_series(&wr, "DCGM_FI_DEV_XID_ERRORS", "gpu-1", 79, NOW_MS);
    dcgm_series(&wr, "tb_step", "gpu-1", 1200, NOW_MS);
    REQUIRE(decode(d, &wr, &r, &err) == 0);
    CHECK_INT(r.samples, 5);
    CHECK_INT(r.filtered, 2);
    CHECK_INT(r.n, 3);
    sig_of(&r, 0, &s);
    CHECK_STR(s.name, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS");
    sig_free(&s);
    sig_of(&r, 1, &s);
    CHECK_STR(s.name, "DCGM_FI_DEV_XID_ERRORS");
    sig_free(&s);
    sig_of(&r, 2, &s);
    CHECK_STR(s.name, "tb_step");
    sig_free(&s);
    rwd_result_free(&r);
    REQUIRE(decode(all, &wr, &r, &err) == 0);
    CHECK_INT(r.n, 5);
    CHECK_INT(r.filtered, 0);
    rwd_result_free(&r);
    rwd_free(d);
    rwd_free(all);
}

/* Host: the host labels first, else instance's host part (IPv6 in
 * brackets unwrapped); none at all: counted, dropped. Cluster: the label,
 * else the configured one. Job: the first job label present. */
static void test_host_cluster_job(void)
{
    const char *jobs[] = {"slurm_job_id", "hpc_job"};
    rwd *d = rwd_new(&(rwd_opts){.cluster = "west", .job_labels = jobs,
                                 .njob_labels = 2}, NULL);
    pbuf wr = {.n = 0}, a = {.n = 0}, b = {.n = 0};
    cs_err err = {{0}};
    rwd_result r;
    sig s;

    pb_label(&a, "__name__", "DCGM_FI_DEV_GPU_UTIL");
    pb_label(&a, "hpc_job", "84213");
    pb_label(&a, "instance", "[fe80::1]:9400");
    pb_sample(&a, 97, NOW_MS);
    pb_series(&wr, &a);
    pb_label(&b, "__name__", "DCGM_FI_DEV_GPU_UTIL");
    pb_label(&b, "gpu", "0");
    pb_sample(&b, 97, NOW_MS);
    pb_series(&wr, &b);
    REQUIRE(decode(d, &wr, &r, &err) == 0);
    CHECK_INT(r.n, 1);
    CHECK_INT(r.nohost, 1);
    sig_of(&r, 0, &s);
    CHECK_STR(s.host, "fe80::1");
    CHECK_STR(s.cluster, "west");
    CHECK_STR(s.job, "84213");
    sig_free(&s);
    rwd_result_free(&r);
    rwd_free(d);
}

/* proto3 defaults left out: value 0 is a sample of 0. Stale markers and
 * infinities are dropped and counted; a time at 0 or in the future, a
 * series without __name__, a label not UTF-8: refused with the reason,
 * the rest of the request kept. */
static void test_values_and_invalid(void)
{
    rwd *d = rwd_new(&(rwd_opts){0}, NULL);
    pbuf wr = {.n = 0}, t = {.n = 0}, bad = {.n = 0};
    uint64_t stale = 0x7ff0000000000002ULL;
    double stale_nan;
    cs_err err = {{0}};
    rwd_result r;
    sig s;

    memcpy(&stale_nan, &stale, sizeof stale_nan);
    dcgm_series(&wr, "DCGM_FI_DEV_GPU_UTIL", "gpu-2", 0, NOW_MS);
    dcgm_series(&wr, "DCGM_FI_DEV_GPU_UTIL", "gpu-3", stale_nan, NOW_MS);
    dcgm_series(&wr, "DCGM_FI_DEV_GPU_UTIL", "gpu-4", INFINITY, NOW_MS);
    dcgm_series(&wr, "DCGM_FI_DEV_GPU_UTIL", "gpu-5", 1, 0);
    dcgm_series(&wr, "DCGM_FI_DEV_GPU_UTIL", "gpu-6", 1, NOW_MS + 3600000);
    pb_label(&t, "Hostname", "gpu-7");
    pb_sample(&t, 1, NOW_MS);
    pb_series(&wr, &t);
    pb_label(&bad, "Hostname", "gpu-\xff");
    pb_label(&bad, "__name__", "DCGM_FI_DEV_GPU_UTIL");
    pb_sample(&bad, 1, NOW_MS);
    pb_series(&wr, &bad);
    REQUIRE(decode(d, &wr, &r, &err) == 0);
    CHECK_INT(r.samples, 7);
    CHECK_INT(r.n, 1);
    CHECK_INT(r.nonfinite, 2);
    CHECK_INT(r.invalid, 4);
    CHECK(strstr(r.first_invalid, "not after 1970") != NULL);
    sig_of(&r, 0, &s);
    CHECK_STR(s.host, "gpu-2");
    CHECK(s.value == 0.0);
    sig_free(&s);
    rwd_result_free(&r);
    rwd_free(d);
}

/* Several samples of one series: one signal each, the labels copied. */
static void test_many_samples(void)
{
    rwd *d = rwd_new(&(rwd_opts){0}, NULL);
    pbuf wr = {.n = 0}, ts = {.n = 0};
    cs_err err = {{0}};
    rwd_result r;
    sig a, b;

    pb_label(&ts, "Hostname", "gpu-9");
    pb_label(&ts, "__name__", "DCGM_FI_DEV_POWER_USAGE");
    pb_label(&ts, "gpu", "1");
    pb_sample(&ts, 300, NOW_MS - 2000);
    pb_sample(&ts, 310, NOW_MS - 1000);
    pb_series(&wr, &ts);
    REQUIRE(decode(d, &wr, &r, &err) == 0);
    REQUIRE(r.n == 2);
    sig_of(&r, 0, &a);
    sig_of(&r, 1, &b);
    CHECK(a.value == 300.0 && b.value == 310.0);
    CHECK(a.id != b.id);
    CHECK_STR(lab(&a, "gpu"), "1");
    CHECK_STR(lab(&b, "gpu"), "1");
    sig_free(&a);
    sig_free(&b);
    rwd_result_free(&r);
    rwd_free(d);
}

/* Fields the decoder does not read (metadata, exemplars, histograms)
 * are skipped. */
static void test_unknown_fields(void)
{
    rwd *d = rwd_new(&(rwd_opts){0}, NULL);
    pbuf wr = {.n = 0}, ts = {.n = 0}, meta = {.n = 0};
    cs_err err = {{0}};
    rwd_result r;

    pb_varint(&meta, 1 << 3 | 0);
    pb_varint(&meta, 2); /* GAUGE */
    pb_bytes(&meta, 2, "DCGM_FI_DEV_GPU_TEMP", 20);
    pb_bytes(&wr, 3, meta.b, meta.n);
    pb_label(&ts, "Hostname", "gpu-1");
    pb_label(&ts, "__name__", "DCGM_FI_DEV_GPU_TEMP");
    pb_sample(&ts, 50, NOW_MS);
    pb_bytes(&ts, 3, "\x10\x01", 2);          /* an exemplar */
    pb_bytes(&ts, 4, "\x08\x05\x19\0\0\0\0\0\0\0\0", 11); /* a histogram */
    pb_series(&wr, &ts);
    CHECK_INT(decode(d, &wr, &r, &err), 0);
    CHECK_INT(r.n, 1);
    rwd_result_free(&r);
    rwd_free(d);
}

/* Bodies refused whole: not snappy, snappy of no WriteRequest, over the
 * decompressed limit (told from the preamble), over max_samples. */
static void test_refused(void)
{
    rwd *d = rwd_new(&(rwd_opts){.max_decompressed = 4096, .max_samples = 2},
                     NULL);
    pbuf wr = {.n = 0}, junk = {.n = 0}, big = {.n = 0};
    const char not_snappy[] = "\xff\xff\xff\xff\xff\xff";
    cs_err err = {{0}};
    rwd_result r;

    CHECK_INT(rwd_decode(d, not_snappy, 6, NOW_US, &r, &err), 400);
    CHECK(strstr(err.msg, "snappy") != NULL);
    rwd_result_free(&r);
    memcpy(junk.b, "\x0a\xff\xff\xff\xff\x0f", 6); /* a length past the end */
    junk.n = 6;
    CHECK_INT(decode(d, &junk, &r, &err), 400);
    CHECK(strstr(err.msg, "WriteRequest") != NULL);
    rwd_result_free(&r);
    big.n = 5000;
    CHECK_INT(decode(d, &big, &r, &err), 413);
    CHECK(strstr(err.msg, "max_decompressed") != NULL);
    rwd_result_free(&r);
    for (int i = 0; i < 3; i++)
        dcgm_series(&wr, "DCGM_FI_DEV_GPU_TEMP", "gpu-1", 50, NOW_MS - i);
    CHECK_INT(decode(d, &wr, &r, &err), 413);
    CHECK(strstr(err.msg, "max_samples") != NULL);
    CHECK_INT(r.n, 0);
    rwd_result_free(&r);
    rwd_free(d);
}

/* An empty body is an empty request: nothing to do. */
static void test_empty(void)
{
    rwd *d = rwd_new(&(rwd_opts){0}, NULL);
    pbuf wr = {.n = 0};
    cs_err err = {{0}};
    rwd_result r;

    CHECK_INT(decode(d, &wr, &r, &err), 0);
    CHECK_INT(r.n, 0);
    CHECK_INT(r.samples, 0);
    rwd_result_free(&r);
    rwd_free(d);
}

int main(void)
{
    test_dcgm_sample();
    test_ids();
    test_filter_rename_allow();
    test_host_cluster_job();
    test_values_and_invalid();
    test_many_samples();
    test_unknown_fields();
    test_refused();
    test_empty();
    return check_report();
}
