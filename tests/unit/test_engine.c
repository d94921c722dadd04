/* Engine rules and state writes, driven directly (no Redis, no loop). */
#include <stdlib.h>

#include "check.h"
#include "incidents.h"
#include "engine/engine.h"
#include "engine/state.h"
#include "rules/playbooks.h"
#include "rules/rules_embedded.h"

#include "engine_fixture.h"
static void test_single_job_stays_fault(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);

    feed(e, JOB("2026-03-02T08:00:00Z", "1", "RUNNING", "[\"g1\"]"));
    feed(e, XID79("2026-03-02T08:10:00Z", "g1"));
    feed(e, JOB("2026-03-02T08:11:00Z", "1", "FAILED", "[\"g1\"]"));
    json_t *inc = only_incident(e);
    CHECK_STR(json_string_value(json_object_get(inc, "scenario")), "hw.gpu_off_bus");
    CHECK_INT(json_array_size(json_object_get(inc, "children")), 1);
    CHECK(r.zadd >= 2);
    CHECK(r.trim >= 2);
    CHECK(r.hset >= 2); /* job records */
    json_decref(inc);
    eng_free(e);
}

static void test_two_jobs_make_a_crash(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);

    feed(e, JOB("2026-03-02T08:00:00Z", "1", "RUNNING", "[\"g1\"]"));
    feed(e, JOB("2026-03-02T08:00:00Z", "2", "RUNNING", "[\"g1\",\"g2\"]"));
    feed(e, XID79("2026-03-02T08:10:00Z", "g1"));
    feed(e, JOB("2026-03-02T08:11:00Z", "1", "FAILED", "[\"g1\"]"));
    feed(e, JOB("2026-03-02T08:11:05Z", "2", "FAILED", "[\"g1\",\"g2\"]"));
    json_t *inc = only_incident(e);
    CHECK_STR(json_string_value(json_object_get(inc, "scenario")),
              "cascade.node_crash");
    json_t *root = json_object_get(inc, "root_cause");
    CHECK_STR(json_string_value(json_object_get(root, "scenario")), "hw.gpu_off_bus");
    CHECK_STR(json_string_value(json_object_get(root, "node")), "g1");
    CHECK_INT(json_array_size(json_object_get(inc, "children")), 2);
    /* one resubmit per job, each excluding the crashed node */
    int resubmits = 0;
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(inc, "actions"), i, a) {
        if (strcmp(json_string_value(json_object_get(a, "playbook")),
                   "job.resubmit") == 0) {
            resubmits++;
            json_t *ex = json_object_get(json_object_get(a, "params"),
                                         "exclude_nodes");
            CHECK_STR(json_string_value(json_array_get(ex, 0)), "g1");
        }
    }
    CHECK_INT(resubmits, 2);
    json_decref(inc);
    eng_free(e);
}

static void test_silent_crash_without_node_signal(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);

    feed(e, JOB("2026-03-02T08:00:00Z", "1", "RUNNING", "[\"g1\"]"));
    feed(e, JOB("2026-03-02T08:00:00Z", "2", "RUNNING", "[\"g1\"]"));
    feed(e, JOB("2026-03-02T08:11:00Z", "1", "FAILED", "[\"g1\"]"));
    CHECK_INT(eng_incident_count(e), 0); /* one failure is not a cascade */
    feed(e, JOB("2026-03-02T08:12:00Z", "2", "FAILED", "[\"g1\"]"));
    json_t *inc = only_incident(e);
    CHECK_STR(json_string_value(json_object_get(inc, "scenario")),
              "cascade.node_crash");
    json_decref(inc);
    /* far apart in time: two failures are not one crash */
    engine *e2 = eng_new(&ops, &r, &err);
    feed(e2, JOB("2026-03-02T08:00:00Z", "1", "FAILED", "[\"g1\"]"));
    feed(e2, JOB("2026-03-02T09:00:00Z", "2", "FAILED", "[\"g1\"]"));
    CHECK_INT(eng_incident_count(e2), 0);
    eng_free(e2);
    eng_free(e);
}

static void test_idempotent(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);

    feed(e, XID79("2026-03-02T08:10:00Z", "g1"));
    int zadd = r.zadd;
    feed(e, XID79("2026-03-02T08:10:00Z", "g1")); /* redelivered */
    CHECK_INT(r.zadd, zadd);
    json_t *inc = only_incident(e);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(inc, "evidence"),
                                                 "count")), 1);
    /* the member starts with the signal id: ZADD of a replay is a no-op */
    CHECK(strlen(r.last_member) > 17 && r.last_member[16] == ' ');
    json_decref(inc);
    eng_free(e);
}

static void test_restore(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    int64_t ts = INT64_C(1772438400) * 1000000;

    /* two failures restored from Redis, then a third arrives live */
    CHECK_INT(eng_restore_window(e, "cascade:{default}:w:node:g1", ts,
                                 "00000000000000a1 J 1 -"), 0);
    CHECK_INT(eng_restore_window(e, "cascade:{default}:w:node:g1", ts,
                                 "garbage"), -1);
    eng_free(e);
}

static void count_new(void *arg, const char *id, json_t *inc, const char *text, json_t *acts)
{
    (void)text;
    int *n = arg;
    (void)id;
    (void)inc;
    n[0]++;
    n[1] += (int)json_array_size(acts);
}

