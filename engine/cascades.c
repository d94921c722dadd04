/* Cascades decided across a logical job's attempts (SCENARIOS.md, "Stuck
 * and cascading"; seed 000):
 *
 * - cascade.shifting_symptoms: the same logical job (job_name) failed
 *   SHIFT_ATTEMPTS times or more within a day, each time at about the same
 *   step, not always with the same error. The surface errors differ; what
 *   the attempts share is the cause: a node every attempt ran on, the one
 *   that showed heat first when several did. Heat makes the root a
 *   thermal one (a cooling ticket); otherwise the node itself. The
 *   attempts are kept in the logical job's own window (w:name:NAME, a
 *   day), which outlives the jobs' records (pruned after the horizon).
 *
 * A detector (engine/detect.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/str.h"
#include "engine/detect.h"
#include "engine/faults.h"
#include "engine/series.h"
#include "engine/state.h"

#define SHIFT_ATTEMPTS 3
#define SHIFT_MAX 16      /* attempts looked at, the latest first */
#define SHIFT_STEP 0.10   /* "about the same step": within 10 % */
#define SHIFT_WINDOW (24 * TS_HOUR)

static int by_time(const void *a, const void *b)
{
    const job *x = *(job *const *)a, *y = *(job *const *)b;

    if (x->updated != y->updated)
        return x->updated < y->updated ? -1 : 1;
    return strcmp(x->id, y->id);
}

/* ---- a logical job's window: its failed attempts ----------------------- */

typedef struct attempt {
    int64_t ts;
    char job[64], state[16], error[64];
    double step;
    json_t *nodes;
} attempt;

typedef struct name_win {
    attempt *v;
    size_t n, cap;
} name_win;

static void eng_names_free(void *p)
{
    name_win *w = p;

    for (size_t i = 0; i < w->n; i++)
        json_decref(w->v[i].nodes);
    free(w->v);
    free(w);
}

extern const eng_detector eng_det_cascades;

/* "cluster|job_name" -> a logical job's failed attempts, kept a day. */
static strmap *names_of(engine *e)
{
    void **slot = eng_slot(e, &eng_det_cascades);

    if (!*slot)
        *slot = strmap_new();
    return *slot;
}

static name_win *name_win_of(engine *e, const char *cluster, const char *name)
{
    char k[256];
    name_win *w;

    snprintf(k, sizeof k, "%.64s|%.180s", cluster, name);
    if ((w = strmap_get(names_of(e), k)))
        return w;
    w = xcalloc(1, sizeof *w);
    strmap_put(names_of(e), k, w);
    return w;
}

/* The attempt of that job (a later state of it replaces the earlier). */
static attempt *attempt_slot(name_win *w, const char *jobid)
{
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->v[i].job, jobid)) {
            json_decref(w->v[i].nodes);
            return &w->v[i];
        }
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 4;
        w->v = xrealloc(w->v, w->cap * sizeof *w->v);
    }
    return &w->v[w->n++];
}

/* Drops what is older than the window; returns how many are left. */
static size_t name_trim(name_win *w, int64_t before)
{
    size_t keep = 0;

    for (size_t i = 0; i < w->n; i++) {
        if (w->v[i].ts >= before)
            w->v[keep++] = w->v[i];
        else
            json_decref(w->v[i].nodes);
    }
    return w->n = keep;
}

/* Member "JOB STATE STEP ERROR NODE,NODE" (ERROR "-" when none). */
static void attempt_member(const attempt *a, char *buf, size_t len)
{
    size_t off, i;
    json_t *h;

    off = (size_t)snprintf(buf, len, "%s %s %.0f %s ", a->job, a->state,
                           a->step, a->error[0] ? a->error : "-");
    json_array_foreach(a->nodes, i, h)
        if (off < len)
            off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "," : "",
                                    json_string_value(h));
}

static void eng_attempt_add(engine *e, const job *j)
{
    name_win *w;
    attempt *a;
    char key[320], member[1024];

    if (!j->name[0])
        return;
    w = name_win_of(e, j->cluster, j->name);
    name_trim(w, e->now - NAME_WINDOW);
    a = attempt_slot(w, j->id);
    a->ts = j->updated;
    a->step = j->step;
    str_copy(a->job, sizeof a->job, j->id);
    str_copy(a->state, sizeof a->state, j->state);
    str_copy(a->error, sizeof a->error, j->error);
    a->nodes = json_copy(j->nodes ? j->nodes : json_array());
    eng_key(key, sizeof key, j->cluster, "w:name", j->name);
    attempt_member(a, member, sizeof member);
    e->ops->window_add(e->ctx, key, a->ts, member);
    e->ops->window_trim(e->ctx, key, e->now - NAME_WINDOW);
}

