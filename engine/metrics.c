/* Metric samples: series of gauges and counters, and the scenarios that
 * only numbers show (SCENARIOS.md; thresholds from seeds 000, 002, 004):
 *
 * - job.stalled / nccl.hang_busy_wait: a running job's step stopped moving
 *   for STALL_AFTER of event time. The GPUs of its nodes then say why:
 *   busy but at idle power is a collective busy-waiting (seed 004's table),
 *   idle is a deadlock or I/O stall, busy at full power means the job works
 *   and only its progress signal is missing.
 * - net.rdma_degraded: RDMA retransmits and ACK timeouts both increasing
 *   on one device for RDMA_SUSTAIN. Counters are read as increases between
 *   samples, never as values: a large but constant counter is history.
 * - thermal.straggler: one node of a multi-node job has a GPU at GPU_HOT
 *   while the job slows down (step time up, or the node's SM clock down)
 *   and its other nodes are not hot.
 * - thermal.fleet_throttle: RACK_HOSTS or more hosts of one rack hot (a GPU
 *   at RACK_HOT, or a thermal-throttle alert) within RACK_WINDOW: cooling,
 *   one incident for the rack.
 *
 * Only the metrics a rule reads get a series (eng_metric_kept()). A series keeps its
 * last sample and what the rules need (extremes of a gauge, the start of a
 * counter's current run of increases). It is stored whole after every
 * sample, so a restarted engine goes on from it; a sample not newer than
 * the series' last is a redelivery and changes nothing. The step counter
 * (tb_step) is no series: it is the job's progress. Part of the engine
 * (a detector: engine/detect.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/mem.h"
#include "core/str.h"
#include "engine/detect.h"
#include "engine/faults.h"
#include "engine/series.h"
#include "engine/state.h"

#define STALL_AFTER (30 * TS_MIN) /* SCENARIOS.md: "no progress for 30+ min" */
#define RDMA_SUSTAIN (5 * TS_MIN) /* seed 004: "any sustained > 0" */
#define GPU_HOT 92.0    /* SCENARIOS.md thermal.straggler */
#define RACK_HOT 85.0   /* SCENARIOS.md thermal.fleet_throttle */
#define RACK_HOSTS 3
#define RACK_WINDOW (15 * TS_MIN)
#define SLOWER 1.15     /* step time 15% over the job's best */
#define CLOCK_DOWN 0.9  /* SM clock 10% under the GPU's peak */
#define ECC_CE_RISE 10  /* correctable ECC errors per WINDOW on one GPU */
/* Seed 004: a flat scrape duration for 5 min is a hung collection loop; a
 * GPU under load never holds the same wattage for long. Thirty minutes of
 * an unchanged value on a host with a job is ghost data. */
#define GHOST_AFTER (30 * TS_MIN)
#define COST_AFTER TS_HOUR    /* ... "for an hour" */
#define ALLOC_IDLE (30 * TS_MIN) /* idle this long while another team waits */
#define INPUT_AFTER (10 * TS_MIN) /* idle GPUs while the job still moves */
#define CPU_SATURATED 90.0    /* % host CPU */
#define IO_SATURATED 50.0     /* % of time all tasks stalled on I/O */
#define GAP_AFTER (10 * TS_MIN) /* a host silent this long while its job runs */
#define LEAK_SPAN (30 * TS_MIN) /* seed 004: "gradual ramp -> memory leak" */
#define LEAK_GROWTH 1.2       /* ... by a fifth at least */
#define CKPT_OOM (15 * TS_MIN) /* a host OOM this soon after a checkpoint save */
#define REGRESS 1.10          /* SCENARIOS.md: "> 10% below steady state" */
#define REGRESS_SAMPLES 3     /* slow samples in a row: not one spike */
#define THERMAL_SKEW 5.0      /* C: one node this much hotter than the coolest */
#define REGRESS_CKPT (5 * TS_MIN) /* step times this close to a save are
                                   * checkpoint steps */

/* ---- progress and stalls --------------------------------------------- */

static void schedule(engine *e, int64_t at)
{
    if (!e->next_check || at < e->next_check)
        e->next_check = at;
}

static int64_t stall_due(const job *j)
{
    return j->stall_check ? j->stall_check : j->progress_ts + STALL_AFTER;
}

static int watched(const job *j)
{
    return j->progress_ts && !j->incident[0] && strcmp(j->state, "RUNNING") == 0;
}

static int eng_progress(engine *e, const char *cluster, const char *jobid, int64_t ts,
                 double step)
{
    job *j = eng_job_of(e, cluster, jobid);

    if (!j || ts <= j->progress_ts)
        return 0;
    if (!j->progress_ts || step != j->step) {
        j->step = step; /* a lower step is a restart from a checkpoint */
        j->progress_ts = ts;
        j->stale_ts = 0;
        j->stall_check = 0;
    } else if (ts > j->stale_ts) {
        j->stale_ts = ts;
    } else {
        return 0;
    }
    eng_persist_progress(e, j);
    if (watched(j))
        schedule(e, stall_due(j));
    return 1;
}