static void test_flush_new_actions(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    int seen[2] = {0, 0};

    feed(e, XID79("2026-03-02T08:10:00Z", "g1"));
    eng_flush(e, count_new, seen);
    CHECK_INT(seen[0], 1);
    CHECK_INT(seen[1], 4); /* drain, reset, reboot, ticket: no job yet */
    eng_flush(e, count_new, seen);
    CHECK_INT(seen[0], 1); /* nothing changed, nothing reported */
    feed(e, JOB("2026-03-02T08:11:00Z", "1", "FAILED", "[\"g1\"]"));
    eng_flush(e, count_new, seen);
    CHECK_INT(seen[0], 2);
    CHECK_INT(seen[1], 5); /* only the resubmit the failure added */
    eng_free(e);
}

/* The embedded rule set with one change: cascade.node_crash drains with
 * approval canary instead of hitl (auto on a canary node). */
static pb_catalog *changed_rules(void)
{
    pb_catalog *c = pb_catalog_new();
    int changed = 0;

    for (size_t i = 0; i < rules_embedded_count; i++) {
        const rules_file *f = &rules_embedded[i];
        char *text = strndup(f->text, f->len);
        if (strcmp(f->name, "rules/cascades.yaml") == 0) {
            char *at = strstr(text, "{playbook: node.drain, approval: hitl");
            CHECK(at != NULL);
            if (at && ++changed) {
                char *hitl = strstr(at, "hitl"), *edited;
                size_t head = (size_t)(hitl - text);
                if (asprintf(&edited, "%.*scanary%s", (int)head, text,
                             hitl + 4) < 0)
                    abort();
                free(text);
                text = edited;
            }
        }
        CHECK_INT(pb_catalog_add(c, f->name, text, strlen(text), NULL, NULL), 0);
        free(text);
    }
    CHECK_INT(pb_catalog_link(c, NULL, NULL), 0);
    CHECK_INT(changed, 1);
    return c;
}

static const char *drain_approval(engine *e)
{
    static char buf[16];
    json_t *inc = only_incident(e), *a;
    size_t i;

    buf[0] = '\0';
    json_array_foreach(json_object_get(inc, "actions"), i, a)
        if (!strcmp(json_string_value(json_object_get(a, "playbook")), "node.drain"))
            snprintf(buf, sizeof buf, "%s",
                     json_string_value(json_object_get(a, "approval")));
    json_decref(inc);
    return buf;
}

/* A rule set swapped mid-stream: the open incident answers with the new
 * set's response and keeps folding what follows. */
static void test_swap_rules(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);

    feed(e, "{\"ts\":\"2026-03-02T07:00:00Z\",\"source\":\"inventory\","
            "\"host\":\"g1\",\"rack\":\"r1\",\"canary\":true}");
    feed(e, JOB("2026-03-02T08:00:00Z", "1", "RUNNING", "[\"g1\"]"));
    feed(e, JOB("2026-03-02T08:00:00Z", "2", "RUNNING", "[\"g1\"]"));
    feed(e, XID79("2026-03-02T08:10:00Z", "g1"));
    feed(e, JOB("2026-03-02T08:11:00Z", "1", "FAILED", "[\"g1\"]"));
    feed(e, JOB("2026-03-02T08:11:05Z", "2", "FAILED", "[\"g1\"]"));
    CHECK_STR(drain_approval(e), "hitl");
    CHECK_INT(eng_set_catalog(e, changed_rules(), &err), 0);
    CHECK_STR(drain_approval(e), "auto");
    /* the window entries made under the old set still count */
    feed(e, JOB("2026-03-02T08:12:00Z", "3", "RUNNING", "[\"g1\"]"));
    feed(e, JOB("2026-03-02T08:13:00Z", "3", "FAILED", "[\"g1\"]"));
    json_t *inc = only_incident(e);
    CHECK_INT(json_array_size(json_object_get(inc, "children")), 3);
    CHECK_STR(json_string_value(json_object_get(json_object_get(inc, "root_cause"),
                                                "scenario")), "hw.gpu_off_bus");
    json_decref(inc);
    eng_free(e);
}

#define DEP(ts, id, state, deps, reason) \
    "{\"ts\":\"" ts "\",\"source\":\"job\",\"job\":\"" id "\",\"state\":\"" \
    state "\",\"nodes\":[],\"depends_on\":" deps reason "}"
#define EXPIRED(ts, job) \
    "{\"ts\":\"" ts "\",\"source\":\"app\",\"host\":\"g1\",\"job\":\"" job \
    "\",\"line\":\"botocore.exceptions.ClientError: An error occurred " \
    "(ExpiredToken) when calling the GetObject operation: The provided " \
    "token has expired.\"}"
#define NEVER ",\"reason\":\"DependencyNeverSatisfied\""

/* A three-deep pipeline under a failed job: the blocked jobs fold into
 * the failure's incident, which becomes the chain (root kept, its own
 * response first); a plain "Dependency" wait, an unexplained upstream
 * failure and a cycle in depends_on make nothing. */