static int eng_restore_attempt(engine *e, const char *cluster, const char *name,
                        int64_t ts, const char *member)
{
    char jobid[64], state[16], error[64], nodes[800] = "";
    double step;
    attempt *a;
    name_win *w;
    char *tok, *save = NULL;

    if (sscanf(member, "%63s %15s %lf %63s %799s", jobid, state, &step, error,
               nodes) < 4)
        return -1;
    w = name_win_of(e, cluster, name);
    a = attempt_slot(w, jobid);
    a->ts = ts;
    a->step = step;
    str_copy(a->job, sizeof a->job, jobid);
    str_copy(a->state, sizeof a->state, state);
    str_copy(a->error, sizeof a->error, strcmp(error, "-") ? error : "");
    a->nodes = json_array();
    for (tok = strtok_r(nodes, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        json_array_append_new(a->nodes, json_string(tok));
    eng_clock_advance(e, cluster, ts);
    return 0;
}

/* Windows whose every attempt is older than a day are forgotten, here
 * and in Redis. */
static size_t eng_prune_names(engine *e)
{
    size_t pos = 0, n = 0;
    const char *k;
    void *v;
    char **old = NULL;

    while (strmap_next(names_of(e), &pos, &k, &v)) {
        const char *bar = strchr(k, '|');
        char cluster[80], key[320];
        snprintf(cluster, sizeof cluster, "%.*s", (int)(bar - k), k);
        if (name_trim(v, eng_clock(e, cluster) - NAME_WINDOW) > 0)
            continue;
        eng_key(key, sizeof key, cluster, "w:name", bar + 1);
        e->ops->window_trim(e->ctx, key, eng_clock(e, cluster) - NAME_WINDOW);
        old = xrealloc(old, (n + 1) * sizeof *old);
        old[n++] = xstrdup(k);
    }
    for (size_t i = 0; i < n; i++) {
        eng_names_free(strmap_del(names_of(e), old[i]));
        free(old[i]);
    }
    free(old);
    return n;
}

/* The failed attempts of j's logical job within SHIFT_WINDOW, oldest
 * first; returns how many. An attempt whose job record was pruned is
 * rebuilt in tmp from the window. */
static size_t attempts(engine *e, const job *j, job **out, job *tmp)
{
    name_win *w = name_win_of(e, j->cluster, j->name);
    size_t n = 0, t = 0;

    for (size_t i = 0; i < w->n && n < SHIFT_MAX; i++) {
        const attempt *a = &w->v[i];
        job *o = eng_job_of(e, j->cluster, a->job);
        if (!eng_is_failure(a->state) || a->ts < e->now - SHIFT_WINDOW)
            continue;
        if (!o) {
            o = &tmp[t++];
            memset(o, 0, sizeof *o);
            str_copy(o->id, sizeof o->id, a->job);
            str_copy(o->cluster, sizeof o->cluster, j->cluster);
            str_copy(o->name, sizeof o->name, j->name);
            str_copy(o->state, sizeof o->state, a->state);
            str_copy(o->error, sizeof o->error, a->error);
            o->step = a->step;
            o->updated = a->ts;
            o->nodes = a->nodes; /* borrowed */
        }
        out[n++] = o;
    }
    qsort(out, n, sizeof *out, by_time);
    return n;
}

/* Failed at about the same step, and not all with the same error. */
static int shifting(job *const *a, size_t n)
{
    double lo = a[0]->step, hi = a[0]->step;
    int differ = 0;

    for (size_t i = 0; i < n; i++) {
        if (a[i]->step <= 0)
            return 0; /* a step unknown: "about the same" cannot be told */
        lo = a[i]->step < lo ? a[i]->step : lo;
        hi = a[i]->step > hi ? a[i]->step : hi;
        differ |= strcmp(a[i]->error, a[0]->error) != 0;
    }
    return differ && hi - lo <= SHIFT_STEP * hi;
}

/* The node every attempt ran on: the one that showed heat, else the only
 * one. NULL when none is shared, or several without heat to choose. */
static const char *shared_node(engine *e, const char *cluster, job *const *a,
                               size_t n, int64_t *hot)
{
    const char *only = NULL;
    size_t shared = 0, i;
    json_t *h;

    *hot = 0;
    json_array_foreach(a[n - 1]->nodes, i, h) {
        const char *host = json_string_value(h);
        int all = 1;
        for (size_t k = 0; k < n && all; k++)
            all = eng_ran_on(a[k], host);
        if (!all)
            continue;
        if ((*hot = eng_host_hot(e, cluster, host, e->now - HORIZON)))
            return host;
        shared++;
        only = host;
    }
    return shared == 1 ? only : NULL;
}

/* An attempt's own incident (an OOM, a straggler) was a surface of the
 * cascade: the cascade takes it in. */
static void merge_attempt(engine *e, incident *inc, const job *a)
{
    for (size_t i = 0; a->incident[0] && i < e->ninc; i++) {
        incident *o = e->incs[i];
        if (o != inc && !o->merged[0] && o->job_scope &&
            !strcmp(o->id, a->incident) && !strcmp(o->job, a->id)) {
            eng_merge(e, inc, o);
            return;
        }
    }
}

static void eng_shifting_check(engine *e, const sig *s, job *j)
{
    const pb_scenario *sc = pb_find(e->cat, "cascade.shifting_symptoms");
    job *a[SHIFT_MAX], tmp[SHIFT_MAX];
    size_t n;
    const char *host;
    char key[192], idkey[192];
    incident *inc;
    int64_t hot;
    fact f;

    if (!sc || !j->name[0] || (n = attempts(e, j, a, tmp)) < SHIFT_ATTEMPTS ||
        !shifting(a, n) || !(host = shared_node(e, j->cluster, a, n, &hot)))
        return;
    eng_name_key(key, sizeof key, j->cluster, j->name);
    snprintf(idkey, sizeof idkey, "name:%s", j->name);
    inc = strmap_get(eng_cs(e, j->cluster)->open_job, key);
    if (!eng_fresh(e, inc) || inc->sc != sc) {
        const pb_scenario *thermal = hot ? pb_find(e->cat, "thermal.straggler")
                                         : NULL;
        /* the root's own line: heat on the node, or the shared node */
        eng_rule_fact(&f, FACT_JOB_FAULT, thermal ? thermal->id : sc->id, host,
                      j->id);
        snprintf(f.excerpt, sizeof f.excerpt,
                 "%zu attempts failed near step %.0f with different errors; "
                 "all ran on %.*s%s", n, j->step, str_utf8_max(host, 40), host,
                 hot ? ", whose GPUs ran hot or throttled" : "");
        inc = eng_open_incident(e, s, sc->id, "job", idkey);
        inc->job_scope = 1;
        str_copy(inc->key, sizeof inc->key, key);
        str_copy(inc->node, sizeof inc->node, host);
        str_copy(inc->root_node, sizeof inc->root_node, host);
        if (thermal)
            inc->root_scenario = thermal->id;
        /* the earliest anomaly: the node's first heat, else the first
         * attempt's failure */
        inc->root_ts = inc->first = thermal && hot < a[0]->updated
                                        ? hot : a[0]->updated;
        inc->cause = f;
        strmap_put(eng_cs(e, j->cluster)->open_job, key, inc);
    }
    str_copy(inc->job, sizeof inc->job, j->id);
    for (size_t i = 0; i < n; i++) {
        eng_add_child(inc, a[i]->id, a[i]->state, a[i]->updated);
        merge_attempt(e, inc, a[i]);
        if (strcmp(a[i]->incident, inc->id)) {
            str_copy(a[i]->incident, sizeof a[i]->incident, inc->id);
            if (a[i] != j && eng_job_of(e, j->cluster, a[i]->id) == a[i])
                eng_persist_job(e, a[i]);
        }
    }
    eng_touch(inc, s);
}

/* ---- the detector ----------------------------------------------------- */

static void cascades_on_job(engine *e, const sig *s, job *j, eng_job_event ev)
{
    if (ev == ENG_JOB_FAILED)
        eng_attempt_add(e, j);
    else if (ev == ENG_JOB_UNEXPLAINED)
        eng_shifting_check(e, s, j);
}

static int cascades_restore_window(engine *e, const char *cluster,
                                   const char *win, int64_t ts,
                                   const char *member)
{
    if (strncmp(win, "w:name:", 7))
        return 0;
    return eng_restore_attempt(e, cluster, win + 7, ts, member) ? -1 : 1;
}

static void cascades_forget(engine *e)
{
    void **slot = eng_slot(e, &eng_det_cascades);

    strmap_free(*slot, eng_names_free);
    *slot = NULL;
}

static const char *const cascades_scenarios[] = {
    "cascade.shifting_symptoms", "thermal.straggler", NULL};

const eng_detector eng_det_cascades = {
    .name = "cascades",
    .scenarios = cascades_scenarios,
    .on_job = cascades_on_job,
    .restore_window = cascades_restore_window,
    .prune = eng_prune_names,
    .forget = cascades_forget,
};
