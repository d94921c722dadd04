/* Planned maintenance: a window in which a node's faults are the work
 * being done (a firmware flash, a driver upgrade, a cable swap), not
 * failures to act on.
 *
 * The window is the node's inventory record (`maintenance`: start, end,
 * id, reason; docs/FORMATS.md). Inside it, and MAINT_GRACE after its end
 * (a node comes back from a reboot minutes late), the node's faults (a
 * node fault, the node lost, an Xid) open no incident of their own and
 * trigger no action: they are taken into one maint.planned incident for
 * the maintenance (key "maint:ID"), whose members are its nodes with the
 * first fault each showed. Jobs that fail on those nodes in the window
 * fold into it too (the incident sits under the node's key while the
 * window lasts, where the jobs detector looks for what explains a
 * failure). A job's own fault (its OOM, its bad config) is not the
 * maintenance's and opens as usual, and so does a fault of a node whose
 * incident opened before the window began. At the window's end (and
 * grace) the incident resolves and the nodes' faults count again; a node
 * the scheduler lost in the window and has not reported back is then
 * node.down, a fault of its own: the work left it out.
 *
 * A detector (engine/detect.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/mem.h"
#include "core/str.h"
#include "engine/detect.h"
#include "engine/faults.h"
#include "engine/state.h"

#define MAINT_GRACE (15 * TS_MIN)
/* How often the tick looks for ended windows (event or wall time): not on
 * every signal, which would walk every incident each time. A node's own
 * signal settles its window at once (current()). */
#define MAINT_RECHECK TS_MIN

/* Open maintenance incidents, and when the tick looks for ended windows
 * next (0: at the next tick). */
typedef struct maint_state {
    size_t open;
    int64_t next;
} maint_state;

extern const eng_detector eng_det_maint;

static maint_state *state_of(engine *e)
{
    void **slot = eng_slot(e, &eng_det_maint);

    if (!*slot)
        *slot = xcalloc(1, sizeof(maint_state));
    return *slot;
}

static int is_maint(const incident *inc)
{
    return strncmp(inc->key, "maint:", 6) == 0;
}

/* The host's window if ts falls in it (grace included), else NULL. */
static const node_info *window_at(engine *e, const char *cluster,
                                  const char *host, int64_t ts)
{
    const node_info *ni = eng_node_info(e, cluster, host);

    return ni && ni->maint_end && ts >= ni->maint_start &&
                   ts < ni->maint_end + MAINT_GRACE
               ? ni
               : NULL;
}

/* "maint:ID", or "maint:HOST@START" for a window without an id. */
static void maint_key(char *buf, size_t len, const char *host,
                      const node_info *ni)
{
    if (ni->maint_id[0])
        snprintf(buf, len, "maint:%.120s", ni->maint_id);
    else
        snprintf(buf, len, "maint:%.100s@%lld", host,
                 (long long)(ni->maint_start / TS_SEC));
}

static void add_member(incident *inc, const char *host, const char *scenario,
                       int64_t ts)
{
    storm_member *m;

    for (size_t i = 0; i < inc->nmembers; i++)
        if (!strcmp(inc->members[i].node, host))
            return;
    inc->members = xrealloc(inc->members,
                            (inc->nmembers + 1) * sizeof *inc->members);
    m = &inc->members[inc->nmembers++];
    memset(m, 0, sizeof *m);
    str_copy(m->node, sizeof m->node, host);
    str_copy(m->scenario, sizeof m->scenario, scenario ? scenario : "");
    m->ts = ts;
    eng_dirty(inc);
}

/* The maintenance's incident, opened on its first fault, and put under
 * the host's key unless an incident of the host that opened before the
 * window holds it (that fault is not the maintenance's). */
