/* Rules read from metric series (engine/metrics.c): rates, not values;
 * stalls by event-time timers and by the wall clock; thermal by node and
 * by rack. Each rule is checked on the case that must fire and on the
 * near misses that must not. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "incidents.h"
#include "core/ts.h"
#include "engine/engine.h"

static void nop_add(void *c, const char *k, int64_t t, const char *m)
{
    (void)c, (void)k, (void)t, (void)m;
}
static void nop_trim(void *c, const char *k, int64_t b)
{
    (void)c, (void)k, (void)b;
}
static void nop_put(void *c, const char *k, const char *f, const char *v)
{
    (void)c, (void)k, (void)f, (void)v;
}
static void nop_del(void *c, const char *k, const char *f)
{
    (void)c, (void)k, (void)f;
}
static const eng_store_ops ops = {nop_add, nop_trim, nop_put, nop_del};

static int64_t ts_of(const char *text)
{
    int64_t t = 0;
    CHECK_INT(ts_parse_rfc3339(text, &t), 0);
    return t;
}

/* 2026-03-02T08:00:00Z plus `sec` seconds. */
static void ts_at(char *buf, size_t len, int sec)
{
    ts_format(ts_of("2026-03-02T08:00:00Z") + (int64_t)sec * TS_SEC, buf, len);
}

static void feed_line(engine *e, const char *line)
{
    sig s;
    cs_err err;

    if (sig_parse_json(&s, line, strlen(line), &err)) {
        fprintf(stderr, "bad test line: %s: %s\n", err.msg, line);
        CHECK(0);
        return;
    }
    eng_feed(e, &s);
    sig_free(&s);
}

static void metric(engine *e, int sec, const char *host, const char *name,
                   double v, const char *lk, const char *lv)
{
    char ts[40], line[512];

    ts_at(ts, sizeof ts, sec);
    snprintf(line, sizeof line,
             "{\"ts\":\"%s\",\"source\":\"metric\",\"host\":\"%s\",\"name\":"
             "\"%s\",\"value\":%g,\"labels\":{\"%s\":\"%s\"}}",
             ts, host, name, v, lk, lv);
    feed_line(e, line);
}

static void job(engine *e, int sec, const char *id, const char *state,
                const char *nodes)
{
    char ts[40], line[512];

    ts_at(ts, sizeof ts, sec);
    snprintf(line, sizeof line,
             "{\"ts\":\"%s\",\"source\":\"job\",\"job\":\"%s\",\"state\":"
             "\"%s\",\"nodes\":%s}", ts, id, state, nodes);
    feed_line(e, line);
}

static void inventory(engine *e, const char *host, const char *rack)
{
    char line[256];

    snprintf(line, sizeof line,
             "{\"ts\":\"2026-03-02T07:00:00Z\",\"source\":\"inventory\","
             "\"host\":\"%s\",\"rack\":\"%s\",\"canary\":false}", host, rack);
    feed_line(e, line);
}

#define EXPECT(e, want)                                   \
    do {                                                  \
        char got_[256];                                   \
        incident_scenarios(e, got_, sizeof got_);         \
        CHECK_STR(got_, want);                            \
    } while (0)

/* ---- RDMA counters --------------------------------------------------- */

/* Ten minutes of samples; each counter grows by its step per minute from
 * minute `from` on (a step of 0: constant). */
static engine *rdma_run(double retx_step, double ack_step, int from,
                        int reset_at)
{
    cs_err err;
    engine *e = eng_new(&ops, NULL, &err);
    double retx = 9e7, ack = 0;

    inventory(e, "n1", "r1");
    for (int m = 0; m <= 12; m++) {
        if (m > from) {
            retx += retx_step;
            ack += ack_step;
        }
        if (m == reset_at)
            retx = ack = 0;
        metric(e, m * 60, "n1", "hw_rdma_tx_retx_pkts_total", retx, "device",
               "mlx5_0");
        metric(e, m * 60, "n1", "hw_rdma_tx_ack_timeout_total", ack, "device",
               "mlx5_0");
    }
    return e;
}

