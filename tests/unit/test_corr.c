/* Correlation rules (`correlations:`): threshold, sequence and group, in
 * event time, with SEC's semantics (fire once, then quiet until the window
 * that fired has passed), and the checks `rules check` makes of them.
 * The rules are bench/rules/peer.yaml (the peers' three correlations). */
#include <stdlib.h>

#include "check.h"
#include "engine/engine.h"
#include "incidents.h"
#include "rules/playbooks.h"

static void nop_zadd(void *c, const char *k, int64_t t, const char *m)
{
    (void)c, (void)k, (void)t, (void)m;
}
static void nop_trim(void *c, const char *k, int64_t b)
{
    (void)c, (void)k, (void)b;
}
/* The longest correlation state written since it was last reset: a
 * storm must not grow one state without bound. */
static size_t longest_cw;

/* Correlation state writes since reset, and how many runs of writes to
 * one hash they made (the store sends a run as one HSET). */
static int cw_writes, cw_runs;
static char cw_last[256];

static void nop_hset(void *c, const char *k, const char *f, const char *v)
{
    (void)c, (void)f;
    if (!strstr(k, ":cw:"))
        return;
    if (strlen(v) > longest_cw)
        longest_cw = strlen(v);
    cw_writes++;
    if (strcmp(k, cw_last))
        cw_runs++;
    snprintf(cw_last, sizeof cw_last, "%s", k);
}
/* Correlation states deleted (their fields) since reset. */
static int cw_dels;

static void nop_hdel(void *c, const char *k, const char *f)
{
    (void)c, (void)f;
    cw_dels += strstr(k, ":cw:") != NULL;
}
static const eng_store_ops ops = {nop_zadd, nop_trim, nop_hset, nop_hdel};

static const char *rules_dir;

static engine *peer_engine(void)
{
    cs_err err;
    engine *e = eng_new(&ops, NULL, &err);
    pb_catalog *c = pb_catalog_new();

    REQUIRE(e != NULL);
    REQUIRE(pb_catalog_load_dir(c, rules_dir, NULL, NULL) == 0);
    REQUIRE(eng_set_catalog(e, c, &err) == 0);
    return e;
}

static void feed(engine *e, const char *line)
{
    sig s;
    cs_err err;

    REQUIRE(sig_parse_json(&s, line, strlen(line), &err) == 0);
    eng_feed(e, &s);
    sig_free(&s);
    eng_flush(e, NULL, NULL);
}

#define TIMEOUT(ts, host, job)                                                 \
    "{\"ts\":\"2024-05-01T" ts "Z\",\"source\":\"app\",\"host\":\"" host       \
    "\",\"job\":\"" job "\",\"line\":\"[rank1]:[E0501 ProcessGroupNCCL.cpp:607]" \
    " [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" \
    "7, OpType=ALLREDUCE) ran for 600100 milliseconds before timing out.\"}"
#define XID(ts, host, code)                                                    \
    "{\"ts\":\"2024-05-01T" ts "Z\",\"source\":\"kernel\",\"host\":\"" host    \
    "\",\"line\":\"[100.0] NVRM: Xid (PCI:0000:3b:00): " code ", pid='<unknown>'" \
    ", name=<unknown>, GPU has fallen off the bus.\"}"
#define CANCEL(ts, host, job)                                                  \
    "{\"ts\":\"2024-05-01T" ts "Z\",\"source\":\"slurm\",\"host\":\"" host     \
    "\",\"line\":\"error: *** JOB " job " ON " host " CANCELLED AT 2024-05-01T" \
    "10:00:00 DUE TO NODE FAILURE ***\"}"
#define LINK(ts, host, state)                                                  \
    "{\"ts\":\"2024-05-01T" ts "Z\",\"source\":\"kernel\",\"host\":\"" host    \
    "\",\"line\":\"[100.0] mlx5_core 0000:29:00.0 mlx5_3: Port: 1 Link " state "\"}"

