/* The engine's top: dispatch. A signal's facts go through the table of
 * detectors (engine/detect.h), the timers run, and eng_flush publishes
 * what changed; making, resetting and freeing the engine. Restore and
 * retention are restore.c; rendering is incident_json.c. */
#include "engine/detect.h"
#include "engine/render.h"
#include "engine/state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/jw.h"
#include "core/mem.h"
#include "core/str.h"
#include "core/strmap.h"
#include "core/ts.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

static void cs_free(void *p)
{
    cstate *cs = p;

    if (!cs)
        return;
    strmap_free(cs->nodes, eng_win_free);
    strmap_free(cs->inventory, free);
    strmap_free(cs->addr_host, free);
    strmap_free(cs->jobs, eng_job_free);
    strmap_free(cs->open_node, NULL);
    strmap_free(cs->open_job, NULL);
    ids_free(cs->seen);
    strmap_free(cs->corr, NULL); /* its states went with the detector's */
    free(cs);
}

static void state_new(engine *e)
{
    e->clusters = strmap_new();
    e->series = strmap_new();
}

static void state_free(engine *e)
{
    EACH_DETECTOR(d)
        if ((*d)->forget)
            (*d)->forget(e);
    e->pruning = 0; /* its walk's clusters go */
    e->cs_last = NULL; /* it goes with the clusters */
    strmap_free(e->clusters, cs_free); /* series: its detector's */
    for (size_t i = 0; i < e->ninc; i++)
        eng_incident_free(e->incs[i]);
    free(e->incs);
    e->incs = NULL;
    e->ninc = e->capinc = 0;
    free(e->dirty);
    e->dirty = NULL;
    e->ndirty = e->capdirty = e->next_seq = 0;
    e->quiet_due = 0;
    e->now = e->high = e->live_clock = 0;
    e->next_check = e->next_gap = 0;
}

/* The built-in catalog must have every scenario a detector opens by name:
 * one it lacks is a typo in the code. */
static void missing_scenario(void *arg, const char *detector, const char *id)
{
    cs_err *err = arg;

    if (!err->msg[0])
        cs_err_set(err, "detector %s opens scenario %s, which the built-in "
                   "catalog lacks", detector, id);
}

static void cat_release(engine *e)
{
    if (!e->cat_shared)
        pb_catalog_free(e->cat);
}

/* An engine over cat (its own when shared is 0). */
static engine *engine_over(const eng_store_ops *ops, void *ctx,
                           pb_catalog *cat, int shared, cs_err *err)
{
    engine *e = xcalloc(1, sizeof *e);

    e->ops = ops;
    e->ctx = ctx;
    e->cat = cat;
    e->cat_shared = shared;
    e->cls = cls_new(e->cat, err);
    if (!e->cls) {
        cat_release(e);
        free(e);
        return NULL;
    }
    err->msg[0] = '\0';
    if (eng_check_scenarios(e->cat, missing_scenario, err)) {
        cls_free(e->cls);
        cat_release(e);
        free(e);
        return NULL;
    }
    state_new(e);
    e->max_clusters = ENG_MAX_CLUSTERS;
    return e;
}

engine *eng_new(const eng_store_ops *ops, void *ctx, cs_err *err)
{
    return engine_over(ops, ctx, pb_catalog_embedded(), 0, err);
}

engine *eng_new_shared(const eng_store_ops *ops, void *ctx,
                       const pb_catalog *cat, cs_err *err)
{
    /* never freed or changed through e: cat_shared */
    return engine_over(ops, ctx, (pb_catalog *)cat, 1, err);
}

void eng_free(engine *e)
{
    if (!e)
        return;
    cls_free(e->cls);
    cat_release(e);
    for (size_t i = 0; i < e->nold; i++)
        pb_catalog_free(e->old_cats[i]);
    free(e->old_cats);
    state_free(e);
    EACH_DETECTOR(d)
        if ((*d)->free)
            (*d)->free(e);
    free(e);
}

int eng_reset(engine *e, cs_err *err)
{
    classifier *cls = cls_new(e->cat, err);

    if (!cls)
        return -1;
    cls_free(e->cls);
    e->cls = cls;
    state_free(e);
    state_new(e);
    return 0;
}

