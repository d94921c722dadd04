/* Metric series and what they say about hosts and jobs (engine/series.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/str.h"
#include "engine/series.h"

void eng_series_free(void *p)
{
    free(p);
}

static int is_counter(const char *name)
{
    size_t n = strlen(name);
    return n > 6 && (strcmp(name + n - 6, "_total") == 0 ||
                     strcmp(name + n - 6, "_TOTAL") == 0);
}

int eng_is_util(const char *name)
{
    return strcmp(name, M_UTIL) == 0;
}

/* The device a sample is about: a GPU, a NIC, or for training metrics
 * the job. */
const char *eng_dev_of(const sig *s)
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

series *eng_series_get(engine *e, const char *cluster, const char *host,
                          const char *name, const char *dev)
{
    char key[400];

    series_key(key, sizeof key, cluster, host, name, dev);
    return strmap_get(e->series, key);
}

void eng_series_persist(engine *e, const series *se)
{
    char key[320], field[300], val[400];

    eng_key(key, sizeof key, se->cluster, "series", NULL);
    snprintf(field, sizeof field, "%s|%s|%s", se->host, se->name, se->dev);
    snprintf(val, sizeof val,
             "%lld %.17g %.17g %.17g %lld %lld %lld %lld %.17g %lld %lld %lld "
             "%.17g %d", (long long)se->ts, se->v, se->lo, se->hi,
             (long long)se->since, (long long)se->first,
             (long long)se->changed, (long long)se->anchor_ts, se->anchor_v,
             (long long)se->low_since, (long long)se->burst,
             (long long)se->up, se->run_v, se->n);
    e->ops->hash_put(e->ctx, key, field, val);
}

/* What a counter's new sample changes: its run of increases, its burst
 * start, and the window anchor its increase is measured from. A decrease
 * is a counter reset (exporter restart): no evidence either way. */
static void counter_step(series *se, int64_t ts, double v)
{
    if (v > se->v) {
        se->since = se->since ? se->since : se->ts;
        if (!se->up || ts - se->up >= BURST_QUIET)
            se->burst = ts;
        se->up = ts;
    } else if (v < se->v) {
        se->since = 0;
        se->anchor_ts = ts;
        se->anchor_v = v;
        return;
    } else {
        se->since = 0;
    }
    /* The anchor moves to the previous sample once it is older than the
     * window: the increase is over WINDOW to WINDOW plus one interval. */
    if (ts - se->anchor_ts > WINDOW) {
        se->anchor_ts = se->ts;
        se->anchor_v = se->v;
    }
}

/* A gauge's run without a real fall (memory ramps), and for utilisation
 * how long it has been under UTIL_LOW. */
static void gauge_step(series *se, int64_t ts, double v)
{
    if (v < se->v - LEAK_DIP * (se->v > 0 ? se->v : -se->v)) {
        se->since = ts;
        se->run_v = v;
    }
    if (eng_is_util(se->name)) {
        if (v >= UTIL_LOW)
            se->low_since = 0;
        else if (!se->low_since)
            se->low_since = ts;
    }
}

/* Takes one sample into its series; NULL when it is not newer than the
 * series' last (a redelivery or a late sample: the rules saw its time). */
series *eng_series_take(engine *e, const sig *s, const char *dev)
{
    char key[400];
    series *se;

    series_key(key, sizeof key, s->cluster, s->host, s->name, dev);
    se = strmap_get(e->series, key);
    if (!se) {
        se = xcalloc(1, sizeof *se);
        str_copy(se->cluster, sizeof se->cluster, s->cluster);
        str_copy(se->host, sizeof se->host, s->host);
        str_copy(se->name, sizeof se->name, s->name);
        str_copy(se->dev, sizeof se->dev, dev);
        se->lo = se->hi = se->anchor_v = se->run_v = s->value;
        se->first = se->changed = se->anchor_ts = se->since = s->ts;
        if (is_counter(se->name))
            se->since = 0;
        if (eng_is_util(se->name) && s->value < UTIL_LOW)
            se->low_since = s->ts;
        strmap_put(e->series, key, se);
    } else if (s->ts <= se->ts) {
        return NULL;
    } else {
        if (is_counter(se->name))
            counter_step(se, s->ts, s->value);
        else
            gauge_step(se, s->ts, s->value);
        if (s->value != se->v)
            se->changed = s->ts;
    }
    if (s->value < se->lo)
        se->lo = s->value;
    if (s->value > se->hi)
        se->hi = s->value;
    if (!strcmp(se->name, M_SCRAPE) && s->value >= SCRAPE_TIMEOUT)
        se->n++;
    se->ts = s->ts;
    se->v = s->value;
    return se;
}