/* The one incident's evidence count, -1 when there is not exactly one. */
static long only_count(engine *e)
{
    json_t *all = eng_incidents(e);
    long n = -1;

    if (json_array_size(all) == 1)
        n = (long)json_integer_value(json_object_get(
            json_object_get(json_array_get(all, 0), "evidence"), "count"));
    json_decref(all);
    return n;
}

static void test_threshold(void)
{
    engine *e = peer_engine();
    char buf[512];

    feed(e, TIMEOUT("10:00:00", "n1", "7"));
    feed(e, TIMEOUT("10:01:00", "n2", "7"));
    feed(e, TIMEOUT("10:02:00", "n3", "8")); /* another job */
    CHECK_STR(incident_scenarios(e, buf, sizeof buf), "");
    feed(e, TIMEOUT("10:04:59", "n3", "7")); /* third of job 7 in 300 s */
    CHECK_STR(incident_scenarios(e, buf, sizeof buf), "peer.nccl_timeout_burst");
    CHECK_INT(only_count(e), 3);
    /* quiet until 10:05:00 (first + window): this one is swallowed */
    feed(e, TIMEOUT("10:05:00", "n1", "7"));
    CHECK_INT(only_count(e), 3);
    /* three more after the quiet time fold into the open incident */
    feed(e, TIMEOUT("10:06:00", "n1", "7"));
    feed(e, TIMEOUT("10:07:00", "n1", "7"));
    CHECK_INT(only_count(e), 3);
    feed(e, TIMEOUT("10:08:00", "n1", "7"));
    CHECK_INT(only_count(e), 6);
    eng_free(e);

    /* three timeouts spread over more than the window: nothing */
    e = peer_engine();
    feed(e, TIMEOUT("11:00:00", "n1", "9"));
    feed(e, TIMEOUT("11:03:00", "n1", "9"));
    feed(e, TIMEOUT("11:05:01", "n1", "9"));
    CHECK_STR(incident_scenarios(e, buf, sizeof buf), "");
    eng_free(e);
}

static void test_sequence(void)
{
    engine *e = peer_engine();
    char buf[512];

    feed(e, CANCEL("10:00:00", "n1", "5"));  /* a cancel alone */
    feed(e, XID("10:00:00", "n2", "48"));    /* another Xid */
    feed(e, CANCEL("10:00:10", "n2", "6"));
    feed(e, XID("10:01:00", "n3", "79"));
    feed(e, CANCEL("10:02:01", "n3", "7"));  /* 61 s: too late */
    CHECK_STR(incident_scenarios(e, buf, sizeof buf), "");
    /* a second Xid 79 keeps the first one's time: 65 s is too late */
    feed(e, XID("11:00:00", "n4", "79"));
    feed(e, XID("11:00:30", "n4", "79"));
    feed(e, CANCEL("11:01:05", "n4", "8"));
    CHECK_STR(incident_scenarios(e, buf, sizeof buf), "");
    /* the wait ran out and was cleared: this cancel finds nothing */
    feed(e, CANCEL("11:01:06", "n4", "9"));
    CHECK_STR(incident_scenarios(e, buf, sizeof buf), "");
    feed(e, XID("12:00:00", "n5", "79"));
    feed(e, CANCEL("12:00:20", "n6", "10")); /* another node */
    CHECK_STR(incident_scenarios(e, buf, sizeof buf), "");
    feed(e, CANCEL("12:00:50", "n5", "11"));
    CHECK_STR(incident_scenarios(e, buf, sizeof buf), "peer.xid79_job_cancel");
    json_t *all = eng_incidents(e);
    json_t *scope = json_object_get(json_array_get(all, 0), "scope");
    CHECK_STR(json_string_value(json_object_get(scope, "node")), "n5");
    json_t *srcs = json_object_get(json_object_get(json_array_get(all, 0),
                                                   "evidence"), "sources");
    CHECK_INT(json_array_size(srcs), 2); /* kernel and slurm */
    json_decref(all);
    eng_free(e);
}

