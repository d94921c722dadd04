/* Faults (engine/faults.h): how a fault becomes an incident or joins one.
 * A node's fault, a job's, an advisory under its own key, and one
 * incident merged into another. Over the state layer; the detectors call
 * these, and what a detector must hear back (a node incident opened or
 * changed) goes through the detector table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/str.h"
#include "engine/detect.h"
#include "engine/faults.h"

/* The window a fact goes to: its host's, or for a signal that names no
 * host (a pod event before scheduling) its job's, "job:<id>" (host names
 * cannot hold a colon). Every fact lands in some window, so a restart
 * knows it was seen. */
const char *eng_window_of(const fact *f, char *buf, size_t len)
{
    if (f->host[0])
        return f->host;
    snprintf(buf, len, "job:%s", f->job);
    return buf;
}

/* The earliest entry of a host's window since `since` that keep takes. */
static const entry *earliest(engine *e, const char *cluster, const char *host,
                             int64_t since,
                             int (*keep)(const engine *e, const entry *en))
{
    node_win *w = eng_win_find(e, cluster, host);
    const entry *best = NULL;

    for (size_t i = 0; w && i < w->n; i++) {
        const entry *en = &w->v[i];
        if (en->ts >= since && keep(e, en) && (!best || en->ts < best->ts))
            best = en;
    }
    return best;
}

static int is_anomaly(const engine *e, const entry *en)
{
    (void)e;
    return en->kind != FACT_CHECKPOINT && en->kind != FACT_MARK;
}

static int is_node_fault(const engine *e, const entry *en)
{
    const pb_scenario *sc = en->scenario ? pb_find(e->cat, en->scenario) : NULL;
    return sc && sc->node_level;
}

/* Earliest anomaly on a host since `since`: the root cause of what
 * followed (seed 004: the earliest anomaly is the cause, later ones are
 * effects). */
const entry *eng_earliest_anomaly(engine *e, const char *cluster,
                                  const char *host, int64_t since)
{
    return earliest(e, cluster, host, since, is_anomaly);
}

/* Earliest node-level fault (driver or scheduler) on a host since `since`. */
const entry *eng_earliest_node_fault(engine *e, const char *cluster,
                                     const char *host, int64_t since)
{
    return earliest(e, cluster, host, since, is_node_fault);
}

/* A node fault that explains two or more job failures within minutes of
 * each other is a node crash cascade; the fault stays its root cause
 * (SCENARIOS.md). Failures hours apart (a GPU faulting job after job) are
 * not one crash. */
void eng_maybe_escalate(engine *e, incident *inc)
{
    const pb_scenario *crash = pb_find(e->cat, "cascade.node_crash");
    int64_t last = 0;
    size_t near = 0;

    /* a storm stays what its nodes share, a maintenance what it is */
    if (!crash || !inc->sc->node_level || inc->sc == crash ||
        eng_own_key(inc->key))
        return;
    for (size_t i = 0; i < inc->nchildren; i++)
        if (inc->children[i].state[0] && inc->children[i].ts > last)
            last = inc->children[i].ts;
    for (size_t i = 0; i < inc->nchildren; i++)
        near += inc->children[i].state[0] &&
                inc->children[i].ts >= last - CRASH_WINDOW;
    if (near >= 2) {
        inc->sc = crash;
        eng_dirty(inc);
    }
}

/* Folds into a node incident the job failures already seen on that host
 * within the crash window, the ones no other incident explains. */
void eng_absorb_failed_jobs(engine *e, incident *inc, const char *host)
{
    cstate *cs = eng_cs(e, inc->cluster);
    node_win *w = strmap_get(cs->nodes, host);

    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++) {
        entry *en = &w->v[i];
        job *j = strmap_get(cs->jobs, en->job);
        if (en->kind != FACT_JOB_STATE || en->ts < e->now - CRASH_WINDOW || !j ||
            !eng_is_failure(j->state) ||
            (j->incident[0] && strcmp(j->incident, inc->id)))
            continue;
        eng_add_child(inc, j->id, j->state, en->ts);
        str_copy(j->incident, sizeof j->incident, inc->id);
    }
    eng_maybe_escalate(e, inc);
}