/* A new attempt of a job: its progress starts over. */
static void eng_job_started(engine *e, job *j)
{
    if (!j->progress_ts && !j->stall_check)
        return; /* nothing to forget */
    j->step = 0;
    j->progress_ts = j->stale_ts = j->stall_check = 0;
    eng_persist_progress(e, j);
}

/* What the GPUs of a job's nodes did since its last progress. */

/* A synthetic signal for a decision made by a timer: its id and time come
 * from the job and the progress that stopped, so the incident is the same
 * whenever (and after whichever restart) the timer fires. */
static void timer_sig(sig *s, const job *j, int64_t ts)
{
    uint64_t h = HASH_FNV_SEED;

    memset(s, 0, sizeof *s);
    h = hash_fnv1a(h, "stall", 6);
    h = hash_fnv1a(h, j->id, strlen(j->id) + 1);
    h = hash_fnv1a(h, &j->progress_ts, sizeof j->progress_ts);
    s->id = h;
    s->ts = ts;
    s->source = SRC_METRIC;
    s->cluster = j->cluster;
    s->rank = -1;
}

static int recent_checkpoint(engine *e, const char *cluster, const char *host,
                             const char *jobid, int64_t at, int64_t span);

/* The job's node whose retransmit counter burst close to where its
 * progress stopped (seed 004: "retransmit spike before hang"), or NULL.
 * TCP retransmits near a checkpoint save are NFS writing (seed 004). */
static const char *network_trigger(engine *e, const job *j)
{
    const char *best = NULL;
    int64_t best_ts = 0;
    size_t pos = 0;
    const char *k;
    void *v;

    while (strmap_next(e->series, &pos, &k, &v)) {
        const series *se = v;
        int tcp = strcmp(se->name, M_TCP_RETX) == 0;
        if ((!tcp && strcmp(se->name, M_RETX)) || !se->burst ||
            se->burst < j->progress_ts - BURST_BEFORE ||
            se->burst > j->progress_ts + STALL_RECHECK ||
            strcmp(se->cluster, j->cluster))
            continue;
        if (!eng_ran_on(j, se->host) ||
            (tcp && recent_checkpoint(e, j->cluster, se->host, j->id,
                                      se->burst, BURST_BEFORE)))
            continue;
        if (!best || se->burst < best_ts ||
            (se->burst == best_ts && strcmp(se->host, best) < 0)) {
            best = se->host;
            best_ts = se->burst;
        }
    }
    return best;
}

static void stall_eval(engine *e, job *j, int64_t now)
{
    gpu_census c = eng_census(e, j, j->progress_ts);
    const char *scen, *where = json_string_value(json_array_get(j->nodes, 0));
    const char *net;
    fact f;
    sig s;

    if (c.working > 0 && c.working >= c.busy_wait + c.idle)
        scen = NULL; /* computing: only the progress signal is missing */
    else if (c.busy_wait + c.idle > 0)
        scen = c.busy_wait > c.idle ? "nccl.hang_busy_wait" : "job.stalled";
    else if (j->stale_ts >= j->progress_ts + STALL_AFTER)
        scen = "job.stalled"; /* the step repeats; no GPU telemetry */
    else
        scen = NULL; /* nothing says it stopped: wait for evidence */
    /* Busy-waiting after a retransmit burst on one of its nodes: a
     * network event stalled the collective; that node is the suspect. */
    if (scen && !strcmp(scen, "nccl.hang_busy_wait") &&
        pb_find(e->cat, "nccl.hang_network") && (net = network_trigger(e, j))) {
        scen = "nccl.hang_network";
        where = net;
    }
    if (!scen || !pb_find(e->cat, scen)) {
        j->stall_check = now + STALL_RECHECK;
        eng_persist_progress(e, j);
        return;
    }
    timer_sig(&s, j, j->progress_ts + STALL_AFTER);
    eng_rule_fact(&f, FACT_JOB_FAULT, scen, where, j->id);
    snprintf(f.excerpt, sizeof f.excerpt,
             "no progress past step %.0f for %d min; GPUs busy-waiting %d, "
             "idle %d, working %d", j->step, (int)(STALL_AFTER / TS_MIN),
             c.busy_wait, c.idle, c.working);
    eng_on_job_fault(e, &s, &f);
    incident *inc = strmap_get(eng_cs(e, j->cluster)->open_job, j->id);
    if (inc && inc->opened == s.ts) {
        inc->root_ts = inc->first = j->progress_ts;
        eng_dirty(inc);
    }
}

static void eng_timers_rearm(engine *e)
{
    eng_iter it = {0};
    job *j;

    e->next_check = 0;
    while (eng_next_job(e, &it, &j))
        if (watched(j))
            schedule(e, stall_due(j));
}

static void eng_timers(engine *e)
{
    int64_t high = e->live_clock > e->high ? e->live_clock : e->high;
    eng_iter it = {0};
    job *j;

    if (!e->next_check || high < e->next_check)
        return;
    e->next_check = 0;
    while (eng_next_job(e, &it, &j)) {
        if (!watched(j))
            continue;
        int64_t saved = eng_enter(e, j->cluster);
        int64_t now = eng_cluster_now(e, j->cluster);
        if (stall_due(j) <= now)
            stall_eval(e, j, now);
        eng_leave(e, saved);
        if (watched(j))
            schedule(e, stall_due(j));
    }
}

