/* The engine's state layer (engine/state.h): clusters, event-time clocks,
 * windows, inventory, jobs, signals seen, and the incident record. */
#include "engine/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/str.h"
#include "core/strmap.h"

/* Indexed by fact_kind; the letters are stored in Redis, never reuse one. */
const char eng_kind_code[] = "XDOAJICFNMTSHPRE";
_Static_assert(sizeof eng_kind_code == FACT__COUNT + 1,
               "one window letter per fact kind");

void eng_win_free(void *p)
{
    node_win *w = p;
    free(w->mem);
    free(w);
}

void eng_job_free(void *p)
{
    job *j = p;

    if (!j)
        return;
    json_decref(j->nodes);
    json_decref(j->config);
    json_decref(j->depends_on);
    free(j);
}

cstate *eng_cs(engine *e, const char *cluster)
{
    const char *name;
    void **slot;
    cstate *cs;

    /* Several lookups a signal, nearly always of the last one's cluster;
     * a cluster's state lives as long as the engine. */
    if (e->cs_last && strcmp(e->cs_last->name, cluster) == 0)
        return e->cs_last;
    slot = strmap_slot(e->clusters, cluster, &name);
    if (!(cs = *slot)) {
        cs = xcalloc(1, sizeof *cs);
        cs->nodes = strmap_new();
        cs->inventory = strmap_new();
        cs->addr_host = strmap_new();
        cs->jobs = strmap_new();
        cs->open_node = strmap_new();
        cs->open_job = strmap_new();
        cs->seen = ids_new();
        ids_limit(cs->seen, e->max_seen);
        cs->corr = strmap_new();
        cs->name = name;
        *slot = cs;
    }
    e->cs_last = cs;
    return cs;
}

int eng_next_job(engine *e, eng_iter *it, job **j)
{
    const char *k;
    void *v;

    for (;;) {
        if (it->cs && strmap_next(it->cs->jobs, &it->pos, &it->key, &v)) {
            *j = v;
            return 1;
        }
        if (!strmap_next(e->clusters, &it->cpos, &k, &v))
            return 0;
        it->cs = v;
        it->pos = 0;
    }
}

int64_t eng_clock(const engine *e, const char *cluster)
{
    const cstate *cs = strmap_get(e->clusters, cluster);
    return cs ? cs->clock : 0;
}

/* The cluster's clock, set to ts when it has none yet. */
int64_t *eng_clock_slot(engine *e, const char *cluster, int64_t ts)
{
    cstate *cs = eng_cs(e, cluster);

    if (!cs->clock)
        cs->clock = ts;
    return &cs->clock;
}

void eng_clock_move(engine *e, int64_t *t, int64_t ts)
{
    if (ts > *t)
        *t = ts;
    if (ts > e->high)
        e->high = ts;
}

void eng_clock_advance(engine *e, const char *cluster, int64_t ts)
{
    eng_clock_move(e, eng_clock_slot(e, cluster, ts), ts);
}

int64_t eng_cluster_now(const engine *e, const char *cluster)
{
    const cstate *cs = strmap_get(e->clusters, cluster);
    int64_t t = cs ? cs->clock : 0;

    return cs && cs->live && e->live_clock > t ? e->live_clock : t;
}

int64_t eng_enter(engine *e, const char *cluster)
{
    int64_t saved = e->now;
    e->now = eng_clock(e, cluster);
    return saved;
}

void eng_leave(engine *e, int64_t saved)
{
    e->now = saved;
}

/* The cluster keeps logical jobs of the same name apart (the incident id
 * hashes "name:NAME" with the cluster, as it did before). */
void eng_name_key(char *key, size_t len, const char *cluster, const char *name)
{
    snprintf(key, len, "name:%.*s|%.*s", str_utf8_max(cluster, 60), cluster,
             str_utf8_max(name, 120), name);
}

const char *eng_name_of(const char *key)
{
    const char *bar = strchr(key, '|');
    return bar ? bar + 1 : key + 5;
}