static incident *maint_incident(engine *e, const sig *s, const char *host,
                                const node_info *ni, const char *scenario)
{
    cstate *cs = eng_cs(e, s->cluster);
    incident *inc, *cur;
    char key[192];
    fact f;

    maint_key(key, sizeof key, host, ni);
    inc = strmap_get(cs->open_node, key);
    if (!inc || eng_resolved_at(inc, e->now)) {
        if (!pb_find(e->cat, "maint.planned"))
            return NULL;
        eng_rule_fact(&f, FACT_NODE_FAULT, "maint.planned", host, NULL);
        str_copy(f.detail, sizeof f.detail, ni->maint_id);
        snprintf(f.excerpt, sizeof f.excerpt, "%.60s%s%.80s%s",
                 ni->maint_id[0] ? ni->maint_id : "planned maintenance",
                 ni->maint_reason[0] ? " (" : "", ni->maint_reason,
                 ni->maint_reason[0] ? ")" : "");
        inc = eng_open_incident(e, s, "maint.planned", "node", key);
        str_copy(inc->key, sizeof inc->key, key);
        str_copy(inc->node, sizeof inc->node, host);
        str_copy(inc->root_node, sizeof inc->root_node, host);
        inc->cause = f;
        strmap_put(cs->open_node, key, inc);
        state_of(e)->open++;
        state_of(e)->next = 0;
    }
    add_member(inc, host, scenario, s->ts);
    cur = strmap_get(cs->open_node, host);
    if (cur != inc && (!eng_fresh(e, cur) || cur->opened >= ni->maint_start))
        strmap_put(cs->open_node, host, inc);
    return inc;
}

static void settle(engine *e);

/* The host's key may still hold a maintenance whose window ended since
 * the last tick: it goes before the signal's facts are judged. */
static incident *current(engine *e, const char *cluster, const char *host,
                         int64_t ts)
{
    strmap *open = eng_cs(e, cluster)->open_node;
    incident *cur = strmap_get(open, host);

    if (cur && is_maint(cur) && !window_at(e, cluster, host, ts)) {
        settle(e);
        cur = strmap_get(open, host);
    }
    return cur;
}

/* A node's fault in its window: the maintenance's, taken. */
static int maint_on_fact(engine *e, const sig *s, const fact *f)
{
    const char *host = f->host[0] ? f->host : s->host;
    const node_info *ni;
    incident *inc, *cur;
    char win[160];
    int node = f->kind == FACT_NODE_FAULT || f->kind == FACT_NODE_DOWN ||
               f->kind == FACT_XID;

    if (!host || !*host)
        return 0;
    if (state_of(e)->open)
        current(e, s->cluster, host, s->ts);
    if (!node || !(ni = window_at(e, s->cluster, host, s->ts)))
        return 0;
    cur = strmap_get(eng_cs(e, s->cluster)->open_node, host);
    if (eng_fresh(e, cur) && !is_maint(cur) && cur->opened < ni->maint_start)
        return 0; /* the node was failing before the work began */
    if (!(inc = maint_incident(e, s, host, ni, f->scenario)))
        return 0;
    /* kept in a window of its own (not the host's, whose later faults
     * must not find the work as their earliest sign): a restarted engine
     * knows the signal was taken */
    snprintf(win, sizeof win, "maint:%.120s", host);
    eng_win_add(e, s, win, f->kind, s->job, f->scenario, f->sig_id);
    eng_touch(inc, s);
    eng_absorb_failed_jobs(e, inc, host);
    return 1;
}

/* A job failing on a node in its window: the maintenance waits under the
 * node's key for the jobs detector to find. */
static void maint_on_job(engine *e, const sig *s, job *j, eng_job_event ev)
{
    size_t i;
    json_t *n;

    if (ev != ENG_JOB_FAILED)
        return;
    json_array_foreach(j->nodes, i, n) {
        const char *host = json_string_value(n);
        const node_info *ni;
        current(e, j->cluster, host, s->ts);
        if ((ni = window_at(e, j->cluster, host, s->ts)))
            maint_incident(e, s, host, ni, NULL);
    }
}

/* Whether every node of the maintenance is past its window (or its
 * window was withdrawn); *end is the latest end seen. */
static int ended(engine *e, const incident *inc, int64_t now, int64_t *end)
{
    *end = inc->updated;
    for (size_t i = 0; i < inc->nmembers; i++) {
        const node_info *ni = eng_node_info(e, inc->cluster,
                                            inc->members[i].node);
        if (!ni || !ni->maint_end)
            continue;
        if (now < ni->maint_end + MAINT_GRACE)
            return 0;
        if (ni->maint_end + MAINT_GRACE > *end)
            *end = ni->maint_end + MAINT_GRACE;
    }
    return 1;
}