/* ---- counters: RDMA ---------------------------------------------------- */

static int rising_for(const series *se, int64_t now, int64_t span)
{
    return se && se->since && now - se->since >= span;
}

static void rdma_check(engine *e, const sig *s, const char *dev)
{
    const series *retx = eng_series_get(e, s->cluster, s->host, M_RETX, dev);
    const series *ack = eng_series_get(e, s->cluster, s->host, M_ACK, dev);
    fact f;

    if (!rising_for(retx, s->ts, RDMA_SUSTAIN) ||
        !rising_for(ack, s->ts, RDMA_SUSTAIN) ||
        !pb_find(e->cat, "net.rdma_degraded"))
        return;
    eng_rule_fact(&f, FACT_NODE_FAULT, "net.rdma_degraded", s->host, NULL);
    str_copy(f.detail, sizeof f.detail, dev);
    snprintf(f.excerpt, sizeof f.excerpt,
             "%s: RDMA retransmits and ACK timeouts rising since %lld s", dev,
             (long long)((s->ts - (retx->since > ack->since ? retx->since
                                                           : ack->since)) /
                         TS_SEC));
    eng_on_node_fault(e, s, &f, s->host);
}

/* ---- temperature ------------------------------------------------------- */

/* The hottest GPU on a host now (samples within the last RACK_WINDOW). */
static double host_temp(engine *e, const char *cluster, const char *host)
{
    double best = -1;

    for (int g = 0; g < MAX_GPUS; g++) {
        char dev[8];
        const series *se;
        snprintf(dev, sizeof dev, "%d", g);
        se = eng_series_get(e, cluster, host, M_TEMP, dev);
        if (se && se->ts >= e->now - RACK_WINDOW && se->v > best)
            best = se->v;
    }
    return best;
}

/* Whether the job runs slower than its best (its step time, reported from
 * any of its nodes), or the hot node's clocks dropped. */
static int slowed(engine *e, const job *j, const char *host)
{
    size_t i;
    json_t *n;

    json_array_foreach(j->nodes, i, n) {
        const series *se = eng_series_get(e, j->cluster, json_string_value(n),
                                      M_STEP_TIME, j->id);
        if (se && se->lo > 0 && se->v >= SLOWER * se->lo)
            return 1;
    }
    for (int g = 0; g < MAX_GPUS; g++) {
        char dev[8];
        const series *se;
        snprintf(dev, sizeof dev, "%d", g);
        se = eng_series_get(e, j->cluster, host, M_CLOCK, dev);
        if (se && se->hi > 0 && se->v <= CLOCK_DOWN * se->hi)
            return 1;
    }
    return 0;
}

static void straggler_check(engine *e, const sig *s, const char *gpu)
{
    job *j = eng_job_on(e, s->cluster, s->host);
    incident *inc;
    size_t i;
    json_t *n;
    fact f;

    if (!j || json_array_size(j->nodes) < 2 ||
        !pb_find(e->cat, "thermal.straggler"))
        return;
    inc = strmap_get(eng_cs(e, j->cluster)->open_job, j->id);
    if (eng_fresh(e, inc)) {
        if (strcmp(inc->sc->id, "thermal.straggler") == 0)
            eng_touch(inc, s);
        return;
    }
    json_array_foreach(j->nodes, i, n) {
        const char *h = json_string_value(n);
        if (strcmp(h, s->host) && host_temp(e, s->cluster, h) >= RACK_HOT)
            return; /* not one node: the room, not a straggler */
    }
    if (!slowed(e, j, s->host))
        return;
    eng_rule_fact(&f, FACT_JOB_FAULT, "thermal.straggler", s->host, j->id);
    str_copy(f.gpu, sizeof f.gpu, gpu);
    snprintf(f.excerpt, sizeof f.excerpt, "%s GPU %s at %.0f C", s->host, gpu,
             s->value);
    eng_on_job_fault(e, s, &f);
}

/* A hot host (a GPU at RACK_HOT, or a throttle alert, already in its
 * window as a mark): with enough hot hosts in its rack, the rack's
 * incident opens or absorbs it. */
