/* The engine's state layer, driven directly: windows kept sorted and
 * trimmed, the signals seen pruned at the set's growth, text cut on a
 * character boundary, a reset. */
#include <stdlib.h>

#include "check.h"
#include "core/ts.h"
#include "engine_fixture.h"
#include "engine/engine.h"
#include "engine/state.h"

/* The seen-id set is pruned past SEEN_FLOOR ids, a few ids at each new
 * one: ids older than the horizon go, a redelivery of one within it is
 * still known once the pass is over. */
static int oom_at(engine *e, const char *hhmm, int n)
{
    char line[400];

    snprintf(line, sizeof line,
             "{\"cluster\":\"a\",\"ts\":\"2026-03-02T%s:00Z\",\"source\":"
             "\"app\",\"host\":\"h%d\",\"line\":\"torch.OutOfMemoryError: "
             "CUDA out of memory. Tried to allocate %d.00 GiB.\"}",
             hhmm, (n & 1023), n);
    return feed(e, line);
}

static void test_seen_prune(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    int zadd;

    for (int i = 0; i < 40000; i++)
        oom_at(e, "08:00", i); /* stale once the clock is past 10:00 */
    oom_at(e, "10:30", -1);    /* B: within the horizon throughout */
    for (int i = 0; i < 60000; i++)
        oom_at(e, "10:30", i); /* past 65536 ids: the prune runs */
    CHECK_INT(r.zadd, 100001);
    zadd = r.zadd;
    CHECK_INT(oom_at(e, "10:30", -1), 0); /* both still known as seen */
    CHECK_INT(oom_at(e, "10:30", 59999), 0);
    CHECK_INT(r.zadd, zadd);
    eng_free(e);
}

/* 1 when w's entries are in time order. */
static int win_sorted(const node_win *w)
{
    for (size_t i = 1; i < w->n; i++)
        if (w->v[i - 1].ts > w->v[i].ts)
            return 0;
    return 1;
}

/* A window keeps its entries in time order, a late one in its place and
 * arrival order among equal times; the horizon trims a prefix; the same
 * signal's fact is found among the entries of its time. */
static void test_window_order(void)
{
    node_win w = {0};
    static const int64_t at[] = {10, 30, 20, 30, 5, 40};
    entry *en;

    for (uint64_t i = 0; i < 6; i++) {
        en = eng_win_insert(&w, at[i]);
        memset(en, 0, sizeof *en);
        en->ts = at[i];
        en->sig = i + 1;
        en->kind = FACT_CUDA_OOM;
    }
    CHECK_INT(w.n, 6);
    CHECK(win_sorted(&w));
    CHECK_INT(w.v[0].sig, 5);                       /* ts 5, the latest late */
    CHECK(w.v[3].sig == 2 && w.v[4].sig == 4);       /* the two at 30, as came */
    CHECK(eng_win_has(&w, 20, 3, FACT_CUDA_OOM, ""));
    CHECK(eng_win_has(&w, 20, 3, FACT_CUDA_OOM, NULL));
    CHECK(!eng_win_has(&w, 20, 3, FACT_CUDA_OOM, "j1")); /* another job's */
    CHECK(!eng_win_has(&w, 21, 3, FACT_CUDA_OOM, NULL)); /* not at its time */
    CHECK(!eng_win_has(&w, 20, 3, FACT_XID, NULL));
    eng_win_trim(&w, 20);
    CHECK_INT(w.n, 4);
    CHECK_INT(w.v[0].sig, 3);
    eng_win_trim(&w, 41);
    CHECK_INT(w.n, 0);
    for (uint64_t i = 0; i < 1000; i++) { /* slides down into the room */
        en = eng_win_insert(&w, (int64_t)i + 100);
        memset(en, 0, sizeof *en);
        en->ts = (int64_t)i + 100;
        eng_win_trim(&w, (int64_t)i + 100 - 10);
    }
    CHECK_INT(w.n, 11);
    CHECK(win_sorted(&w) && w.v[0].ts == 1089 && w.v[10].ts == 1099);
    CHECK(w.memcap <= 32); /* trims made room: no growth past need */
    free(w.mem);
}

/* One chatty host: 100k OOMs, about 9 a second over three hours, one
 * window. It holds exactly those within the 2 h horizon of the clock, in
 * time order, and a late one goes to its place. (An addition used to copy
 * and scan the whole window: this took 17.7 s.) */