/* Keys carry the cluster as Redis Cluster hash tag: one cluster's state
 * lives on one shard, like its signals live on one Kafka partition. */
void eng_key(char *buf, size_t len, const char *cluster, const char *kind,
             const char *name)
{
    str_join(buf, len, (const char *const[]){"cascade:{", cluster, "}:", kind,
                                             name ? ":" : NULL, name, NULL});
}

node_win *eng_win_find(engine *e, const char *cluster, const char *win)
{
    return strmap_get(eng_cs(e, cluster)->nodes, win);
}

node_win *eng_win_of(engine *e, const char *cluster, const char *win)
{
    cstate *cs = eng_cs(e, cluster);
    node_win *w = strmap_get(cs->nodes, win);

    if (!w) {
        w = xcalloc(1, sizeof *w);
        strmap_put(cs->nodes, win, w);
    }
    return w;
}

node_info *eng_node_info(engine *e, const char *cluster, const char *host)
{
    return host && *host ? strmap_get(eng_cs(e, cluster)->inventory, host)
                         : NULL;
}

const char *eng_node_named(engine *e, const char *cluster, const char *name)
{
    cstate *cs = eng_cs(e, cluster);
    const char *host;

    if (!name || !*name)
        return NULL;
    if (strmap_get(cs->inventory, name))
        return name;
    host = strmap_get(cs->addr_host, name);
    return host && *host ? host : NULL;
}

/* The node's addresses become `addrs`: the ones it had and no longer has
 * are forgotten (unless another host claims them too, which keeps them
 * a name that says nothing), the new ones point at it. */