static void eng_rack_evidence(engine *e, const sig *s, const char *host)
{
    const char *scen = "thermal.fleet_throttle";
    cstate *cs = eng_cs(e, s->cluster);
    node_info *ni = strmap_get(cs->inventory, host);
    char key[192], first_host[128] = "";
    size_t pos = 0, hot = 0;
    int64_t first = 0;
    const char *k;
    void *v;
    incident *inc;

    if (!ni || !ni->rack[0] || !pb_find(e->cat, scen))
        return;
    snprintf(key, sizeof key, "rack:%.180s", ni->rack);
    inc = strmap_get(cs->open_node, key);
    if (eng_fresh(e, inc)) {
        eng_touch(inc, s);
        return;
    }
    while (strmap_next(cs->inventory, &pos, &k, &v)) {
        const node_info *o = v;
        int64_t at = strcmp(o->rack, ni->rack)
                         ? 0
                         : eng_first_mark(e, s->cluster, k, scen,
                                      e->now - RACK_WINDOW);
        if (!at)
            continue;
        hot++;
        /* The rack's first hot host is where the root cause showed. */
        if (!first || at < first || (at == first && strcmp(k, first_host) < 0)) {
            first = at;
            str_copy(first_host, sizeof first_host, k);
        }
    }
    if (hot < RACK_HOSTS)
        return;
    inc = eng_open_incident(e, s, scen, "rack", ni->rack);
    str_copy(inc->key, sizeof inc->key, key);
    str_copy(inc->root_node, sizeof inc->root_node, first_host);
    inc->root_ts = inc->first = first;
    inc->count = (int)hot - 1; /* the other hosts' evidence; touch adds one */
    inc->sources |= 1u << s->source;
    strmap_put(cs->open_node, key, inc);
    eng_touch(inc, s);
}

static void temp_sample(engine *e, const sig *s, const char *gpu)
{
    int hot = strcmp(s->name, M_THROTTLE) == 0
                  ? s->value >= 0 && s->value < 1e12 &&
                        ((long long)s->value & THROTTLE_THERMAL) != 0
                  : s->value >= RACK_HOT;

    if (hot &&
        !eng_first_mark(e, s->cluster, s->host, "thermal.fleet_throttle",
                    e->now - RACK_WINDOW / 3)) {
        eng_win_add(e, s, s->host, FACT_MARK, NULL, "thermal.fleet_throttle",
                    NULL);
        eng_rack_evidence(e, s, s->host);
    }
    if (s->value >= GPU_HOT && strcmp(s->name, M_TEMP) == 0)
        straggler_check(e, s, gpu);
}

/* ---- advisories: their own incidents ----------------------------------- */

/* A synthetic signal for a decision no single sample makes (a host gone
 * silent): id from what was decided, so a restart decides the same. */
static void rule_sig(sig *s, const char *what, const char *cluster,
                     const char *host, int64_t ts)
{
    uint64_t h = HASH_FNV_SEED;

    memset(s, 0, sizeof *s);
    h = hash_fnv1a(h, what, strlen(what) + 1);
    h = hash_fnv1a(h, cluster, strlen(cluster) + 1);
    h = hash_fnv1a(h, host, strlen(host) + 1);
    h = hash_fnv1a(h, &ts, sizeof ts);
    s->id = h;
    s->ts = ts;
    s->source = SRC_METRIC;
    s->cluster = cluster;
    s->host = host;
    s->rank = -1;
}

/* Whether the host's window holds a checkpoint save of the job (or of
 * any job, when jobid is NULL) within span before `at`. */
static int recent_checkpoint(engine *e, const char *cluster, const char *host,
                             const char *jobid, int64_t at, int64_t span)
{
    node_win *w = eng_win_find(e, cluster, host);

    for (size_t i = 0; w && i < w->n; i++)
        if (w->v[i].kind == FACT_CHECKPOINT && w->v[i].ts <= at &&
            w->v[i].ts >= at - span && (!jobid || !strcmp(w->v[i].job, jobid)))
            return 1;
    return 0;
}

/* hw.ecc_correctable_rising: a GPU's correctable ECC count rose by
 * ECC_CE_RISE or more over the window (seed 004: "high correctable errors
 * -> degrading hardware"). A large count that stands still is history. */
static void ecc_check(engine *e, const sig *s, const series *se)
{
    fact f;

    if (se->v - se->anchor_v < ECC_CE_RISE ||
        !pb_find(e->cat, "hw.ecc_correctable_rising"))
        return;
    eng_rule_fact(&f, FACT_NODE_FAULT, "hw.ecc_correctable_rising", s->host, NULL);
    str_copy(f.gpu, sizeof f.gpu, se->dev);
    snprintf(f.excerpt, sizeof f.excerpt,
             "GPU %.16s: %.0f correctable ECC errors in %lld min (%.40s)", se->dev,
             se->v - se->anchor_v,
             (long long)((s->ts - se->anchor_ts) / TS_MIN), se->name);
    eng_on_node_fault(e, s, &f, s->host);
}

/* telemetry.ghost_data: a GPU's power at load level (or the exporter's
 * scrape time) has not changed for GHOST_AFTER while a job runs there:
 * the exporter serves a stale cache (seed 004: "a GPU under training load
 * never holds the exact same wattage for hours"). An idle GPU may hold a
 * rounded idle wattage; that says nothing. */