static void test_chatty_window(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    char line[400];
    int in_horizon = 0;
    node_win *w;

    for (int i = 0; i < 100000; i++) {
        int s = 8 * 3600 + (int)((long)i * 10800 / 100000);
        snprintf(line, sizeof line,
                 "{\"cluster\":\"a\",\"ts\":\"2026-03-02T%02d:%02d:%02dZ\","
                 "\"source\":\"app\",\"host\":\"h0\",\"line\":\"torch."
                 "OutOfMemoryError: CUDA out of memory. Tried to allocate %d.00 "
                 "GiB.\"}", s / 3600, s / 60 % 60, s % 60, i);
        feed(e, line);
        in_horizon += s >= 9 * 3600 - 1; /* the last at 10:59:59 */
    }
    w = eng_win_find(e, "a", "h0");
    CHECK(w != NULL);
    if (!w)
        goto out;
    CHECK_INT(w->n, in_horizon);
    CHECK(win_sorted(w));
    feed(e, "{\"cluster\":\"a\",\"ts\":\"2026-03-02T10:00:00Z\",\"source\":"
            "\"app\",\"host\":\"h0\",\"line\":\"torch.OutOfMemoryError: "
            "CUDA out of memory. Tried to allocate 7.50 GiB.\"}");
    CHECK_INT(w->n, in_horizon + 1);
    CHECK(win_sorted(w));
out:
    eng_free(e);
}

/* A reset (a rebalance) drops every cluster's state, including the one
 * the engine looked up last: the same signal fed again after it is news
 * to a fresh state, not a redelivery found in the dropped one. */
/* Every incident and state record written must read back as JSON. */
static int json_bad, json_written;

static void h_put_json(void *ctx, const char *key, const char *f,
                       const char *v)
{
    json_error_t je;
    json_t *o;

    (void)ctx;
    (void)f;
    if (!strstr(key, ":state") && !strstr(key, ":incidents"))
        return;
    json_written++;
    if (!(o = json_loads(v, 0, &je)))
        json_bad++;
    json_decref(o);
}

static const eng_store_ops json_ops = {w_add, w_trim, h_put_json, h_del};

/* Text cut to a fixed field (an excerpt, a job id, a name in a summary)
 * stays whole characters: half of one made the incident's state record
 * fail to encode, and the correlator abort on that one line, again after
 * every restart. */
static void test_cut_utf8(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&json_ops, &r, &err);
    char line[4096], jobid[256] = "", name[256] = "";
    const char *oom = "torch.OutOfMemoryError: CUDA out of memory. ";
    size_t o;

    /* 2-, 3- and 4-byte characters, each cut at every offset in turn */
    for (int shift = 0; shift < 4; shift++) {
        o = (size_t)snprintf(line, sizeof line,
                             "{\"ts\":\"2026-03-02T08:0%d:00Z\",\"source\":"
                             "\"app\",\"host\":\"g%d\",\"job\":\"j%d\","
                             "\"line\":\"%.*s%s", shift, shift, shift, shift,
                             "xyz", oom);
        for (int i = 0; i < 120; i++)
            o += (size_t)snprintf(line + o, sizeof line - o, "%s",
                                  i % 3 == 0 ? "\xc3\xa9" : i % 3 == 1 ? "\xe3\x82\xb8"
                                                                : "\xf0\x9f\x98\x80");
        snprintf(line + o, sizeof line - o, "\"}");
        feed(e, line);
    }
    /* a job whose id and name are cut in the text that resolves its
     * incident ("job ID of NAME completed") */
    for (int i = 0; i < 40; i++) {
        strcat(jobid, "\xe3\x82\xb8");
        strcat(name, "\xe3\x82\xb8");
    }
    snprintf(line, sizeof line,
             "{\"ts\":\"2026-03-02T08:10:00Z\",\"source\":\"job\",\"job\":"
             "\"xy%s\",\"job_name\":\"%s\",\"state\":\"RUNNING\",\"nodes\":"
             "[\"g9\"]}", jobid, name);
    feed(e, line);
    snprintf(line, sizeof line,
             "{\"ts\":\"2026-03-02T08:11:00Z\",\"source\":\"app\",\"host\":"
             "\"g9\",\"job\":\"xy%s\",\"line\":\"%s\"}", jobid, oom);
    feed(e, line);
    eng_flush(e, NULL, NULL);
    snprintf(line, sizeof line,
             "{\"ts\":\"2026-03-02T08:12:00Z\",\"source\":\"job\",\"job\":"
             "\"xy%s\",\"job_name\":\"%s\",\"state\":\"COMPLETED\","
             "\"nodes\":[\"g9\"]}", jobid, name);
    feed(e, line);
    eng_flush(e, NULL, NULL);
    CHECK(eng_incident_count(e) >= 5);
    CHECK(json_written >= 5);
    CHECK_INT(json_bad, 0);
    eng_free(e);
}