int eng_set_catalog(engine *e, pb_catalog *cat, cs_err *err)
{
    classifier *cls = cls_new(cat, err);

    if (!cls) {
        pb_catalog_free(cat);
        return -1;
    }
    cls_take_state(cls, e->cls);
    cls_free(e->cls);
    e->cls = cls;
    for (size_t i = 0; i < e->ninc; i++) {
        incident *inc = e->incs[i];
        const pb_scenario *sc = pb_find(cat, inc->sc->id);
        const pb_scenario *root = pb_find(cat, inc->root_scenario);
        int same = inc->root_scenario == inc->sc->id;
        if (sc)
            inc->sc = sc;
        /* summary() tells a root cause apart by pointer */
        inc->root_scenario = same ? inc->sc->id : root ? root->id
                                                       : inc->root_scenario;
    }
    e->quiet_due = 0; /* fold windows by scenario: look at each again */
    if (!e->cat_shared) {
        e->old_cats = xrealloc(e->old_cats, (e->nold + 1) * sizeof *e->old_cats);
        e->old_cats[e->nold++] = e->cat;
    }
    e->cat = cat;
    e->cat_shared = 0;
    return 0;
}

size_t eng_incident_count(const engine *e)
{
    return e->ninc;
}

int eng_flush_kind(const engine *e)
{
    return e->flush_kind;
}

void eng_each_open(const engine *e, void (*fn)(const char *scenario, void *arg),
                   void *arg)
{
    for (size_t i = 0; i < e->ninc; i++)
        if (e->incs[i]->shown && !e->incs[i]->pub_resolved &&
            !e->incs[i]->merged[0])
            fn(e->incs[i]->sc->id, arg);
}

/* A fact goes through the table until a detector takes it. */
static void on_fact(engine *e, const sig *s, const fact *f)
{
    EACH_DETECTOR(d)
        if ((*d)->on_fact && (*d)->on_fact(e, s, f))
            return;
}

static void timers(engine *e, const sig *s)
{
    EACH_DETECTOR(d)
        if ((*d)->on_tick)
            (*d)->on_tick(e);
    EACH_DETECTOR(d)
        if ((*d)->on_signal)
            (*d)->on_signal(e, s);
}

/* Reports (multi-line messages whose fact waits for their last line) that
 * s or the time `now` ended go first: they were printed before s. */
/* Multi-line reports that s, or the time of one cluster (s NULL), ended. */
static void reports_due(engine *e, const sig *s, const char *cluster,
                        int64_t now)
{
    sig head;
    fact f;

    while (cls_report_next(e->cls, s, cluster, now, &head, &f) == 1) {
        if (!eng_seen_before(e, &head))
            on_fact(e, &head, &f);
        sig_free(&head);
    }
}

void eng_drain(engine *e)
{
    reports_due(e, NULL, NULL, INT64_MAX);
}

_Static_assert(ENG_ALLOWED_LATENESS <= HORIZON,
               "windows must keep what a late signal is compared with");

void eng_refusal_reason(const engine *e, const sig *s, char *buf, size_t len)
{
    char at[40], newest[40];
    int64_t now = eng_clock(e, s->cluster);

    ts_format(s->ts, at, sizeof at);
    if (e->wall && s->ts > e->wall + ENG_MAX_AHEAD) {
        ts_format(e->wall, newest, sizeof newest);
        snprintf(buf, len, "future: event time %s is %lld min ahead of the "
                 "wall clock (%s); the allowed skew is %lld min", at,
                 (long long)((s->ts - e->wall) / TS_MIN), newest,
                 (long long)(ENG_MAX_AHEAD / TS_MIN));
        return;
    }
    if (!strmap_get(e->clusters, s->cluster) &&
        strmap_len(e->clusters) >= e->max_clusters) {
        snprintf(buf, len, "cluster limit: %zu clusters are tracked, the "
                 "most this correlator takes (correlate.max_clusters); "
                 "cluster %.64s is not one of them", strmap_len(e->clusters),
                 s->cluster);
        return;
    }
    ts_format(now, newest, sizeof newest);
    snprintf(buf, len, "late: event time %s is %lld min behind cluster %.64s "
             "(newest %s); the allowed lateness is %lld min", at,
             (long long)((now - s->ts) / TS_MIN), s->cluster, newest,
             (long long)(ENG_ALLOWED_LATENESS / TS_MIN));
}