static void test_group(void)
{
    engine *e = peer_engine();
    char buf[512];

    feed(e, LINK("10:00:00", "n1", "ACTIVE"));
    feed(e, TIMEOUT("10:00:10", "n1", "3"));
    CHECK_STR(incident_scenarios(e, buf, sizeof buf), "");
    feed(e, LINK("10:02:11", "n1", "DOWN")); /* 121 s after: too late */
    CHECK_STR(incident_scenarios(e, buf, sizeof buf), "");
    feed(e, LINK("10:10:00", "n2", "DOWN"));
    feed(e, TIMEOUT("10:11:00", "n3", "4")); /* another node */
    CHECK_STR(incident_scenarios(e, buf, sizeof buf), "");
    feed(e, TIMEOUT("10:11:59", "n2", "4")); /* either order, in 120 s */
    CHECK_STR(incident_scenarios(e, buf, sizeof buf),
              "peer.ib_down_nccl_timeout");
    eng_free(e);
}

/* A timeout of job `job` on host n7 at 10:00:00 plus `ms`. */
static void storm_timeout(engine *e, long ms, int job)
{
    char ts[32], line[512];

    snprintf(ts, sizeof ts, "10:%02ld:%02ld.%03ld", ms / 60000, ms / 1000 % 60,
             ms % 1000);
    snprintf(line, sizeof line,
             "{\"ts\":\"2024-05-01T%sZ\",\"source\":\"app\",\"host\":\"n7\","
             "\"job\":\"%d\",\"line\":\"[rank1]:[E0501 ProcessGroupNCCL.cpp:607]"
             " [Rank 1] Watchdog caught collective operation timeout: "
             "WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran for 600100 "
             "milliseconds before timing out.\"}", ts, job);
    feed(e, line);
}

/* A batch whose signals feed two rules in turn (a timeout: its job's
 * threshold, then its host's group) is written hash by hash, each state
 * once: two runs, not one write command per state. */
static void test_save_grouped(void)
{
    engine *e = peer_engine();
    char line[512];
    cs_err err;
    sig s;

    for (int i = 0; i < 50; i++) {
        snprintf(line, sizeof line,
                 "{\"ts\":\"2024-05-01T10:00:%02dZ\",\"source\":\"app\","
                 "\"host\":\"n%d\",\"job\":\"%d\",\"line\":\"[rank1]:[E0501 "
                 "ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective "
                 "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran "
                 "for 600100 milliseconds before timing out.\"}",
                 i, i % 10, 100 + i);
        REQUIRE(sig_parse_json(&s, line, strlen(line), &err) == 0);
        eng_feed(e, &s); /* one batch: no flush in between */
        sig_free(&s);
    }
    cw_writes = cw_runs = 0;
    cw_last[0] = '\0';
    eng_flush(e, NULL, NULL);
    CHECK_INT(cw_writes, 60); /* 50 jobs' thresholds, 10 hosts' groups */
    CHECK_INT(cw_runs, 2);
    eng_free(e);

    /* 40 clusters, two jobs on one host each: 80 hashes. The first 32
     * (16 clusters) are grouped; the rest go as they changed (threshold,
     * group, threshold), and every state is still written once. */
    e = peer_engine();
    for (int i = 0; i < 80; i++) {
        snprintf(line, sizeof line,
                 "{\"ts\":\"2024-05-01T10:01:%02dZ\",\"source\":\"app\","
                 "\"cluster\":\"c%d\",\"host\":\"n1\",\"job\":\"%d\","
                 "\"line\":\"[rank1]:[E0501 ProcessGroupNCCL.cpp:607] [Rank 1] "
                 "Watchdog caught collective operation timeout: WorkNCCL("
                 "SeqNum=7, OpType=ALLREDUCE) ran for 600100 milliseconds "
                 "before timing out.\"}",
                 i / 2, i / 2, 100 + i);
        REQUIRE(sig_parse_json(&s, line, strlen(line), &err) == 0);
        eng_feed(e, &s);
        sig_free(&s);
    }
    cw_writes = cw_runs = 0;
    cw_last[0] = '\0';
    eng_flush(e, NULL, NULL);
    CHECK_INT(cw_writes, 120);
    CHECK_INT(cw_runs, 16 * 2 + 24 * 3);
    eng_free(e);
}