static void test_rdma(void)
{
    engine *e;

    e = rdma_run(4200, 35, 2, -1); /* both rising for 10 minutes */
    EXPECT(e, "net.rdma_degraded");
    eng_free(e);
    e = rdma_run(0, 0, 0, -1); /* 90M retransmits, none new */
    EXPECT(e, "");
    eng_free(e);
    e = rdma_run(4200, 0, 2, -1); /* retransmits without ACK timeouts */
    EXPECT(e, "");
    eng_free(e);
    e = rdma_run(4200, 35, 8, -1); /* rising for 4 minutes only */
    EXPECT(e, "");
    eng_free(e);
    /* An exporter restart at minute 8 resets both counters: the runs of
     * increases start over and last 4 minutes by minute 12. */
    e = rdma_run(4200, 35, 3, 8); /* 4 minutes before it, 4 after */
    EXPECT(e, "");
    eng_free(e);
    e = rdma_run(4200, 35, 2, 6); /* 6 minutes after it: sustained again */
    EXPECT(e, "net.rdma_degraded");
    eng_free(e);
}

/* ---- stalls ------------------------------------------------------------ */

/* A job on n1 logs steps for 10 minutes, then stops (the line at minute
 * `save` is a checkpoint save instead); GPU 0 reports util and power every
 * minute until minute `until`. With a counter, n1 also reports it; it
 * bursts for three minutes from minute `burst` (-1: never). */
static engine *stall_full(double util, double power, int until,
                          const char *counter, int burst, int save)
{
    cs_err err;
    engine *e = eng_new(&ops, NULL, &err);
    char ts[40], line[512];
    double retx = 5000;

    inventory(e, "n1", "r1");
    job(e, 0, "7", "RUNNING", "[\"n1\"]");
    for (int m = 0; m <= until; m++) {
        if (m <= 10) {
            ts_at(ts, sizeof ts, m * 60 + 30);
            snprintf(line, sizeof line,
                     "{\"ts\":\"%s\",\"source\":\"app\",\"host\":\"n1\","
                     "\"job\":\"7\",\"line\":\"%s %d | loss 2.1 | lr 3e-4\"}",
                     ts, m == save ? "Saving checkpoint at step" : "step",
                     100 + m * 10);
            feed_line(e, line);
        }
        if (burst >= 0 && m >= burst && m <= burst + 2)
            retx += 30000;
        if (counter)
            metric(e, m * 60 + 5, "n1", counter, retx, "device", "mlx5_0");
        metric(e, m * 60, "n1", "DCGM_FI_DEV_GPU_UTIL", m <= 10 ? 98 : util,
               "gpu", "0");
        /* Real power readings move by fractions of a watt; a reading that
         * never moves is ghost data (test_ghost). */
        metric(e, m * 60, "n1", "DCGM_FI_DEV_POWER_USAGE",
               (m <= 10 ? 700 : power) + 0.25 * (m % 4), "gpu", "0");
    }
    return e;
}

static engine *stall_run(double util, double power, int until)
{
    return stall_full(util, power, until, NULL, -1, -1);
}

static void test_stalls(void)
{
    engine *e;

    e = stall_run(0.5, 110, 50);
    EXPECT(e, "job.stalled");
    eng_free(e);
    e = stall_run(100, 120, 50); /* busy at idle power */
    EXPECT(e, "nccl.hang_busy_wait");
    eng_free(e);
    e = stall_run(97, 690, 50); /* computing: only the log went quiet */
    EXPECT(e, "");
    eng_free(e);
    e = stall_run(0.5, 110, 35); /* 25 minutes without progress */
    EXPECT(e, "");
    eng_free(e);

    /* A job that ends is not stalled. */
    e = stall_run(0.5, 110, 20);
    job(e, 21 * 60, "7", "COMPLETED", "[\"n1\"]");
    metric(e, 50 * 60, "n2", "DCGM_FI_DEV_GPU_UTIL", 1, "gpu", "0");
    EXPECT(e, "");
    eng_free(e);
}

/* Live: nothing arrives after minute 40; the wall clock fires the timer,
 * but only when the stream is caught up with it. */