/* A node incident's evidence starts at its root cause: the anomalies the
 * window already holds on that host count, not only what follows. Job
 * failures another incident explains stay out. */
static void fold_earlier(engine *e, incident *inc, const sig *s,
                         const char *host)
{
    cstate *cs = eng_cs(e, s->cluster);
    node_win *w = strmap_get(cs->nodes, host);

    for (size_t i = 0; w && i < w->n; i++) {
        const entry *en = &w->v[i];
        job *j = strmap_get(cs->jobs, en->job);
        int dup = 0;
        if (en->ts < inc->root_ts || en->sig == s->id ||
            en->kind == FACT_CHECKPOINT || en->kind == FACT_MARK)
            continue;
        if (en->kind == FACT_JOB_STATE && j && j->incident[0] &&
            strcmp(j->incident, inc->id))
            continue;
        for (size_t k = 0; k < i && !dup; k++)
            dup = w->v[k].sig == en->sig;
        if (dup)
            continue;
        inc->count++;
        if (en->source < SRC__COUNT)
            inc->sources |= 1u << en->source;
        if (en->ts < inc->first)
            inc->first = en->ts;
    }
}

incident *eng_open_node_incident(engine *e, const sig *s, const char *host,
                                    const char *scenario, const fact *f)
{
    incident *inc = eng_open_incident(e, s, scenario, "node", host);
    const entry *first =
        eng_earliest_anomaly(e, s->cluster, host, e->now - CRASH_WINDOW);

    str_copy(inc->node, sizeof inc->node, host);
    str_copy(inc->root_node, sizeof inc->root_node, host);
    if (f) {
        inc->cause = *f;
        str_copy(inc->gpu, sizeof inc->gpu, f->gpu);
    }
    if (first && first->ts < inc->root_ts)
        inc->root_ts = first->ts;
    fold_earlier(e, inc, s, host);
    strmap_put(eng_cs(e, s->cluster)->open_node, host, inc);
    return inc;
}

/* A node's open incident whose fault got worse (the NVMe drive that timed
 * out is now removed): the later scenario, if the catalog says it
 * escalates the open one, becomes the incident's, with its response. The
 * first signal stays the root's time. */
static void escalate(engine *e, incident *inc, const fact *f)
{
    const pb_scenario *sc;

    if (!f->scenario || !strcmp(f->scenario, inc->sc->id) ||
        strcmp(inc->root_scenario, inc->sc->id) || eng_is_storm(inc) ||
        !(sc = pb_find(e->cat, f->scenario)) || !pb_escalates(sc, inc->sc->id))
        return;
    if (!inc->escalated_from[0])
        str_copy(inc->escalated_from, sizeof inc->escalated_from,
                 inc->sc->id);
    inc->sc = sc;
    inc->root_scenario = sc->id;
    inc->cause = *f;
    if (f->gpu[0])
        str_copy(inc->gpu, sizeof inc->gpu, f->gpu);
    eng_dirty(inc);
}

void eng_on_node_fault(engine *e, const sig *s, const fact *f,
                          const char *host)
{
    incident *inc = strmap_get(eng_cs(e, s->cluster)->open_node, host);

    eng_win_add(e, s, host, f->kind, s->job, f->scenario, f->sig_id);
    /* A long-lived incident (a GPU faulting job after job) absorbs only
     * its own scenario past the usual fold window; one resolved by the
     * node's recovery takes any fault within the grace period (the node
     * flaps). */
    if (inc && !(inc->recovered && eng_resolved_at(inc, e->now)) &&
        e->now - inc->updated > FOLD_WINDOW &&
        strcmp(inc->sc->id, f->scenario ? f->scenario : ""))
        inc = NULL;
    if (!eng_fresh(e, inc))
        inc = eng_open_node_incident(e, s, host, f->scenario, f);
    else
        escalate(e, inc, f);
    eng_touch(inc, s);
    if (!inc->gpu[0] && f->gpu[0] && !eng_is_storm(inc))
        str_copy(inc->gpu, sizeof inc->gpu, f->gpu);
    eng_absorb_failed_jobs(e, inc, host);
    eng_tell_incident(e, s, inc);
}

