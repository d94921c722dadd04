/* Marks: lines that name a scenario but do not decide it alone. Each one
 * is kept in its window (engine.c on_context) and then judged here, with
 * what else is known (SCENARIOS.md; seeds 000, 002, 003, 004):
 *
 * - fabric.nic_flaky: NCCL's IB completion errors on one host's NIC under
 *   two or more jobs, or spread over NIC_SPREAD: the NIC, not the job.
 * - ray.job_pending: KubeRay still waiting for the job's cluster after
 *   PENDING_FOR.
 * - ray.data_backpressure: Ray Data backpressured (object store full,
 *   tasks held by the resource budget) while the job's GPUs sit idle.
 * - heartbeat.false_positive: a heartbeat-timeout kill while the job's
 *   GPUs were computing and its network was clean (seed 004, Playbook 2).
 * - mig.config_lost: a pod that cannot get a MIG slice joins an open
 *   mig.config_lost incident (the node's MIG layout was lost).
 * - ray.serve_model_oom: a Serve replica that failed to start, with a CUDA
 *   OOM of the same job close to it: the model does not fit the replica.
 * - net.ib_down: NCCL on one node of a job found no InfiniBand device or
 *   no verbs library and fell back to sockets, while another node of the
 *   same job runs over IB: that node's IB is down (SCENARIOS.md, "Reading
 *   the catalog"). Alone, or with every node on sockets, it is a cluster
 *   without IB: information.
 * - oom.dataloader_host: a DataLoader worker that exited unexpectedly,
 *   with the kernel's or slurmstepd's OOM kill on its job's node within
 *   OOM_NEAR (either first): the worker was killed for memory.
 * - capacity.peak_demand: a team's jobs held back by queue limits (SLURM
 *   QOS/association limits, Kubernetes ResourceQuota, Kueue quota) or by
 *   a full cluster (sched.capacity_exhausted) at the same hour of day on
 *   PEAK_DAYS of the last seven days (seed 000, "Capacity Planning").
 *
 * A detector (engine/detect.h). */
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "engine/detect.h"
#include "engine/faults.h"
#include "engine/series.h"
#include "engine/state.h"

#define NIC_SPREAD (30 * TS_MIN)
#define PENDING_FOR (10 * TS_MIN)
#define IDLE_FOR (5 * TS_MIN)
#define NEAR (10 * TS_MIN) /* a Serve failure and an OOM this close: one */
#define PEAK_DAYS 3
#define OOM_NEAR (5 * TS_MIN) /* a worker's death and an OOM kill: one */
#define DAY (24 * TS_HOUR)

/* The job's marks of one scenario: how many, the first and the last, over
 * its nodes' windows, the signal's host and its own "job:<id>" window. */
typedef struct mark_span {
    size_t n;
    int64_t first, last;
} mark_span;

static void span_in(engine *e, const job *j, const char *win,
                    const char *scen, int64_t since, mark_span *sp)
{
    node_win *w = eng_win_find(e, j->cluster, win);

    for (size_t i = 0; w && i < w->n; i++) {
        const entry *en = &w->v[i];
        if (en->kind != FACT_MARK || !en->scenario || en->ts < since ||
            strcmp(en->scenario, scen) || strcmp(en->job, j->id))
            continue;
        sp->n++;
        if (!sp->first || en->ts < sp->first)
            sp->first = en->ts;
        if (en->ts > sp->last)
            sp->last = en->ts;
    }
}

static mark_span job_marks(engine *e, const job *j, const char *host,
                           const char *scen, int64_t since)
{
    mark_span sp = {0, 0, 0};
    char win[96];
    size_t i;
    json_t *n;

    snprintf(win, sizeof win, "job:%.80s", j->id);
    span_in(e, j, win, scen, since, &sp);
    if (host && *host)
        span_in(e, j, host, scen, since, &sp);
    json_array_foreach(j->nodes, i, n)
        if (!host || strcmp(json_string_value(n), host))
            span_in(e, j, json_string_value(n), scen, since, &sp);
    return sp;
}