static void test_wall_clock(void)
{
    engine *e = stall_run(0.5, 110, 40);
    int64_t last = ts_of("2026-03-02T08:40:00Z");

    EXPECT(e, ""); /* due at 08:40:30 (30 min after the last step) */
    eng_tick(e, last + 2 * 3600 * TS_SEC); /* far ahead: a backlog */
    EXPECT(e, "");
    eng_tick(e, last + 45 * TS_SEC);
    EXPECT(e, "job.stalled");
    eng_free(e);
}

/* One cluster live, another still reading its backlog two hours behind:
 * the live one's signal must not put the backlog's timers on the wall
 * clock (before, it did: the stall fired, and incidents resolved early
 * against replay). Once the backlog catches up, it goes live too. */
static void test_wall_clock_per_cluster(void)
{
    engine *e = stall_run(0.5, 110, 40);
    int64_t last = ts_of("2026-03-02T08:40:00Z");
    char line[512], ts[40];

    ts_format(last + 2 * 3600 * TS_SEC, ts, sizeof ts);
    snprintf(line, sizeof line,
             "{\"ts\":\"%s\",\"source\":\"metric\",\"cluster\":\"live-1\","
             "\"host\":\"x1\",\"name\":\"DCGM_FI_DEV_GPU_UTIL\",\"value\":50,"
             "\"labels\":{\"gpu\":\"0\"}}", ts);
    feed_line(e, line);
    eng_tick(e, last + 2 * 3600 * TS_SEC + 45 * TS_SEC);
    EXPECT(e, ""); /* the default cluster is still at 08:40 */
    eng_tick(e, last + 45 * TS_SEC); /* (a test's clock may go back) */
    EXPECT(e, "job.stalled"); /* caught up: its timers run on the wall */
    eng_free(e);
}

/* ---- thermal ----------------------------------------------------------- */

/* A 2-node job; n1's GPU 0 heats to `hot1` from minute 5, n2's to `hot2`;
 * the job's step time grows by `slow` per minute. */
static engine *straggler_run(double hot1, double hot2, double slow)
{
    cs_err err;
    engine *e = eng_new(&ops, NULL, &err);

    inventory(e, "n1", "r1");
    inventory(e, "n2", "r2");
    job(e, 0, "9", "RUNNING", "[\"n1\",\"n2\"]");
    for (int m = 0; m <= 20; m++) {
        metric(e, m * 60, "n1", "DCGM_FI_DEV_GPU_TEMP", m >= 5 ? hot1 : 70,
               "gpu", "0");
        metric(e, m * 60, "n2", "DCGM_FI_DEV_GPU_TEMP", m >= 5 ? hot2 : 70,
               "gpu", "0");
        metric(e, m * 60 + 1, "n1", "tb_perf_step_time_seconds",
               6.0 + slow * m, "job", "9");
    }
    return e;
}

static void test_straggler(void)
{
    engine *e;
    json_t *all, *acts;

    e = straggler_run(93, 68, 0.1);
    EXPECT(e, "thermal.straggler");
    all = eng_incidents(e);
    acts = json_object_get(json_array_get(all, 0), "actions");
    CHECK_STR(json_string_value(json_array_get(json_object_get(json_object_get(
                  json_array_get(acts, 1), "params"), "exclude_nodes"), 0)),
              "n1");
    json_decref(all);
    eng_free(e);
    e = straggler_run(93, 68, 0); /* hot but not slower */
    EXPECT(e, "");
    eng_free(e);
    e = straggler_run(93, 90, 0.1); /* both nodes hot: not one straggler */
    EXPECT(e, "");
    eng_free(e);
}