/* A job's incident opened by a catch-all signature (fallback: NCCL's
 * "invalid usage" header) takes the scenario of a specific fault that
 * follows within REFINE_AFTER: the header's reason, a line or two later,
 * says what the job's fault was. */
#define REFINE_AFTER (10 * TS_SEC)

static void refine(engine *e, incident *inc, const sig *s, const fact *f)
{
    const pb_signature *was, *now;
    const pb_scenario *sc;

    /* the cheap tests first: most faults join an older incident, or one
     * of their own scenario (the lookups walk the catalog) */
    if (s->ts - inc->opened > REFINE_AFTER || !f->scenario || !f->sig_id ||
        !inc->cause.sig_id || !strcmp(f->scenario, inc->sc->id) ||
        strcmp(inc->root_scenario, inc->sc->id))
        return;
    was = pb_signature_find(e->cat, inc->cause.sig_id);
    now = pb_signature_find(e->cat, f->sig_id);
    sc = pb_find(e->cat, f->scenario);
    if (!was || !was->fallback || !now || now->fallback || !sc)
        return;
    inc->sc = sc;
    inc->root_scenario = sc->id;
    inc->cause = *f;
    eng_dirty(inc);
}

void eng_on_job_fault(engine *e, const sig *s, const fact *f)
{
    cstate *cs = eng_cs(e, s->cluster);
    incident *inc = strmap_get(cs->open_job, f->job);
    job *j = strmap_get(cs->jobs, f->job);
    char wbuf[200];

    eng_win_add(e, s, eng_window_of(f, wbuf, sizeof wbuf), f->kind, f->job,
            f->scenario, f->sig_id);
    if (!eng_fresh(e, inc)) {
        inc = eng_open_incident(e, s, f->scenario, "job", f->job);
        str_copy(inc->job, sizeof inc->job, f->job);
        str_copy(inc->node, sizeof inc->node, f->host);
        str_copy(inc->root_job, sizeof inc->root_job, f->job);
        str_copy(inc->root_node, sizeof inc->root_node, f->host);
        inc->cause = *f;
        inc->job_scope = 1;
        str_copy(inc->key, sizeof inc->key, f->job);
        strmap_put(cs->open_job, f->job, inc);
    } else {
        refine(e, inc, s, f);
    }
    eng_touch(inc, s);
    if (j && strcmp(j->incident, inc->id)) {
        str_copy(j->incident, sizeof j->incident, inc->id);
        eng_persist_job(e, j);
    }
}

/* Incidents that describe a condition rather than a failure (a GPU idle,
 * a host's telemetry gone stale) live under their own key, "<kind>:<id>",
 * so that they never absorb a job's or a node's later failure and a
 * failure's incident never absorbs them. NULL when one is open already
 * (the sample that still shows the condition is its evidence). */
incident *eng_advisory(engine *e, const sig *s, const fact *f,
                       const char *key, int node)
{
    cstate *cs = eng_cs(e, s->cluster);
    strmap *open = node ? cs->open_node : cs->open_job;
    incident *inc = strmap_get(open, key);

    if (eng_fresh(e, inc)) {
        eng_touch(inc, s); /* the condition holds: it stays open */
        return NULL;
    }
    if (!pb_find(e->cat, f->scenario))
        return NULL;
    inc = eng_open_incident(e, s, f->scenario, node ? "node" : "job", key);
    str_copy(inc->key, sizeof inc->key, key);
    str_copy(inc->node, sizeof inc->node, f->host);
    str_copy(inc->root_node, sizeof inc->root_node, f->host);
    str_copy(inc->gpu, sizeof inc->gpu, f->gpu);
    if (!node) {
        inc->job_scope = 1;
        str_copy(inc->job, sizeof inc->job, f->job);
        str_copy(inc->root_job, sizeof inc->root_job, f->job);
    }
    inc->cause = *f;
    strmap_put(open, key, inc);
    eng_touch(inc, s);
    return inc;
}

