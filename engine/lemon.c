/* Lemons: a node that keeps failing, across jobs and weeks.
 *
 * Every incident of a node's own (a fault of the node, not a job's, a
 * rack's or an advisory's) goes once to the node's history, kept
 * LEMON_HISTORY ("lemon:HOST" in the node windows, so a restarted
 * correlator knows it). LEMON_FAULTS of them spread over LEMON_SPAN or
 * more make the node a lemon: one hw.lemon_node incident for it (key
 * "lemon:HOST", open while faults keep coming within the history), with
 * the count and the mean time between failures. A node that fails three
 * times in one bad hour is that hour's incidents, not a lemon.
 *
 * A detector (engine/detect.h). */
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "engine/detect.h"
#include "engine/faults.h"
#include "engine/state.h"

#define LEMON_FAULTS 3
#define LEMON_SPAN (24 * TS_HOUR)

static int counts(const incident *inc)
{
    return inc->node[0] && !inc->job_scope && !inc->merged[0] &&
           !eng_own_key(inc->key) && !eng_is_storm(inc) &&
           strcmp(inc->sc->id, "hw.lemon_node");
}

/* The node's history: how many faults, the first and the last. */
static size_t history(const node_win *w, int64_t since, int64_t *first,
                      int64_t *last)
{
    size_t n = 0;

    *first = *last = 0;
    for (size_t i = 0; w && i < w->n; i++) {
        if (w->v[i].ts < since)
            continue;
        if (!n || w->v[i].ts < *first)
            *first = w->v[i].ts;
        if (w->v[i].ts > *last)
            *last = w->v[i].ts;
        n++;
    }
    return n;
}

static void lemon_on_incident(engine *e, const sig *s, incident *inc)
{
    char win[160];
    node_win *w;
    int64_t first, last;
    size_t n;
    fact f;

    if (!counts(inc) || !pb_find(e->cat, "hw.lemon_node"))
        return;
    snprintf(win, sizeof win, "lemon:%.120s", inc->node);
    w = eng_win_find(e, inc->cluster, win);
    for (size_t i = 0; w && i < w->n; i++)
        if (!strcmp(w->v[i].job, inc->id))
            return; /* this incident is in the history already */
    eng_win_add(e, s, win, FACT_MARK, inc->id, inc->sc->id, NULL);
    n = history(eng_win_find(e, inc->cluster, win), e->now - LEMON_HISTORY,
                &first, &last);
    if (n < LEMON_FAULTS || last - first < LEMON_SPAN)
        return;
    eng_rule_fact(&f, FACT_NODE_FAULT, "hw.lemon_node", inc->node, NULL);
    snprintf(f.detail, sizeof f.detail, "%zu/%lld", n,
             (long long)((last - first) / (TS_HOUR * (int64_t)(n - 1))));
    snprintf(f.excerpt, sizeof f.excerpt,
             "%zu node faults in %lld days, one every %lld h on average "
             "(the last: %.*s)", n,
             (long long)((last - first) / (24 * TS_HOUR)) + 1,
             (long long)((last - first) / (TS_HOUR * (int64_t)(n - 1))),
             str_utf8_max(inc->sc->id, 40), inc->sc->id);
    eng_advisory(e, s, &f, win, 1);
}

static const char *const lemon_scenarios[] = {"hw.lemon_node", NULL};

const eng_detector eng_det_lemon = {
    .name = "lemon",
    .scenarios = lemon_scenarios,
    .on_incident = lemon_on_incident,
};
