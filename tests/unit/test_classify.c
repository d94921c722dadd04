/* Signatures against verbatim text from the field (format history
 * included), and the decisions made from it. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "rules/classify.h"
#include "rules/lines.h"
#include "rules/hostlist.h"
#include "rules/playbooks.h"

static classifier *c;
static pb_catalog *cat;

static void xid(const char *line, int code, const char *pci, const char *scen)
{
    fact f;
    int ok = cls_parse_xid(c, line, &f);

    CHECK_INT(ok, 1);
    if (!ok) {
        fprintf(stderr, "  line: %s\n", line);
        return;
    }
    CHECK_INT(f.xid, code);
    CHECK_STR(f.pci, pci);
    if (scen)
        CHECK_STR(f.scenario, scen);
    else
        CHECK(f.scenario == NULL);
}

static void test_xid(void)
{
    /* with pid and name */
    xid("[125185.756828] NVRM: Xid (PCI:0000:db:00): 79, pid=2871, "
        "name=python3, GPU has fallen off the bus.", 79, "0000:db:00",
        "hw.gpu_off_bus");
    /* journald prefix, no pid/name (older drivers) */
    xid("May 18 19:02:39 kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has "
        "fallen off the bus.", 79, "0000:2b:00", "hw.gpu_off_bus");
    /* driver 570+: no Xid token at all; the signature names the scenario
     * and no code is invented */
    xid("May 18 19:02:39 kernel: NVRM: GPU 0000:2b:00.0: GPU has fallen off "
        "the bus.", 0, "0000:2b:00.0", "hw.gpu_off_bus");
    /* very old drivers: no PCI: prefix */
    xid("NVRM: Xid (0000:01:00): 3, C 00000005", 3, "0000:01:00", NULL);
    /* dmesg -T prefix, pid='<unknown>' */
    xid("[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, "
        "pid='<unknown>', name=<unknown>, Graphics SM Warp Exception", 13,
        "0000:cb:00", NULL);
    xid("Dec  2 11:38:47 worker4 kernel: [  219.470994] NVRM: Xid "
        "(PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An "
        "uncorrectable double bit error (DBE) has been detected", 48,
        "0000:07:00", "hw.ecc_uncorrectable");
    xid("[449410.332316] NVRM: Xid (PCI:0003:00:00): 74, pid='<unknown>', "
        "name=<unknown>, NVLink: fatal error detected on link 14(0x0, 0x0, "
        "0x10000, 0x0, 0x0, 0x0, 0x0)", 74, "0003:00:00", "hw.nvlink");
    fact f;
    CHECK_INT(cls_parse_xid(c, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module "
                               "535.183.01", &f), 0);
    CHECK_INT(cls_parse_xid(c, "systemd-journald[812]: Data hash table of "
                               "/run/log/journal is full", &f), 0);
}

#define GIB 1073741824.0
#define MIB 1048576.0

static void oom(const char *line, double tried, double resv_unalloc)
{
    fact f;
    int ok = cls_parse_oom(c, line, &f);

    CHECK_INT(ok, 1);
    if (!ok)
        return;
    CHECK(fabs(f.tried - tried) < 1.0);
    CHECK(fabs(f.reserved_unalloc - resv_unalloc) < 1024.0);
}

static void test_oom_generations(void)
{
    /* 1.0-1.3: "cached", the cached memory not allocated (no total) */
    oom("RuntimeError: CUDA out of memory. Tried to allocate 16.00 GiB (GPU 0; "
        "11.93 GiB total capacity; 4.00 GiB already allocated; 7.33 GiB free; "
        "179.00 KiB cached)", 16 * GIB, 179 * 1024.0);
    /* 1.5-1.10: reserved in total; unallocated = reserved - allocated */
    oom("RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; "
        "15.90 GiB total capacity; 13.13 GiB already allocated; 415.88 MiB "
        "free; 14.80 GiB reserved in total by PyTorch)", 512 * MIB,
        (14.80 - 13.13) * GIB);
    /* 2.1: new prose, "capacty" typo, line breaks */
    oom("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        "138.00 MiB. GPU 0 has a total capacty of 15.90 GiB of which 8.44 MiB "
        "is free. Process 1246069 has 577.00 MiB memory in use. Including "
        "non-PyTorch memory, this process has 15.32 GiB memory in use. Of the "
        "allocated memory 14.12 GiB is allocated by PyTorch, and 410.41 MiB is "
        "reserved\nby PyTorch but unallocated.", 138 * MIB, 410.41 * MIB);
    /* 2.4+: torch.OutOfMemoryError */
    oom("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.78 "
        "GiB. GPU 0 has a total capacity of 31.47 GiB of which 12.73 GiB is "
        "free. Including non-PyTorch memory, this process has 18.73 GiB memory "
        "in use. Of the allocated memory 9.08 GiB is allocated by PyTorch, and "
        "9.35 GiB is reserved by PyTorch but unallocated.", 22.78 * GIB,
        9.35 * GIB);
    /* truncated message (pytorch#126766) still classifies */
    fact f;
    CHECK_INT(cls_parse_oom(c, "OutOfMemoryError: CUDA out of memory. Tried to "
                               "allocate 3725.29 GiB. GPU", &f), 1);
    CHECK(f.capacity < 0);
    /* host-side allocator failure is not a CUDA OOM */
    CHECK_INT(cls_parse_oom(c, "RuntimeError: [enforce fail at "
                               "CPUAllocator.cpp:64] . DefaultCPUAllocator: "
                               "can't allocate memory", &f), 0);
}