static void test_dependency_chain(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    json_t *inc, *acts;

    feed(e, JOB("2026-03-02T08:00:00Z", "a", "RUNNING", "[\"g1\"]"));
    feed(e, DEP("2026-03-02T08:00:01Z", "b", "PENDING", "[\"a\"]", ""));
    feed(e, DEP("2026-03-02T08:00:02Z", "c", "PENDING", "[\"b\"]", ""));
    feed(e, DEP("2026-03-02T08:00:03Z", "d", "PENDING", "[\"c\"]", ""));
    feed(e, DEP("2026-03-02T08:00:04Z", "x", "PENDING", "[\"y\"]", ""));
    feed(e, DEP("2026-03-02T08:00:05Z", "y", "PENDING", "[\"x\"]", NEVER));
    feed(e, EXPIRED("2026-03-02T08:10:00Z", "a"));
    feed(e, JOB("2026-03-02T08:10:05Z", "a", "FAILED", "[\"g1\"]"));
    /* still waiting, the scheduler's plain reason: not blocked yet */
    feed(e, DEP("2026-03-02T08:10:06Z", "d", "PENDING", "[\"c\"]",
                ",\"reason\":\"Dependency\""));
    inc = only_incident(e);
    CHECK_STR(json_string_value(json_object_get(inc, "scenario")), "creds.expired");
    json_decref(inc);
    feed(e, DEP("2026-03-02T08:10:07Z", "b", "CANCELLED", "[\"a\"]", NEVER));
    feed(e, DEP("2026-03-02T08:10:08Z", "c", "CANCELLED", "[\"b\"]", NEVER));
    feed(e, DEP("2026-03-02T08:10:09Z", "d", "PENDING", "[\"c\"]", NEVER));
    inc = only_incident(e);
    CHECK_STR(json_string_value(json_object_get(inc, "scenario")),
              "cascade.dependency_chain");
    CHECK_STR(json_string_value(json_object_get(json_object_get(inc,
              "root_cause"), "scenario")), "creds.expired");
    CHECK_STR(json_string_value(json_object_get(json_object_get(inc, "scope"),
              "job")), "d");
    CHECK_INT(json_array_size(json_object_get(inc, "children")), 3);
    acts = json_object_get(inc, "actions");
    CHECK_INT(json_array_size(acts), 2);
    CHECK_STR(json_string_value(json_object_get(json_object_get(
              json_array_get(acts, 0), "params"), "category")), "credentials");
    CHECK_STR(json_string_value(json_object_get(json_object_get(
              json_array_get(acts, 0), "target"), "job")), "a");
    CHECK_STR(json_string_value(json_object_get(json_array_get(acts, 1),
              "approval")), "hitl");
    json_t *pipe = json_object_get(json_object_get(json_array_get(acts, 1),
                                                   "params"), "pipeline");
    CHECK_INT(json_array_size(pipe), 4);
    CHECK_STR(json_string_value(json_array_get(pipe, 0)), "a");
    CHECK_STR(json_string_value(json_array_get(pipe, 3)), "d");
    /* the chain: the root with its line, then the three blocked jobs */
    json_t *chain = json_object_get(inc, "chain");
    CHECK_INT(json_array_size(chain), 4);
    CHECK_STR(json_string_value(json_object_get(json_array_get(chain, 0),
              "role")), "root");
    CHECK(strstr(json_string_value(json_object_get(json_array_get(chain, 0),
                 "signal")) ? json_string_value(json_object_get(
                 json_array_get(chain, 0), "signal")) : "", "ExpiredToken") != NULL);
    CHECK_STR(json_string_value(json_object_get(json_array_get(chain, 3),
              "role")), "effect");
    CHECK_STR(json_string_value(json_object_get(json_array_get(chain, 3),
              "job")), "d");
    json_decref(inc);
    /* an older state delivered again changes nothing */
    feed(e, DEP("2026-03-02T08:00:01Z", "b", "PENDING", "[\"a\"]", ""));
    feed(e, DEP("2026-03-02T08:10:07Z", "b", "CANCELLED", "[\"a\"]", NEVER));
    inc = only_incident(e);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(inc,
              "evidence"), "count")), 5);
    json_decref(inc);
    eng_free(e);
}

/* Attempt `id` of logical job "train" on nodes, failed at `step` after
 * an error line (`err`: 0 NCCL timeout, 1 CUDA launch failure, 2 illegal
 * memory access) on its first node. */
static void attempt(engine *e, int hour, const char *id, const char *nodes,
                    const char *first, int step, int err)
{
    static const char *const lines[] = {
        "[Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=12001, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600010 milliseconds before timing out.",
        "RuntimeError: CUDA error: unspecified launch failure",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
        "GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.20 GiB is "
        "free. Including non-PyTorch memory, this process has 77.90 GiB "
        "memory in use. Of the allocated memory 75.00 GiB is allocated by "
        "PyTorch, and 1.50 GiB is reserved by PyTorch but unallocated."};
    char line[1024];

    snprintf(line, sizeof line, "{\"ts\":\"2026-03-02T%02d:00:00Z\",\"source\":"
             "\"job\",\"job\":\"%s\",\"job_name\":\"train\",\"state\":"
             "\"RUNNING\",\"nodes\":%s}", hour, id, nodes);
    feed(e, line);
    snprintf(line, sizeof line, "{\"ts\":\"2026-03-02T%02d:50:20Z\",\"source\":"
             "\"app\",\"host\":\"%s\",\"job\":\"%s\",\"line\":\"%s\"}",
             hour, first, id, lines[err]);
    feed(e, line);
    snprintf(line, sizeof line, "{\"ts\":\"2026-03-02T%02d:50:50Z\",\"source\":"
             "\"job\",\"job\":\"%s\",\"job_name\":\"train\",\"state\":"
             "\"FAILED\",\"nodes\":%s,\"step\":%d}", hour, id, nodes, step);
    feed(e, line);
}

/* Shifting symptoms: three attempts near one step with different errors,
 * sharing one node (no heat here: a hardware ticket); the same error each
 * time, steps far apart, two attempts, or no shared node make nothing. */