static void inventory_addrs(cstate *cs, const char *host, node_info *ni,
                            json_t *addrs)
{
    char *save = NULL, old[sizeof ni->addrs];
    json_t *a;
    size_t i, w = 0;

    str_copy(old, sizeof old, ni->addrs);
    for (char *p = strtok_r(old, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
        const char *h = strmap_get(cs->addr_host, p);
        if (h && !strcmp(h, host))
            free(strmap_del(cs->addr_host, p));
    }
    ni->addrs[0] = '\0';
    json_array_foreach(addrs, i, a) {
        const char *s = json_string_value(a);
        void **slot;

        /* validated with the signal; a record read back may not be */
        if (!s || !*s || strchr(s, ' ') || !strcmp(s, host) ||
            w + strlen(s) + 2 > sizeof ni->addrs)
            continue;
        w += (size_t)snprintf(ni->addrs + w, sizeof ni->addrs - w, "%s%s",
                              w ? " " : "", s);
        slot = strmap_slot(cs->addr_host, s, NULL);
        if (!*slot)
            *slot = xstrdup(host);
        else if (strcmp(*slot, host)) /* claimed twice: says nothing */
            *(char *)*slot = '\0';
    }
}

static void inventory_maintenance(node_info *ni, json_t *m)
{
    cs_err err;
    const char *v;

    ni->maint_start = ni->maint_end = 0;
    ni->maint_id[0] = ni->maint_reason[0] = '\0';
    /* validated when the signal was parsed; a bad record read back is no
     * window */
    if (!json_is_object(m) ||
        sig_time(json_object_get(m, "start"), "start", &ni->maint_start,
                 &err) ||
        sig_time(json_object_get(m, "end"), "end", &ni->maint_end, &err)) {
        ni->maint_start = ni->maint_end = 0;
        return;
    }
    if ((v = json_string_value(json_object_get(m, "id"))))
        str_copy(ni->maint_id, sizeof ni->maint_id, v);
    if ((v = json_string_value(json_object_get(m, "reason"))))
        str_copy(ni->maint_reason, sizeof ni->maint_reason, v);
}

node_info *eng_inventory_set(engine *e, const char *cluster, const char *host,
                             json_t *o)
{
    node_info *ni = eng_node_info(e, cluster, host);
    const char *v;

    if (!ni) {
        ni = xcalloc(1, sizeof *ni);
        strmap_put(eng_cs(e, cluster)->inventory, host, ni);
    }
    if ((v = json_string_value(json_object_get(o, "rack"))))
        str_copy(ni->rack, sizeof ni->rack, v);
    if ((v = json_string_value(json_object_get(o, "nvlink_domain"))))
        str_copy(ni->nvlink, sizeof ni->nvlink, v);
    /* A field a record leaves out keeps its value: an operator's record
     * that only sets a window changes nothing else. The collectors'
     * periodic records name no window: one is kept until a record names
     * another, or null. */
    if (json_object_get(o, "canary"))
        ni->canary = json_is_true(json_object_get(o, "canary"));
    if (json_object_get(o, "maintenance"))
        inventory_maintenance(ni, json_object_get(o, "maintenance"));
    if (json_is_array(json_object_get(o, "addrs")))
        inventory_addrs(eng_cs(e, cluster), host, ni,
                        json_object_get(o, "addrs"));
    return ni;
}

static json_t *addrs_array(const char *addrs)
{
    char copy[NA_ADDRS_MAX * NA_ADDR_MAX], *save = NULL;
    json_t *a = json_array();

    str_copy(copy, sizeof copy, addrs);
    for (char *p = strtok_r(copy, " ", &save); a && p;
         p = strtok_r(NULL, " ", &save))
        json_array_append_new(a, json_string(p));
    return a;
}

json_t *eng_inventory_record(const node_info *ni, json_t *o)
{
    char start[40], end[40];
    json_t *rec = json_deep_copy(o), *m;

    if (!rec)
        return NULL;
    /* what the node is now, whatever this record left out */
    if (ni->rack[0])
        json_object_set_new(rec, "rack", json_string(ni->rack));
    if (ni->nvlink[0])
        json_object_set_new(rec, "nvlink_domain", json_string(ni->nvlink));
    json_object_set_new(rec, "canary", json_boolean(ni->canary));
    if (ni->addrs[0] && !json_object_get(rec, "addrs"))
        json_object_set_new(rec, "addrs", addrs_array(ni->addrs));
    if (json_object_get(rec, "maintenance") || !ni->maint_end)
        return rec;
    ts_format(ni->maint_start, start, sizeof start);
    ts_format(ni->maint_end, end, sizeof end);
    m = json_pack("{s:s, s:s}", "start", start, "end", end);
    if (m && ni->maint_id[0])
        json_object_set_new(m, "id", json_string(ni->maint_id));
    if (m && ni->maint_reason[0])
        json_object_set_new(m, "reason", json_string(ni->maint_reason));
    if (m)
        json_object_set_new(rec, "maintenance", m);
    return rec;
}

/* Room for one more entry at the end of the allocation: the live ones
 * slide down once the trimmed ones before them are as many (each slide
 * follows as many trims, so it costs O(1) an entry), else it doubles. */
static void win_room(node_win *w)
{
    size_t off = w->mem ? (size_t)(w->v - w->mem) : 0;

    if (off + w->n < w->memcap)
        return;
    if (off > 0 && off >= w->n) {
        memmove(w->mem, w->v, w->n * sizeof *w->v);
        w->v = w->mem;
        return;
    }
    w->memcap = w->memcap ? w->memcap * 2 : 8;
    w->mem = xrealloc(w->mem, w->memcap * sizeof *w->mem);
    w->v = w->mem + off;
}

entry *eng_win_insert(node_win *w, int64_t ts)
{
    size_t i = w->n;

    win_room(w);
    while (i > 0 && w->v[i - 1].ts > ts)
        i--; /* a late signal: usually none to pass */
    memmove(&w->v[i + 1], &w->v[i], (w->n - i) * sizeof *w->v);
    w->n++;
    return &w->v[i];
}

void eng_win_trim(node_win *w, int64_t before)
{
    size_t k = 0;

    while (k < w->n && w->v[k].ts < before)
        k++;
    if (k == 0) /* an empty window's v is NULL: no offset, not even 0 */
        return;
    w->v += k;
    w->n -= k;
}

int eng_win_has(const node_win *w, int64_t ts, uint64_t id, fact_kind kind,
                const char *jobid)
{
    for (size_t i = w->n; i > 0 && w->v[i - 1].ts >= ts; i--) {
        const entry *en = &w->v[i - 1];
        if (en->ts == ts && en->sig == id && en->kind == kind &&
            (!jobid || strcmp(en->job, jobid) == 0))
            return 1;
    }
    return 0;
}

static int64_t win_horizon(const char *host)
{
    if (strncmp(host, "peak:", 5) == 0)
        return PEAK_HISTORY;
    if (strncmp(host, "lemon:", 6) == 0)
        return LEMON_HISTORY;
    return strncmp(host, "hist:", 5) == 0 ? NAME_WINDOW : HORIZON;
}

void eng_win_add(engine *e, const sig *s, const char *host, fact_kind kind,
                    const char *jobid, const char *scenario,
                    const char *sig_id)
{
    node_win *w = eng_win_of(e, s->cluster, host);
    char key[320], member[256];

    /* idempotent: the same signal adds nothing twice (its entries all
     * have its time) */
    if (eng_win_has(w, s->ts, s->id, kind, jobid ? jobid : ""))
        return;
    /* Drop entries past the horizon before growing. */
    eng_win_trim(w, e->now - win_horizon(host));
    entry *en = eng_win_insert(w, s->ts);
    en->ts = s->ts;
    en->sig = s->id;
    en->kind = kind;
    en->source = s->source;
    str_copy(en->job, sizeof en->job, jobid);
    en->scenario = scenario;
    en->sig_id = sig_id;

    eng_key(key, sizeof key, s->cluster, "w:node", host);
    snprintf(member, sizeof member, "%016llx %c %s %s %s %s",
             (unsigned long long)s->id, eng_kind_code[kind],
             jobid && *jobid ? jobid : "-", scenario ? scenario : "-",
             sig_source_name(s->source), sig_id ? sig_id : "-");
    e->ops->window_add(e->ctx, key, s->ts, member);
    e->ops->window_trim(e->ctx, key, e->now - win_horizon(host));
}

int64_t eng_fold_window(const incident *inc)
{
    /* a team's peak hours recur daily: one incident while they do */
    if (strncmp(inc->key, "peak:", 5) == 0)
        return PEAK_HISTORY;
    /* a lemon stays one incident while its faults keep coming */
    if (strncmp(inc->key, "lemon:", 6) == 0)
        return LEMON_HISTORY;
    return strncmp(inc->key, "name:", 5) == 0 || strncmp(inc->key, "gpu:", 4) == 0
               ? NAME_WINDOW : FOLD_WINDOW;
}

int64_t eng_resolved_at(const incident *inc, int64_t now)
{
    if (inc->recovered && inc->recovered >= inc->updated)
        return inc->recovered;
    if (!inc->sc->node_level && now - inc->updated > eng_fold_window(inc))
        return inc->updated + eng_fold_window(inc);
    return 0;
}

void eng_resolve(incident *inc, const sig *s, const char *why)
{
    if (eng_resolved_at(inc, s->ts) || s->ts < inc->updated)
        return;
    inc->recovered = s->ts;
    str_copy(inc->resolution, sizeof inc->resolution, why);
    eng_dirty(inc);
}

/* Whether inc takes a related signal now: open and within its fold
 * window, or resolved less than REOPEN_GRACE ago. */
int eng_fresh(const engine *e, const incident *inc)
{
    int64_t r;

    if (!inc)
        return 0;
    if ((r = eng_resolved_at(inc, e->now)))
        return e->now - r <= REOPEN_GRACE;
    return e->now - inc->updated <= eng_fold_window(inc);
}

incident *eng_incident_by_id(engine *e, const char *id)
{
    for (size_t i = 0; i < e->ninc; i++)
        if (!strcmp(e->incs[i]->id, id))
            return e->incs[i];
    return NULL;
}

void eng_touch(incident *inc, const sig *s)
{
    int64_t r = eng_resolved_at(inc, s->ts);

    if (r && s->ts > r) {
        inc->reopened++;
        inc->recovered = 0;
        inc->resolution[0] = '\0';
    }
    inc->count++;
    inc->sources |= 1u << s->source;
    if (s->ts < inc->first)
        inc->first = s->ts;
    if (s->ts > inc->last)
        inc->last = s->ts;
    if (s->ts > inc->updated)
        inc->updated = s->ts;
    eng_dirty(inc);
}

incident *eng_open_incident(engine *e, const sig *s, const char *scenario,
                               const char *scope_kind, const char *scope_key)
{
    incident *inc = eng_incident_new(e);
    uint64_t h = HASH_FNV_SEED;

    h = hash_fnv1a(h, s->cluster, strlen(s->cluster) + 1);
    h = hash_fnv1a(h, scope_kind, strlen(scope_kind) + 1);
    h = hash_fnv1a(h, scope_key, strlen(scope_key) + 1);
    h = hash_fnv1a(h, &s->id, sizeof s->id);
    snprintf(inc->id, sizeof inc->id, "inc-%016llx", (unsigned long long)h);
    inc->sc = pb_find(e->cat, scenario);
    str_copy(inc->cluster, sizeof inc->cluster, s->cluster);
    inc->root_scenario = inc->sc->id;
    inc->opened = inc->updated = inc->first = inc->last = s->ts;
    inc->root_ts = s->ts;
    return inc;
}

void eng_incident_free(incident *inc)
{
    free(inc->children);
    free(inc->members);
    json_decref(inc->published);
    free(inc);
}

void eng_dirty(incident *inc)
{
    engine *e = inc->eng;

    if (inc->dirty)
        return;
    inc->dirty = 1;
    if (e->ndirty == e->capdirty) {
        e->capdirty = e->capdirty ? e->capdirty * 2 : 64;
        e->dirty = xrealloc(e->dirty, e->capdirty * sizeof *e->dirty);
    }
    e->dirty[e->ndirty++] = inc;
}

incident *eng_incident_new(engine *e)
{
    incident *inc = xcalloc(1, sizeof *inc);

    inc->published = json_array();
    inc->eng = e;
    inc->seq = e->next_seq++;
    if (e->ninc == e->capinc) {
        e->capinc = e->capinc ? e->capinc * 2 : 16;
        e->incs = xrealloc(e->incs, e->capinc * sizeof *e->incs);
    }
    e->incs[e->ninc++] = inc;
    return inc;
}

size_t eng_failed_children(const incident *inc)
{
    size_t n = 0;
    for (size_t i = 0; i < inc->nchildren; i++)
        if (inc->children[i].state[0])
            n++;
    return n;
}

void eng_add_child(incident *inc, const char *jobid, const char *state,
                   int64_t ts)
{
    child *c;

    for (size_t i = 0; i < inc->nchildren; i++) {
        c = &inc->children[i];
        if (strcmp(c->job, jobid) == 0) {
            if (state && !c->state[0]) {
                str_copy(c->state, sizeof c->state, state);
                c->ts = ts;
            }
            return;
        }
    }
    inc->children = xrealloc(inc->children,
                             (inc->nchildren + 1) * sizeof *inc->children);
    c = &inc->children[inc->nchildren++];
    memset(c, 0, sizeof *c);
    str_copy(c->job, sizeof c->job, jobid);
    str_copy(c->state, sizeof c->state, state);
    c->ts = ts;
    eng_dirty(inc);
}

int eng_is_failure(const char *state)
{
    return strcmp(state, "FAILED") == 0 || strcmp(state, "NODE_FAIL") == 0;
}

int eng_ran_on(const job *j, const char *host)
{
    size_t i;
    json_t *n;

    json_array_foreach(j->nodes, i, n)
        if (strcmp(json_string_value(n), host) == 0)
            return 1;
    return 0;
}

job *eng_job_of(engine *e, const char *cluster, const char *id)
{
    return id && *id ? strmap_get(eng_cs(e, cluster)->jobs, id) : NULL;
}

/* The job running on a host now (the latest to start), or NULL. */
job *eng_job_on(engine *e, const char *cluster, const char *host)
{
    const strmap *jobs = eng_cs(e, cluster)->jobs;
    size_t pos = 0;
    const char *k;
    void *v;
    job *best = NULL;

    while (strmap_next(jobs, &pos, &k, &v)) {
        job *j = v;
        if (strcmp(j->state, "RUNNING") || (best && j->updated < best->updated))
            continue;
        if (eng_ran_on(j, host))
            best = j;
    }
    return best;
}

/* A cluster's ids older than the horizon of its clock go when the set
 * next grows (at half full), a few at each id added: a busy cluster pays
 * for them once per doubling, in steps, on a table faulted in ahead. A
 * separate expiry pass sized for the ids it began with ended past half
 * full, so a growth followed at once on a table not yet faulted in: the
 * 100k/s run stalled 1.5 s at 4.2M ids. The table does not shrink. */
int eng_seen_before(engine *e, const sig *s)
{
    cstate *cs = eng_cs(e, s->cluster);

    if (ids_get(cs->seen, s->id, NULL))
        return 1;
    ids_floor(cs->seen, cs->clock - HORIZON);
    ids_put(cs->seen, s->id, s->ts);
    if (!cs->seen_warned && ids_evicted(cs->seen)) {
        cs->seen_warned = 1;
        log_warn("engine", "cluster %s holds the %zu signal ids "
                 "correlate.max_seen_ids allows, the last %lld s of them: "
                 "older ids are forgotten before the %lld s horizon, and "
                 "a signal delivered again after that counts again "
                 "(cascade_seen_horizon_seconds)", cs->name, e->max_seen,
                 (long long)((cs->clock - ids_limit_floor(cs->seen)) /
                             TS_SEC),
                 (long long)(HORIZON / TS_SEC));
    }
    return 0;
}

void eng_mark_seen(engine *e, const char *cluster, uint64_t id, int64_t ts)
{
    ids_put(eng_cs(e, cluster)->seen, id, ts);
}

int eng_is_storm(const incident *inc)
{
    return strncmp(inc->key, "storm:", 6) == 0;
}

const char *eng_group_kind(const incident *inc)
{
    return strncmp(inc->key, "storm:nvl:", 10) == 0 ? "nvlink_domain"
                                                     : "rack";
}

int eng_own_key(const char *key)
{
    static const char *const own[] = {"rack:", "ghost:", "gap:", "driver:",
                                      "nic:", "storm:", "corr:", "lemon:",
                                      "flap:", "maint:"};
    /* (job-scoped keys, "perf:", "cost:", "alloc:", live in open_job) */

    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        if (strncmp(key, own[i], strlen(own[i])) == 0)
            return 1;
    return 0;
}

/* A fact a metric rule decided: kind, scenario, where. */
void eng_rule_fact(fact *f, fact_kind kind, const char *scenario,
                   const char *host, const char *jobid)
{
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->scenario = scenario;
    f->rank = -1;
    f->step = f->pid = -1;
    str_copy(f->host, sizeof f->host, host);
    str_copy(f->job, sizeof f->job, jobid);
}

int eng_advisory_open(engine *e, const char *cluster, const char *kind,
                         const char *id, int node)
{
    cstate *cs = eng_cs(e, cluster);
    char key[192];

    snprintf(key, sizeof key, "%s:%.170s", kind, id);
    return eng_fresh(e, strmap_get(node ? cs->open_node : cs->open_job, key));
}