static void ghost_check(engine *e, const sig *s, const series *se)
{
    job *j;
    fact f;

    if (s->ts - se->changed < GHOST_AFTER ||
        (strcmp(se->name, M_SCRAPE) && se->v < POWER_IDLE * se->hi) ||
        !(j = eng_job_on(e, s->cluster, s->host)) || j->updated > se->changed)
        return;
    eng_rule_fact(&f, FACT_NODE_FAULT, "telemetry.ghost_data", s->host, NULL);
    str_copy(f.gpu, sizeof f.gpu, se->dev);
    snprintf(f.excerpt, sizeof f.excerpt,
             "%.40s%s%.16s = %.10g unchanged for %lld min while job %.24s runs", se->name,
             se->dev[0] ? " gpu " : "", se->dev, se->v,
             (long long)((s->ts - se->changed) / TS_MIN), j->id);
    eng_advisory_of(e, s, &f, "ghost", s->host, 1);
}

/* The start of the host's GPUs' common idle run (every GPU sampled under
 * UTIL_LOW), or 0 when one of them is busy. */

/* A fresh sched.capacity_exhausted incident in the cluster of a job of
 * another team than `team`, or NULL. */
static incident *other_team_waiting(engine *e, const char *cluster,
                                    const char *team)
{
    cstate *cs = eng_cs(e, cluster);
    size_t pos = 0;
    const char *k;
    void *v;

    while (strmap_next(cs->open_job, &pos, &k, &v)) {
        incident *inc = v;
        job *w = strmap_get(cs->jobs, inc->job);
        if (eng_fresh(e, inc) && !strcmp(inc->sc->id, "sched.capacity_exhausted") &&
            w && w->team[0] &&
            strcmp(w->team, team))
            return inc;
    }
    return NULL;
}

/* capacity.idle_allocation: a team's running job has had every GPU idle
 * for ALLOC_IDLE while another team's job waits for capacity. One
 * incident per idle team. */
static void idle_allocation(engine *e, const sig *s, job *j, int64_t since)
{
    incident *waiting;
    char key[96];
    fact f;

    if (!j->team[0] || s->ts - since < ALLOC_IDLE ||
        !(waiting = other_team_waiting(e, j->cluster, j->team)))
        return;
    eng_rule_fact(&f, FACT_JOB_FAULT, "capacity.idle_allocation",
              json_string_value(json_array_get(j->nodes, 0)), j->id);
    snprintf(f.excerpt, sizeof f.excerpt,
             "team %.40s: job %.30s idle for %lld min while job %.30s waits",
             j->team, j->id, (long long)((s->ts - since) / TS_MIN), waiting->job);
    snprintf(key, sizeof key, "alloc:%.80s", j->team);
    eng_advisory(e, s, &f, key, 0);
}

/* A job now waits for capacity: the idle allocations of other teams. */
static void eng_capacity_waiting(engine *e, const sig *s)
{
    const strmap *jobs = eng_cs(e, s->cluster)->jobs;
    size_t pos = 0;
    const char *k;
    void *v;

    while (strmap_next(jobs, &pos, &k, &v)) {
        job *j = v;
        int64_t since = 0;
        size_t i;
        json_t *n;
        if (strcmp(j->state, "RUNNING"))
            continue;
        json_array_foreach(j->nodes, i, n) {
            int64_t at = eng_host_idle_since(e, j->cluster, json_string_value(n));
            if (!at) {
                since = 0;
                break;
            }
            since = at > since ? at : since;
        }
        if (since)
            idle_allocation(e, s, j, since);
    }
}

/* gpu.idle_input_bound and cost.idle_gpu, on a utilisation sample. A job
 * whose GPUs sit idle while it still makes progress and its host's CPU or
 * I/O is saturated waits for its input (seed 002); idle for an hour with
 * nothing else to explain it is money spent on nothing. */
static void idle_check(engine *e, const sig *s)
{
    /* busy GPUs first: the common case ends before the scan of the jobs */
    int64_t since = eng_host_idle_since(e, s->cluster, s->host);
    job *j = since ? eng_job_on(e, s->cluster, s->host) : NULL;
    const series *cpu, *io;
    fact f;

    if (!j || since < j->updated ||
        eng_fresh(e, strmap_get(eng_cs(e, s->cluster)->open_job, j->id)))
        return;
    idle_allocation(e, s, j, since);
    cpu = eng_host_gauge(e, s->cluster, s->host, M_CPU);
    io = eng_host_gauge(e, s->cluster, s->host, M_IO);
    if (s->ts - since >= INPUT_AFTER && j->progress_ts >= s->ts - INPUT_AFTER &&
        j->progress_ts > since && ((cpu && cpu->v >= CPU_SATURATED) ||
                                   (io && io->v >= IO_SATURATED)) &&
        !recent_checkpoint(e, s->cluster, s->host, j->id, s->ts, INPUT_AFTER)) {
        eng_rule_fact(&f, FACT_JOB_FAULT, "gpu.idle_input_bound", s->host, j->id);
        snprintf(f.excerpt, sizeof f.excerpt,
                 "GPUs under %.0f%% for %lld min while the job moves on "
                 "(step %.0f); host CPU %.0f%%, I/O stall %.0f%%", UTIL_LOW,
                 (long long)((s->ts - since) / TS_MIN), j->step,
                 cpu ? cpu->v : -1, io ? io->v : -1);
        eng_advisory_of(e, s, &f, "perf", j->id, 0);
        return;
    }
    if (s->ts - since >= COST_AFTER && !eng_advisory_open(e, s->cluster, "perf", j->id, 0)) {
        eng_rule_fact(&f, FACT_JOB_FAULT, "cost.idle_gpu", s->host, j->id);
        snprintf(f.excerpt, sizeof f.excerpt,
                 "every GPU of %s under %.0f%% for %lld min", s->host, UTIL_LOW,
                 (long long)((s->ts - since) / TS_MIN));
        /* how many: the notification prices them (fix idle_cost) */
        snprintf(f.detail, sizeof f.detail, "%d",
                 eng_idle_gpus(e, s->cluster, s->host));
        eng_advisory_of(e, s, &f, "cost", j->id, 0);
    }
}

