/* Fail-slow: one rank of a job slower than its peers, sample after sample,
 * before anything times out.
 *
 * In a synchronous job every rank's step lasts as long as the slowest
 * rank's, so the step time cannot say who is slow. The time a rank spends
 * computing its step before it waits in the step's collectives can: the
 * training exporter reports it per rank (M_RANK_COMPUTE, labels job and
 * rank, from the rank's node; docs/COLLECTORS.md). A rank whose compute
 * time is FS_RATIO times the median of its peers' (the job's other ranks
 * sampled within FS_FRESH), every sample for FS_PERSIST, is fail-slow: a
 * degraded GPU, a PCIe link trained down, a noisy neighbour. One
 * train.fail_slow incident for the job names the rank, its node and how
 * much slower it is. One slow sample (a checkpoint write, a GC pause)
 * starts a run that the next normal sample ends. It takes FS_MIN_PEERS
 * peers to have a median worth comparing with, and a node that is hot is
 * left to the thermal rules, which know why it is slow.
 *
 * Each rank's samples are a series (series.h: its slow run in low_since
 * survives a restart); the detector keeps, per job, where its ranks'
 * series are, and rebuilds that from the next samples after a restart.
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

#define FS_RATIO 1.2           /* a fifth slower than its peers' median */
#define FS_PERSIST (10 * TS_MIN)
#define FS_FRESH (5 * TS_MIN)  /* a peer's sample this recent counts */
#define FS_MIN_PEERS 3

/* Where one rank's series is. */
typedef struct rank_ref {
    char host[128], dev[64];
} rank_ref;

/* A job's ranks, under "cluster|job". */
typedef struct job_ranks {
    rank_ref *v;
    size_t n;
    int64_t last; /* the newest sample, for the prune */
} job_ranks;

extern const eng_detector eng_det_failslow;

static strmap *jobs_of(engine *e)
{
    void **slot = eng_slot(e, &eng_det_failslow);

    if (!*slot)
        *slot = strmap_new();
    return *slot;
}

static job_ranks *ranks_of(engine *e, const char *cluster, const char *jobid)
{
    strmap *m = jobs_of(e);
    char key[200];
    job_ranks *jr;

    snprintf(key, sizeof key, "%.64s|%.120s", cluster, jobid);
    if (!(jr = strmap_get(m, key))) {
        jr = xcalloc(1, sizeof *jr);
        strmap_put(m, key, jr);
    }
    return jr;
}

static void ranks_add(job_ranks *jr, const char *host, const char *dev,
                      int64_t ts)
{
    jr->last = ts > jr->last ? ts : jr->last;
    for (size_t i = 0; i < jr->n; i++)
        if (!strcmp(jr->v[i].dev, dev)) {
            str_copy(jr->v[i].host, sizeof jr->v[i].host, host);
            return;
        }
    jr->v = xrealloc(jr->v, (jr->n + 1) * sizeof *jr->v);
    str_copy(jr->v[jr->n].host, sizeof jr->v[jr->n].host, host);
    str_copy(jr->v[jr->n].dev, sizeof jr->v[jr->n].dev, dev);
    jr->n++;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of the peers' recent compute times (not dev's own), 0 when
 * fewer than FS_MIN_PEERS sampled lately; *n is how many. */
static double peer_median(engine *e, const char *cluster, const job_ranks *jr,
                          const char *dev, size_t *n)
{
    double *v = xcalloc(jr->n + 1, sizeof *v), med = 0;

    *n = 0;
    for (size_t i = 0; i < jr->n; i++) {
        const series *se;
        if (!strcmp(jr->v[i].dev, dev))
            continue;
        se = eng_series_get(e, cluster, jr->v[i].host, M_RANK_COMPUTE,
                            jr->v[i].dev);
        if (se && se->ts >= e->now - FS_FRESH)
            v[(*n)++] = se->v;
    }
    if (*n >= FS_MIN_PEERS) {
        qsort(v, *n, sizeof *v, cmp_double);
        med = *n % 2 ? v[*n / 2] : (v[*n / 2 - 1] + v[*n / 2]) / 2;
    }
    free(v);
    return med;
}