static void test_shifting_symptoms(void)
{
    static const struct {
        int steps[3], errs[3];
        const char *nodes[3];
        const char *want;
    } cases[] = {
        {{11917, 11864, 12124}, {0, 1, 2},
         {"[\"a\",\"b\"]", "[\"b\",\"c\"]", "[\"a\",\"b\"]"},
         "cascade.shifting_symptoms"},
        {{11917, 11864, 12124}, {1, 1, 1},
         {"[\"a\",\"b\"]", "[\"b\",\"c\"]", "[\"a\",\"b\"]"}, ""},
        {{3000, 11864, 12124}, {0, 1, 2},
         {"[\"a\",\"b\"]", "[\"b\",\"c\"]", "[\"a\",\"b\"]"}, ""},
        {{11917, 11864, 12124}, {0, 1, 2},
         {"[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"a\",\"b\"]"}, ""},
        {{11917, 11864, 12124}, {0, 1, 2},
         {"[\"a\",\"b\"]", "[\"a\",\"b\"]", "[\"a\",\"b\"]"}, ""},
        /* the first attempt's own incident (an OOM) merges into it */
        {{11917, 11864, 12124}, {3, 1, 2},
         {"[\"a\",\"b\"]", "[\"b\",\"c\"]", "[\"a\",\"b\"]"},
         "cascade.shifting_symptoms"},
    };
    char buf[256];

    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        rec r = {0};
        cs_err err;
        engine *e = eng_new(&ops, &r, &err);
        static const char *const ids[] = {"71", "72", "73"};
        for (int i = 0; i < 3; i++) {
            const char *nodes = cases[c].nodes[i];
            char first[8];
            snprintf(first, sizeof first, "%c", nodes[2]);
            attempt(e, 8 + i, ids[i], nodes, first, cases[c].steps[i],
                    cases[c].errs[i]);
            if (i == 1) /* two attempts are not a pattern yet */
                CHECK_STR(incident_scenarios(e, buf, sizeof buf),
                          cases[c].errs[0] == 3 ? "oom.batch_size" : "");
        }
        CHECK_STR(incident_scenarios(e, buf, sizeof buf), cases[c].want);
        if (cases[c].errs[0] == 3) { /* the OOM's job is an attempt of it */
            json_t *inc = only_incident(e);
            CHECK_INT(json_array_size(json_object_get(inc, "children")), 3);
            CHECK_STR(json_string_value(json_object_get(json_object_get(inc,
                      "root_cause"), "node")), "b");
            json_decref(inc);
        }
        if (c == 0) {
            json_t *inc = only_incident(e), *acts = json_object_get(inc, "actions");
            CHECK_STR(json_string_value(json_object_get(json_object_get(inc,
                      "root_cause"), "node")), "b");
            CHECK_INT(json_array_size(json_object_get(inc, "children")), 3);
            CHECK_INT(json_array_size(acts), 2);
            CHECK_STR(json_string_value(json_array_get(json_object_get(
                      json_object_get(json_array_get(acts, 0), "params"),
                      "exclude_nodes"), 0)), "b");
            CHECK_STR(json_string_value(json_object_get(json_object_get(
                      json_array_get(acts, 1), "params"), "category")),
                      "hardware");
            json_decref(inc);
        }
        eng_free(e);
    }
}

#define SLURM(ts, text) \
    "{\"ts\":\"" ts "\",\"source\":\"slurm\",\"line\":\"" text "\"}"
#define WAITING(ts, cluster, id, name) \
    "{\"ts\":\"" ts "\",\"source\":\"k8s\",\"cluster\":\"" cluster \
    "\",\"job\":\"" id "\",\"job_name\":\"" name "\",\"event\":" \
    "{\"reason\":\"FailedScheduling\",\"message\":\"0/4 nodes are " \
    "available: 4 Insufficient nvidia.com/gpu.\"}}"
#define NAMED_JOB(ts, cluster, id, name, state) \
    "{\"ts\":\"" ts "\",\"source\":\"job\",\"cluster\":\"" cluster \
    "\",\"job\":\"" id "\",\"job_name\":\"" name "\",\"state\":\"" \
    state "\",\"nodes\":[\"gpu-070\"]}"

static const char *field(json_t *inc, const char *k)
{
    const char *v = json_string_value(json_object_get(inc, k));
    return v ? v : "";
}

/* A node that comes back resolves its incident; failing again within the
 * grace period reopens it; later, a new incident opens. */
static void test_recover_and_reopen(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    json_t *inc;

    feed(e, SLURM("2026-03-02T08:00:00Z", "error: Nodes gpu-012 not responding"));
    inc = only_incident(e);
    CHECK_STR(field(inc, "scenario"), "node.down");
    CHECK_STR(field(inc, "status"), "open");
    json_decref(inc);
    feed(e, SLURM("2026-03-02T08:10:00Z", "Node gpu-012 now responding"));
    inc = only_incident(e);
    CHECK_STR(field(inc, "status"), "resolved");
    CHECK_STR(field(inc, "resolved"), "2026-03-02T08:10:00.000Z");
    CHECK_STR(field(inc, "resolution"), "Node gpu-012 now responding");
    CHECK(strstr(field(inc, "summary"), "Resolved: Node gpu-012 now responding.") != NULL);
    json_decref(inc);
    /* a recovery of another node, or one older than the fault, is no news */
    feed(e, SLURM("2026-03-02T08:20:00Z", "error: Nodes gpu-012 not responding"));
    inc = only_incident(e);
    CHECK_STR(field(inc, "status"), "open");
    CHECK_INT(json_integer_value(json_object_get(inc, "reopened")), 1);
    json_decref(inc);
    feed(e, SLURM("2026-03-02T08:25:00Z", "Node gpu-013 now responding"));
    inc = only_incident(e);
    CHECK_STR(field(inc, "status"), "open");
    json_decref(inc);
    feed(e, SLURM("2026-03-02T08:30:00Z", "Node gpu-012 now responding"));
    /* more than the grace period after it was resolved: a new incident */
    feed(e, SLURM("2026-03-02T09:31:00Z", "error: Nodes gpu-012 not responding"));
    json_t *all = eng_incidents(e);
    CHECK_INT(json_array_size(all), 2);
    CHECK_STR(field(json_array_get(all, 0), "status"), "resolved");
    CHECK_STR(field(json_array_get(all, 1), "status"), "open");
    json_decref(all);
    eng_free(e);
}