static sig app(const char *job, int rank, const char *line, const char *ts)
{
    char buf[2048];
    sig s;
    cs_err err;
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "ts", ts, "source",
                          "app", "host", "g1", "job", job, "line", line, "rank",
                          rank);
    (void)buf;
    if (sig_from_json(&s, o, &err))
        fprintf(stderr, "bad test signal: %s\n", err.msg);
    json_decref(o);
    return s;
}

/* Feeds lines of one traceback; returns the scenario of the final fact. */
static const char *traceback(const char *job, const char *const *lines, int n)
{
    static fact f[CLS_MAX_FACTS];
    const char *scen = NULL;

    for (int i = 0; i < n; i++) {
        sig s = app(job, 0, lines[i], "2026-03-02T08:10:05Z");
        int k = cls_classify(c, &s, f);
        if (i < n - 1)
            CHECK_INT(k, 0); /* nothing until the exception line */
        else if (k == 1)
            scen = f[0].scenario;
        sig_free(&s);
    }
    return scen;
}

static void test_traceback_pass(void)
{
    static const char *const fwd[] = {
        "Traceback (most recent call last):",
        "  File \"/workspace/train.py\", line 142, in train_step",
        "    outputs = model(**batch)",
        "  File \"/usr/lib/torch/nn/modules/module.py\", line 1747, in _call_impl",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. "
        "GPU 0 has a total capacity of 79.15 GiB of which 1.20 GiB is free. Of "
        "the allocated memory 77.20 GiB is allocated by PyTorch, and 358.40 MiB "
        "is reserved by PyTorch but unallocated."};
    static const char *const bwd[] = {
        "Traceback (most recent call last):",
        "  File \"/workspace/train.py\", line 150, in train_step",
        "    loss.backward()",
        "  File \"/usr/lib/torch/autograd/__init__.py\", line 267, in backward",
        "    _engine_run_backward(",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        "GPU 0 has a total capacity of 79.15 GiB of which 1.20 GiB is free. Of "
        "the allocated memory 77.20 GiB is allocated by PyTorch, and 358.40 MiB "
        "is reserved by PyTorch but unallocated."};
    static const char *const frag[] = {
        "Traceback (most recent call last):",
        "    loss.backward()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. "
        "GPU 0 has a total capacity of 79.15 GiB of which 5.95 GiB is free. Of "
        "the allocated memory 60.10 GiB is allocated by PyTorch, and 12.70 GiB "
        "is reserved by PyTorch but unallocated."};
    /* a traceback pasted with an indent: its exception line is indented
     * too, and ends the traceback instead of reading as a frame */
    static const char *const indented[] = {
        "    Traceback (most recent call last):",
        "      File \"/workspace/train.py\", line 150, in train_step",
        "        loss.backward()",
        "    torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        "GPU 0 has a total capacity of 79.15 GiB of which 1.20 GiB is free. Of "
        "the allocated memory 77.20 GiB is allocated by PyTorch, and 358.40 MiB "
        "is reserved by PyTorch but unallocated."};
    CHECK_STR(traceback("1", fwd, 5), "oom.batch_size");
    CHECK_STR(traceback("4", indented, 4), "oom.activation");
    CHECK_STR(traceback("2", bwd, 6), "oom.activation");
    /* reserved-unallocated covers the request: fragmentation wins */
    CHECK_STR(traceback("3", frag, 3), "oom.fragmentation");
}

static void test_rank_prefix(void)
{
    fact f[CLS_MAX_FACTS];
    sig s = app("9", 0, "[rank3]: RuntimeError: CUDA error: an illegal memory "
                "access was encountered", "2026-03-02T08:10:05Z");

    CHECK_INT(cls_classify(c, &s, f), 1);
    CHECK_INT(f[0].kind, FACT_APP_ERROR);
    CHECK_INT(f[0].rank, 3);
    sig_free(&s);
    /* the other spellings torchrun and launchers use */
    s = app("9", 0, "[RANK 12] RuntimeError: CUDA error: an illegal memory "
            "access was encountered", "2026-03-02T08:10:06Z");
    CHECK_INT(cls_classify(c, &s, f), 1);
    CHECK_INT(f[0].rank, 12);
    sig_free(&s);
    s = app("9", 0, "[rank7]:RuntimeError: CUDA error: an illegal memory "
            "access was encountered", "2026-03-02T08:10:07Z");
    CHECK_INT(cls_classify(c, &s, f), 1);
    CHECK_INT(f[0].rank, 7);
    sig_free(&s);
    /* not a rank prefix: the signal's own rank stays */
    s = app("9", 5, "[rankX]: RuntimeError: CUDA error: an illegal memory "
            "access was encountered", "2026-03-02T08:10:08Z");
    CHECK_INT(cls_classify(c, &s, f), 1);
    CHECK_INT(f[0].rank, 5);
    sig_free(&s);
}

/* A line of a given source (ray, slurm) of job 9 on g1. */
static sig line_of(const char *source, const char *line, const char *ts)
{
    sig s;
    cs_err err;
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "ts", ts, "source",
                          source, "host", "g1", "job", "9", "line", line);

    if (sig_from_json(&s, o, &err))
        fprintf(stderr, "bad test signal: %s\n", err.msg);
    json_decref(o);
    return s;
}

/* Every launcher's tag comes off before the signatures read the line,
 * and the rank it names is the fact's. */