static void test_fleet(void)
{
    static const char *const hosts[] = {"h1", "h2", "h3", "h4"};
    cs_err err;
    engine *e;

    /* Two hot hosts in a rack: not yet the rack. */
    e = eng_new(&ops, NULL, &err);
    for (int i = 0; i < 4; i++)
        inventory(e, hosts[i], "r1");
    metric(e, 0, "h1", "DCGM_FI_DEV_GPU_TEMP", 88, "gpu", "0");
    metric(e, 60, "h2", "DCGM_FI_DEV_GPU_TEMP", 89, "gpu", "1");
    metric(e, 120, "h3", "DCGM_FI_DEV_GPU_TEMP", 70, "gpu", "1");
    EXPECT(e, "");
    /* A third (by its throttle bitmask: HW thermal slowdown) opens it;
     * a fourth folds in. */
    metric(e, 180, "h3", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 64, "gpu", "2");
    metric(e, 240, "h4", "DCGM_FI_DEV_GPU_TEMP", 87, "gpu", "0");
    EXPECT(e, "thermal.fleet_throttle");
    json_t *all = eng_incidents(e);
    json_t *inc = json_array_get(all, 0);
    CHECK_STR(json_string_value(json_object_get(json_object_get(inc, "scope"),
                                                "rack")), "r1");
    CHECK_STR(json_string_value(json_object_get(json_object_get(inc,
                                                "root_cause"), "node")), "h1");
    json_decref(all);
    eng_free(e);

    /* Three hot hosts in three racks: three hot GPUs, no rack incident. */
    e = eng_new(&ops, NULL, &err);
    inventory(e, "h1", "r1");
    inventory(e, "h2", "r2");
    inventory(e, "h3", "r3");
    for (int i = 0; i < 3; i++)
        metric(e, i * 60, hosts[i], "DCGM_FI_DEV_GPU_TEMP", 90, "gpu", "0");
    EXPECT(e, "");
    eng_free(e);
}

/* ---- advisories and host OOM ---------------------------------------- */

/* A running job "7" on n1 (and n2 reporting beside it), minutes 0..until:
 * GPU 0's util and power as given (fixed, or moving when jitter). */
static engine *gpu_run(double util, double power, int jitter, int until)
{
    cs_err err;
    engine *e = eng_new(&ops, NULL, &err);

    inventory(e, "n1", "r1");
    job(e, 0, "7", "RUNNING", "[\"n1\"]");
    for (int m = 0; m <= until; m++) {
        double j = jitter ? 0.25 * (m % 4) : 0;
        metric(e, m * 60, "n1", "DCGM_FI_DEV_GPU_UTIL", util + j, "gpu", "0");
        metric(e, m * 60, "n1", "DCGM_FI_DEV_POWER_USAGE", power + j, "gpu", "0");
    }
    return e;
}

static void test_ghost(void)
{
    engine *e;

    e = gpu_run(97, 702.44, 0, 40); /* the same load wattage for 40 min */
    EXPECT(e, "telemetry.ghost_data");
    eng_free(e);
    e = gpu_run(97, 702.44, 1, 40); /* moving: real readings */
    EXPECT(e, "");
    eng_free(e);
    e = gpu_run(97, 702.44, 0, 25); /* flat for 25 minutes only */
    EXPECT(e, "");
    eng_free(e);
}

static void test_idle(void)
{
    engine *e;
    char line[512], ts[40];

    e = gpu_run(1, 60, 1, 70); /* idle for 70 minutes, a job holds it */
    EXPECT(e, "cost.idle_gpu");
    {
        /* one idle GPU at the rule's 3.00 a GPU-hour: 72.00 a day */
        json_t *all = eng_incidents(e);
        json_t *p = json_object_get(json_array_get(json_object_get(
            json_array_get(all, 0), "actions"), 0), "params");
        CHECK_INT(json_integer_value(json_object_get(p, "idle_gpus")), 1);
        CHECK(fabs(json_number_value(json_object_get(p, "cost_per_day_usd")) -
                   72.0) < 1e-9);
        json_decref(all);
    }
    eng_free(e);
    e = gpu_run(1, 60, 1, 50); /* 50 minutes */
    EXPECT(e, "");
    eng_free(e);
    e = gpu_run(8, 60, 1, 70); /* 8%: low, not idle */
    EXPECT(e, "");
    eng_free(e);

    /* Idle GPUs while the job moves on and the host's CPU is saturated:
     * waiting for input; with a quiet CPU it is nothing yet. */
    for (int cpu = 97; cpu >= 40; cpu -= 57) {
        cs_err err;
        e = eng_new(&ops, NULL, &err);
        inventory(e, "n1", "r1");
        job(e, 0, "7", "RUNNING", "[\"n1\"]");
        for (int m = 0; m <= 20; m++) {
            ts_at(ts, sizeof ts, m * 60 + 30);
            snprintf(line, sizeof line,
                     "{\"ts\":\"%s\",\"source\":\"app\",\"host\":\"n1\","
                     "\"job\":\"7\",\"line\":\"step %d | loss 2.1 | lr 3e-4\"}",
                     ts, 100 + m);
            feed_line(e, line);
            metric(e, m * 60, "n1", "ray_node_cpu_utilization", cpu, "x", "y");
            metric(e, m * 60, "n1", "DCGM_FI_DEV_GPU_UTIL", m % 3, "gpu", "0");
        }
        EXPECT(e, cpu == 97 ? "gpu.idle_input_bound" : "");
        eng_free(e);
    }
}