static void count_resolved(void *arg, const char *id, json_t *inc, const char *text, json_t *acts)
{
    (void)text;
    (void)id;
    (void)acts;
    if (!strcmp(field(inc, "status"), "resolved"))
        ++*(int *)arg;
}

/* A job-level incident resolves when a later attempt of the logical job
 * completes, or after its fold window of quiet by its own cluster's
 * clock; a node's fault stays open through any quiet. */
static void test_resolve_by_completion_and_quiet(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    json_t *all;
    int resolved = 0;

    feed(e, NAMED_JOB("2026-03-02T07:59:00Z", "a", "501", "sweep", "PENDING"));
    feed(e, WAITING("2026-03-02T08:00:00Z", "a", "501", "sweep"));
    feed(e, NAMED_JOB("2026-03-02T08:20:00Z", "a", "502", "sweep", "RUNNING"));
    feed(e, NAMED_JOB("2026-03-02T08:25:00Z", "a", "502", "sweep", "COMPLETED"));
    all = eng_incidents(e);
    CHECK_INT(json_array_size(all), 1);
    CHECK_STR(field(json_array_get(all, 0), "status"), "resolved");
    CHECK_STR(field(json_array_get(all, 0), "resolution"),
              "job 502 of sweep completed");
    json_decref(all);
    eng_free(e);

    e = eng_new(&ops, &r, &err);
    feed(e, WAITING("2026-03-02T08:00:00Z", "a", "601", "eval"));
    feed(e, XID79("2026-03-02T08:00:00Z", "gpu-090"));
    eng_flush(e, NULL, NULL);
    /* hours later, in another cluster: cluster a's time has not moved */
    feed(e, WAITING("2026-03-02T12:00:00Z", "b", "701", "other"));
    eng_flush(e, count_resolved, &resolved);
    CHECK_INT(resolved, 0);
    /* cluster a, 45 min on: the wait resolved by quiet, published once */
    feed(e, NAMED_JOB("2026-03-02T08:45:00Z", "a", "602", "x", "RUNNING"));
    eng_flush(e, count_resolved, &resolved);
    CHECK_INT(resolved, 1);
    eng_flush(e, count_resolved, &resolved);
    CHECK_INT(resolved, 1);
    feed(e, XID79("2026-03-02T08:45:00Z", "gpu-091"));
    all = eng_incidents(e);
    for (size_t i = 0; i < json_array_size(all); i++) {
        json_t *inc = json_array_get(all, i);
        const char *sc = field(inc, "scenario");
        if (!strcmp(sc, "sched.capacity_exhausted") &&
            !strcmp(field(json_object_get(inc, "scope"), "cluster"), "a")) {
            CHECK_STR(field(inc, "status"), "resolved");
            CHECK_STR(field(inc, "resolution"), "nothing new for 30 min");
        } else if (!strcmp(sc, "hw.gpu_off_bus")) {
            CHECK_STR(field(inc, "status"), "open");
        }
    }
    json_decref(all);
    eng_free(e);
}

/* Attempts hours apart, with the live correlator's pruning in between
 * (finished jobs are forgotten after 2 h): the logical job's window still
 * has them. */
static void test_shifting_after_prune(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    char buf[256];

    attempt(e, 8, "81", "[\"a\",\"b\"]", "a", 11917, 0);
    eng_flush(e, NULL, NULL);
    attempt(e, 11, "82", "[\"b\",\"c\"]", "b", 11864, 1);
    eng_flush(e, NULL, NULL);
    CHECK(eng_prune(e) > 0); /* job 81 is gone */
    attempt(e, 14, "83", "[\"a\",\"b\"]", "a", 12124, 2);
    CHECK_STR(incident_scenarios(e, buf, sizeof buf), "cascade.shifting_symptoms");
    eng_free(e);
}

static int jobs_dels;

static void h_del_jobs(void *ctx, const char *key, const char *f)
{
    (void)ctx;
    (void)f;
    jobs_dels += strstr(key, ":jobs") != NULL;
}

static const eng_store_ops jobs_ops = {w_add, w_trim, h_put, h_del_jobs};

static void job_state(engine *e, const char *hhmm, int id, const char *state)
{
    char line[300];

    snprintf(line, sizeof line, "{\"ts\":\"2026-03-02T%s:00Z\",\"source\":"
             "\"job\",\"job\":\"%d\",\"job_name\":\"t%d\",\"state\":"
             "\"%s\",\"nodes\":[\"g%d\"]}", hhmm, id, id, state, id % 50);
    feed(e, line);
}

/* The live prune walks the jobs in slices: finished jobs past the horizon
 * go a slice at a time, jobs added between slices do no harm, and the
 * walk ends with every old one gone and every running one kept. */
static void test_prune_jobs_in_slices(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&jobs_ops, &r, &err);
    size_t went = 0;
    int done = 0;

    for (int i = 0; i < 200; i++) {
        job_state(e, "08:00", 1000 + i, "RUNNING");
        job_state(e, "08:10", 1000 + i, "COMPLETED");
    }
    job_state(e, "10:30", 5000, "RUNNING"); /* the clock: past the horizon */
    eng_flush(e, NULL, NULL);
    jobs_dels = 0;
    eng_prune_begin(e);
    went = eng_prune_step(e, 10, &done);
    CHECK(went > 0 && went <= 10 && !done);
    for (int i = 1; i < 50; i++) /* new jobs while the walk is under way */
        job_state(e, "10:31", 5000 + i, "RUNNING");
    while (!done)
        went += eng_prune_step(e, 10, &done);
    CHECK_INT(went, 200);
    CHECK_INT(jobs_dels, 200);
    CHECK_INT(eng_prune(e), 0); /* nothing left to go */
    eng_free(e);
}