static void job_fault(engine *e, const sig *s, const fact *f, const char *scen)
{
    fact g = *f;

    g.kind = FACT_JOB_FAULT;
    g.scenario = scen;
    eng_on_job_fault(e, s, &g);
}

/* NIC errors: each goes to the NIC's day-long history under its job. */
static void nic_mark(engine *e, const sig *s, const fact *f)
{
    char win[300], key[300];
    node_win *w;
    incident *open;
    size_t jobs = 0;
    int64_t first = 0;
    fact g = *f;

    if (!f->host[0])
        return;
    snprintf(win, sizeof win, "hist:%s/%.64s", f->host,
             f->detail[0] ? f->detail : "nic");
    eng_win_add(e, s, win, FACT_MARK, f->job, f->scenario, f->sig_id);
    w = eng_win_find(e, s->cluster, win);
    for (size_t i = 0; w && i < w->n; i++) {
        int dup = 0;
        if (w->v[i].ts < e->now - NAME_WINDOW)
            continue;
        for (size_t k = 0; k < i && !dup; k++)
            dup = !strcmp(w->v[k].job, w->v[i].job) && w->v[k].ts >= e->now - NAME_WINDOW;
        jobs += !dup;
        if (!first || w->v[i].ts < first)
            first = w->v[i].ts;
    }
    if (jobs < 2 && s->ts - first < NIC_SPREAD)
        return;
    /* a job that failed on this node's NIC opened its incident already */
    snprintf(key, sizeof key, "nic:%.180s", f->host);
    if (eng_fresh(e, (open = strmap_get(eng_cs(e, s->cluster)->open_node,
                                        key)))) {
        eng_touch(open, s);
        return;
    }
    snprintf(key, sizeof key, "nic:%s", win + 5);
    g.kind = FACT_NODE_FAULT;
    str_copy(g.job, sizeof g.job, "");
    snprintf(g.excerpt, sizeof g.excerpt, "NCCL IB errors on %.*s under %zu "
             "job(s) since %lld min", str_utf8_max(win + 5, 60), win + 5, jobs,
             (long long)((s->ts - first) / TS_MIN));
    eng_advisory(e, s, &g, key, 1);
}

/* Whether every GPU reported on the job's nodes is idle since `since`. */
static int job_idle_since(engine *e, const job *j, int64_t since)
{
    size_t i;
    json_t *n;
    int any = 0;

    json_array_foreach(j->nodes, i, n) {
        int64_t at = eng_host_idle_since(e, j->cluster, json_string_value(n));
        if (!at || at > since)
            return 0;
        any = 1;
    }
    return any;
}

static void mig_mark(engine *e, const sig *s, const fact *f)
{
    size_t pos = 0;
    const char *k;
    void *v;

    /* The node whose MIG layout was lost: any open mig.config_lost
     * incident of the cluster takes the pod that cannot get a slice. */
    while (strmap_next(eng_cs(e, s->cluster)->open_node, &pos, &k, &v)) {
        incident *inc = v;
        if (!eng_fresh(e, inc) || strcmp(inc->sc->id, "mig.config_lost"))
            continue;
        eng_touch(inc, s);
        if (f->job[0])
            eng_add_child(inc, f->job, NULL, s->ts);
        return;
    }
}

/* A Serve replica that failed to start: an OOM incident of the same job
 * opened close to it is the model not fitting the replica. */
static void serve_mark(engine *e, const sig *s, const fact *f)
{
    incident *inc =
        f->job[0] ? strmap_get(eng_cs(e, s->cluster)->open_job, f->job) : NULL;
    const pb_scenario *sc = pb_find(e->cat, "ray.serve_model_oom");

    if (!sc || !eng_fresh(e, inc) || strncmp(inc->sc->id, "oom.", 4) ||
        s->ts - inc->opened > NEAR)
        return;
    inc->sc = sc;
    inc->root_scenario = sc->id;
    eng_touch(inc, s);
}

/* For a CUDA OOM: the scenario a Serve replica failure of the same job
 * close before it makes of it, or NULL. */