static void release(engine *e, incident *inc)
{
    strmap *open = eng_cs(e, inc->cluster)->open_node;

    for (size_t i = 0; i < inc->nmembers; i++)
        if (strmap_get(open, inc->members[i].node) == inc)
            strmap_del(open, inc->members[i].node);
}

/* A node the scheduler lost in the window and never reported back: the
 * maintenance is over and the node is still out, a fault of its own. */
static void still_down(engine *e, const incident *inc, int64_t end)
{
    for (size_t i = 0; i < inc->nmembers; i++) {
        const storm_member *m = &inc->members[i];
        char msg[400];
        sig s;
        fact f;
        if (m->recovered || strcmp(m->scenario, "node.down") ||
            !pb_find(e->cat, "node.down"))
            continue;
        memset(&s, 0, sizeof s);
        s.ts = end;
        s.cluster = inc->cluster;
        s.source = SRC_SLURM;
        s.rank = -1;
        s.id = hash_fnv1a(hash_fnv1a(HASH_FNV_SEED, inc->id, strlen(inc->id)),
                          m->node, strlen(m->node));
        eng_rule_fact(&f, FACT_NODE_DOWN, "node.down", m->node, NULL);
        snprintf(msg, sizeof msg, "%.100s not back after its maintenance "
                 "(%.120s) ended", m->node, inc->cause.excerpt);
        str_copy(f.excerpt, sizeof f.excerpt, msg);
        eng_on_node_fault(e, &s, &f, m->node);
    }
}

/* Resolves the maintenances whose windows ended. */
static void settle(engine *e)
{
    maint_state *st = state_of(e);

    for (size_t i = 0; st->open && i < e->ninc; i++) {
        incident *inc = e->incs[i];
        int64_t now = eng_cluster_now(e, inc->cluster), end;
        sig s;
        if (!is_maint(inc) || eng_resolved_at(inc, now) ||
            !ended(e, inc, now, &end))
            continue;
        memset(&s, 0, sizeof s);
        s.ts = end;
        s.cluster = inc->cluster;
        eng_resolve(inc, &s, "the maintenance window ended");
        release(e, inc);
        st->open--;
        still_down(e, inc, end);
    }
}

static void maint_tick(engine *e)
{
    maint_state *st = state_of(e);
    int64_t newest = e->live_clock > e->high ? e->live_clock : e->high;

    if (!st->open || newest < st->next)
        return;
    settle(e);
    st->next = newest + MAINT_RECHECK;
}

/* The scheduler has the node back: it came out of its maintenance. */
static void maint_recovered(engine *e, const sig *s, const char *host,
                            const char *what)
{
    (void)what;
    for (size_t i = 0; state_of(e)->open && i < e->ninc; i++) {
        incident *inc = e->incs[i];
        if (!is_maint(inc) || strcmp(inc->cluster, s->cluster))
            continue;
        for (size_t k = 0; k < inc->nmembers; k++)
            if (!strcmp(inc->members[k].node, host) &&
                !inc->members[k].recovered) {
                inc->members[k].recovered = s->ts;
                eng_dirty(inc);
            }
    }
}

/* After a restart: an open maintenance stands for its nodes again. */
static void maint_relink(engine *e, incident *inc)
{
    strmap *open = eng_cs(e, inc->cluster)->open_node;

    if (!is_maint(inc) || eng_resolved_at(inc, eng_clock(e, inc->cluster)))
        return;
    state_of(e)->open++;
    for (size_t i = 0; i < inc->nmembers; i++)
        strmap_put(open, inc->members[i].node, inc);
}

static void maint_forget(engine *e)
{
    void **slot = eng_slot(e, &eng_det_maint);

    free(*slot);
    *slot = NULL;
}

static const char *const maint_scenarios[] = {"maint.planned", NULL};

const eng_detector eng_det_maint = {
    .name = "maintenance",
    .scenarios = maint_scenarios,
    .on_fact = maint_on_fact,
    .on_job = maint_on_job,
    .on_tick = maint_tick,
    .on_recovered = maint_recovered,
    .relink = maint_relink,
    .forget = maint_forget,
    .free = maint_forget,
};