/* Job 7 on n1; memory (ray_node_mem_used, GiB) from mem0 rising by `rise`
 * a minute for 40 minutes; a checkpoint save at minute `save` (-1: none);
 * the OOM killer at minute 40. */
static engine *oom_run(double mem0, double rise, int save)
{
    cs_err err;
    engine *e = eng_new(&ops, NULL, &err);
    char line[512], ts[40];

    inventory(e, "n1", "r1");
    job(e, 0, "7", "RUNNING", "[\"n1\"]");
    for (int m = 0; m < 40; m++) {
        metric(e, m * 60, "n1", "ray_node_mem_used", (mem0 + rise * m) * 1e9,
               "x", "y");
        if (m == save) {
            ts_at(ts, sizeof ts, m * 60 + 10);
            snprintf(line, sizeof line,
                     "{\"ts\":\"%s\",\"source\":\"app\",\"host\":\"n1\","
                     "\"job\":\"7\",\"line\":\"Saving checkpoint at step 500 "
                     "to /ckpt\"}", ts);
            feed_line(e, line);
        }
    }
    ts_at(ts, sizeof ts, 40 * 60);
    snprintf(line, sizeof line,
             "{\"ts\":\"%s\",\"source\":\"kernel\",\"host\":\"n1\",\"line\":"
             "\"Out of memory: Killed process 4242 (python) total-vm:1kB\"}", ts);
    feed_line(e, line);
    return e;
}

static void test_host_oom(void)
{
    engine *e;

    e = oom_run(100, 2, -1); /* 100 -> 178 GB over 40 minutes */
    EXPECT(e, "oom.host_leak");
    eng_free(e);
    e = oom_run(100, 0.2, -1); /* +8%: no ramp to speak of */
    EXPECT(e, "");
    eng_free(e);
    e = oom_run(100, 0, 33); /* a save 7 minutes before */
    EXPECT(e, "oom.host_checkpoint");
    eng_free(e);
    e = oom_run(100, 0, 10); /* a save half an hour before */
    EXPECT(e, "");
    eng_free(e);
}

/* stall_run's busy-wait, with a retransmit counter on n1. */
static engine *hang_run(const char *counter, int burst, int save)
{
    return stall_full(100, 120, 50, counter, burst, save);
}

static void test_hang_network(void)
{
    engine *e;

    e = hang_run("hw_rdma_tx_retx_pkts_total", 9, -1);
    EXPECT(e, "nccl.hang_network");
    eng_free(e);
    e = hang_run("hw_rdma_tx_retx_pkts_total", -1, -1);
    EXPECT(e, "nccl.hang_busy_wait");
    eng_free(e);
    e = hang_run("hw_rdma_tx_retx_pkts_total", 40, -1); /* after the hang */
    EXPECT(e, "nccl.hang_busy_wait");
    eng_free(e);
    e = hang_run("hw_tcp_retransmits_total", 9, -1);
    EXPECT(e, "nccl.hang_network");
    eng_free(e);
    /* TCP retransmits right after a checkpoint save: NFS writing. */
    e = hang_run("hw_tcp_retransmits_total", 9, 8);
    EXPECT(e, "nccl.hang_busy_wait");
    eng_free(e);
}