/* 1000 timeouts on one host in 100 s, each of its own job: the group's
 * state stays a few events long, and the link going down still completes
 * it, counting every timeout and dating the incident from the first. */
static void test_group_storm(void)
{
    engine *e = peer_engine();
    char buf[512];

    longest_cw = 0;
    for (int i = 0; i < 1000; i++)
        storm_timeout(e, i * 100, 1000 + i);
    CHECK_STR(incident_scenarios(e, buf, sizeof buf), "");
    CHECK(longest_cw > 0);
    CHECK(longest_cw < 200); /* 1000 held whole would be 23 000 bytes */
    feed(e, LINK("10:01:50", "n7", "DOWN"));
    CHECK_STR(incident_scenarios(e, buf, sizeof buf),
              "peer.ib_down_nccl_timeout");
    CHECK_INT(only_count(e), 1001);
    json_t *all = eng_incidents(e);
    json_t *first = json_object_get(json_object_get(json_array_get(all, 0),
                                                    "evidence"), "first");
    CHECK_STR(json_string_value(first), "2024-05-01T10:00:00.000Z");
    json_decref(all);
    /* Quiet until the first timeout's time plus the window (10:02:00),
     * not the first of the few it still held: a pair after that fires. */
    storm_timeout(e, 150000, 5000);                   /* 10:02:30 */
    feed(e, LINK("10:02:31", "n7", "DOWN"));
    CHECK_INT(only_count(e), 1003);
    eng_free(e);

    /* The storm left the window: a link down 3 minutes later finds only
     * the timeouts of its last 120 s, none of them let go long ago. */
    e = peer_engine();
    for (int i = 0; i < 100; i++)
        storm_timeout(e, i * 100, 2000 + i);    /* 10:00:00 - 10:00:09.9 */
    storm_timeout(e, 100000, 3000);             /* 10:01:40 */
    feed(e, LINK("10:03:30", "n7", "DOWN"));  /* 110 s after the last */
    CHECK_INT(only_count(e), 2);
    eng_free(e);
}

/* What `rules check` says of a correlation that cannot work. */
static char problems[2048];

static void collect(void *arg, const char *where, const char *msg)
{
    size_t n = strlen(problems);
    (void)arg;
    snprintf(problems + n, sizeof problems - n, "%s: %s\n", where, msg);
}

static int check_text(const char *text)
{
    pb_catalog *c = pb_catalog_new();
    int n;

    problems[0] = '\0';
    n = pb_catalog_add(c, "t.yaml", text, strlen(text), collect, NULL);
    if (n == 0)
        n = pb_catalog_link(c, collect, NULL);
    pb_catalog_free(c);
    return n;
}

#define HEAD                                                                   \
    "family: t\n"                                                              \
    "scenarios:\n"                                                             \
    "  - {id: t.burst, what: w, todo: t, actions: []}\n"                       \
    "signatures:\n"                                                            \
    "  - {id: t.a, source: app, fact: event, match: 'A', examples: [{line: A, fact: event}]}\n" \
    "  - {id: t.b, source: app, fact: event, match: 'B', examples: [{line: B, fact: event}]}\n" \
    "correlations:\n"

/* States with nothing left in their window go, a slice at each signal
 * once a pass starts (a minute of event time after the last one), not
 * all at the signal that starts it; states still in their window stay. */