/* The GPUs of the job's nodes sampled after `since`. */
gpu_census eng_census(engine *e, const job *j, int64_t since)
{
    gpu_census c = {0, 0, 0, 0};
    size_t i;
    json_t *n;

    json_array_foreach(j->nodes, i, n) {
        if (eng_untrusted(e, j->cluster, json_string_value(n)))
            continue; /* ghost data: its values carry no information */
        for (int g = 0; g < MAX_GPUS; g++) {
            char dev[8];
            const series *u, *p;
            snprintf(dev, sizeof dev, "%d", g);
            u = eng_series_get(e, j->cluster, json_string_value(n), M_UTIL, dev);
            p = eng_series_get(e, j->cluster, json_string_value(n), M_POWER, dev);
            if (!u || u->ts <= since)
                continue;
            if (u->v < UTIL_IDLE)
                c.idle++;
            else if (u->v >= UTIL_BUSY && p && p->ts > since &&
                     p->v < POWER_IDLE * p->hi)
                c.busy_wait++;
            else if (u->v >= UTIL_BUSY)
                c.working++;
            else
                c.other++;
        }
    }
    return c;
}

/* The time of the host's earliest mark of scen since `since`, or 0. */
int64_t eng_first_mark(engine *e, const char *cluster, const char *host,
                          const char *scen, int64_t since)
{
    node_win *w = eng_win_find(e, cluster, host);
    int64_t at = 0;

    for (size_t i = 0; w && i < w->n; i++)
        if (w->v[i].kind == FACT_MARK && w->v[i].ts >= since &&
            w->v[i].scenario && strcmp(w->v[i].scenario, scen) == 0 &&
            (!at || w->v[i].ts < at))
            at = w->v[i].ts;
    return at;
}

int64_t eng_host_hot(engine *e, const char *cluster, const char *host,
                     int64_t since)
{
    return eng_first_mark(e, cluster, host, "thermal.fleet_throttle", since);
}

/* Whether the host's metrics are stale (an open ghost-data incident):
 * the stall rule does not read them. */
int eng_untrusted(engine *e, const char *cluster, const char *host)
{
    return eng_advisory_open(e, cluster, "ghost", host, 1);
}

/* The most recent value of a host-level gauge, if sampled lately. */
const series *eng_host_gauge(engine *e, const char *cluster,
                                const char *host, const char *name)
{
    const series *se = eng_series_get(e, cluster, host, name, "");

    return se && se->ts >= e->now - STALL_RECHECK ? se : NULL;
}

/* The host's GPUs that report utilisation: how many are under UTIL_LOW
 * now (*idle), and since when all of them are (0: not all, or none
 * reports). */
int64_t eng_host_idle(engine *e, const char *cluster, const char *host,
                         int *idle)
{
    int64_t since = 0;
    int seen = 0;

    *idle = 0;
    for (int g = 0; g < MAX_GPUS; g++) {
        char dev[8];
        const series *se;
        snprintf(dev, sizeof dev, "%d", g);
        se = eng_series_get(e, cluster, host, M_UTIL, dev);
        if (!se || se->ts < e->now - STALL_RECHECK)
            continue;
        seen++;
        if (!se->low_since)
            continue;
        ++*idle;
        if (se->low_since > since)
            since = se->low_since;
    }
    return seen && *idle == seen ? since : 0;
}