int eng_feed(engine *e, const sig *s)
{
    fact facts[CLS_MAX_FACTS];
    int64_t *clock;
    int n;

    if (e->wall && s->ts > e->wall + ENG_MAX_AHEAD)
        return ENG_EARLY; /* before its cluster is made: it moves nothing */
    if (strmap_len(e->clusters) >= e->max_clusters &&
        !strmap_get(e->clusters, s->cluster))
        return ENG_FULL;
    clock = eng_clock_slot(e, s->cluster, s->ts); /* one lookup */
    if (s->ts < *clock - ENG_ALLOWED_LATENESS)
        return ENG_LATE;
    eng_clock_move(e, clock, s->ts);
    e->now = *clock;
    reports_due(e, s, NULL, s->ts);
    if (s->source == SRC_METRIC) {
        n = 0;
        EACH_DETECTOR(d)
            if ((*d)->on_metric)
                n += (*d)->on_metric(e, s);
        timers(e, s);
        return n;
    }
    n = cls_classify(e->cls, s, facts);
    timers(e, s);
    if (n == 0)
        return 0;
    if (eng_seen_before(e, s))
        return 0;
    for (int i = 0; i < n; i++) {
        fact *f = &facts[i];
        /* a node the line names, when the fleet knows it by that name
         * or address */
        const char *named = f->named[0] && strcmp(f->named, f->host)
                                ? eng_node_named(e, s->cluster, f->named)
                                : NULL;
        if (named)
            str_copy(f->host, sizeof f->host, named);
        on_fact(e, s, f);
    }
    EACH_DETECTOR(d)
        if ((*d)->on_facts)
            (*d)->on_facts(e, s);
    return 1;
}

static int cmp_inc(const void *a, const void *b)
{
    const incident *x = *(incident *const *)a, *y = *(incident *const *)b;
    if (x->opened != y->opened)
        return x->opened < y->opened ? -1 : 1;
    return strcmp(x->id, y->id);
}

/* Incidents merged into a storm, once published as such, are gone: the
 * storm answers for them (their hosts lead to it). */
static void drop_merged(engine *e)
{
    size_t keep = 0;
    char key[320];

    for (size_t i = 0; i < e->ninc; i++) {
        incident *inc = e->incs[i];
        if (!inc->merged[0]) {
            e->incs[keep++] = inc;
            continue;
        }
        cstate *cs = eng_cs(e, inc->cluster);
        if (inc->node[0] && strmap_get(cs->open_node, inc->node) == inc)
            strmap_del(cs->open_node, inc->node);
        if (inc->key[0] && strmap_get(cs->open_node, inc->key) == inc)
            strmap_del(cs->open_node, inc->key);
        eng_key(key, sizeof key, inc->cluster, "state", NULL);
        e->ops->hash_del(e->ctx, key, inc->id);
        eng_incident_free(inc);
    }
    e->ninc = keep;
}

/* When quiet would resolve inc if nothing more comes (INT64_MAX: not by
 * quiet, or not open as published). */
static int64_t quiet_due(const incident *inc)
{
    if (inc->pub_resolved || inc->merged[0] || inc->sc->node_level)
        return INT64_MAX;
    return inc->updated + eng_fold_window(inc) + 1;
}

/* Publishes inc when it changed or its status did. */
static void flush_one(engine *e, incident *inc, eng_change_fn fn, void *arg)
{
    char key[320];
    json_t *js, *acts, *fresh_acts;
    size_t k;
    json_t *a;

    /* Quiet resolves without a signal: publish the new status. */
    int resolved = eng_resolved_at(inc, eng_cluster_now(e, inc->cluster)) != 0;
    if (!inc->dirty && resolved == inc->pub_resolved)
        return;
    inc->dirty = 0;
    /* merged into a storm before anyone saw it: nothing to close */
    if (inc->merged[0] && !inc->shown)
        return;
    e->flush_kind = !inc->shown ? ENG_OPENED
                    : resolved == inc->pub_resolved ? ENG_UPDATED
                    : resolved ? ENG_RESOLVED : ENG_REOPENED;
    inc->shown = 1;
    inc->pub_resolved = resolved;
    js = eng_incident_json(e, inc);
    acts = json_object_get(js, "actions");
    fresh_acts = json_array();
    json_array_foreach(acts, k, a) {
        size_t m;
        json_t *p;
        int known = 0;
        json_array_foreach(inc->published, m, p)
            if (json_equal(p, a))
                known = 1;
        if (!known) {
            json_array_append(fresh_acts, a);
            json_array_append(inc->published, a);
        }
    }
    char *txt = jw_dumps(js, 0);
    eng_key(key, sizeof key, inc->cluster, "incidents", NULL);
    e->ops->hash_put(e->ctx, key, inc->id, txt);
    eng_persist_incident(e, inc);
    if (fn)
        fn(arg, inc->id, js, txt, fresh_acts);
    free(txt);
    json_decref(fresh_acts);
    json_decref(js);
}