typedef struct seen_pub {
    int storm, merged, other;
} seen_pub;

static void note_pub(void *arg, const char *id, json_t *inc, const char *text, json_t *acts)
{
    (void)text;
    seen_pub *p = arg;
    (void)id;
    (void)acts;
    if (json_object_get(inc, "merged_into")) {
        CHECK_STR(field(inc, "status"), "resolved");
        CHECK_INT(json_array_size(json_object_get(inc, "actions")), 0);
        p->merged++;
    } else if (json_object_get(json_object_get(inc, "scope"), "rack") &&
               !json_object_get(json_object_get(inc, "scope"), "node")) {
        p->storm++;
    } else {
        p->other++;
    }
}

#define INV(host, rack) \
    "{\"ts\":\"2026-03-02T07:00:00Z\",\"source\":\"inventory\",\"host\":\"" \
    host "\",\"rack\":\"" rack "\",\"gpus\":8}"

/* The third node of a rack down within minutes makes a storm: the node
 * incidents already published are published once more, merged, and are
 * gone; a node of another rack, or one too late, stays apart. */
static void test_storm(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    seen_pub p = {0};
    json_t *all;

    feed(e, INV("gpu-401", "rack-9"));
    feed(e, INV("gpu-402", "rack-9"));
    feed(e, INV("gpu-403", "rack-9"));
    feed(e, INV("gpu-404", "rack-9"));
    feed(e, INV("gpu-501", "rack-10"));
    feed(e, SLURM("2026-03-02T08:00:00Z", "error: Nodes gpu-401 not responding"));
    feed(e, SLURM("2026-03-02T08:00:30Z", "error: Nodes gpu-501 not responding"));
    eng_flush(e, note_pub, &p);
    feed(e, SLURM("2026-03-02T08:02:00Z", "error: Nodes gpu-402 not responding"));
    eng_flush(e, note_pub, &p);
    CHECK_INT(p.other, 3);
    CHECK_INT(p.storm, 0);
    feed(e, SLURM("2026-03-02T08:05:00Z", "error: Nodes gpu-403 not responding"));
    eng_flush(e, note_pub, &p);
    CHECK_INT(p.storm, 1);
    CHECK_INT(p.merged, 2); /* gpu-403's own was never shown */
    CHECK_INT(p.other, 3);
    all = eng_incidents(e);
    CHECK_INT(json_array_size(all), 2); /* the storm and gpu-501 */
    json_decref(all);
    /* a fourth node of the rack, later, joins the storm */
    feed(e, SLURM("2026-03-02T08:20:00Z", "error: Nodes gpu-404 not responding"));
    eng_flush(e, note_pub, &p);
    all = eng_incidents(e);
    CHECK_INT(json_array_size(all), 2);
    for (size_t i = 0; i < json_array_size(all); i++) {
        json_t *inc = json_array_get(all, i);
        if (json_object_get(json_object_get(inc, "scope"), "node"))
            continue;
        CHECK_STR(field(json_object_get(inc, "scope"), "rack"), "rack-9");
        CHECK_INT(json_array_size(json_object_get(inc, "children")), 4);
        CHECK_STR(field(json_object_get(inc, "root_cause"), "node"), "gpu-401");
    }
    json_decref(all);
    eng_free(e);
}

/* Two clusters with the same host and job names (every SLURM controller
 * counts job ids from 1): neither's jobs or node incidents mix. */
#define CJOB(c, ts, id, state, nodes) \
    "{\"cluster\":\"" c "\",\"ts\":\"" ts "\",\"source\":\"job\",\"job\":\"" \
    id "\",\"state\":\"" state "\",\"nodes\":" nodes "}"
#define CXID79(c, ts, host) \
    "{\"cluster\":\"" c "\",\"ts\":\"" ts "\",\"source\":\"kernel\"," \
    "\"host\":\"" host "\",\"line\":\"NVRM: Xid (PCI:0000:3a:00): 79, pid=1, " \
    "name=python3, GPU has fallen off the bus.\"}"

static void test_clusters_apart(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    json_t *all, *a, *b;

    feed(e, CJOB("a", "2026-03-02T08:00:00Z", "1", "RUNNING", "[\"g1\"]"));
    feed(e, CJOB("b", "2026-03-02T08:00:00Z", "1", "RUNNING", "[\"g1\"]"));
    feed(e, CJOB("a", "2026-03-02T08:00:00Z", "2", "RUNNING", "[\"g1\",\"g2\"]"));
    feed(e, CXID79("a", "2026-03-02T08:10:00Z", "g1"));
    feed(e, CJOB("a", "2026-03-02T08:11:00Z", "1", "FAILED", "[\"g1\"]"));
    /* b's job 1 is not a's: its completion neither resolves a's crash nor
     * turns a's failed job 1 into a completed one */
    feed(e, CJOB("b", "2026-03-02T08:11:02Z", "1", "COMPLETED", "[\"g1\"]"));
    feed(e, CJOB("a", "2026-03-02T08:11:05Z", "2", "FAILED", "[\"g1\",\"g2\"]"));
    /* b's g1 fails later: an incident of b's, not a fold into a's g1 */
    feed(e, CXID79("b", "2026-03-02T08:20:00Z", "g1"));
    all = eng_incidents(e);
    CHECK_INT(json_array_size(all), 2);
    a = json_array_get(all, 0);
    b = json_array_get(all, 1);
    CHECK_STR(json_string_value(json_object_get(a, "scenario")),
              "cascade.node_crash");
    CHECK_STR(field(a, "status"), "open");
    CHECK_STR(json_string_value(json_object_get(json_object_get(a, "scope"),
                                                "cluster")), "a");
    CHECK_INT(json_array_size(json_object_get(a, "children")), 2);
    CHECK_STR(json_string_value(json_object_get(b, "scenario")),
              "hw.gpu_off_bus");
    CHECK_STR(json_string_value(json_object_get(json_object_get(b, "scope"),
                                                "cluster")), "b");
    CHECK_STR(json_string_value(json_object_get(json_object_get(b, "scope"),
                                                "node")), "g1");
    json_decref(all);
    eng_free(e);
}