int eng_idle_gpus(engine *e, const char *cluster, const char *host)
{
    int n;

    eng_host_idle(e, cluster, host, &n);
    return n;
}

int64_t eng_host_idle_since(engine *e, const char *cluster, const char *host)
{
    int n;

    return eng_host_idle(e, cluster, host, &n);
}

/* Whether the job's GPUs were computing at `ts` (busy at load power on
 * every node that reported within STALL_RECHECK; ghost-data hosts are not
 * read) and its nodes' network clean (no retransmit burst in the
 * BURST_BEFORE before): seed 004's heartbeat false positive. */
int eng_job_computing(engine *e, const job *j, int64_t ts)
{
    gpu_census c = eng_census(e, j, ts - STALL_RECHECK - 1);
    size_t pos = 0;
    const char *k;
    void *v;

    if (!c.working || c.busy_wait || c.idle || c.other)
        return 0;
    while (strmap_next(e->series, &pos, &k, &v)) {
        const series *se = v;
        if ((!strcmp(se->name, M_RETX) || !strcmp(se->name, M_TCP_RETX)) &&
            se->up >= ts - BURST_BEFORE && se->burst && eng_ran_on(j, se->host))
            return 0;
    }
    return 1;
}

/* The metrics a rule reads back later; samples of any other name are not
 * kept (no memory, no Redis write). */
int eng_metric_kept(const char *name)
{
    return mn_series(name);
}

int eng_restore_series(engine *e, const char *cluster, const char *field,
                       const char *value, cs_err *err)
{
    char host[128], name[64], dev[64], key[400];
    long long ts, since, first = 0, changed = 0, anchor_ts = 0, low = 0,
              burst = 0, up = 0;
    double v, lo, hi, anchor_v = 0, run_v = 0;
    int n = 0, got;
    const char *a = strchr(field, '|'), *b = a ? strchr(a + 1, '|') : NULL;
    series *se;

    if (!a || !b || (size_t)(a - field) >= sizeof host ||
        (size_t)(b - a - 1) >= sizeof name || strlen(b + 1) >= sizeof dev ||
        ((got = sscanf(value, "%lld %lg %lg %lg %lld %lld %lld %lld %lg %lld "
                            "%lld %lld %lg %d", &ts, &v, &lo, &hi, &since,
                       &first, &changed, &anchor_ts, &anchor_v, &low, &burst,
                       &up, &run_v, &n)) != 5 && got != 14)) {
        cs_err_set(err, "series %s: malformed record '%s'", field, value);
        return -1;
    }
    snprintf(host, sizeof host, "%.*s", (int)(a - field), field);
    snprintf(name, sizeof name, "%.*s", (int)(b - a - 1), a + 1);
    snprintf(dev, sizeof dev, "%s", b + 1);
    se = xcalloc(1, sizeof *se);
    str_copy(se->cluster, sizeof se->cluster, cluster);
    str_copy(se->host, sizeof se->host, host);
    str_copy(se->name, sizeof se->name, name);
    str_copy(se->dev, sizeof se->dev, dev);
    se->ts = ts;
    se->v = v;
    se->lo = lo;
    se->hi = hi;
    se->since = since;
    /* A record of an older version has no more: the rules start afresh. */
    se->first = got == 14 ? first : ts;
    se->changed = got == 14 ? changed : ts;
    se->anchor_ts = got == 14 ? anchor_ts : ts;
    se->anchor_v = got == 14 ? anchor_v : v;
    se->low_since = low;
    se->burst = burst;
    se->up = up;
    se->run_v = got == 14 ? run_v : v;
    se->n = n;
    series_key(key, sizeof key, cluster, host, name, dev);
    free(strmap_put(e->series, key, se));
    eng_clock_advance(e, se->cluster, se->ts);
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
        if (((series *)v)->ts <
            eng_clock(e, ((series *)v)->cluster) - HORIZON) {
            old = xrealloc(old, (n + 1) * sizeof *old);
            old[n++] = xstrdup(k);
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