static const char *eng_oom_context(engine *e, const sig *s, const fact *f)
{
    job *j = eng_job_of(e, s->cluster, f->job);
    mark_span sp;

    if (!j || !pb_find(e->cat, "ray.serve_model_oom"))
        return NULL;
    sp = job_marks(e, j, f->host, "ray.serve_model_oom", s->ts - NEAR);
    return sp.n ? "ray.serve_model_oom" : NULL;
}

/* Distinct days (of the last seven) with a hit, per hour of day (UTC). */
static void peak_days(const node_win *w, int64_t now, int days[24])
{
    unsigned seen[24] = {0};

    for (size_t i = 0; w && i < w->n; i++) {
        int64_t ago = now / DAY - w->v[i].ts / DAY;
        if (w->v[i].ts < now - PEAK_HISTORY || ago < 0 || ago >= 8)
            continue;
        seen[(w->v[i].ts / TS_HOUR) % 24] |= 1u << ago;
    }
    for (int h = 0; h < 24; h++)
        days[h] = __builtin_popcount(seen[h]);
}

static void eng_peak_hit(engine *e, const sig *s, const char *jobid)
{
    job *j = eng_job_of(e, s->cluster, jobid);
    int hour = (int)((s->ts / TS_HOUR) % 24), days[24], most = 0, counted = 0;
    char key[160], hours[96] = "";
    node_win *w;
    incident *inc;
    fact f;

    if (!j || !j->team[0])
        return; /* a hit nobody owns says nothing about a team's hours */
    /* the team's window and its incident share the key "peak:TEAM" */
    snprintf(key, sizeof key, "peak:%.120s", j->team);
    w = eng_win_find(e, s->cluster, key);
    for (size_t i = 0; w && i < w->n; i++)
        counted |= w->v[i].ts / TS_HOUR == s->ts / TS_HOUR;
    if (!counted) /* one entry per hour of each day */
        eng_win_add(e, s, key, FACT_MARK, j->id, "capacity.peak_demand", NULL);
    peak_days(eng_win_find(e, s->cluster, key), s->ts, days);
    if (days[hour] < PEAK_DAYS || !pb_find(e->cat, "capacity.peak_demand"))
        return;
    for (int h = 0; h < 24; h++) {
        size_t len = strlen(hours);
        if (days[h] < PEAK_DAYS)
            continue;
        snprintf(hours + len, sizeof hours - len, "%s%d", len ? "," : "", h);
        most = days[h] > most ? days[h] : most;
    }
    /* about the team: no job or node of its own (jobs come and go) */
    eng_rule_fact(&f, FACT_JOB_FAULT, "capacity.peak_demand", NULL, NULL);
    snprintf(f.detail, sizeof f.detail, "%s/%d", hours, most);
    snprintf(f.excerpt, sizeof f.excerpt,
             "held back by queue limits at %s h UTC on %d of the last 7 days",
             hours, most);
    if ((inc = eng_advisory(e, s, &f, key, 0)))
        str_copy(inc->team, sizeof inc->team, j->team);
}

/* Whether one window holds an entry of this kind (and scenario, unless
 * NULL) of job j (or of no job, when jobless: a kernel line names none)
 * within `near` of ts. */
static int win_has_near(engine *e, const job *j, const char *win,
                        fact_kind kind, const char *scen, int64_t ts,
                        int64_t near, int jobless)
{
    node_win *w = win && *win ? eng_win_find(e, j->cluster, win) : NULL;

    for (size_t m = 0; w && m < w->n; m++) {
        const entry *en = &w->v[m];
        if (en->kind == kind && en->ts >= ts - near && en->ts <= ts + near &&
            (!scen || (en->scenario && !strcmp(en->scenario, scen))) &&
            ((jobless && !en->job[0]) || !strcmp(en->job, j->id)))
            return 1;
    }
    return 0;
}