static void test_launcher_tags(void)
{
    static const struct {
        const char *line;
        size_t len;
        int rank;
    } tags[] = {
        {"[rank3]: x", 9, 3},
        {"[default0]:[rank12]:[E817 ProcessGroupNCCL.cpp:1515] x", 20, 12},
        {"[1,3]<stderr>:  File \"a.py\", line 1", 14, 3},
        {"[0,17]<stdout>:x", 15, 17},
        {"  3: srun: error: x", 5, 3},
        {"(pid=1234) x", 11, -1},
        {"(RayTrainWorker pid=1193, ip=10.244.4.193) x", 43, -1},
        {"(raylet) [2025-12-07 09:57:19,206 E 393463 393463] x", 9, -1},
        {"(raylet, ip=10.0.0.5) x", 22, -1},
        {"worker-5: [rank22]:   File \"m.py\", line 307", 20, 22},
        {"gpu-001: Traceback (most recent call last):", 9, -1},
        /* no tags: an exception class, a ratio, a paren that is text */
        {"RuntimeError: CUDA error: x", 0, -1},
        {"gpu-001: step 12 done", 0, -1},
        {"(most recent call first): x", 0, -1},
        {"12/100: loss 0.3", 0, -1},
        /* vLLM's logger, before a traceback's lines (both generations) */
        {"(EngineCore_DP0 pid=2) ERROR 10-25 13:08:43 [core.py:708]   File", 58, -1},
        {"INFO 11-18 18:07:28 engine.py:366] x", 35, -1},
        {"ERROR 10-25 13:08:43.123 [core.py:708] x", 39, -1},
        /* a level word that is text */
        {"ERROR in step 12: x", 0, -1},
        {"WARNING 12-31 loss went up] x", 0, -1},
    };

    for (size_t i = 0; i < sizeof tags / sizeof *tags; i++) {
        int rank = -1;
        size_t n = ln_launcher_prefix(tags[i].line, &rank);
        CHECK_INT((int)n, (int)tags[i].len);
        CHECK_INT(rank, tags[i].rank);
    }
}

/* Ray's and SLURM's lines that their own signatures do not take are read
 * as the job's text, tags and tracebacks included. */
static void test_text_sources(void)
{
    fact f[CLS_MAX_FACTS];
    sig s = line_of("ray", "(RayTrainWorker pid=1193, ip=10.244.4.193) "
                    "RuntimeError: CUDA error: uncorrectable ECC error "
                    "encountered", "2026-03-02T08:11:00Z");

    CHECK_INT(cls_classify(c, &s, f), 1);
    CHECK_INT(f[0].kind, FACT_NODE_FAULT);
    CHECK_STR(f[0].scenario, "hw.ecc_uncorrectable");
    CHECK_STR(f[0].host, "g1");
    sig_free(&s);
    /* a worker's traceback: the backward frame decides the OOM kind */
    s = line_of("ray", "(pid=77) Traceback (most recent call last):",
                "2026-03-02T08:11:01Z");
    CHECK_INT(cls_classify(c, &s, f), 0);
    sig_free(&s);
    s = line_of("ray", "(pid=77)     loss.backward()", "2026-03-02T08:11:01Z");
    CHECK_INT(cls_classify(c, &s, f), 0);
    sig_free(&s);
    s = line_of("ray", "(pid=77) torch.OutOfMemoryError: CUDA out of memory. "
                "Tried to allocate 2.00 GiB.", "2026-03-02T08:11:02Z");
    CHECK_INT(cls_classify(c, &s, f), 1);
    CHECK_STR(f[0].scenario, "oom.activation");
    sig_free(&s);
    /* slurmctld's own line keeps its own signature and hostlist */
    s = line_of("slurm", "[2026-03-02T09:02:13.640] Node gpu-[201-203] now "
                "responding", "2026-03-02T08:11:03Z");
    CHECK_INT(cls_classify(c, &s, f), 3);
    CHECK_INT(f[2].kind, FACT_RECOVERY);
    CHECK_STR(f[2].host, "gpu-203");
    sig_free(&s);
    /* srun's line in a SLURM log: the node it names, not the signal's */
    s = line_of("slurm", "srun: error: Node failure on gpu-044",
                "2026-03-02T08:11:04Z");
    CHECK_INT(cls_classify(c, &s, f), 1);
    CHECK_INT(f[0].kind, FACT_NODE_DOWN);
    CHECK_STR(f[0].host, "gpu-044");
    sig_free(&s);
}

static void test_hostlist(void)
{
    char n[16][128];

    CHECK_INT(hostlist_expand("gpu-058", n, 16), 1);
    CHECK_STR(n[0], "gpu-058");
    CHECK_INT(hostlist_expand("gpu-[007-009,012],cpu1", n, 16), 5);
    CHECK_STR(n[0], "gpu-007");
    CHECK_STR(n[2], "gpu-009");
    CHECK_STR(n[3], "gpu-012");
    CHECK_STR(n[4], "cpu1");
    CHECK_INT(hostlist_expand("gpu-[9-3]", n, 16), -1);
    CHECK_INT(hostlist_expand("gpu-[1-2", n, 16), -1);
    /* found by fuzzing: signs and overflowing bounds are malformed */
    CHECK_INT(hostlist_expand("zpu[-002-0555555555555555555555015]", n, 16), -1);
    CHECK_INT(hostlist_expand("g[1-4000]", n, 16), 16); /* capped at max */
    CHECK_STR(n[15], "g16");
}

