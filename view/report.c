/* A report's numbers (view/report.h). */
#include "view/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/strmap.h"
#include "core/ts.h"

#define TOP_SCENARIOS 8
#define TOP_NODES 12
#define LEMON_AT 3

static const char *str_of(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static int64_t time_of(const json_t *o, const char *k)
{
    int64_t t;
    const char *s = str_of(o, k);

    return s && !ts_parse_rfc3339(s, &t) ? t : -1;
}

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double vw_percentile(double *v, size_t n, double p)
{
    size_t rank;

    if (!n)
        return 0;
    qsort(v, n, sizeof *v, by_double);
    rank = (size_t)ceil(p / 100.0 * (double)n);
    return v[rank ? rank - 1 : 0];
}

/* ---- a growing list of doubles per key ---- */

typedef struct dlist {
    double *v;
    size_t n, cap;
} dlist;

static void dl_add(strmap *m, const char *key, double x)
{
    dlist *l = strmap_get(m, key);

    if (!l)
        strmap_put(m, key, l = xcalloc(1, sizeof *l));
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = x;
}

static void dl_free(void *p)
{
    dlist *l = p;
    free(l->v);
    free(l);
}

/* [{scenario, n, median_s, p90_s}] of m, by scenario */
static int by_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char **keys_of(const strmap *m, size_t *n)
{
    const char **k = xcalloc(strmap_len(m) + 1, sizeof *k);
    size_t pos = 0, i = 0;
    const char *key;
    void *v;

    while (strmap_next(m, &pos, &key, &v))
        k[i++] = key;
    qsort(k, i, sizeof *k, by_key);
    *n = i;
    return k;
}

static json_t *spans(const strmap *m)
{
    json_t *out = json_array();
    size_t n;
    const char **k = keys_of(m, &n);

    for (size_t i = 0; i < n; i++) {
        dlist *l = strmap_get(m, k[i]);
        double med = vw_percentile(l->v, l->n, 50), p90 = vw_percentile(l->v, l->n, 90);
        json_array_append_new(out, json_pack("{s:s, s:I, s:f, s:f}", "scenario", k[i],
                                             "n", (json_int_t)l->n, "median_s", med,
                                             "p90_s", p90));
    }
    free(k);
    return out;
}

/* ---- per day ---- */

static json_t *per_day(const json_t *const *incs, size_t n)
{
    strmap *count = strmap_new(); /* scenario -> total */
    strmap *days = strmap_new();  /* "YYYY-MM-DD" -> 1 */
    json_t *out, *scen = json_array(), *dayv = json_array(), *rows = json_array();
    const char **sk, **dk;
    size_t ns, nd, keep;

    for (size_t i = 0; i < n; i++) {
        const char *s = str_of(incs[i], "scenario"), *o = str_of(incs[i], "opened");
        char day[11];
        snprintf(day, sizeof day, "%.10s", o ? o : "");
        strmap_put(count, s, (void *)((uintptr_t)strmap_get(count, s) + 1));
        strmap_put(days, day, (void *)1);
    }
    sk = keys_of(count, &ns);
    dk = keys_of(days, &nd);
    /* the commonest scenarios by count (then name), the rest as other */
    for (size_t i = 0; i < ns; i++)
        for (size_t j = i + 1; j < ns; j++)
            if ((uintptr_t)strmap_get(count, sk[j]) > (uintptr_t)strmap_get(count, sk[i])) {
                const char *t = sk[i];
                sk[i] = sk[j];
                sk[j] = t;
            }
    keep = ns > TOP_SCENARIOS ? TOP_SCENARIOS : ns;
    for (size_t d = 0; d < nd; d++)
        json_array_append_new(dayv, json_string(dk[d]));
    for (size_t s = 0; s <= keep; s++) {
        json_t *row = json_array();
        if (s == keep && ns <= keep) {
            json_decref(row);
            break;
        }
        json_array_append_new(scen, json_string(s < keep ? sk[s] : "other"));
        for (size_t d = 0; d < nd; d++) {
            size_t c = 0;
            for (size_t i = 0; i < n; i++) {
                const char *sc = str_of(incs[i], "scenario"), *o = str_of(incs[i], "opened");
                int mine = 0;
                if (strncmp(o ? o : "", dk[d], 10))
                    continue;
                if (s < keep)
                    mine = !strcmp(sc, sk[s]);
                else
                    for (size_t k = keep; k < ns && !mine; k++)
                        mine = !strcmp(sc, sk[k]);
                c += (size_t)mine;
            }
            json_array_append_new(row, json_integer((json_int_t)c));
        }
        json_array_append_new(rows, row);
    }
    out = json_pack("{s:o, s:o, s:o}", "days", dayv, "scenarios", scen, "counts", rows);
    free(sk);
    free(dk);
    strmap_free(count, NULL);
    strmap_free(days, NULL);
    return out;
}

/* ---- nodes ---- */

static const char *node_of(const json_t *inc)
{
    const char *n = str_of(json_object_get(inc, "scope"), "node");
    return n ? n : str_of(json_object_get(inc, "root_cause"), "node");
}

static json_t *nodes(const json_t *const *incs, size_t n)
{
    strmap *at = strmap_new(); /* node -> dlist of opening times (h) */
    strmap *lemon = strmap_new();
    json_t *out = json_array();
    size_t nk;
    const char **k;

    for (size_t i = 0; i < n; i++) {
        const char *node = node_of(incs[i]);
        int64_t t = time_of(incs[i], "opened");
        if (!node || t < 0)
            continue;
        dl_add(at, node, (double)t / 3600e6);
        if (strstr(str_of(incs[i], "scenario"), "lemon"))
            strmap_put(lemon, node, (void *)1);
    }
    k = keys_of(at, &nk);
    /* most incidents first, then name */
    for (size_t i = 0; i < nk; i++)
        for (size_t j = i + 1; j < nk; j++)
            if (((dlist *)strmap_get(at, k[j]))->n > ((dlist *)strmap_get(at, k[i]))->n) {
                const char *t = k[i];
                k[i] = k[j];
                k[j] = t;
            }
    for (size_t i = 0; i < nk && i < TOP_NODES; i++) {
        dlist *l = strmap_get(at, k[i]);
        double span;
        qsort(l->v, l->n, sizeof *l->v, by_double);
        span = l->n > 1 ? (l->v[l->n - 1] - l->v[0]) / (double)(l->n - 1) : 0;
        json_array_append_new(
            out, json_pack("{s:s, s:I, s:o, s:b}", "node", k[i], "incidents",
                           (json_int_t)l->n, "mtbf_h",
                           l->n > 1 ? json_real(span) : json_null(), "lemon",
                           l->n >= LEMON_AT || strmap_get(lemon, k[i])));
    }
    free(k);
    strmap_free(at, dl_free);
    strmap_free(lemon, NULL);
    return out;
}

/* ---- idle GPUs ---- */

static json_t *idle(const json_t *const *incs, size_t n, int64_t until)
{
    strmap *hours = strmap_new(), *cost = strmap_new();
    json_t *out = json_array();
    size_t nk;
    const char **k;

    for (size_t i = 0; i < n; i++) {
        const json_t *inc = incs[i], *a, *p;
        const char *team = str_of(json_object_get(inc, "scope"), "team");
        const json_t *ev = json_object_get(inc, "evidence");
        int64_t from = time_of(ev, "first"), to = time_of(inc, "resolved");
        size_t j;
        if (strcmp(str_of(inc, "scenario"), "cost.idle_gpu"))
            continue;
        if (to < 0)
            to = time_of(ev, "last") > 0 ? time_of(ev, "last") : until;
        json_array_foreach(json_object_get(inc, "actions"), j, a) {
            double gpus, h;
            p = json_object_get(a, "params");
            if (!json_object_get(p, "idle_gpus") || from < 0)
                continue;
            gpus = json_number_value(json_object_get(p, "idle_gpus"));
            /* idle since idle_for_min before the incident's first signal */
            h = gpus * ((double)(to - from) / 3600e6 +
                        json_number_value(json_object_get(p, "idle_for_min")) / 60.0);
            dl_add(hours, team ? team : "(no team)", h);
            dl_add(cost, team ? team : "(no team)",
                   h * json_number_value(json_object_get(p, "gpu_hour_usd")));
            break;
        }
    }
    k = keys_of(hours, &nk);
    for (size_t i = 0; i < nk; i++) {
        dlist *h = strmap_get(hours, k[i]), *c = strmap_get(cost, k[i]);
        double sh = 0, sc = 0;
        for (size_t j = 0; j < h->n; j++)
            sh += h->v[j], sc += c->v[j];
        json_array_append_new(out, json_pack("{s:s, s:f, s:f}", "team", k[i],
                                             "gpu_hours", sh, "cost_usd", sc));
    }
    free(k);
    strmap_free(hours, dl_free);
    strmap_free(cost, dl_free);
    return out;
}

/* ---- peak demand ---- */

static json_t *peak(const json_t *const *incs, size_t n)
{
    strmap *teams = strmap_new(); /* team -> dlist of hours of day */
    json_t *names = json_array(), *rows = json_array();
    size_t nk;
    const char **k;

    for (size_t i = 0; i < n; i++) {
        const char *team = str_of(json_object_get(incs[i], "scope"), "team");
        const char *o = str_of(incs[i], "opened");
        if (strcmp(str_of(incs[i], "scenario"), "capacity.peak_demand") || !o ||
            strlen(o) < 13)
            continue;
        dl_add(teams, team ? team : "(no team)", atoi(o + 11));
    }
    k = keys_of(teams, &nk);
    for (size_t i = 0; i < nk; i++) {
        dlist *l = strmap_get(teams, k[i]);
        json_t *row = json_array();
        int by_hour[24] = {0};
        for (size_t j = 0; j < l->n; j++)
            if (l->v[j] >= 0 && l->v[j] < 24)
                by_hour[(int)l->v[j]]++;
        for (int h = 0; h < 24; h++)
            json_array_append_new(row, json_integer(by_hour[h]));
        json_array_append_new(names, json_string(k[i]));
        json_array_append_new(rows, row);
    }
    free(k);
    strmap_free(teams, dl_free);
    return json_pack("{s:o, s:o}", "teams", names, "hours", rows);
}

/* ---- actions ---- */

static json_t *actions(const vw_trail *t, const strmap *ids)
{
    static const char *const events[][2] = {
        {"request", "requested"}, {"started", "run"}, {"approved", "approved"},
        {"denied", "denied"},     {"refused", "refused"}, {"done", "done"},
        {"failed", "failed"},     {"proposed", "proposed"}};
    json_t *out = json_object(), *r;
    strmap *state = strmap_new(); /* action -> its state now */
    size_t i, waiting = 0, pos = 0;
    const char *key;
    void *v;

    for (size_t e = 0; e < sizeof events / sizeof *events; e++)
        json_object_set_new(out, events[e][1], json_integer(0));
    json_array_foreach(t ? vw_trail_records(t) : NULL, i, r) {
        const char *ev = str_of(r, "event"), *inc = str_of(r, "incident");
        /* what the executor did for the incidents of the period (its
         * records are in wall time, the incidents in event time) */
        if (!inc || !strmap_get(ids, inc))
            continue;
        for (size_t e = 0; e < sizeof events / sizeof *events; e++)
            if (!strcmp(ev, events[e][0]))
                json_object_set_new(out, events[e][1],
                                    json_integer(json_integer_value(
                                        json_object_get(out, events[e][1])) + 1));
        if (vw_event_state(ev))
            strmap_put(state, str_of(r, "action"), (void *)vw_event_state(ev));
    }
    while (strmap_next(state, &pos, &key, &v))
        waiting += !strcmp(v, "waiting");
    json_object_set_new(out, "waiting", json_integer((json_int_t)waiting));
    strmap_free(state, NULL);
    return out;
}

json_t *vw_report(const vw_report_in *in)
{
    vw_filter f = {0};
    size_t n, k = 0;
    const json_t **all = vw_select(in->incs, &f, &n);
    const json_t **sel = xcalloc(n + 1, sizeof *sel);
    strmap *ttd = strmap_new(), *ttr = strmap_new(), *ids = strmap_new();
    char since[40], until[40];
    json_t *out;

    for (size_t i = 0; i < n; i++) {
        int64_t opened = time_of(all[i], "opened");
        if (!strcmp(vw_status(all[i]), "merged") || opened < in->since_us ||
            opened > in->until_us)
            continue;
        sel[k++] = all[i];
        strmap_put(ids, str_of(all[i], "id"), (void *)1);
    }
    for (size_t i = 0; i < k; i++) {
        const json_t *inc = sel[i];
        const char *s = str_of(inc, "scenario");
        int64_t first = time_of(json_object_get(inc, "evidence"), "first");
        int64_t seen = in->published
                           ? json_integer_value(json_object_get(in->published,
                                                                str_of(inc, "id")))
                           : 0;
        int64_t opened = time_of(inc, "opened"), resolved = time_of(inc, "resolved");
        if (first >= 0)
            dl_add(ttd, s, (double)((seen > 0 ? seen : opened) - first) / 1e6);
        if (resolved >= 0 && opened >= 0)
            dl_add(ttr, s, (double)(resolved - opened) / 1e6);
    }
    ts_format(in->since_us, since, sizeof since);
    ts_format(in->until_us, until, sizeof until);
    out = json_pack("{s:s, s:s, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                    "since", since, "until", until, "incidents", (json_int_t)k,
                    "per_day", per_day(sel, k), "ttd", spans(ttd), "ttr", spans(ttr),
                    "nodes", nodes(sel, k), "idle", idle(sel, k, in->until_us),
                    "peak", peak(sel, k), "actions",
                    actions(in->trail, ids));
    json_object_set_new(out, "shadow",
                        in->has_shadow
                            ? json_pack("{s:f, s:f, s:I}", "match_rate",
                                        in->shadow_match_rate, "coverage",
                                        in->shadow_coverage, "proposals",
                                        (json_int_t)in->shadow_proposals)
                            : json_null());
    free(all);
    free(sel);
    strmap_free(ttd, dl_free);
    strmap_free(ttr, dl_free);
    strmap_free(ids, NULL);
    return out;
}
