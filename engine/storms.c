/* Merges and storms.
 *
 * A cascade that forms after incidents it explains opened takes them in
 * (eng_merge): each is published once more, resolved with merged_into,
 * and is then forgotten.
 *
 * Storms: one fault on many nodes of a rack at once (a PDU, a top-of-rack
 * switch, a bad driver rollout) is one incident for the rack, not one per
 * node. The third node of a rack whose incident has the same root cause
 * within STORM_WINDOW (found in the rack's window) makes the storm: the
 * node incidents merge into it (each is published once more, resolved,
 * with merged_into, and then forgotten), later faults of the rack's nodes
 * join it.
 *
 * The same holds for an NVLink domain (the nodes that share NVSwitches:
 * an NVL72 rack, or one spread over two racks; the inventory's
 * nvlink_domain): when the rack does not make a storm, the domain may,
 * from its own window ("nvl:DOMAIN") under the key
 * "storm:nvl:DOMAIN|ROOT". A storm's rack field names its group. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/str.h"
#include "engine/detect.h"
#include "engine/faults.h"
#include "engine/state.h"

#define STORM_NODES 3
#define STORM_WINDOW (10 * TS_MIN)

/* The groups a storm can be of: its rack, or its NVLink domain. */
typedef enum storm_group { GROUP_RACK, GROUP_NVLINK } storm_group;

static const char *group_of_host(engine *e, const char *cluster,
                                 const char *host, storm_group g)
{
    const node_info *ni = eng_node_info(e, cluster, host);
    const char *name = !ni ? NULL : g == GROUP_RACK ? ni->rack : ni->nvlink;

    return name && *name ? name : NULL;
}

/* "storm:RACK|ROOT", "storm:nvl:DOMAIN|ROOT" */
static void storm_key(char *buf, size_t len, storm_group g, const char *group,
                      const char *root)
{
    snprintf(buf, len, "storm:%s%.80s|%.60s", g == GROUP_RACK ? "" : "nvl:",
             group, root);
}

/* A node's own incident (not a rack's or an advisory's), not merged. */
static int stormable(const incident *inc)
{
    return !inc->job_scope && inc->node[0] && !inc->merged[0] &&
           !eng_own_key(inc->key);
}

static void add_member(incident *storm, const incident *m)
{
    storm_member *p;

    for (size_t i = 0; i < storm->nmembers; i++)
        if (!strcmp(storm->members[i].node, m->node))
            return;
    storm->members = xrealloc(storm->members,
                             (storm->nmembers + 1) * sizeof *storm->members);
    p = &storm->members[storm->nmembers++];
    memset(p, 0, sizeof *p);
    str_copy(p->node, sizeof p->node, m->node);
    str_copy(p->id, sizeof p->id, m->id);
    str_copy(p->scenario, sizeof p->scenario, m->sc->id);
    p->ts = m->opened;
    /* the storm's root: its earliest node */
    if (m->root_ts < storm->root_ts || !storm->root_node[0]) {
        storm->root_ts = m->root_ts;
        str_copy(storm->root_node, sizeof storm->root_node, m->root_node);
        storm->cause = m->cause;
    }
}

/* The fresh storm of host's group for this root cause, or NULL. */
static incident *eng_storm_of(engine *e, const char *cluster, const char *host,
                              const char *root, storm_group g)
{
    const char *group = group_of_host(e, cluster, host, g);
    char key[192];
    incident *storm;

    if (!group || !root)
        return NULL;
    storm_key(key, sizeof key, g, group, root);
    storm = strmap_get(eng_cs(e, cluster)->open_node, key);
    return eng_fresh(e, storm) ? storm : NULL;
}

/* The group's window ("rack:RACK", "nvl:DOMAIN", in Redis w:node:...
 * beside the nodes' windows; a host name holds no colon): one entry per
 * node fault, the node in the job slot and the root cause as scenario. */
static node_win *group_win(engine *e, const sig *s, const incident *inc,
                           storm_group g, const char *group)
{
    char name[96];

    snprintf(name, sizeof name, "%s:%.80s", g == GROUP_RACK ? "rack" : "nvl",
             group);
    eng_win_add(e, s, name, FACT_NODE_FAULT, inc->node, inc->root_scenario,
                NULL);
    return eng_win_of(e, s->cluster, name);
}