static void test_ecc_rising(void)
{
    static const struct { double start, per_min; int reset; const char *want; } c[] = {
        {3, 0.5, 0, "hw.ecc_correctable_rising"}, /* +20 in 40 min */
        {9000, 0, 0, ""},                         /* large, standing still */
        {3, 0.1, 0, ""},                          /* +4 in 40 min */
        {3, 0.25, 1, ""}, /* +6, reset to 0 at minute 25, +3 since */
    };

    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        cs_err err;
        engine *e = eng_new(&ops, NULL, &err);
        inventory(e, "n1", "r1");
        for (int m = 0; m <= 40; m++) {
            double v = c[i].start + (int)(c[i].per_min * m);
            if (c[i].reset && m >= 25)
                v = (int)(c[i].per_min * (m - 25));
            metric(e, m * 60, "n1", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", v, "gpu", "2");
        }
        EXPECT(e, c[i].want);
        eng_free(e);
    }
}

/* Step time of job 7: 6 s, then `slow` s from minute 20; every 5th
 * sample a checkpoint step (period 500) at 30 s; n2 at `hot` C. */
static void test_regression(void)
{
    static const struct { double slow; int until; double hot; const char *want; } c[] = {
        {6.9, 30, 68, "train.throughput_regression"},
        {6.9, 21, 68, ""},  /* two slow samples only */
        {6.3, 30, 68, ""},  /* 5% slower */
        {6.9, 30, 78, ""},  /* n2 runs 10 C hotter: thermal's to judge */
        {6.0, 30, 68, ""},  /* steady; checkpoint steps at 30 s left out */
    };

    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        cs_err err;
        engine *e = eng_new(&ops, NULL, &err);
        char line[512], ts[40];
        inventory(e, "n1", "r1");
        inventory(e, "n2", "r1");
        feed_line(e, "{\"ts\":\"2026-03-02T08:00:00Z\",\"source\":\"job\","
                     "\"job\":\"7\",\"state\":\"RUNNING\",\"nodes\":[\"n1\","
                     "\"n2\"],\"config\":{\"checkpoint_period\":500}}");
        for (int m = 0; m <= c[i].until; m++) {
            int step = 100 * (m + 1);
            double v = step % 500 == 0 ? 30 : m >= 20 ? c[i].slow : 6.0;
            ts_at(ts, sizeof ts, m * 60);
            snprintf(line, sizeof line,
                     "{\"ts\":\"%s\",\"source\":\"metric\",\"host\":\"n1\","
                     "\"name\":\"tb_perf_step_time_seconds\",\"value\":%g,"
                     "\"labels\":{\"job\":\"7\",\"step\":\"%d\"}}", ts, v, step);
            feed_line(e, line);
            metric(e, m * 60, "n1", "DCGM_FI_DEV_GPU_TEMP", 68, "gpu", "0");
            metric(e, m * 60, "n2", "DCGM_FI_DEV_GPU_TEMP", c[i].hot, "gpu", "0");
        }
        EXPECT(e, c[i].want);
        eng_free(e);
    }
}

/* Job 7 on n1 and n2; n2 stops reporting at minute 10; `others` says
 * whether n1 goes on; a node.down for n2 at minute 12 when `down`. */
static void test_gap(void)
{
    static const struct { int others, down; const char *want; } c[] = {
        {1, 0, "telemetry.gap"},
        {0, 0, ""},          /* everything went quiet: the collector */
        {1, 1, "node.down"}, /* the scheduler says why */
    };

    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        cs_err err;
        engine *e = eng_new(&ops, NULL, &err);
        char line[512], ts[40];
        inventory(e, "n1", "r1");
        inventory(e, "n2", "r1");
        job(e, 0, "7", "RUNNING", "[\"n1\",\"n2\"]");
        for (int m = 0; m <= 30; m++) {
            if (m <= 10 || c[i].others)
                metric(e, m * 60, "n1", "DCGM_FI_DEV_GPU_UTIL", 97 + m % 2,
                       "gpu", "0");
            if (m <= 10)
                metric(e, m * 60, "n2", "DCGM_FI_DEV_GPU_UTIL", 97 + m % 2,
                       "gpu", "0");
            ts_at(ts, sizeof ts, m * 60 + 30);
            snprintf(line, sizeof line,
                     "{\"ts\":\"%s\",\"source\":\"app\",\"host\":\"n1\","
                     "\"job\":\"7\",\"line\":\"step %d | loss 2.1\"}", ts, m);
            feed_line(e, line);
            if (c[i].down && m == 12) {
                snprintf(line, sizeof line,
                         "{\"ts\":\"%s\",\"source\":\"slurm\",\"line\":"
                         "\"[2026-03-02T08:12:30.000] error: Nodes n2 not "
                         "responding, setting DOWN\"}", ts);
                feed_line(e, line);
            }
        }
        EXPECT(e, c[i].want);
        eng_free(e);
    }
}