static void test_alert(void)
{
    fact f[CLS_MAX_FACTS];
    sig s;
    cs_err err;
    const char *line =
        "{\"ts\":\"2026-03-02T08:10:40Z\",\"source\":\"alertmanager\",\"payload\":"
        "{\"version\":\"4\",\"status\":\"firing\",\"alerts\":["
        "{\"status\":\"firing\",\"labels\":{\"alertname\":\"GPUXidError\","
        "\"Hostname\":\"gpu-062\",\"gpu\":\"5\",\"err_code\":\"79\"}},"
        "{\"status\":\"resolved\",\"labels\":{\"alertname\":\"GPUXidError\","
        "\"Hostname\":\"gpu-063\",\"err_code\":\"79\"}},"
        "{\"status\":\"firing\",\"labels\":{\"alertname\":\"GPUXidError\","
        "\"instance\":\"gpu-064:9400\",\"err_code\":\"48\"}}]}}";

    CHECK_INT(sig_parse_json(&s, line, strlen(line), &err), 0);
    /* a resolved Xid alert is no recovery: its counter stopped rising */
    CHECK_INT(cls_classify(c, &s, f), 2);
    CHECK_STR(f[0].host, "gpu-062");
    CHECK_STR(f[0].gpu, "5");
    CHECK_STR(f[0].scenario, "hw.gpu_off_bus");
    CHECK_STR(f[1].host, "gpu-064"); /* instance without its port */
    CHECK_STR(f[1].scenario, "hw.ecc_uncorrectable");
    sig_free(&s);

    /* a thermal alert that resolved: the heat on that host ended */
    line = "{\"ts\":\"2026-03-02T08:30:00Z\",\"source\":\"alertmanager\","
           "\"payload\":{\"version\":\"4\",\"status\":\"resolved\",\"alerts\":["
           "{\"status\":\"resolved\",\"labels\":{\"alertname\":"
           "\"HWThermalThrottle\",\"Hostname\":\"gpu-016\",\"gpu\":\"0\"}}]}}";
    CHECK_INT(sig_parse_json(&s, line, strlen(line), &err), 0);
    CHECK_INT(cls_classify(c, &s, f), 1);
    CHECK_INT(f[0].kind, FACT_RECOVERY);
    CHECK_STR(f[0].host, "gpu-016");
    CHECK_STR(f[0].scenario, "thermal.fleet_throttle");
    CHECK_STR(f[0].excerpt, "alert HWThermalThrottle resolved");
    sig_free(&s);

    /* kube-state-metrics' alerts: instance is the exporter, job the
     * scrape job; the Job is job_name and a Job alert needs no host */
    line = "{\"ts\":\"2026-03-02T08:30:00Z\",\"source\":\"alertmanager\","
           "\"payload\":{\"version\":\"4\",\"status\":\"firing\",\"alerts\":["
           "{\"status\":\"firing\",\"labels\":{\"alertname\":\"KubeJobFailed\","
           "\"job_name\":\"llama-ft\",\"namespace\":\"ml\",\"job\":"
           "\"kube-state-metrics\",\"instance\":\"10.2.0.15:8080\"}},"
           "{\"status\":\"firing\",\"labels\":{\"alertname\":"
           "\"KubePodCrashLooping\",\"pod\":\"llama-ft-0-x2k9p\",\"job\":"
           "\"kube-state-metrics\",\"instance\":\"10.2.0.15:8080\"}},"
           "{\"status\":\"firing\",\"labels\":{\"alertname\":\"KubeNodeNotReady\","
           "\"node\":\"gpu-012\",\"job\":\"kube-state-metrics\","
           "\"instance\":\"10.2.0.15:8080\"}},"
           "{\"status\":\"firing\",\"labels\":{\"alertname\":\"GPUXidError\","
           "\"job_name\":\"llama-ft\",\"err_code\":\"79\",\"job\":"
           "\"kube-state-metrics\",\"instance\":\"10.2.0.15:8080\"}},"
           "{\"status\":\"firing\",\"labels\":{\"alertname\":\"GPUXidError\","
           "\"instance\":\"[fd00::12]:9400\",\"err_code\":\"79\"}}]}}";
    CHECK_INT(sig_parse_json(&s, line, strlen(line), &err), 0);
    /* the pod alert names neither a Job nor a node; the Xid alert with a
     * Job and no host is no GPU fault of anywhere */
    CHECK_INT(cls_classify(c, &s, f), 3);
    CHECK_INT(f[0].kind, FACT_APP_ERROR);
    CHECK_STR(f[0].sig_id, "alert.job_failed");
    CHECK_STR(f[0].job, "llama-ft");
    CHECK_STR(f[0].host, "");
    CHECK_INT(f[1].kind, FACT_NODE_DOWN);
    CHECK_STR(f[1].host, "gpu-012");
    CHECK_STR(f[2].host, "fd00::12"); /* [IPV6]:PORT */
    CHECK_STR(f[2].scenario, "hw.gpu_off_bus");
    sig_free(&s);
}

/* Classifies the signal o (released here); returns the number of facts. */
static int feed_obj(classifier *k, json_t *o, fact *f)
{
    sig s;
    cs_err err;
    int n = 0;

    if (sig_from_json(&s, o, &err)) {
        fprintf(stderr, "bad test signal: %s\n", err.msg);
        check_failed++;
    } else {
        n = cls_classify(k, &s, f);
        sig_free(&s);
    }
    json_decref(o);
    return n;
}

static int kern_feed(classifier *k, const char *host, const char *line,
                     const char *ts, fact *f)
{
    return feed_obj(k, json_pack("{s:s, s:s, s:s, s:s}", "ts", ts, "source",
                                 "kernel", "host", host, "line", line), f);
}

static char saved_key[128], saved_val[600];

static void save_one(void *arg, const char *key, const char *value)
{
    (void)arg;
    if (value && strstr(key, "|kernel")) {
        snprintf(saved_key, sizeof saved_key, "%s", key);
        snprintf(saved_val, sizeof saved_val, "%s", value);
    }
}

/* The driver's probe-time report wrapped over three lines (NVSentinel
 * issue 155): joined per host, whatever another host prints in between,
 * abandoned after 2 s, and carried over a restart. */