static int by_seq(const void *a, const void *b)
{
    const incident *x = *(incident *const *)a, *y = *(incident *const *)b;

    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Every incident, in order, when a quiet resolve may be due (the next
 * such time found on the way); else only the changed ones, in the same
 * order. Returns whether one is merged into a storm (drop_merged's work;
 * a walk also finds those restored merged). */
static int flush_incidents(engine *e, eng_change_fn fn, void *arg)
{
    int64_t now = e->high > e->live_clock ? e->high : e->live_clock;
    int walk = !e->quiet_due || now >= e->quiet_due, merged = 0;
    incident **v = walk ? e->incs : e->dirty;
    size_t n = walk ? e->ninc : e->ndirty;

    if (walk)
        e->quiet_due = INT64_MAX;
    else if (n > 1)
        qsort(v, n, sizeof *v, by_seq);
    for (size_t i = 0; i < n; i++) {
        int64_t due;
        flush_one(e, v[i], fn, arg);
        merged |= v[i]->merged[0] != 0;
        if ((due = quiet_due(v[i])) < e->quiet_due)
            e->quiet_due = due;
    }
    e->ndirty = 0; /* a walk visited (and cleared) every one listed */
    return merged;
}

void eng_flush(engine *e, eng_change_fn fn, void *arg)
{
    if (flush_incidents(e, fn, arg))
        drop_merged(e);
    eng_persist_tracebacks(e);
    /* Last in the pipeline: a correlator killed while writing it leaves
     * Redis a prefix of it, and a state that used its events up must not
     * land there without the incident they opened (corr.c). */
    EACH_DETECTOR(d)
        if ((*d)->flush)
            (*d)->flush(e);
}

void eng_set_max_clusters(engine *e, size_t n)
{
    e->max_clusters = n;
}

void eng_set_max_seen(engine *e, size_t n)
{
    size_t pos = 0;
    const char *k;
    void *v;

    e->max_seen = n;
    while (strmap_next(e->clusters, &pos, &k, &v))
        ids_limit(((cstate *)v)->seen, n);
}

void eng_seen_stats(const engine *e, eng_seen *out)
{
    size_t pos = 0;
    const char *k;
    void *v;

    *out = (eng_seen){.horizon = HORIZON};
    while (strmap_next(e->clusters, &pos, &k, &v)) {
        const cstate *cs = v;
        int64_t floor = ids_limit_floor(cs->seen);
        out->ids += ids_len(cs->seen);
        out->evicted += ids_evicted(cs->seen);
        if (floor != INT64_MIN && cs->clock - floor < out->horizon)
            out->horizon = cs->clock - floor;
    }
}

void eng_set_wall(engine *e, int64_t wall)
{
    e->wall = wall;
}

/* Clusters whose streams caught up with the wall clock go over to it,
 * for good: a live cluster that falls quiet is exactly the one whose
 * timers the wall clock must drive. 1 when any cluster is live. */
static int clusters_live(engine *e, int64_t wall)
{
    size_t pos = 0;
    const char *k;
    void *v;
    int any = 0;

    while (strmap_next(e->clusters, &pos, &k, &v)) {
        cstate *cs = v;
        if (!cs->live && cs->clock && cs->clock >= wall - LIVE_SKEW)
            cs->live = 1;
        any |= cs->live;
    }
    return any;
}

void eng_tick(engine *e, int64_t wall)
{
    size_t pos = 0;
    const char *k;
    void *v;

    e->wall = wall;
    if (!clusters_live(e, wall))
        return;
    e->live_clock = wall;
    while (strmap_next(e->clusters, &pos, &k, &v))
        if (((cstate *)v)->live)
            reports_due(e, NULL, k, wall);
    EACH_DETECTOR(d)
        if ((*d)->on_tick)
            (*d)->on_tick(e);
}

json_t *eng_incidents(engine *e)
{
    incident **sorted = xcalloc(e->ninc + 1, sizeof *sorted);
    json_t *out = json_array();

    size_t n = 0;

    for (size_t i = 0; i < e->ninc; i++)
        if (!e->incs[i]->merged[0]) /* the storm answers for it */
            sorted[n++] = e->incs[i];
    qsort(sorted, n, sizeof *sorted, cmp_inc);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(out, eng_incident_json(e, sorted[i]));
    free(sorted);
    return out;
}