/* The same over every window of job j: its own, host's, its nodes'. */
static int job_has_near(engine *e, const job *j, const char *host,
                        fact_kind kind, const char *scen, int64_t ts,
                        int64_t near)
{
    char own[96];
    size_t i;
    json_t *n;

    snprintf(own, sizeof own, "job:%.80s", j->id);
    if (win_has_near(e, j, own, kind, scen, ts, near, 1) ||
        win_has_near(e, j, host, kind, scen, ts, near, 1))
        return 1;
    json_array_foreach(j->nodes, i, n)
        if (win_has_near(e, j, json_string_value(n), kind, scen, ts, near, 1))
            return 1;
    return 0;
}

static void dataloader_mark(engine *e, const sig *s, const fact *f, job *j)
{
    incident *inc = strmap_get(eng_cs(e, s->cluster)->open_job, j->id);

    if (eng_fresh(e, inc))
        return;
    if (job_has_near(e, j, f->host, FACT_HOST_OOM, NULL, s->ts, OOM_NEAR))
        job_fault(e, s, f, "oom.dataloader_host");
}

static void dataloader_oom(engine *e, const sig *s, const fact *f)
{
    const char *scen = "oom.dataloader_host";
    job *j = f->job[0] ? eng_job_of(e, s->cluster, f->job)
                       : f->host[0] ? eng_job_on(e, s->cluster, f->host) : NULL;
    incident *inc;
    fact g;

    if (!j || !pb_find(e->cat, scen) ||
        !job_has_near(e, j, f->host, FACT_MARK, scen, s->ts, OOM_NEAR))
        return;
    inc = strmap_get(eng_cs(e, s->cluster)->open_job, j->id);
    if (eng_fresh(e, inc))
        return;
    eng_rule_fact(&g, FACT_JOB_FAULT, scen, f->host, j->id);
    str_copy(g.excerpt, sizeof g.excerpt, f->excerpt);
    eng_on_job_fault(e, s, &g);
}

static void eng_on_mark(engine *e, const sig *s, const fact *f)
{
    job *j = eng_job_of(e, s->cluster, f->job);
    const char *scen = f->scenario;
    mark_span sp;

    if (!scen || !pb_find(e->cat, scen))
        return;
    if (!strcmp(scen, "hw.driver_dstate") && f->host[0]) {
        eng_driver_evidence(e, s, f->host);
    } else if (!strcmp(scen, "fabric.nic_flaky")) {
        nic_mark(e, s, f);
    } else if (!strcmp(scen, "mig.config_lost")) {
        mig_mark(e, s, f);
    } else if (!strcmp(scen, "ray.serve_model_oom")) {
        serve_mark(e, s, f);
    } else if (!strcmp(scen, "ray.job_pending") && j &&
               strcmp(j->state, "RUNNING")) {
        sp = job_marks(e, j, f->host, scen, s->ts - HORIZON);
        if (sp.n >= 2 && sp.last - sp.first >= PENDING_FOR)
            job_fault(e, s, f, scen);
    } else if (!strcmp(scen, "ray.data_backpressure") && j &&
               job_idle_since(e, j, s->ts - IDLE_FOR)) {
        job_fault(e, s, f, scen);
    } else if (!strcmp(scen, "heartbeat.false_positive") && j &&
               eng_job_computing(e, j, s->ts)) {
        job_fault(e, s, f, scen);
    } else if (!strcmp(scen, "capacity.peak_demand")) {
        eng_peak_hit(e, s, f->job);
    } else if (!strcmp(scen, "oom.dataloader_host") && j) {
        dataloader_mark(e, s, f, j);
    }
}

/* Whether host's window holds an entry of kind and scenario for job j
 * within the day. */
static int host_has(engine *e, const job *j, const char *host, fact_kind kind,
                    const char *scen)
{
    return win_has_near(e, j, host, kind, scen, e->now, NAME_WINDOW, 0);
}

/* NCCL's own account of one job's nodes: a node on sockets (a mark) among
 * peers on IB (the same scenario as a recovery: IB works there). Judged
 * when either line arrives, since ranks print in any order. */