static const char *const l1 = "[ 1843.308145] NVRM: The NVIDIA GPU "
                              "0000:b3:00.0";
static const char *const l2 = "               NVRM: (PCI ID: 10de:26b5) "
                              "installed in this system has";
static const char *const l3 = "               NVRM: fallen off the bus "
                              "and is not responding to commands.";

static void test_kernel_wrapped(void)
{
    const char *t0 = "2026-03-02T08:10:04.100Z", *t1 = "2026-03-02T08:10:04.101Z";
    fact f[CLS_MAX_FACTS];
    cs_err err;

    CHECK_INT(kern_feed(c, "g1", l1, t0, f), 0);
    CHECK_INT(kern_feed(c, "g2", "NVRM: GPU at PCI:0000:1a:00: GPU-7c1b", t0, f), 0);
    CHECK_INT(kern_feed(c, "g1", l2, t1, f), 0);
    CHECK_INT(kern_feed(c, "g1", l3, t1, f), 1);
    CHECK_STR(f[0].scenario, "hw.gpu_off_bus");
    CHECK_STR(f[0].pci, "0000:b3:00.0");
    CHECK_STR(f[0].host, "g1");
    /* the last line alone means nothing, and nothing is left open */
    CHECK_INT(kern_feed(c, "g1", l3, t1, f), 0);
    /* 3 s later it is another message */
    CHECK_INT(kern_feed(c, "g3", l1, t0, f), 0);
    CHECK_INT(kern_feed(c, "g3", l2, "2026-03-02T08:10:07.200Z", f), 0);
    CHECK_INT(kern_feed(c, "g3", l3, "2026-03-02T08:10:07.200Z", f), 0);
    /* a restart between the second and third line */
    classifier *a = cls_new(cat, &err), *b;
    CHECK_INT(kern_feed(a, "g4", l1, t0, f), 0);
    CHECK_INT(kern_feed(a, "g4", l2, t1, f), 0);
    cls_tb_changes(a, NULL, save_one, NULL);
    CHECK(strstr(saved_val, " K 2 NVRM: The NVIDIA GPU 0000:b3:00.0 (PCI") != NULL);
    cls_free(a);
    b = cls_new(cat, &err);
    CHECK_INT(cls_tb_restore(b, saved_key, saved_val), 0);
    CHECK_INT(kern_feed(b, "g4", l3, t1, f), 1);
    CHECK_STR(f[0].pci, "0000:b3:00.0");
    cls_free(b);
}

/* With rules that read no Xid code (bench/rules reads only 79), an Xid
 * report is not a piece of a wrapped driver message: the collector's edge
 * drops it, and between the pieces of one it neither joins nor ends it. */
static void test_kmsg_xid(void)
{
    static const char rules[] =
        "family: t\n"
        "signatures:\n"
        "  - {id: t.off, source: kernel, fact: event, match: 'NVRM: The "
        "NVIDIA GPU (?<pci>[0-9a-f:.]+) .*installed in this system has\\s+"
        "fallen off the bus', examples: [{line: 'NVRM: The NVIDIA GPU "
        "0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has "
        "fallen off the bus and is not responding to commands.', fact: "
        "event}]}\n";
    static const char *const xid = "[1843.30] NVRM: Xid (PCI:0000:3b:00): 74, "
                                   "pid=3500, name=python3, Ch 000cc464, "
                                   "errorString CTX SWITCH TIMEOUT, Info 0x4";
    const char *t0 = "2026-03-02T08:10:04.100Z", *t1 = "2026-03-02T08:10:04.101Z";
    pb_catalog *k = pb_catalog_new();
    classifier *x = NULL;
    fact f[CLS_MAX_FACTS];
    cs_err err;

    CHECK_INT(pb_catalog_add(k, "t.yaml", rules, sizeof rules - 1, NULL, NULL),
              0);
    CHECK_INT(pb_catalog_link(k, NULL, NULL), 0);
    CHECK((x = cls_new(k, &err)) != NULL);
    if (!x)
        goto out;
    CHECK_INT(cls_edge_keep(x, SRC_KERNEL, xid), 0);
    CHECK_INT(cls_edge_keep(x, SRC_KERNEL, "[1843.30] NVRM: The NVIDIA GPU "
                                           "0000:b3:00.0"), 1);
    CHECK_INT(cls_edge_keep(x, SRC_KERNEL, "[1843.30] usb 1-1: new device"), 0);
    CHECK_INT(kern_feed(x, "g1", "[1843.30] NVRM: The NVIDIA GPU 0000:b3:00.0",
                        t0, f), 0);
    CHECK_INT(kern_feed(x, "g1", xid, t0, f), 0);
    CHECK_INT(kern_feed(x, "g1", "NVRM: (PCI ID: 10de:26b5) installed in this "
                        "system has", t1, f), 0);
    CHECK_INT(kern_feed(x, "g1", "NVRM: fallen off the bus and is not "
                        "responding to commands.", t1, f), 1);
    CHECK_STR(f[0].pci, "0000:b3:00.0");
    /* alone, it opens nothing that a later piece could complete */
    CHECK_INT(kern_feed(x, "g2", xid, t0, f), 0);
    CHECK_INT(kern_feed(x, "g2", "NVRM: fallen off the bus and is not "
                        "responding to commands.", t1, f), 0);
out:
    cls_free(x);
    pb_catalog_free(k);
}

/* core/v1 events carry "message"; events.k8s.io/v1 carries the same text
 * as "note" (and "regarding" for the object). Both wordings of the taint. */