static void test_reset(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);

    feed(e, XID79("2026-03-02T08:10:00Z", "g1"));
    CHECK_INT(eng_incident_count(e), 1);
    CHECK_INT(eng_reset(e, &err), 0);
    CHECK_INT(eng_incident_count(e), 0);
    feed(e, XID79("2026-03-02T08:10:00Z", "g1"));
    CHECK_INT(eng_incident_count(e), 1);
    eng_free(e);
}

/* A signal from the future is refused and moves no clock: before, one
 * alert three hours ahead made every real signal after it "late" until a
 * restart, and a year-9999 stamp did it for good. */
static void test_future(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    char why[256];
    sig s;
    const char *y9999 = XID79("9999-12-31T23:59:59Z", "n2");
    int64_t wall;

    ts_parse_rfc3339("2026-03-02T08:00:00Z", &wall);
    CHECK_INT(feed(e, XID79("2026-03-02T11:00:00Z", "n1")), 1); /* no bound yet */
    eng_free(e);
    e = eng_new(&ops, &r, &err);
    eng_tick(e, wall); /* live: the wall clock bounds event times */
    CHECK_INT(feed(e, XID79("2026-03-02T11:00:00Z", "n1")), ENG_EARLY);
    CHECK_INT(feed(e, y9999), ENG_EARLY);
    CHECK_INT(eng_clock(e, "default"), 0); /* nothing moved */
    CHECK_INT(feed(e, XID79("2026-03-02T08:09:00Z", "n3")), 1); /* within skew */
    CHECK_INT(feed(e, XID79("2026-03-02T08:00:00Z", "n4")), 1); /* not late */
    CHECK(sig_parse_json(&s, y9999, strlen(y9999), &err) == 0);
    eng_refusal_reason(e, &s, why, sizeof why);
    CHECK(strstr(why, "future: event time 9999-12-31T23:59:59.000Z is ") == why);
    CHECK(strstr(why, "ahead of the wall clock (2026-03-02T08:00:00.000Z); the "
                      "allowed skew is 10 min") != NULL);
    sig_free(&s);
    eng_free(e);
}

/* Distinct clusters are bounded: 50,000 cluster labels took one process
 * from 20 MB to 1.55 GB. Past the limit a new cluster's signal is refused
 * with the reason; the clusters already tracked go on. */
static void test_cluster_limit(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    char line[512], why[256];
    sig s;

    eng_set_max_clusters(e, 3);
    for (int i = 0; i < 4; i++) {
        snprintf(line, sizeof line,
                 "{\"ts\":\"2026-03-02T08:00:0%dZ\",\"source\":\"kernel\","
                 "\"cluster\":\"c%d\",\"host\":\"n1\",\"line\":\"NVRM: Xid "
                 "(PCI:0000:3a:00): 79, pid=1, name=python3, GPU has fallen off "
                 "the bus.\"}", i, i);
        CHECK_INT(feed(e, line), i < 3 ? 1 : ENG_FULL);
    }
    CHECK(sig_parse_json(&s, line, strlen(line), &err) == 0);
    eng_refusal_reason(e, &s, why, sizeof why);
    CHECK_STR(why, "cluster limit: 3 clusters are tracked, the most this "
                   "correlator takes (correlate.max_clusters); cluster c3 is "
                   "not one of them");
    sig_free(&s);
    CHECK_INT(feed(e, XID79("2026-03-02T08:00:09Z", "n2")), ENG_FULL); /* default */
    CHECK_INT(eng_clock(e, "c3"), 0);
    /* a tracked cluster goes on */
    CHECK_INT(feed(e, "{\"ts\":\"2026-03-02T08:00:09Z\",\"source\":\"kernel\","
                      "\"cluster\":\"c1\",\"host\":\"n5\",\"line\":\"NVRM: Xid "
                      "(PCI:0000:3a:00): 79, pid=1, name=python3, GPU has fallen "
                      "off the bus.\"}"), 1);
    eng_free(e);
}

/* A node's inventory: what a record leaves out keeps its value (an
 * operator's record naming only a maintenance window leaves the rack and
 * the canary flag alone; the collectors' periodic records leave the
 * window alone), null clears the window, and the record stored for a
 * restart carries all of it. */