static void ib_peers(engine *e, const sig *s, const char *jobid)
{
    const char *scen = "net.ib_down";
    job *j = eng_job_of(e, s->cluster, jobid);
    size_t i, k;
    json_t *n;
    int peer_ib = 0;

    if (!j || json_array_size(j->nodes) < 2 || !pb_find(e->cat, scen))
        return;
    json_array_foreach(j->nodes, i, n)
        peer_ib |= host_has(e, j, json_string_value(n), FACT_RECOVERY, scen);
    if (!peer_ib)
        return;
    json_array_foreach(j->nodes, k, n) {
        const char *host = json_string_value(n);
        incident *inc = strmap_get(eng_cs(e, s->cluster)->open_node, host);
        fact f;
        if (!host_has(e, j, host, FACT_MARK, scen) ||
            host_has(e, j, host, FACT_RECOVERY, scen) ||
            (eng_fresh(e, inc) && !strcmp(inc->sc->id, scen)))
            continue;
        eng_rule_fact(&f, FACT_NODE_FAULT, scen, host, j->id);
        snprintf(f.excerpt, sizeof f.excerpt, "NCCL on %.*s fell back to "
                 "sockets while other nodes of job %.*s use InfiniBand",
                 str_utf8_max(host, 64), host, str_utf8_max(j->id, 64), j->id);
        eng_on_node_fault(e, s, &f, host);
        if ((inc = strmap_get(eng_cs(e, s->cluster)->open_node, host)))
            eng_add_child(inc, j->id, NULL, s->ts);
    }
}

/* ---- the detectors ---------------------------------------------------- */

/* A CUDA OOM of a Serve replica that failed to start nearby is that
 * scenario's, not a batch size's: taken before the jobs detector. */
static int serve_on_fact(engine *e, const sig *s, const fact *f)
{
    const char *ctx;

    if (f->kind != FACT_CUDA_OOM || !f->job[0] ||
        !(ctx = eng_oom_context(e, s, f)))
        return 0;
    fact g = *f;
    g.scenario = ctx;
    eng_on_job_fault(e, s, &g);
    return 1;
}

static const char *const serve_scenarios[] = {"ray.serve_model_oom", NULL};

const eng_detector eng_det_serve = {
    .name = "serve",
    .scenarios = serve_scenarios,
    .on_fact = serve_on_fact,
};

/* A job held back by a full cluster: one more hit for its team's hour. */
static int peak_on_fact(engine *e, const sig *s, const fact *f)
{
    if (eng_capacity_wait(e, f))
        eng_peak_hit(e, s, f->job);
    return 0;
}

static const char *const peak_scenarios[] = {"capacity.peak_demand", NULL};

const eng_detector eng_det_peak = {
    .name = "peak",
    .scenarios = peak_scenarios,
    .on_fact = peak_on_fact,
};

static int marks_on_fact(engine *e, const sig *s, const fact *f)
{
    if (f->kind == FACT_MARK)
        eng_on_mark(e, s, f);
    if (f->kind == FACT_HOST_OOM)
        dataloader_oom(e, s, f);
    if ((f->kind == FACT_MARK || f->kind == FACT_RECOVERY) && f->job[0] &&
        f->scenario && !strcmp(f->scenario, "net.ib_down")) {
        /* NCCL's word that a node runs over IB, for its peers' marks */
        if (f->kind == FACT_RECOVERY && f->host[0])
            eng_win_add(e, s, f->host, f->kind, f->job, f->scenario, f->sig_id);
        ib_peers(e, s, f->job);
    }
    return 0;
}

static const char *const marks_scenarios[] = {
    "hw.driver_dstate", "fabric.nic_flaky", "mig.config_lost",
    "ray.serve_model_oom", "ray.job_pending", "ray.data_backpressure",
    "heartbeat.false_positive", "capacity.peak_demand", "net.ib_down",
    "oom.dataloader_host", NULL};

const eng_detector eng_det_marks = {
    .name = "marks",
    .scenarios = marks_scenarios,
    .on_fact = marks_on_fact,
};