static void test_k8s_event_versions(void)
{
    static const char *const ev[] = {
        "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"reason\":"
        "\"FailedScheduling\",\"message\":\"0/1 nodes are available: 1 "
        "node(s) had taint {node-role.kubernetes.io/master: }, that the pod "
        "didn't tolerate.\"}",
        "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\","
        "\"regarding\":{\"kind\":\"Pod\",\"name\":\"w-0\"},\"reason\":"
        "\"FailedScheduling\",\"note\":\"0/1 nodes are available: 1 "
        "node(s) had untolerated taint {gpu: }. preemption: 0/1 nodes are "
        "available: 1 Preemption is not helpful for scheduling..\"}",
    };
    fact f[CLS_MAX_FACTS];
    cs_err err;
    sig s;

    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:o}", "ts",
                              "2026-03-02T08:00:00Z", "source", "k8s", "job",
                              "7", "event", json_loads(ev[i], 0, NULL));
        CHECK_INT(sig_from_json(&s, o, &err), 0);
        CHECK_INT(cls_classify(c, &s, f), 1);
        CHECK_STR(f[0].scenario, "sched.taint_mismatch");
        sig_free(&s);
        json_decref(o);
    }
}

/* An event kubectl printed into a job's log is read by the k8s
 * signatures: `kubectl describe`'s rows and `kubectl get events`'. */
static void test_kube_rows(void)
{
    static const struct {
        const char *line, *scenario;
    } rows[] = {
        {"  Warning  FailedScheduling  3s (x5 over 9s)  default-scheduler  "
         "0/6 nodes are available: 3 node(s) didn't match node selector, 6 "
         "Insufficient nvidia.com/gpu.", "sched.capacity_exhausted"},
        {"5m          Warning   Evicted   pod/train-0   Pod ephemeral local "
         "storage usage exceeds the total limit of containers 100Gi.",
         "k8s.ephemeral_limit_exceeded"},
        /* a row of another kind, and a line with wide gaps that is none */
        {"  Normal   Scheduled  10s  default-scheduler  Successfully "
         "assigned default/train-0 to gpu-1", NULL},
        {"Epoch  3   loss  0.41   acc  0.88", NULL},
        /* an event's message printed bare: the reason told by its opening */
        {"Multi-Attach error for volume \"pvc-1\" Volume is already "
         "exclusively attached to one node and can't be attached to another",
         "k8s.volume_multi_attach"},
        {"  message: 'The node was low on resource: ephemeral-storage. "
         "Container w was using 73712Ki, which exceeds its request of 0. '",
         "k8s.pod_evicted_disk"},
        {"Error:secret \"hcloud-csi\" not found", "k8s.secret_missing"},
        {"FailedMount: MountVolume.SetUp failed for volume \"nfs-vol\" : "
         "mount failed: exit status 32", "k8s.nfs_mount_failed"},
        {"(combined from similar events): Failed to pull image \"r/x:1\": "
         "rpc error: code = NotFound desc = r/x:1: not found",
         "sched.image_pull_tag"},
        /* a describe row without its Age column, and describe pod's
         * Message: field (github.com/kubernetes/kubernetes/issues/130145) */
        {"Warning  Failed  kubelet  Error: configmap \"cluster-config\" "
         "not found", "k8s.config_missing"},
        {"Message:         Pod Allocate failed due to requested number of "
         "devices unavailable for nvidia.com/gpu. Requested:1, Available: 0, "
         "which is unexpected", "k8s.gpu_allocate_failed"},
        {"  Normal  Pulled  kubelet  Container image \"r/x:1\" already "
         "present on machine", NULL},
        {"Message:      Successfully assigned default/train-0 to gpu-1",
         NULL},
        /* one blank after the type, as a paste collapsed it
         * (github.com/NVIDIA/k8s-device-plugin/issues/119) */
        {" Warning FailedScheduling  40s (x2 over 40s)  default-scheduler  "
         "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) "
         "were unschedulable.", "sched.capacity_exhausted"},
        /* a controller's event recorder (klog event.go) */
        {"I1024 10:53:32.832702       1 event.go:218] Event(v1.ObjectReference"
         "{Kind:\"Pod\", Name:\"p\"}): type: 'Warning' reason: "
         "'FailedAttachVolume' Multi-Attach error for volume \"pvc-1\" Volume "
         "is already exclusively attached to one node and can't be attached "
         "to another", "k8s.volume_multi_attach"},
        {"I1024 event.go:218] Event(v1.ObjectReference{}): type: 'Normal' "
         "reason: 'Scheduled' Successfully assigned p to gpu-1", NULL},
        /* a container's waiting reason, and the one eviction message that
         * opens with "Container " */
        {"ErrImagePull: rpc error: code = Unknown desc = Error response from "
         "daemon: manifest for r/x:1 not found: manifest unknown",
         "sched.image_pull_tag"},
        {"Message:          Container w exceeded its local ephemeral storage "
         "limit \"20Mi\".", "k8s.ephemeral_limit_exceeded"},
        {"Container image \"r/x:1\" already present on machine", NULL},
        /* an opening no event has, and "Error:" that names no object */
        {"Multi-Attach is not supported here", NULL},
        {"Error: the config file is missing a key", NULL},
    };
    fact f[CLS_MAX_FACTS];
    char buf[256];

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        sig s = app("9", 0, rows[i].line, "2026-03-02T08:10:05Z");
        int n = cls_classify(c, &s, f);

        CHECK_INT(n, rows[i].scenario != NULL);
        if (n == 1 && rows[i].scenario)
            CHECK_STR(f[0].scenario, rows[i].scenario);
        sig_free(&s);
    }
    CHECK_INT(ln_kube_event("  Warning  Failed  16s  kubelet  Error: "
                            "ErrImagePull", buf, sizeof buf), 1);
    CHECK_STR(buf, "Failed: Error: ErrImagePull");
    CHECK_INT(ln_kube_event("  Warning  Failed  16s  kubelet  Error: "
                            "ErrImagePull", buf, 8), 0);
    /* no Age column: From is a word; the message is the fourth column */
    CHECK_INT(ln_kube_event("Warning  Failed  kubelet  Error: a  b", buf,
                            sizeof buf), 1);
    CHECK_STR(buf, "Failed: Error: a  b");
    CHECK_INT(ln_kube_event("Warning  Failed  <unknown>  kubelet  Error: x",
                            buf, sizeof buf), 1);
    CHECK_STR(buf, "Failed: Error: x");
    CHECK_INT(ln_kube_event("Warning FailedMount  3m  kubelet  Mount: x",
                            buf, sizeof buf), 1);
    CHECK_STR(buf, "FailedMount: Mount: x");
    CHECK_INT(ln_kube_recorded("x): type: 'Warning' reason: 'BackOff' y",
                               buf, sizeof buf), 1);
    CHECK_STR(buf, "BackOff: y");
    CHECK_INT(ln_kube_recorded("x): type: 'Warning' reason: '' y", buf,
                               sizeof buf), 0);
    CHECK_INT(ln_kube_recorded("x): type: 'Warning'", buf, sizeof buf), 0);
    /* Age and From but no message: no row */
    CHECK_INT(ln_kube_event("Warning  Failed  16s  kubelet", buf, sizeof buf),
              0);
    CHECK_INT(ln_kube_message("Multi-Attach error for volume", buf,
                              sizeof buf), 1);
    CHECK_STR(buf, "FailedAttachVolume: Multi-Attach error for volume");
    CHECK_INT(ln_kube_message("Multi-Attach error for volume", buf, 8), 0);
    CHECK_INT(ln_kube_message("Multi-Attach error for volume", NULL, 0), 1);
}