static void test_inventory_fields(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    node_info *ni;
    json_t *o, *stored;

    feed(e, "{\"ts\":\"2026-03-02T07:00:00Z\",\"source\":\"inventory\","
            "\"host\":\"g1\",\"rack\":\"r1\",\"nvlink_domain\":\"nvl-1\","
            "\"canary\":true}");
    feed(e, "{\"ts\":\"2026-03-02T07:01:00Z\",\"source\":\"inventory\","
            "\"host\":\"g1\",\"maintenance\":{\"id\":\"CHG-1\",\"start\":"
            "\"2026-03-02T08:00:00Z\",\"end\":\"2026-03-02T10:00:00Z\"}}");
    ni = eng_node_info(e, "default", "g1");
    CHECK(ni != NULL);
    if (!ni)
        goto out;
    CHECK_STR(ni->rack, "r1");
    CHECK_STR(ni->nvlink, "nvl-1");
    CHECK_INT(ni->canary, 1);
    CHECK_STR(ni->maint_id, "CHG-1");
    CHECK(ni->maint_end > ni->maint_start);
    /* a collector's periodic record: the window stays */
    feed(e, "{\"ts\":\"2026-03-02T07:02:00Z\",\"source\":\"inventory\","
            "\"host\":\"g1\",\"rack\":\"r1\",\"gpus\":8,\"canary\":true}");
    CHECK_STR(ni->maint_id, "CHG-1");
    o = json_pack("{s:s, s:i}", "host", "g1", "gpus", 8);
    stored = eng_inventory_record(ni, o);
    CHECK_STR(json_string_value(json_object_get(stored, "rack")), "r1");
    CHECK(json_is_true(json_object_get(stored, "canary")));
    CHECK_STR(json_string_value(json_object_get(
                  json_object_get(stored, "maintenance"), "id")), "CHG-1");
    json_decref(stored);
    json_decref(o);
    /* null calls it off */
    feed(e, "{\"ts\":\"2026-03-02T07:03:00Z\",\"source\":\"inventory\","
            "\"host\":\"g1\",\"maintenance\":null}");
    CHECK_INT(ni->maint_end, 0);
    CHECK_INT(ni->canary, 1);
out:
    eng_free(e);
}

/* What a flush published: "scenario status" per incident, in order. */
typedef struct pubs {
    char text[512];
    int n;
} pubs;

static void note(void *arg, const char *id, json_t *inc, const char *text,
                 json_t *acts)
{
    pubs *p = arg;
    size_t off = strlen(p->text);

    (void)id, (void)text, (void)acts;
    snprintf(p->text + off, sizeof p->text - off, "%s%s %s", off ? ", " : "",
             json_string_value(json_object_get(inc, "scenario")),
             json_string_value(json_object_get(inc, "status")));
    p->n++;
}

#define PENDING_GPU(ts, id) \
    "{\"ts\":\"" ts "\",\"source\":\"k8s\",\"job\":\"" id "\",\"event\":" \
    "{\"reason\":\"FailedScheduling\",\"message\":\"0/4 nodes are " \
    "available: 4 Insufficient nvidia.com/gpu.\"}}"

/* A flush publishes what changed since the last, in the order the
 * incidents opened, and what quiet resolved once its time came; nothing
 * when nothing did (it no longer walks every open incident for that). */
static void test_flush_changed(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    pubs p = {0};

    feed(e, PENDING_GPU("2026-03-02T08:00:00Z", "601"));
    feed(e, PENDING_GPU("2026-03-02T08:01:00Z", "602"));
    feed(e, XID79("2026-03-02T08:02:00Z", "gpu-090"));
    eng_flush(e, note, &p);
    CHECK_STR(p.text, "sched.capacity_exhausted open, "
                      "sched.capacity_exhausted open, hw.gpu_off_bus open");
    memset(&p, 0, sizeof p);
    eng_flush(e, note, &p);
    CHECK_INT(p.n, 0);
    /* the later one changes first: still published in opening order */
    feed(e, XID79("2026-03-02T08:03:00Z", "gpu-090"));
    feed(e, PENDING_GPU("2026-03-02T08:04:00Z", "601"));
    eng_flush(e, note, &p);
    CHECK_STR(p.text, "sched.capacity_exhausted open, hw.gpu_off_bus open");
    /* 40 min of quiet for the waits (a node's fault stays open) */
    memset(&p, 0, sizeof p);
    feed(e, XID79("2026-03-02T08:50:00Z", "gpu-091"));
    eng_flush(e, note, &p);
    CHECK_STR(p.text, "sched.capacity_exhausted resolved, "
                      "sched.capacity_exhausted resolved, hw.gpu_off_bus open");
    memset(&p, 0, sizeof p);
    eng_flush(e, note, &p);
    CHECK_INT(p.n, 0);
    eng_free(e);
}

int main(void)
{
    test_flush_changed();
    test_inventory_fields();
    test_future();
    test_cluster_limit();
    test_reset();
    test_cut_utf8();
    test_seen_prune();
    test_window_order();
    test_chatty_window();
    return check_report();
}