static void report(engine *e, const sig *s, const job *j, const char *rank,
                   const series *se, double med, size_t peers)
{
    incident *inc = strmap_get(eng_cs(e, j->cluster)->open_job, j->id);
    char msg[400];
    fact f;

    if (eng_fresh(e, inc)) { /* the job's incident says it already */
        if (!strcmp(inc->sc->id, "train.fail_slow"))
            eng_touch(inc, s);
        return;
    }
    eng_rule_fact(&f, FACT_JOB_FAULT, "train.fail_slow", s->host, j->id);
    snprintf(f.detail, sizeof f.detail, "rank %.20s", rank);
    snprintf(msg, sizeof msg,
             "rank %.20s on %.100s computes a step in %.3g s, its %zu peers "
             "in %.3g s (%.0f%% slower) for %lld min", rank, s->host, se->v,
             peers, med, 100.0 * (se->v / med - 1),
             (long long)((s->ts - se->low_since) / TS_MIN));
    str_copy(f.excerpt, sizeof f.excerpt, msg);
    str_utf8_trim(f.excerpt);
    eng_on_job_fault(e, s, &f);
}

static int failslow_on_metric(engine *e, const sig *s)
{
    const char *jobid, *rank;
    char dev[64];
    job_ranks *jr;
    series *se;
    job *j;
    double med;
    size_t peers;

    if (!s->host || !s->name || strcmp(s->name, M_RANK_COMPUTE))
        return 0;
    jobid = json_string_value(json_object_get(s->labels, "job"));
    rank = json_string_value(json_object_get(s->labels, "rank"));
    if (!jobid)
        jobid = s->job;
    if (!jobid || !rank)
        return 0; /* a sample that names no rank compares with nothing */
    snprintf(dev, sizeof dev, "%.40s#%.20s", jobid, rank);
    if (!(se = eng_series_take(e, s, dev)))
        return 0;
    jr = ranks_of(e, s->cluster, jobid);
    ranks_add(jr, s->host, dev, s->ts);
    med = peer_median(e, s->cluster, jr, dev, &peers);
    if (peers < FS_MIN_PEERS) {
        /* too few to compare with (the job's start, or the peers not
         * heard from since a restart): no evidence either way */
    } else if (se->v >= FS_RATIO * med) {
        if (!se->low_since)
            se->low_since = s->ts;
    } else {
        se->low_since = 0;
    }
    eng_series_persist(e, se);
    j = eng_job_of(e, s->cluster, jobid);
    if (!se->low_since || s->ts - se->low_since < FS_PERSIST || !j ||
        strcmp(j->state, "RUNNING") || !pb_find(e->cat, "train.fail_slow") ||
        eng_host_hot(e, s->cluster, s->host, s->ts - FS_PERSIST))
        return 1;
    report(e, s, j, rank, se, med, peers);
    return 1;
}

/* After a restart: the ranks' series read back say where each job's
 * ranks are ("JOB#RANK"). */
static void failslow_restored(engine *e)
{
    size_t pos = 0;
    const char *k;
    void *v;

    while (e->series && strmap_next(e->series, &pos, &k, &v)) {
        const series *se = v;
        const char *hash = strrchr(se->dev, '#');
        char jobid[64];
        if (strcmp(se->name, M_RANK_COMPUTE) || !hash)
            continue;
        snprintf(jobid, sizeof jobid, "%.*s", (int)(hash - se->dev), se->dev);
        ranks_add(ranks_of(e, se->cluster, jobid), se->host, se->dev, se->ts);
    }
}

static void ranks_free(void *p)
{
    job_ranks *jr = p;

    if (jr)
        free(jr->v);
    free(jr);
}

/* Jobs whose ranks sent nothing for the horizon. */
static size_t failslow_prune(engine *e)
{
    strmap *m = jobs_of(e);
    size_t pos = 0, n = 0, nold = 0;
    const char *k;
    void *v;
    char **old = NULL;

    while (strmap_next(m, &pos, &k, &v)) {
        const char *bar = strchr(k, '|');
        char cluster[80];
        snprintf(cluster, sizeof cluster, "%.*s", (int)(bar ? bar - k : 0), k);
        if (((job_ranks *)v)->last < eng_clock(e, cluster) - HORIZON) {
            old = xrealloc(old, (nold + 1) * sizeof *old);
            old[nold++] = xstrdup(k);
        }
    }
    for (size_t i = 0; i < nold; i++) {
        ranks_free(strmap_del(m, old[i]));
        free(old[i]);
        n++;
    }
    free(old);
    return n;
}

static void failslow_forget(engine *e)
{
    void **slot = eng_slot(e, &eng_det_failslow);

    strmap_free(*slot, ranks_free);
    *slot = NULL;
}

static const char *const failslow_scenarios[] = {"train.fail_slow", NULL};

const eng_detector eng_det_failslow = {
    .name = "fail-slow",
    .scenarios = failslow_scenarios,
    .on_metric = failslow_on_metric,
    .restored = failslow_restored,
    .prune = failslow_prune,
    .forget = failslow_forget,
    .free = failslow_forget,
};
