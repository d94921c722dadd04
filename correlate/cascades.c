/* Cascades decided across a logical job's attempts (SCENARIOS.md, "Stuck
 * and cascading"; seed 000):
 *
 * - cascade.shifting_symptoms: the same logical job (job_name) failed
 *   SHIFT_ATTEMPTS times or more within a day, each time at about the same
 *   step, not always with the same error. The surface errors differ; what
 *   the attempts share is the cause: a node every attempt ran on, the one
 *   that showed heat first when several did. Heat makes the root a
 *   thermal one (a cooling ticket); otherwise the node itself.
 *
 * Part of the engine (shares engine_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "correlate/engine_internal.h"

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

/* The failed attempts of j's logical job within SHIFT_WINDOW, oldest
 * first; returns how many. */
static size_t attempts(engine *e, const job *j, job **out)
{
    size_t pos = 0, n = 0;
    const char *k;
    void *v;

    while (strmap_next(e->jobs, &pos, &k, &v)) {
        job *o = v;
        if (!strcmp(o->name, j->name) && !strcmp(o->cluster, j->cluster) &&
            eng_is_failure(o->state) && o->updated >= e->now - SHIFT_WINDOW &&
            n < SHIFT_MAX)
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
static const char *shared_node(engine *e, job *const *a, size_t n,
                               int64_t *hot)
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
        if ((*hot = eng_host_hot(e, host, e->now - HORIZON)))
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

void eng_shifting_check(engine *e, const sig *s, job *j)
{
    const pb_scenario *sc = pb_find(e->cat, "cascade.shifting_symptoms");
    job *a[SHIFT_MAX];
    size_t n;
    const char *host;
    char key[192], idkey[192];
    incident *inc;
    int64_t hot;
    fact f;

    if (!sc || !j->name[0] || (n = attempts(e, j, a)) < SHIFT_ATTEMPTS ||
        !shifting(a, n) || !(host = shared_node(e, a, n, &hot)))
        return;
    eng_name_key(key, sizeof key, j->cluster, j->name);
    snprintf(idkey, sizeof idkey, "name:%s", j->name);
    inc = strmap_get(e->open_job, key);
    if (!eng_fresh(e, inc) || inc->sc != sc) {
        const pb_scenario *thermal = hot ? pb_find(e->cat, "thermal.straggler")
                                         : NULL;
        /* the root's own line: heat on the node, or the shared node */
        eng_rule_fact(&f, FACT_JOB_FAULT, thermal ? thermal->id : sc->id, host,
                      j->id);
        snprintf(f.excerpt, sizeof f.excerpt,
                 "%zu attempts failed near step %.0f with different errors; "
                 "all ran on %.40s%s", n, j->step, host,
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
        strmap_put(e->open_job, key, inc);
    }
    str_copy(inc->job, sizeof inc->job, j->id);
    for (size_t i = 0; i < n; i++) {
        eng_add_child(inc, a[i]->id, a[i]->state, a[i]->updated);
        merge_attempt(e, inc, a[i]);
        if (strcmp(a[i]->incident, inc->id)) {
            str_copy(a[i]->incident, sizeof a[i]->incident, inc->id);
            if (a[i] != j)
                eng_persist_job(e, a[i]);
        }
    }
    eng_touch(inc, s);
}