/* A fact that names no host and no job lands in its cluster's window,
 * so that it is known as seen, and the same signal again adds nothing. */
static void test_cluster_window(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    const char *oom =
        "{\"cluster\":\"a\",\"ts\":\"2026-03-02T08:00:00Z\",\"source\":"
        "\"app\",\"line\":\"torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB "
        "of which 1.02 GiB is free.\"}";

    feed(e, oom);
    CHECK_INT(r.zadd, 1);
    CHECK_STR(r.last_key, "cascade:{a}:w:node:cluster:a");
    feed(e, oom);
    CHECK_INT(r.zadd, 1);
    CHECK_INT(eng_incident_count(e), 0);
    eng_free(e);
}

/* Ray's GCS names the dead node by its node name: the incident is that
 * node's when the inventory knows the name, else the printer's. */
#define RAY_DEAD(ts, host, name) \
    "{\"ts\":\"" ts "\",\"source\":\"ray\",\"host\":\"" host "\"," \
    "\"line\":\"WARNING worker.py:1839 -- The node with node id: b1d7 and " \
    "address: " name " and node name: " name " has been marked dead because " \
    "the detector has missed too many heartbeats from it.\"}"

static void test_named_node(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    json_t *inc;

    feed(e, INV("ray-head", "rack-1"));
    feed(e, INV("10.0.0.7", "rack-1"));
    feed(e, RAY_DEAD("2026-03-02T08:00:00Z", "ray-head", "10.0.0.7"));
    inc = only_incident(e);
    CHECK_STR(json_string_value(json_object_get(inc, "scenario")),
              "ray.node_died");
    CHECK_STR(field(json_object_get(inc, "scope"), "node"), "10.0.0.7");
    json_decref(inc);
    eng_free(e);

    /* a name the fleet does not know: the line's host keeps it */
    e = eng_new(&ops, &r, &err);
    feed(e, INV("ray-head", "rack-1"));
    feed(e, RAY_DEAD("2026-03-02T08:00:00Z", "ray-head", "10.0.0.8"));
    inc = only_incident(e);
    CHECK_STR(field(json_object_get(inc, "scope"), "node"), "ray-head");
    json_decref(inc);
    eng_free(e);
}

#define INV_ADDRS(host, addrs) \
    "{\"ts\":\"2026-03-02T07:00:00Z\",\"source\":\"inventory\",\"host\":\"" \
    host "\",\"addrs\":" addrs "}"

static const char *scope_of_dead(engine *e, const char *named, char *buf,
                                 size_t len)
{
    char line[1024];
    json_t *inc;

    snprintf(line, sizeof line,
             RAY_DEAD("2026-03-02T08:00:00Z", "ray-head", "%s"), named,
             named);
    feed(e, line);
    inc = only_incident(e);
    snprintf(buf, len, "%s", field(json_object_get(inc, "scope"), "node"));
    json_decref(inc);
    return buf;
}

/* A node named by one of its addresses (Ray's GCS names nodes by IP):
 * the inventory's addrs lead to it; an address two hosts claim, or one a
 * later record took away, leads nowhere; the addresses outlive a
 * restart through the inventory record. */
static void test_named_by_address(void)
{
    rec r = {0};
    cs_err err;
    char buf[128];
    engine *e = eng_new(&ops, &r, &err);
    node_info *ni;
    json_t *o, *recd;

    feed(e, INV("ray-head", "rack-1"));
    feed(e, INV_ADDRS("gpu-7", "[\"10.0.0.7\", \"gpu-7.ib.local\"]"));
    CHECK_STR(scope_of_dead(e, "10.0.0.7", buf, sizeof buf), "gpu-7");
    eng_free(e);

    e = eng_new(&ops, &r, &err);
    feed(e, INV("ray-head", "rack-1"));
    feed(e, INV_ADDRS("gpu-7", "[\"10.0.0.7\"]"));
    feed(e, INV_ADDRS("gpu-8", "[\"10.0.0.7\"]"));
    CHECK_STR(scope_of_dead(e, "10.0.0.7", buf, sizeof buf), "ray-head");
    eng_free(e);

    e = eng_new(&ops, &r, &err);
    feed(e, INV("ray-head", "rack-1"));
    feed(e, INV_ADDRS("gpu-7", "[\"10.0.0.7\"]"));
    feed(e, INV_ADDRS("gpu-7", "[\"10.0.0.9\"]"));
    CHECK(eng_node_named(e, "default", "10.0.0.7") == NULL);
    CHECK_STR(eng_node_named(e, "default", "10.0.0.9"), "gpu-7");
    /* the record keeps them when a later one leaves them out */
    feed(e, INV("gpu-7", "rack-2"));
    ni = eng_node_info(e, "default", "gpu-7");
    o = json_pack("{s:s}", "rack", "rack-2");
    recd = eng_inventory_record(ni, o);
    CHECK_STR(json_string_value(json_array_get(json_object_get(recd, "addrs"),
                                               0)),
              "10.0.0.9");
    json_decref(o);
    json_decref(recd);
    eng_free(e);

    e = eng_new(&ops, &r, &err);
    feed(e, INV("ray-head", "rack-1"));
    CHECK_INT(eng_restore_hash(e, "cascade:{default}:inventory", "gpu-7",
                               "{\"addrs\":[\"10.0.0.9\"],\"rack\":\"rack-2\"}", &err),
              0);
    CHECK_STR(scope_of_dead(e, "10.0.0.9", buf, sizeof buf), "gpu-7");
    eng_free(e);
}

