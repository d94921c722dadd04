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
 * Only the metrics a rule reads get a series (kept()). A series keeps its
 * last sample and what the rules need (extremes of a gauge, the start of a
 * counter's current run of increases). It is stored whole after every
 * sample, so a restarted engine goes on from it; a sample not newer than
 * the series' last is a redelivery and changes nothing. The step counter
 * (tb_step) is no series: it is the job's progress. Part of the engine
 * (shares engine_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/str.h"
#include "correlate/engine_internal.h"

#define STALL_AFTER (30 * TS_MIN) /* SCENARIOS.md: "no progress for 30+ min" */
#define STALL_RECHECK (5 * TS_MIN)
#define UTIL_BUSY 50.0  /* % GPU utilisation that counts as busy */
#define UTIL_IDLE 10.0
#define POWER_IDLE 0.5  /* below half its peak, a busy GPU computes nothing */
#define RDMA_SUSTAIN (5 * TS_MIN) /* seed 004: "any sustained > 0" */
#define GPU_HOT 92.0    /* SCENARIOS.md thermal.straggler */
#define RACK_HOT 85.0   /* SCENARIOS.md thermal.fleet_throttle */
#define RACK_HOSTS 3
#define RACK_WINDOW (15 * TS_MIN)
#define SLOWER 1.15     /* step time 15% over the job's best */
#define CLOCK_DOWN 0.9  /* SM clock 10% under the GPU's peak */
#define MAX_GPUS 16     /* GPU indexes looked up per node ("0".."15") */

struct series {
    char cluster[64], host[128], name[64], dev[64];
    int64_t ts;    /* last sample */
    double v;      /* its value */
    double lo, hi; /* gauge extremes since the series started */
    int64_t since; /* counter: start of the current run of increases, or 0 */
};

static const char *M_UTIL = "DCGM_FI_DEV_GPU_UTIL";
static const char *M_POWER = "DCGM_FI_DEV_POWER_USAGE";
static const char *M_TEMP = "DCGM_FI_DEV_GPU_TEMP";
static const char *M_CLOCK = "DCGM_FI_DEV_SM_CLOCK";
static const char *M_THROTTLE = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS";
/* Its SW (32) and HW (64) thermal slowdown bits. */
#define THROTTLE_THERMAL 96
static const char *M_STEP = "tb_step";
static const char *M_STEP_TIME = "tb_perf_step_time_seconds";
static const char *M_RETX = "hw_rdma_tx_retx_pkts_total";
static const char *M_ACK = "hw_rdma_tx_ack_timeout_total";

void eng_series_free(void *p)
{
    free(p);
}

static int is_counter(const char *name)
{
    size_t n = strlen(name);
    return n > 6 && strcmp(name + n - 6, "_total") == 0;
}

/* The device a sample is about: a GPU, a NIC, or for training metrics
 * the job. */
static const char *dev_of(const sig *s)
{
    static const char *const keys[] = {"gpu", "device", "job"};

    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const char *v = json_string_value(json_object_get(s->labels, keys[i]));
        if (v)
            return v;
    }
    return "";
}

static void series_key(char *buf, size_t len, const char *cluster,
                       const char *host, const char *name, const char *dev)
{
    snprintf(buf, len, "%s|%s|%s|%s", cluster, host, name, dev);
}

static series *series_get(engine *e, const char *cluster, const char *host,
                          const char *name, const char *dev)
{
    char key[400];

    series_key(key, sizeof key, cluster, host, name, dev);
    return strmap_get(e->series, key);
}

static void series_persist(engine *e, const series *se)
{
    char key[320], field[300], val[160];

    eng_key(key, sizeof key, se->cluster, "series", NULL);
    snprintf(field, sizeof field, "%s|%s|%s", se->host, se->name, se->dev);
    snprintf(val, sizeof val, "%lld %.17g %.17g %.17g %lld", (long long)se->ts,
             se->v, se->lo, se->hi, (long long)se->since);
    e->ops->hash_put(e->ctx, key, field, val);
}

/* Takes one sample into its series; NULL when it is not newer than the
 * series' last (a redelivery or a late sample: the rules saw its time). */
static series *series_take(engine *e, const sig *s, const char *dev)
{
    char key[400];
    series *se;

    series_key(key, sizeof key, s->cluster, s->host, s->name, dev);
    se = strmap_get(e->series, key);
    if (!se) {
        se = calloc(1, sizeof *se);
        if (!se)
            abort();
        str_copy(se->cluster, sizeof se->cluster, s->cluster);
        str_copy(se->host, sizeof se->host, s->host);
        str_copy(se->name, sizeof se->name, s->name);
        str_copy(se->dev, sizeof se->dev, dev);
        se->lo = se->hi = s->value;
        strmap_put(e->series, key, se);
    } else if (s->ts <= se->ts) {
        return NULL;
    } else if (is_counter(se->name)) {
        /* A decrease is a counter reset (exporter restart): no evidence
         * either way, and the run of increases starts over. */
        if (s->value > se->v)
            se->since = se->since ? se->since : se->ts;
        else
            se->since = 0;
    }
    if (s->value < se->lo)
        se->lo = s->value;
    if (s->value > se->hi)
        se->hi = s->value;
    se->ts = s->ts;
    se->v = s->value;
    series_persist(e, se);
    return se;
}

/* A fact a metric rule decided: kind, scenario, where. */
static void rule_fact(fact *f, fact_kind kind, const char *scenario,
                      const char *host, const char *jobid)
{
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->scenario = scenario;
    f->rank = -1;
    f->step = f->pid = -1;
    str_copy(f->host, sizeof f->host, host);
    str_copy(f->job, sizeof f->job, jobid);
}

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

int eng_progress(engine *e, const char *jobid, int64_t ts, double step)
{
    job *j = jobid && *jobid ? strmap_get(e->jobs, jobid) : NULL;

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
void eng_job_started(engine *e, job *j)
{
    if (!j->progress_ts && !j->stall_check)
        return; /* nothing to forget */
    j->step = 0;
    j->progress_ts = j->stale_ts = j->stall_check = 0;
    eng_persist_progress(e, j);
}

/* What the GPUs of a job's nodes did since its last progress. */
typedef struct gpu_census {
    int busy_wait, idle, working;
} gpu_census;

static gpu_census census(engine *e, const job *j)
{
    gpu_census c = {0, 0, 0};
    size_t i;
    json_t *n;

    json_array_foreach(j->nodes, i, n) {
        for (int g = 0; g < MAX_GPUS; g++) {
            char dev[8];
            const series *u, *p;
            snprintf(dev, sizeof dev, "%d", g);
            u = series_get(e, j->cluster, json_string_value(n), M_UTIL, dev);
            p = series_get(e, j->cluster, json_string_value(n), M_POWER, dev);
            if (!u || u->ts <= j->progress_ts)
                continue;
            if (u->v < UTIL_IDLE)
                c.idle++;
            else if (u->v >= UTIL_BUSY && p && p->ts > j->progress_ts &&
                     p->v < POWER_IDLE * p->hi)
                c.busy_wait++;
            else if (u->v >= UTIL_BUSY)
                c.working++;
        }
    }
    return c;
}

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

static void stall_eval(engine *e, job *j, int64_t now)
{
    gpu_census c = census(e, j);
    const char *scen;
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
    if (!scen || !pb_find(e->cat, scen)) {
        j->stall_check = now + STALL_RECHECK;
        eng_persist_progress(e, j);
        return;
    }
    timer_sig(&s, j, j->progress_ts + STALL_AFTER);
    rule_fact(&f, FACT_JOB_FAULT, scen,
              json_string_value(json_array_get(j->nodes, 0)), j->id);
    snprintf(f.excerpt, sizeof f.excerpt,
             "no progress past step %.0f for %d min; GPUs busy-waiting %d, "
             "idle %d, working %d", j->step, (int)(STALL_AFTER / TS_MIN),
             c.busy_wait, c.idle, c.working);
    eng_on_job_fault(e, &s, &f);
    incident *inc = strmap_get(e->open_job, j->id);
    if (inc && inc->opened == s.ts) {
        inc->root_ts = inc->first = j->progress_ts;
        inc->dirty = 1;
    }
}

void eng_timers_rearm(engine *e)
{
    size_t pos = 0;
    const char *k;
    void *v;

    e->next_check = 0;
    while (strmap_next(e->jobs, &pos, &k, &v))
        if (watched(v))
            schedule(e, stall_due(v));
}

void eng_timers(engine *e)
{
    int64_t now = e->live_clock > e->now ? e->live_clock : e->now;
    size_t pos = 0;
    const char *k;
    void *v;

    if (!e->next_check || now < e->next_check)
        return;
    e->next_check = 0;
    while (strmap_next(e->jobs, &pos, &k, &v)) {
        job *j = v;
        if (!watched(j))
            continue;
        if (stall_due(j) <= now)
            stall_eval(e, j, now);
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
    const series *retx = series_get(e, s->cluster, s->host, M_RETX, dev);
    const series *ack = series_get(e, s->cluster, s->host, M_ACK, dev);
    fact f;

    if (!rising_for(retx, s->ts, RDMA_SUSTAIN) ||
        !rising_for(ack, s->ts, RDMA_SUSTAIN) ||
        !pb_find(e->cat, "net.rdma_degraded"))
        return;
    rule_fact(&f, FACT_NODE_FAULT, "net.rdma_degraded", s->host, NULL);
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
        se = series_get(e, cluster, host, M_TEMP, dev);
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
        const series *se = series_get(e, j->cluster, json_string_value(n),
                                      M_STEP_TIME, j->id);
        if (se && se->lo > 0 && se->v >= SLOWER * se->lo)
            return 1;
    }
    for (int g = 0; g < MAX_GPUS; g++) {
        char dev[8];
        const series *se;
        snprintf(dev, sizeof dev, "%d", g);
        se = series_get(e, j->cluster, host, M_CLOCK, dev);
        if (se && se->hi > 0 && se->v <= CLOCK_DOWN * se->hi)
            return 1;
    }
    return 0;
}

static void straggler_check(engine *e, const sig *s, const char *gpu)
{
    job *j = eng_job_on(e, s->host);
    incident *inc;
    size_t i;
    json_t *n;
    fact f;

    if (!j || json_array_size(j->nodes) < 2 ||
        !pb_find(e->cat, "thermal.straggler"))
        return;
    inc = strmap_get(e->open_job, j->id);
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
    rule_fact(&f, FACT_JOB_FAULT, "thermal.straggler", s->host, j->id);
    str_copy(f.gpu, sizeof f.gpu, gpu);
    snprintf(f.excerpt, sizeof f.excerpt, "%s GPU %s at %.0f C", s->host, gpu,
             s->value);
    eng_on_job_fault(e, s, &f);
}

/* The time of the host's earliest mark of scen since `since`, or 0. */
static int64_t first_mark(engine *e, const char *host, const char *scen,
                          int64_t since)
{
    node_win *w = strmap_get(e->nodes, host);
    int64_t at = 0;

    for (size_t i = 0; w && i < w->n; i++)
        if (w->v[i].kind == FACT_MARK && w->v[i].ts >= since &&
            w->v[i].scenario && strcmp(w->v[i].scenario, scen) == 0 &&
            (!at || w->v[i].ts < at))
            at = w->v[i].ts;
    return at;
}

/* A hot host (a GPU at RACK_HOT, or a throttle alert, already in its
 * window as a mark): with enough hot hosts in its rack, the rack's
 * incident opens or absorbs it. */
void eng_rack_evidence(engine *e, const sig *s, const char *host)
{
    const char *scen = "thermal.fleet_throttle";
    node_info *ni = strmap_get(e->inventory, host);
    char key[192], first_host[128] = "";
    size_t pos = 0, hot = 0;
    int64_t first = 0;
    const char *k;
    void *v;
    incident *inc;

    if (!ni || !ni->rack[0] || !pb_find(e->cat, scen))
        return;
    snprintf(key, sizeof key, "rack:%.180s", ni->rack);
    inc = strmap_get(e->open_node, key);
    if (eng_fresh(e, inc)) {
        eng_touch(inc, s);
        return;
    }
    while (strmap_next(e->inventory, &pos, &k, &v)) {
        const node_info *o = v;
        int64_t at = strcmp(o->rack, ni->rack)
                         ? 0 : first_mark(e, k, scen, e->now - RACK_WINDOW);
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
    strmap_put(e->open_node, key, inc);
    eng_touch(inc, s);
}

static void temp_sample(engine *e, const sig *s, const char *gpu)
{
    int hot = strcmp(s->name, M_THROTTLE) == 0
                  ? s->value >= 0 && s->value < 1e12 &&
                        ((long long)s->value & THROTTLE_THERMAL) != 0
                  : s->value >= RACK_HOT;

    if (hot &&
        !first_mark(e, s->host, "thermal.fleet_throttle",
                    e->now - RACK_WINDOW / 3)) {
        eng_win_add(e, s, s->host, FACT_MARK, NULL, "thermal.fleet_throttle",
                    NULL);
        eng_rack_evidence(e, s, s->host);
    }
    if (s->value >= GPU_HOT && strcmp(s->name, M_TEMP) == 0)
        straggler_check(e, s, gpu);
}

/* ---- samples in -------------------------------------------------------- */

/* The metrics a rule reads back later; samples of any other name are not
 * kept (no memory, no Redis write). */
static int kept(const char *name)
{
    const char *const names[] = {M_UTIL, M_POWER, M_TEMP, M_CLOCK, M_THROTTLE,
                                 M_STEP_TIME, M_RETX, M_ACK};

    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(name, names[i]) == 0)
            return 1;
    return 0;
}

int eng_on_metric(engine *e, const sig *s)
{
    const char *dev;

    if (!s->host || !s->name)
        return 0;
    /* The step counter is progress, kept in the job (redeliveries of it
     * change nothing there). */
    if (!strcmp(s->name, M_STEP)) {
        dev = dev_of(s);
        return eng_progress(e, *dev ? dev : s->job, s->ts, s->value);
    }
    if (!kept(s->name))
        return 0;
    dev = dev_of(s);
    if (!series_take(e, s, dev))
        return 0;
    if (!strcmp(s->name, M_TEMP) || !strcmp(s->name, M_THROTTLE))
        temp_sample(e, s, dev);
    else if (!strcmp(s->name, M_RETX) || !strcmp(s->name, M_ACK))
        rdma_check(e, s, dev);
    return 1;
}

/* ---- state ------------------------------------------------------------- */

int eng_restore_series(engine *e, const char *cluster, const char *field,
                       const char *value, cs_err *err)
{
    char host[128], name[64], dev[64], key[400];
    long long ts, since;
    double v, lo, hi;
    const char *a = strchr(field, '|'), *b = a ? strchr(a + 1, '|') : NULL;
    series *se;

    if (!a || !b || (size_t)(a - field) >= sizeof host ||
        (size_t)(b - a - 1) >= sizeof name || strlen(b + 1) >= sizeof dev ||
        sscanf(value, "%lld %lg %lg %lg %lld", &ts, &v, &lo, &hi, &since) != 5) {
        cs_err_set(err, "series %s: malformed record '%s'", field, value);
        return -1;
    }
    snprintf(host, sizeof host, "%.*s", (int)(a - field), field);
    snprintf(name, sizeof name, "%.*s", (int)(b - a - 1), a + 1);
    snprintf(dev, sizeof dev, "%s", b + 1);
    se = calloc(1, sizeof *se);
    if (!se)
        abort();
    str_copy(se->cluster, sizeof se->cluster, cluster);
    str_copy(se->host, sizeof se->host, host);
    str_copy(se->name, sizeof se->name, name);
    str_copy(se->dev, sizeof se->dev, dev);
    se->ts = ts;
    se->v = v;
    se->lo = lo;
    se->hi = hi;
    se->since = since;
    series_key(key, sizeof key, cluster, host, name, dev);
    free(strmap_put(e->series, key, se));
    if (se->ts > e->now)
        e->now = se->ts;
    return 0;
}

/* Series silent for the horizon are forgotten, here and in Redis. */
size_t eng_prune_series(engine *e)
{
    size_t pos = 0, n = 0;
    const char *k;
    void *v;
    char **old = NULL;

    while (strmap_next(e->series, &pos, &k, &v))
        if (((series *)v)->ts < e->now - HORIZON) {
            old = realloc(old, (n + 1) * sizeof *old);
            if (!old || !(old[n++] = strdup(k)))
                abort();
        }
    for (size_t i = 0; i < n; i++) {
        series *se = strmap_del(e->series, old[i]);
        char key[320], field[300];
        eng_key(key, sizeof key, se->cluster, "series", NULL);
        snprintf(field, sizeof field, "%s|%s|%s", se->host, se->name, se->dev);
        e->ops->hash_del(e->ctx, key, field);
        free(se);
        free(old[i]);
    }
    free(old);
    return n;
}