/* A traceback's raise statement stands for its exception line. */
/* A describe row without Type; node-problem-detector's kernel monitor. */
static void test_kube_untyped_and_npd(void)
{
    fact f[CLS_MAX_FACTS];
    sig s = line_of("app", "FailedScheduling   2m21s (x42 over 60m)  default-"
                    "scheduler  1 node(s) had untolerated taint {nvidia.com/"
                    "gpu: present}", "2026-03-02T08:11:00Z");
    CHECK_INT(cls_classify(c, &s, f), 1);
    CHECK_STR(f[0].scenario, "sched.taint_mismatch");
    sig_free(&s);
    s = line_of("app", "  Warning  Ext4Error    2m13s  kernel-monitor  EXT4-fs "
                "error (device nvme19n1): __ext4_find_entry:1531: inode #2: "
                "comm sh: reading directory lblock 0", "2026-03-02T08:11:01Z");
    CHECK_INT(cls_classify(c, &s, f), 1);
    CHECK_STR(f[0].scenario, "host.fs_corruption");
    sig_free(&s), s = line_of("app", "Processing  12s  batch  done", "2026-03-02T08:11:02Z");
    CHECK_INT(cls_classify(c, &s, f), 0); /* a row's shape, no event's text */
    sig_free(&s);
}

static void test_raise_text(void)
{
    char buf[128];

    CHECK_INT(ln_raise_text("    raise ValueError(\"No available memory for "
                            "the cache blocks. \"", buf, sizeof buf), 1);
    CHECK_STR(buf, "ValueError: No available memory for the cache blocks. ");
    CHECK_INT(ln_raise_text("  raise torch.cuda.OutOfMemoryError(f'CUDA out "
                            "of memory {x}')", buf, sizeof buf), 1);
    CHECK_STR(buf, "OutOfMemoryError: CUDA out of memory {x}");
    /* a re-raise, a variable, a message too short, a call that is not */
    CHECK_INT(ln_raise_text("    raise", buf, sizeof buf), 0);
    CHECK_INT(ln_raise_text("    raise err", buf, sizeof buf), 0);
    CHECK_INT(ln_raise_text("    raise KeyError(\"x\")", buf, sizeof buf), 0);
    CHECK_INT(ln_raise_text("    raise_error(\"No available memory\")", buf,
                            sizeof buf), 0);
    CHECK_INT(ln_raise_text("    raise ValueError(\"No available memory for "
                            "the cache blocks\")", buf, 16), 0);
}

/* One kernel line of host in cluster, at 08:10:04.1. */
static int kern_at(classifier *k, const char *cluster, const char *host,
                   const char *line, fact *f)
{
    return feed_obj(k, json_pack("{s:s, s:s, s:s, s:s, s:s}", "ts",
                                 "2026-03-02T08:10:04.100Z", "source", "kernel",
                                 "cluster", cluster, "host", host, "line", line),
                    f);
}

/* One app line of job 7, rank 0, on host of cluster. */
static int app_feed(classifier *k, const char *cluster, const char *host,
                    const char *line, fact *f)
{
    return feed_obj(k, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i}", "ts",
                                 "2026-03-02T08:10:05Z", "source", "app",
                                 "cluster", cluster, "host", host, "job", "7",
                                 "line", line, "rank", 0), f);
}

/* A line is looked up against open assemblies only when its host may have
 * one: a traceback stays open through other hosts' lines, and one
 * restored under a key whose parts hold a '|' (its host unknown) is still
 * found. */