static void test_prune_in_slices(void)
{
    engine *e = peer_engine();
    int old;

    for (int j = 0; j < 1000; j++)
        storm_timeout(e, 0, 1000 + j); /* 10:00:00: a state per job */
    cw_dels = 0;
    storm_timeout(e, 20 * 60000, 5000); /* 10:20: a pass starts */
    CHECK(cw_dels > 0 && cw_dels <= 8);
    for (int j = 1; j < 600; j++)
        storm_timeout(e, 20 * 60000, 5000 + j);
    old = cw_dels;
    CHECK(old >= 1000); /* every job's state of 10:00 */
    for (int j = 0; j < 1000; j++) /* 10:22, a pass over the new ones */
        storm_timeout(e, 22 * 60000, 5000 + j % 600);
    CHECK_INT(cw_dels, old); /* within their window: kept */
    eng_free(e);
}

static void test_checks(void)
{
    CHECK_INT(check_text(HEAD "  - {scenario: t.burst, kind: threshold, by: job, "
                         "events: [t.a], count: 3, window: 5m}\n"), 0);
    CHECK_INT(check_text(HEAD "  - {scenario: t.burst, kind: group, by: host, "
                         "events: [t.a, t.b], window: 2m}\n"), 0);
    CHECK_INT(check_text(HEAD "  - {scenario: t.burst, kind: threshold, by: job, "
                         "events: [t.a, t.b], window: 5m}\n"), 2);
    CHECK(strstr(problems, "t.yaml:8:5: correlation t.burst: a threshold "
                           "needs count: 2 or more") != NULL);
    CHECK(strstr(problems, "a threshold counts one event") != NULL);
    CHECK_INT(check_text(HEAD "  - {scenario: t.burst, kind: sequence, by: rack, "
                         "events: [t.a], window: 5 minutes}\n"), 3);
    CHECK(strstr(problems, "by must be host or job") != NULL);
    CHECK(strstr(problems, "window must be a duration") != NULL);
    CHECK(strstr(problems, "a sequence needs two events or more") != NULL);
    CHECK_INT(check_text(HEAD "  - {scenario: t.nope, kind: group, by: host, "
                         "events: [t.a, t.zzz], window: 2m}\n"), 2);
    CHECK(strstr(problems, "t.yaml:8:5: correlation: scenario 't.nope' is "
                           "not in the catalog") != NULL);
    CHECK(strstr(problems, "event 't.zzz' is not a signature") != NULL);
}

/* `escalates:` names node scenarios of the catalog, other than itself. */
static void test_escalates_checks(void)
{
#define ESC(a, b)                                                              \
    "family: t\n"                                                             \
    "scenarios:\n"                                                            \
    "  - {id: t.worse, node_level: true, what: w, todo: t, actions: [], "      \
    "escalates: [" a "]}\n"                                                   \
    "  - {id: t.bad, node_level: " b ", what: w, todo: t, actions: []}\n"

    CHECK_INT(check_text(ESC("t.bad", "true")), 0);
    CHECK_INT(check_text(ESC("t.bad", "false")), 1);
    CHECK(!strncmp(problems, "t.yaml:3:", 9)); /* the list's place */
    CHECK(strstr(problems, "scenario t.worse: escalates 't.bad', "
                           "but both must be node_level") != NULL);
    CHECK_INT(check_text(ESC("t.gone, t.worse", "true")), 2);
    CHECK(strstr(problems, "escalates 't.gone', which is not in the catalog"));
    CHECK(strstr(problems, "escalates 't.worse', itself"));
    CHECK_INT(check_text(ESC("nodot", "true")), 1);
    CHECK(strstr(problems, "escalates: 'nodot' is not a scenario id"));
#undef ESC
}

int main(int argc, char **argv)
{
    rules_dir = argc > 1 ? argv[1] : "bench/rules";
    test_escalates_checks();
    test_threshold();
    test_sequence();
    test_group();
    test_group_storm();
    test_prune_in_slices();
    test_save_grouped();
    test_checks();
    return check_report();
}