void eng_merge(engine *e, incident *storm, incident *m)
{
    cstate *cs = eng_cs(e, m->cluster);
    size_t pos = 0;
    const char *k;
    void *v;

    storm->count += m->count;
    storm->sources |= m->sources;
    if (m->first < storm->first)
        storm->first = m->first;
    if (m->last > storm->last)
        storm->last = m->last;
    if (m->updated > storm->updated)
        storm->updated = m->updated;
    for (size_t i = 0; i < m->nchildren; i++)
        eng_add_child(storm, m->children[i].job, m->children[i].state,
                      m->children[i].ts);
    while (strmap_next(cs->jobs, &pos, &k, &v)) {
        job *j = v;
        if (!strcmp(j->incident, m->id)) {
            str_copy(j->incident, sizeof j->incident, storm->id);
            eng_persist_job(e, j);
        }
    }
    if (m->node[0] && strmap_get(cs->open_node, m->node) == m)
        strmap_put(cs->open_node, m->node, storm);
    if (m->key[0] && strmap_get(cs->open_job, m->key) == m)
        strmap_del(cs->open_job, m->key);
    str_copy(m->merged, sizeof m->merged, storm->id);
    eng_dirty(m);
    eng_dirty(storm);
}

int eng_capacity_wait(const engine *e, const fact *f)
{
    return (f->kind == FACT_JOB_FAULT || f->kind == FACT_CUDA_OOM) &&
           f->scenario && !strcmp(f->scenario, "sched.capacity_exhausted") &&
           f->job[0] && pb_find(e->cat, f->scenario);
}

incident *eng_advisory_of(engine *e, const sig *s, const fact *f,
                          const char *kind, const char *id, int node)
{
    char key[192];

    snprintf(key, sizeof key, "%s:%.170s", kind, id);
    return eng_advisory(e, s, f, key, node);
}

/* hw.driver_dstate: the kernel reports GPU driver errors on the host (the
 * exporter's dmesg counter rising, or GPU tools hung in D state) and the
 * exporter's scrapes alternate between its timeout and success (seed 004:
 * a fault in the RAS reporting path; compute is unaffected). */
void eng_driver_evidence(engine *e, const sig *s, const char *host)
{
    const series *dm = eng_series_get(e, s->cluster, host, M_DMESG, "");
    const series *sc = eng_series_get(e, s->cluster, host, M_SCRAPE, "");
    int errors = dm && dm->up && dm->up >= e->now - WINDOW;
    int flapping = sc && sc->n >= 2 && sc->lo < SCRAPE_OK &&
                   sc->ts >= e->now - WINDOW;
    node_win *w = eng_win_find(e, s->cluster, host);
    size_t hung = 0;
    fact f;

    for (size_t i = 0; w && i < w->n; i++)
        hung += w->v[i].kind == FACT_MARK && w->v[i].scenario &&
                w->v[i].ts >= e->now - WINDOW &&
                !strcmp(w->v[i].scenario, "hw.driver_dstate");
    if (!(errors || hung) || (!flapping && hung < 2) ||
        eng_advisory_open(e, s->cluster, "driver", host, 1))
        return;
    eng_rule_fact(&f, FACT_NODE_FAULT, "hw.driver_dstate", host, NULL);
    snprintf(f.excerpt, sizeof f.excerpt,
             "GPU driver errors in the kernel log (%zu hung GPU tools); "
             "scrapes at the %.0f s timeout %d times", hung, SCRAPE_TIMEOUT,
             sc ? sc->n : 0);
    eng_advisory_of(e, s, &f, "driver", host, 1);
}