static void test_open_hosts(void)
{
    static const char *const oom_line =
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        "GPU 0 has a total capacity of 79.15 GiB of which 1.20 GiB is free. Of "
        "the allocated memory 77.20 GiB is allocated by PyTorch, and 358.40 MiB "
        "is reserved by PyTorch but unallocated.";
    fact f[CLS_MAX_FACTS];
    cs_err err;
    classifier *k = cls_new(cat, &err);
    char host[32];

    REQUIRE(k != NULL);
    CHECK_INT(app_feed(k, "c1", "hA", "Traceback (most recent call last):", f), 0);
    for (int i = 0; i < 200; i++) { /* other hosts, some with their own */
        snprintf(host, sizeof host, "h%d", i);
        CHECK_INT(app_feed(k, "c1", host, i % 50 ? "  File \"x.py\", line 1, "
                           "in f" : "Traceback (most recent call last):", f), 0);
    }
    CHECK_INT(app_feed(k, "c1", "hA", "    loss.backward()", f), 0);
    CHECK_INT(app_feed(k, "c1", "hA", oom_line, f), 1);
    CHECK_INT(f[0].pass, OOM_PASS_BACKWARD);
    /* ended: the same host's next OOM has no pass */
    CHECK_INT(app_feed(k, "c1", "hA", oom_line, f), 1);
    CHECK_INT(f[0].pass, OOM_PASS_UNKNOWN);
    cls_free(k);

    k = cls_new(cat, &err);
    REQUIRE(k != NULL);
    CHECK_INT(cls_tb_restore(k, "c|x|hA|7|0", "1772438990000000 0 1"), 0);
    CHECK_INT(app_feed(k, "c|x", "hA", oom_line, f), 1);
    CHECK_INT(f[0].pass, OOM_PASS_BACKWARD);
    CHECK_INT(cls_tb_restore(k, "c1|hB|7|0", "1772438990000000 0 1"), 0);
    CHECK_INT(app_feed(k, "c1", "hB", oom_line, f), 1);
    CHECK_INT(f[0].pass, OOM_PASS_BACKWARD);
    cls_free(k);

    /* a wrapped kernel message of cluster "a|b": its key "a|b|h|kernel"
     * does not say which part is the host, live or restored */
    k = cls_new(cat, &err);
    REQUIRE(k != NULL);
    CHECK_INT(kern_at(k, "a|b", "h", l1, f), 0);
    CHECK_INT(kern_at(k, "a|b", "h", l2, f), 0);
    saved_key[0] = '\0';
    cls_tb_changes(k, NULL, save_one, NULL);
    CHECK_STR(saved_key, "a|b|h|kernel");
    CHECK_INT(kern_at(k, "a|b", "b", "NVRM: GPU at PCI:0000:1a:00: GPU-7c1b", f), 0);
    CHECK_INT(kern_at(k, "a|b", "h", l3, f), 1);
    CHECK_STR(f[0].scenario, "hw.gpu_off_bus");
    cls_free(k);
    k = cls_new(cat, &err);
    REQUIRE(k != NULL);
    CHECK_INT(cls_tb_restore(k, saved_key, saved_val), 0);
    CHECK_INT(kern_at(k, "a|b", "h", l3, f), 1);
    CHECK_STR(f[0].scenario, "hw.gpu_off_bus");
    cls_free(k);
}

static void count_warning(void *arg, const char *where, const char *msg)
{
    (void)where;
    (void)msg;
    ++*(int *)arg;
}

/* A pattern that backtracks catastrophically: PCRE2 gives up at its
 * match limit and the line counts as no match. That was silent; now it
 * is counted (and logged with the signature), and `rules check` warns of
 * such a pattern (rules/lint.c). */
static void test_match_limit(void)
{
    static const char rules[] =
        "family: t\n"
        "signatures:\n"
        "  - {id: t.nested, source: app, fact: job_fault, match: "
        "'^error: (\\w+\\s?)+$', examples: [{line: 'error: bad thing', "
        "fact: job_fault}]}\n";
    pb_catalog *k = pb_catalog_new();
    classifier *x = NULL;
    fact f[CLS_MAX_FACTS];
    char line[200];
    cs_err err;
    sig s;
    int warned = 0;

    CHECK_INT(pb_catalog_add(k, "t.yaml", rules, sizeof rules - 1, NULL, NULL),
              0);
    CHECK_INT(pb_catalog_link(k, NULL, NULL), 0);
    CHECK_INT(pb_catalog_lint(k, count_warning, &warned), 1);
    CHECK_INT(warned, 1);
    CHECK((x = cls_new(k, &err)) != NULL);
    if (!x)
        goto out;
    snprintf(line, sizeof line, "error: %s!", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    s = app("r1", 0, line, "2026-03-02T08:10:04Z");
    CHECK_INT(cls_classify(x, &s, f), 0);
    CHECK_INT(cls_limit_hits(x), 1);
    sig_free(&s);
    s = app("r1", 0, "error: bad thing", "2026-03-02T08:10:05Z");
    CHECK_INT(cls_classify(x, &s, f), 1);
    CHECK_INT(cls_limit_hits(x), 1);
    sig_free(&s);
out:
    cls_free(x);
    pb_catalog_free(k);
}

int main(void)
{
    cs_err err;

    cat = pb_catalog_embedded();
    c = cls_new(cat, &err);
    CHECK(c != NULL);
    if (!c)
        return check_report();
    test_xid();
    test_oom_generations();
    test_traceback_pass();
    test_rank_prefix();
    test_launcher_tags();
    test_text_sources();
    test_hostlist();
    test_alert();
    test_k8s_event_versions();
    test_kube_rows();
    test_kube_untyped_and_npd();
    test_raise_text();
    test_kernel_wrapped();
    test_kmsg_xid();
    test_open_hosts();
    test_match_limit();
    cls_free(c);
    pb_catalog_free(cat);
    return check_report();
}