/* hw_dmesg_gpu_errors_total and hw_scrape_duration_seconds on n1. */
static void test_driver(void)
{
    static const struct { int errors, flapping; const char *want; } c[] = {
        {1, 1, "hw.driver_dstate"},
        {0, 1, ""}, /* slow scrapes alone: a busy exporter */
        {1, 0, ""}, /* errors with scrapes fine: nothing degraded yet */
    };

    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        cs_err err;
        engine *e = eng_new(&ops, NULL, &err);
        inventory(e, "n1", "r1");
        for (int m = 0; m <= 20; m++) {
            metric(e, m * 60, "n1", "hw_dmesg_gpu_errors_total",
                   c[i].errors && m >= 5 ? 2 : 0, "x", "y");
            metric(e, m * 60, "n1", "hw_scrape_duration_seconds",
                   c[i].flapping && m % 3 == 1 ? 12.1 : 1.7, "x", "y");
        }
        EXPECT(e, c[i].want);
        eng_free(e);
    }
}

/* ---- marks (engine/marks.c) ---------------------------------------- */

static void app_line(engine *e, int sec, const char *host, const char *jobid,
                     const char *source, const char *text)
{
    char ts[40], line[1024];

    ts_at(ts, sizeof ts, sec);
    snprintf(line, sizeof line,
             "{\"ts\":\"%s\",\"source\":\"%s\",\"host\":\"%s\",\"job\":\"%s\","
             "\"line\":\"%s\"}", ts, source, host, jobid, text);
    feed_line(e, line);
}

/* Job 7 on n1 for 20 minutes, GPU 0 at `util` and `power` (moving). */
static engine *busy_job(double util, double power)
{
    cs_err err;
    engine *e = eng_new(&ops, NULL, &err);

    inventory(e, "n1", "r1");
    job(e, 0, "7", "RUNNING", "[\"n1\"]");
    for (int m = 0; m <= 20; m++) {
        metric(e, m * 60, "n1", "DCGM_FI_DEV_GPU_UTIL", util + 0.1 * (m % 3),
               "gpu", "0");
        metric(e, m * 60, "n1", "DCGM_FI_DEV_POWER_USAGE",
               power + 0.25 * (m % 4), "gpu", "0");
    }
    return e;
}

static void test_marks(void)
{
    static const char *hb = "The following tasks are unhealthy (stopped "
                            "sending heartbeats):";
    static const char *full = "Resource usage vs limits: 2.0/16.0 CPU, 0.0/1.0 "
                              "GPU, 4.45 GiB/4.45 GiB object_store_memory";
    static const char *nic = "NCCL WARN NET/IB: Got completion from peer "
                             "10.0.0.2<1> with status=12 opcode=0 len=0 vendor "
                             "err 129 (Recv) hca mlx5_3";
    engine *e;

    /* Heartbeat kill: computing GPUs make it a false positive; idle ones
     * (the task may really be dead) leave it to the other evidence. */
    e = busy_job(98, 700);
    app_line(e, 20 * 60 + 10, "n1", "7", "app", hb);
    EXPECT(e, "heartbeat.false_positive");
    eng_free(e);
    e = busy_job(1, 60);
    app_line(e, 20 * 60 + 10, "n1", "7", "app", hb);
    EXPECT(e, "");
    eng_free(e);

    /* Object store full: with idle GPUs the trainer waits on it; with
     * busy GPUs the backpressure costs nothing. */
    e = busy_job(1, 60);
    app_line(e, 20 * 60 + 10, "n1", "7", "ray", full);
    EXPECT(e, "ray.data_backpressure");
    eng_free(e);
    e = busy_job(98, 700);
    app_line(e, 20 * 60 + 10, "n1", "7", "ray", full);
    EXPECT(e, "");
    eng_free(e);

    /* One IB error under one job, minutes apart: not yet the NIC. Under
     * a second job on the same NIC: the NIC. */
    e = busy_job(98, 700);
    app_line(e, 60, "n1", "7", "app", nic);
    app_line(e, 5 * 60, "n1", "7", "app", nic);
    EXPECT(e, "");
    job(e, 10 * 60, "8", "RUNNING", "[\"n1\"]");
    app_line(e, 12 * 60, "n1", "8", "app", nic);
    EXPECT(e, "fabric.nic_flaky");
    eng_free(e);

    /* A Serve replica that failed without an OOM is no memory problem. */
    e = busy_job(98, 700);
    app_line(e, 60, "n1", "7", "ray", "A replica failed to start with "
             "exception. Retrying 2 more time(s).");
    EXPECT(e, "");
    eng_free(e);
}