/* Fresh node incidents of the rack with inc's root cause whose faults
 * are in the rack's window within STORM_WINDOW of s, one per node. */
static size_t storm_candidates(engine *e, const sig *s, const incident *inc,
                               node_win *w, incident **out, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < w->n && n < max; i++) {
        const entry *en = &w->v[i];
        incident *o = strmap_get(eng_cs(e, s->cluster)->open_node, en->job);
        int dup = 0;
        if (en->ts < s->ts - STORM_WINDOW || !en->scenario ||
            strcmp(en->scenario, inc->root_scenario) || !o || !stormable(o) ||
            !eng_fresh(e, o) || strcmp(o->root_scenario, inc->root_scenario))
            continue;
        for (size_t k = 0; k < n; k++)
            dup |= out[k] == o;
        if (!dup)
            out[n++] = o;
    }
    return n;
}

/* A storm of the group opened from inc's fault, or 0 when too few of its
 * nodes share the root cause. */
static int storm_open(engine *e, const sig *s, incident *inc, storm_group g)
{
    const char *group = group_of_host(e, inc->cluster, inc->node, g);
    incident *cand[64], *storm;
    char key[192];
    size_t n;

    if (!group)
        return 0;
    n = storm_candidates(e, s, inc, group_win(e, s, inc, g, group), cand, 64);
    if (n < STORM_NODES)
        return 0;
    storm_key(key, sizeof key, g, group, inc->root_scenario);
    storm = eng_open_incident(e, s, inc->root_scenario, "node", key);
    str_copy(storm->key, sizeof storm->key, key);
    str_copy(storm->rack, sizeof storm->rack, group);
    strmap_put(eng_cs(e, inc->cluster)->open_node, key, storm);
    for (size_t i = 0; i < n; i++) {
        add_member(storm, cand[i]);
        eng_merge(e, storm, cand[i]);
    }
    return 1;
}

static void eng_storm_check(engine *e, const sig *s, incident *inc)
{
    incident *storm;

    if (!inc || !stormable(inc) || !pb_find(e->cat, inc->root_scenario))
        return;
    for (storm_group g = GROUP_RACK; g <= GROUP_NVLINK; g++)
        if ((storm = eng_storm_of(e, inc->cluster, inc->node,
                                  inc->root_scenario, g))) {
            add_member(storm, inc);
            eng_merge(e, storm, inc);
            return;
        }
    if (!storm_open(e, s, inc, GROUP_RACK))
        storm_open(e, s, inc, GROUP_NVLINK);
}

static void eng_storm_recovered(engine *e, const sig *s, const char *host,
                         const char *what)
{
    for (size_t i = 0; i < e->ninc; i++) {
        incident *st = e->incs[i];
        size_t back = 0, hit = 0;
        char why[160];
        if (!eng_is_storm(st) || strcmp(st->cluster, s->cluster) ||
            strcmp(st->root_scenario, what))
            continue;
        for (size_t k = 0; k < st->nmembers; k++) {
            storm_member *m = &st->members[k];
            if (!strcmp(m->node, host) && !m->recovered && s->ts >= m->ts) {
                m->recovered = s->ts;
                eng_dirty(st);
                hit = 1;
            }
            back += m->recovered != 0;
        }
        if (hit && back == st->nmembers) {
            snprintf(why, sizeof why, "all %zu nodes back, the last %.100s",
                     back, host);
            eng_resolve(st, s, why);
        }
    }
}

/* After a restart: the storm's nodes lead to it again. */
static void eng_storm_relink(engine *e, incident *storm)
{
    strmap *open = eng_cs(e, storm->cluster)->open_node;

    for (size_t i = 0; i < storm->nmembers; i++) {
        incident *cur = strmap_get(open, storm->members[i].node);
        if (!cur || cur->opened <= storm->opened)
            strmap_put(open, storm->members[i].node, storm);
    }
}

/* ---- the detector ----------------------------------------------------- */

static void storms_relink(engine *e, incident *inc)
{
    if (eng_is_storm(inc))
        eng_storm_relink(e, inc);
}

const eng_detector eng_det_storms = {
    .name = "storms",
    .on_incident = eng_storm_check,
    .on_recovered = eng_storm_recovered,
    .relink = storms_relink,
};