/* The job a host's kernel line is about: the one running there, or one
 * that failed there within the crash window (the scheduler's report can
 * overtake the kernel's). */
static job *job_at(engine *e, const char *cluster, const char *host,
                   int64_t ts)
{
    job *best = eng_job_on(e, cluster, host);
    const strmap *jobs = eng_cs(e, cluster)->jobs;
    size_t pos = 0;
    const char *k;
    void *v;

    while (!best && strmap_next(jobs, &pos, &k, &v)) {
        job *j = v;
        if (eng_is_failure(j->state) && j->updated >= ts - CRASH_WINDOW &&
            j->updated <= ts && eng_ran_on(j, host))
            best = j;
    }
    return best;
}

/* oom.host_checkpoint / oom.host_leak: what the host's memory did before
 * the kernel's OOM killer struck (seed 004, "Host OOM"). A save of the
 * job's checkpoint just before: the save's copy of the parameters. A
 * steady ramp for LEAK_SPAN or more: a leak. 0: neither (the kill stays
 * evidence for what the job's own lines say). */
static int eng_host_oom(engine *e, const sig *s, const fact *f)
{
    const char *host = f->host;
    job *j = host[0] ? job_at(e, s->cluster, host, s->ts) : NULL;
    const char *const mems[] = {M_MEM_RAY, M_MEM_HW};
    fact g;

    if (!j)
        return 0;
    g = *f;
    str_copy(g.job, sizeof g.job, j->id);
    if (recent_checkpoint(e, s->cluster, host, j->id, s->ts, CKPT_OOM) &&
        pb_find(e->cat, "oom.host_checkpoint")) {
        g.kind = FACT_JOB_FAULT;
        g.scenario = "oom.host_checkpoint";
        eng_on_job_fault(e, s, &g);
        return 1;
    }
    for (size_t i = 0; i < sizeof mems / sizeof *mems; i++) {
        const series *se = eng_series_get(e, s->cluster, host, mems[i], "");
        if (!se || se->ts < s->ts - STALL_RECHECK || s->ts - se->since < LEAK_SPAN ||
            se->run_v <= 0 || se->hi < LEAK_GROWTH * se->run_v ||
            !pb_find(e->cat, "oom.host_leak"))
            continue;
        g.kind = FACT_JOB_FAULT;
        g.scenario = "oom.host_leak";
        snprintf(g.excerpt, sizeof g.excerpt,
                 "%s rose from %.4g to %.4g over %lld min, then the OOM killer",
                 se->name, se->run_v, se->hi,
                 (long long)((s->ts - se->since) / TS_MIN));
        eng_on_job_fault(e, s, &g);
        return 1;
    }
    return 0;
}

/* train.throughput_regression: the job's step time REGRESS over its best
 * for REGRESS_SAMPLES samples in a row, checkpoint steps left out (seed
 * 004). A hot node or an open incident of the job explains it already. */
static void regress_check(engine *e, const sig *s, series *se)
{
    double cool = -1, hot = -1;
    job *j = eng_job_of(e, se->cluster, se->dev);
    size_t i;
    json_t *n;
    fact f;

    if (!j || strcmp(j->state, "RUNNING") || se->lo <= 0)
        return;
    se->n = se->v >= REGRESS * se->lo ? se->n + 1 : 0;
    if (se->n < REGRESS_SAMPLES ||
        eng_fresh(e, strmap_get(eng_cs(e, j->cluster)->open_job, j->id)))
        return;
    /* The earliest deviating signal names the cause (seed 004): a node
     * running hotter than the job's others is the thermal rules' to
     * judge (thermal.straggler), not a regression of unknown cause. */
    json_array_foreach(j->nodes, i, n) {
        double t = host_temp(e, j->cluster, json_string_value(n));
        if (t > hot)
            hot = t;
        if (t > 0 && (cool < 0 || t < cool))
            cool = t;
    }
    if (hot >= RACK_HOT || (cool > 0 && hot >= cool + THERMAL_SKEW))
        return;
    eng_rule_fact(&f, FACT_JOB_FAULT, "train.throughput_regression", s->host, j->id);
    snprintf(f.excerpt, sizeof f.excerpt,
             "step time %.3g s, %.0f%% over the job's steady %.3g s, %d samples "
             "in a row", se->v, 100 * (se->v / se->lo - 1), se->lo, se->n);
    eng_advisory_of(e, s, &f, "perf", j->id, 0);
}