/* Team t's job J pending on a QOS limit at `hour` (UTC) of day `day`. */
static void limit_hit(engine *e, int day, int hour, const char *team,
                      const char *id)
{
    char ts[40], line[640];
    int sec = day * 86400 + (hour - 8) * 3600 + 600;

    ts_at(ts, sizeof ts, sec);
    snprintf(line, sizeof line,
             "{\"ts\":\"%s\",\"source\":\"job\",\"job\":\"%s\",\"state\":"
             "\"PENDING\",\"nodes\":[]%s%s%s}", ts, id, team ? ",\"team\":\"" : "",
             team ? team : "", team ? "\"" : "");
    feed_line(e, line);
    snprintf(line, sizeof line,
             "JobId=%s JobName=x UserId=u(1) GroupId=g(1) MCS_label=N/A "
             "Priority=1 Nice=0 Account=a QOS=normal JobState=PENDING "
             "Reason=QOSGrpGRES Dependency=(null)", id);
    app_line(e, sec + 30, "slurmctld", id, "slurm", line);
}

/* Peak demand: three days at one hour opens it; two days, or three days
 * at three different hours, or hits nobody owns, do not. */
static void test_peak(void)
{
    cs_err err;
    engine *e = eng_new(&ops, NULL, &err);
    char id[32];

    /* in event-time order, as a cluster's signals come */
    for (int d = 0; d < 3; d++) {
        snprintf(id, sizeof id, "2%d", d);
        limit_hit(e, d, 10, NULL, id);       /* no team */
        snprintf(id, sizeof id, "1%d", d);
        limit_hit(e, d, 9 + 3 * d, "a", id); /* 09, 12, 15 h */
        if (d == 2)
            break;
        snprintf(id, sizeof id, "3%d", d);
        limit_hit(e, d, 20, "b", id);        /* two days only */
        snprintf(id, sizeof id, "4%d", d);
        limit_hit(e, d, 20, "b", id);        /* the same hour again */
    }
    EXPECT(e, "");
    limit_hit(e, 4, 20, "b", "50");          /* a third day within the week */
    EXPECT(e, "capacity.peak_demand");
    limit_hit(e, 5, 20, "b", "51");          /* a fourth: the same incident */
    EXPECT(e, "capacity.peak_demand");
    eng_free(e);

    /* days more than a week apart do not add up */
    e = eng_new(&ops, NULL, &err);
    limit_hit(e, 0, 9, "c", "60");
    limit_hit(e, 1, 9, "c", "61");
    limit_hit(e, 9, 9, "c", "62");
    EXPECT(e, "");
    eng_free(e);
}

int main(void)
{
    test_rdma();
    test_stalls();
    test_wall_clock();
    test_wall_clock_per_cluster();
    test_straggler();
    test_fleet();
    test_ghost();
    test_idle();
    test_host_oom();
    test_hang_network();
    test_ecc_rising();
    test_regression();
    test_gap();
    test_driver();
    test_marks();
    test_peak();
    return check_report();
}