/* A rank's watchdog timeout, job 7 on g1, in PyTorch 2.4's words. */
#define WD(ts, rank, seq, op)                                                \
    "{\"ts\":\"" ts "\",\"source\":\"app\",\"host\":\"g1\",\"job\":\"7\","   \
    "\"line\":\"[rank" rank "]:[E816 01:45:40.183009389 ProcessGroupNCCL."   \
    "cpp:607] [Rank " rank "] Watchdog caught collective operation "         \
    "timeout: WorkNCCL(SeqNum=" seq ", OpType=" op ", NumelIn=5056, "        \
    "NumelOut=5056, Timeout(ms)=600000) ran for 600026 milliseconds "        \
    "before timing out.\"}"

/* After two watchdog timeouts of job 7 (the second given), the scenario
 * of its incident, or "" for none. */
static void desync_case(const char *second, const char *want)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    json_t *all;

    feed(e, JOB("2026-03-02T08:00:00Z", "7", "RUNNING", "[\"g1\"]"));
    feed(e, WD("2026-03-02T08:10:00Z", "7", "80078", "BROADCAST"));
    feed(e, second);
    feed(e, JOB("2026-03-02T08:11:00Z", "7", "FAILED", "[\"g1\"]"));
    all = eng_incidents(e);
    CHECK_STR(json_array_size(all)
                  ? json_string_value(json_object_get(json_array_get(all, 0),
                                                      "scenario"))
                  : "",
              want);
    json_decref(all);
    eng_free(e);
}

/* Two ranks timing out on one SeqNum in different collectives ran
 * different code (nccl.rank_desync); the same collective, or another
 * SeqNum (a rank behind), is no desync; the first timeout survives a
 * restart in the job's record. */
static void test_watchdog_desync(void)
{
    rec r = {0};
    cs_err err;
    engine *e;
    json_t *inc, *all;

    desync_case(WD("2026-03-02T08:10:01Z", "3", "80078", "ALLREDUCE"),
                "nccl.rank_desync");
    desync_case(WD("2026-03-02T08:10:01Z", "3", "80078", "BROADCAST"), "");
    desync_case(WD("2026-03-02T08:10:01Z", "3", "80077", "ALLREDUCE"), "");
    /* the same rank again in another collective: not two ranks */
    desync_case(WD("2026-03-02T08:10:01Z", "7", "80078", "ALLREDUCE"), "");

    /* a requeue under the same id starts its SeqNums over: the first
     * attempt's timeout is not compared with the second's */
    e = eng_new(&ops, &r, &err);
    feed(e, JOB("2026-03-02T08:00:00Z", "7", "RUNNING", "[\"g1\"]"));
    feed(e, WD("2026-03-02T08:10:00Z", "7", "80078", "BROADCAST"));
    feed(e, JOB("2026-03-02T08:11:00Z", "7", "FAILED", "[\"g1\"]"));
    feed(e, JOB("2026-03-02T08:20:00Z", "7", "RUNNING", "[\"g1\"]"));
    feed(e, WD("2026-03-02T08:30:00Z", "3", "80078", "ALLREDUCE"));
    all = eng_incidents(e);
    for (size_t i = 0; i < json_array_size(all); i++)
        CHECK(strcmp(json_string_value(json_object_get(json_array_get(all, i),
                                                       "scenario")),
                     "nccl.rank_desync") != 0);
    json_decref(all);
    eng_free(e);

    e = eng_new(&ops, &r, &err);
    CHECK_INT(eng_restore_hash(e, "cascade:{default}:jobs", "7",
                               "{\"job\":\"7\",\"nodes\":[\"g1\"],\"state\":"
                               "\"RUNNING\",\"watchdog\":{\"seq\":80078,\"op\":"
                               "\"BROADCAST\",\"rank\":7,\"host\":\"g1\"}}",
                               &err),
              0);
    eng_restore_done(e);
    feed(e, WD("2026-03-02T08:10:01Z", "3", "80078", "ALLREDUCE"));
    inc = only_incident(e);
    CHECK_STR(json_string_value(json_object_get(inc, "scenario")),
              "nccl.rank_desync");
    /* the developer ticket names the two collectives */
    CHECK_STR(json_string_value(json_object_get(
                  json_object_get(json_array_get(json_object_get(inc, "actions"),
                                                 0),
                                  "params"),
                  "detail")),
              "SeqNum 80078: BROADCAST on rank 7, ALLREDUCE on rank 3");
    json_decref(inc);
    eng_free(e);
}

int main(void)
{
    test_single_job_stays_fault();
    test_two_jobs_make_a_crash();
    test_silent_crash_without_node_signal();
    test_idempotent();
    test_restore();
    test_flush_new_actions();
    test_swap_rules();
    test_dependency_chain();
    test_shifting_symptoms();
    test_recover_and_reopen();
    test_resolve_by_completion_and_quiet();
    test_storm();
    test_shifting_after_prune();
    test_clusters_apart();
    test_cluster_window();
    test_prune_jobs_in_slices();
    test_named_node();
    test_named_by_address();
    test_watchdog_desync();
    return check_report();
}