/* Whether a step-time sample falls on a checkpoint step: its step is a
 * multiple of the job's checkpoint_period, or a save was logged just
 * before. Such samples are left out of the series (seed 004). */
static int checkpoint_step(engine *e, const sig *s, const char *jobid)
{
    job *j = eng_job_of(e, s->cluster, jobid);
    json_t *per = j && j->config ? json_object_get(j->config, "checkpoint_period") : NULL;
    const char *step = json_string_value(json_object_get(s->labels, "step"));

    if (json_is_integer(per) && json_integer_value(per) > 0 && step &&
        atoll(step) > 0 && atoll(step) % json_integer_value(per) == 0)
        return 1;
    return recent_checkpoint(e, s->cluster, s->host, jobid, s->ts, REGRESS_CKPT);
}

/* telemetry.gap: a host whose job runs stopped reporting GAP_AFTER ago
 * while other hosts went on, and no open incident of the host explains it
 * (node.down would). Runs once a minute of event time over every series. */
/* The newest sample under "CLUSTER|HOST" (and "CLUSTER|" for the whole
 * cluster) in last. */
static void newest_sample(strmap *last, const char *cluster, const char *host,
                          int64_t ts)
{
    char hk[200];
    int64_t *t;

    snprintf(hk, sizeof hk, "%s|%s", cluster, host);
    if (!(t = strmap_get(last, hk))) {
        t = xcalloc(1, sizeof *t);
        strmap_put(last, hk, t);
    }
    if (ts > *t)
        *t = ts;
}

/* Job j's hosts that went silent while others in its cluster kept
 * reporting (last: see newest_sample). */
static void gap_job(engine *e, const job *j, strmap *last)
{
    char ck[80];
    const int64_t *nt;
    int64_t newest, now = eng_cluster_now(e, j->cluster);
    size_t i;
    json_t *n;

    snprintf(ck, sizeof ck, "%.63s|", j->cluster);
    nt = strmap_get(last, ck);
    newest = nt ? *nt : 0;
    json_array_foreach(j->nodes, i, n) {
        const char *host = json_string_value(n);
        char hk[200];
        int64_t *t;
        sig s;
        fact f;
        snprintf(hk, sizeof hk, "%s|%s", j->cluster, host);
        t = strmap_get(last, hk);
        /* Others kept reporting meanwhile: when every host is silent
         * it is the collector (or the end of a capture), not one host. */
        if (!t || *t < j->updated || now - *t < GAP_AFTER ||
            newest - *t < GAP_AFTER ||
            eng_fresh(e, strmap_get(eng_cs(e, j->cluster)->open_node, host)) ||
            eng_advisory_open(e, j->cluster, "gap", host, 1))
            continue;
        rule_sig(&s, "gap", j->cluster, host, *t + GAP_AFTER);
        eng_rule_fact(&f, FACT_NODE_FAULT, "telemetry.gap", host, NULL);
        snprintf(f.excerpt, sizeof f.excerpt,
                 "%s sent no metrics for %d min while job %s runs", host,
                 (int)(GAP_AFTER / TS_MIN), j->id);
        incident *inc = eng_advisory_of(e, &s, &f, "gap", host, 1);
        if (inc)
            inc->root_ts = inc->first = *t;
    }
}

static void gap_scan(engine *e)
{
    strmap *last = strmap_new();
    size_t pos = 0;
    const char *k;
    void *v;

    while (strmap_next(e->series, &pos, &k, &v)) {
        const series *se = v;
        newest_sample(last, se->cluster, se->host, se->ts);
        newest_sample(last, se->cluster, "", se->ts);
    }
    eng_iter it = {0};
    job *j;
    while (eng_next_job(e, &it, &j)) {
        if (strcmp(j->state, "RUNNING"))
            continue;
        int64_t saved = eng_enter(e, j->cluster);
        gap_job(e, j, last);
        eng_leave(e, saved);
    }
    strmap_free(last, free);
}

static void eng_gap_timer(engine *e)
{
    int64_t high = e->live_clock > e->high ? e->live_clock : e->high;

    if (high < e->next_gap)
        return;
    e->next_gap = high + TS_MIN;
    gap_scan(e);
}

/* ---- samples in -------------------------------------------------------- */

static int eng_on_metric(engine *e, const sig *s)
{
    const char *dev;
    series *se;

    if (!s->host || !s->name)
        return 0;
    /* The step counter is progress, kept in the job (redeliveries of it
     * change nothing there). */
    if (!strcmp(s->name, M_STEP)) {
        dev = eng_dev_of(s);
        return eng_progress(e, s->cluster, *dev ? dev : s->job, s->ts, s->value);
    }
    /* a rank's compute time is the fail-slow detector's (failslow.c) */
    if (!eng_metric_kept(s->name) || !strcmp(s->name, M_RANK_COMPUTE))
        return 0;
    dev = eng_dev_of(s);
    if (!strcmp(s->name, M_STEP_TIME) && checkpoint_step(e, s, dev))
        return 0; /* a checkpoint step's time says nothing of the job's pace */
    if (!(se = eng_series_take(e, s, dev)))
        return 0;
    if (!strcmp(s->name, M_TEMP) || !strcmp(s->name, M_THROTTLE))
        temp_sample(e, s, dev);
    else if (!strcmp(s->name, M_RETX) || !strcmp(s->name, M_ACK))
        rdma_check(e, s, dev);
    else if (!strcmp(s->name, M_SBE_VOL) || !strcmp(s->name, M_SBE_AGG) ||
             !strcmp(s->name, M_RAS_CE))
        ecc_check(e, s, se);
    else if (!strcmp(s->name, M_DMESG) || !strcmp(s->name, M_SCRAPE))
        eng_driver_evidence(e, s, s->host);
    else if (!strcmp(s->name, M_STEP_TIME))
        regress_check(e, s, se);
    else if (eng_is_util(s->name))
        idle_check(e, s);
    if (!strcmp(s->name, M_POWER) || !strcmp(s->name, M_HW_POWER) ||
        !strcmp(s->name, M_SCRAPE))
        ghost_check(e, s, se);
    /* Stored once, after the rules: what they changed (the step-time run)
     * is part of what a restart goes on from. */
    eng_series_persist(e, se);
    return 1;
}

/* ---- state ------------------------------------------------------------- */

/* ---- the detectors ---------------------------------------------------- */

/* A host OOM kill that a checkpoint save or a memory ramp explains opens
 * that incident and is taken; else the jobs detector keeps it as context. */
static int hostmem_on_fact(engine *e, const sig *s, const fact *f)
{
    return f->kind == FACT_HOST_OOM && eng_host_oom(e, s, f);
}

static const char *const hostmem_scenarios[] = {
    "oom.host_checkpoint", "oom.host_leak", NULL};

const eng_detector eng_det_hostmem = {
    .name = "host memory",
    .scenarios = hostmem_scenarios,
    .on_fact = hostmem_on_fact,
};

static int progress_on_fact(engine *e, const sig *s, const fact *f)
{
    if (f->kind != FACT_PROGRESS)
        return 0;
    if (f->step >= 0)
        eng_progress(e, s->cluster, f->job, s->ts, (double)f->step);
    return 1;
}

const eng_detector eng_det_progress = {
    .name = "progress",
    .on_fact = progress_on_fact,
};

/* A job that began to wait for capacity (the jobs detector opened its
 * incident): other teams' idle allocations. */
static int capacity_on_fact(engine *e, const sig *s, const fact *f)
{
    if (eng_capacity_wait(e, f))
        eng_capacity_waiting(e, s);
    return 0;
}

static const char *const capacity_scenarios[] = {
    "sched.capacity_exhausted", "capacity.idle_allocation", "cost.idle_gpu",
    "gpu.idle_input_bound", NULL};

const eng_detector eng_det_capacity = {
    .name = "capacity",
    .scenarios = capacity_scenarios,
    .on_fact = capacity_on_fact,
};

/* A throttle alert is a hot host: its rack may be the cause. */
static int thermal_on_fact(engine *e, const sig *s, const fact *f)
{
    if (f->kind == FACT_MARK && f->host[0] && f->scenario &&
        strcmp(f->scenario, "thermal.fleet_throttle") == 0)
        eng_rack_evidence(e, s, f->host);
    return 0;
}

static const char *const thermal_scenarios[] = {
    "thermal.fleet_throttle", "thermal.straggler", NULL};

const eng_detector eng_det_thermal = {
    .name = "thermal",
    .scenarios = thermal_scenarios,
    .on_fact = thermal_on_fact,
};

static void metrics_on_signal(engine *e, const sig *s)
{
    (void)s;
    eng_gap_timer(e);
}

static void metrics_on_job(engine *e, const sig *s, job *j, eng_job_event ev)
{
    (void)s;
    if (ev == ENG_JOB_STARTING)
        eng_job_started(e, j);
}

static int metrics_restore(engine *e, const char *cluster, const char *kind,
                           const char *field, const char *value, cs_err *err)
{
    if (strcmp(kind, "series"))
        return 0;
    return eng_restore_series(e, cluster, field, value, err) ? -1 : 1;
}

static void metrics_forget(engine *e)
{
    strmap_free(e->series, eng_series_free);
    e->series = NULL;
}

static const char *const metrics_records[] = {"series", NULL};

static const char *const metrics_scenarios[] = {
    "hw.driver_dstate", "hw.ecc_correctable_rising", "job.stalled",
    "nccl.hang_busy_wait", "nccl.hang_network", "net.rdma_degraded",
    "telemetry.gap", "telemetry.ghost_data", "train.throughput_regression",
    NULL};

const eng_detector eng_det_metrics = {
    .name = "metrics",
    .scenarios = metrics_scenarios,
    .on_metric = eng_on_metric,
    .on_tick = eng_timers,
    .on_signal = metrics_on_signal,
    .on_job = metrics_on_job,
    .records = metrics_records,
    .restore = metrics_restore,
    .restored = eng_timers_rearm,
    .prune = eng_prune_series,
    .forget = metrics_forget,
};
