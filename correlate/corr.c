/* Correlation rules (rule files' `correlations:`): threshold, sequence and
 * group over signatures, per host or job, in event time.
 *
 * State per (rule, key) is a short list of the events it holds, kept in
 * memory and mirrored to one sorted set per key (w:corr:RULE|KEY, members
 * "SIGID EVENT SOURCE") through the store ops, so the correlator writes it in the
 * batch's pipeline and a restart rebuilds it by reading the sets back. A
 * key's quiet time after firing and the time up to which its events were
 * used up ("UNTIL CLEARED") are a field of cascade:{C}:corr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "correlate/engine_internal.h"

typedef struct corr_ev {
    int64_t ts;
    uint64_t sig;
    int ev;     /* index into the rule's events */
    int source; /* sig_source, for the incident's evidence */
} corr_ev;

typedef struct corr_st {
    const pb_correlation *rule;
    int64_t until; /* events at or before this are ignored: it fired */
    /* Events at or before this were used up (fired, or a wait ran out):
     * a redelivered one must not count again, also after a restart. */
    int64_t cleared;
    int dirty; /* the marks changed: save them */
    corr_ev *v;    /* in arrival order */
    size_t n, cap;
} corr_st;

/* What listens to one signature: (rule, event index) pairs. */
typedef struct corr_refs {
    size_t n;
    struct {
        const pb_correlation *rule;
        int ev;
    } v[];
} corr_refs;

void eng_corr_state_free(void *p)
{
    corr_st *st = p;

    if (st) {
        free(st->v);
        free(st);
    }
}

static void free_refs(void *p)
{
    free(p);
}

void eng_corr_index_free(engine *e)
{
    strmap_free(e->corr_index, free_refs);
    e->corr_index = NULL;
    e->corr_cat = NULL;
}

/* The index follows the catalog: rebuilt when the rule set was swapped. */
static strmap *index_of(engine *e)
{
    size_t nk;
    const pb_correlation *ks = pb_correlations(e->cat, &nk);

    if (e->corr_cat == e->cat && e->corr_index)
        return e->corr_index;
    eng_corr_index_free(e);
    e->corr_index = strmap_new();
    e->corr_cat = e->cat;
    for (size_t i = 0; i < nk; i++)
        for (int j = 0; j < ks[i].nevents; j++) {
            corr_refs *r = strmap_get(e->corr_index, ks[i].events[j]);
            size_t n = r ? r->n : 0;
            corr_refs *g = realloc(r, sizeof *g + (n + 1) * sizeof g->v[0]);
            if (!g)
                abort();
            g->v[n].rule = &ks[i];
            g->v[n].ev = j;
            g->n = n + 1;
            strmap_put(e->corr_index, ks[i].events[j], g);
        }
    return e->corr_index;
}

/* "SCENARIO/KIND|KEY": the state's name in memory and in Redis. */
static void state_name(char *buf, size_t len, const pb_correlation *k,
                       const char *key)
{
    snprintf(buf, len, "%s/%s|%s", k->scenario, pb_corr_kind_name(k->kind),
             key);
}

static void push(corr_st *st, int64_t ts, uint64_t id, int ev, int source)
{
    if (st->n == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 4;
        st->v = realloc(st->v, st->cap * sizeof *st->v);
        if (!st->v)
            abort();
    }
    st->v[st->n++] = (corr_ev){ts, id, ev, source};
}

/* Drops events older than `before`, in memory and in Redis. */
static void trim(engine *e, corr_st *st, const char *rkey, int64_t before)
{
    size_t keep = 0;

    for (size_t i = 0; i < st->n; i++)
        if (st->v[i].ts >= before)
            st->v[keep++] = st->v[i];
    if (keep != st->n)
        e->ops->window_trim(e->ctx, rkey, before);
    st->n = keep;
}

/* The quiet time and the used-up mark, as one field of cascade:{C}:corr. */
static void save_marks(engine *e, const corr_st *st, const char *cluster,
                       const char *name)
{
    char key[320], val[48];

    eng_key(key, sizeof key, cluster, "corr", NULL);
    snprintf(val, sizeof val, "%lld %lld", (long long)st->until,
             (long long)st->cleared);
    e->ops->hash_put(e->ctx, key, name, val);
}

static void clear(engine *e, corr_st *st, const char *rkey)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->v[i].ts > st->cleared)
            st->cleared = st->v[i].ts;
    if (st->n)
        e->ops->window_trim(e->ctx, rkey, st->cleared + 1);
    st->n = 0;
}

static int complete(const corr_st *st)
{
    const pb_correlation *k = st->rule;
    unsigned have = 0;

    switch (k->kind) {
    case PB_CORR_THRESHOLD:
        return st->n >= (size_t)k->count;
    case PB_CORR_SEQUENCE:
        return st->n == (size_t)k->nevents;
    case PB_CORR_GROUP:
        for (size_t i = 0; i < st->n; i++)
            have |= 1u << st->v[i].ev;
        return have == (1u << k->nevents) - 1;
    }
    return 0;
}

/* Whether event `ev` at ts joins the state (sequence: only the step it
 * waits for; a first step restarts an expired wait). */
static int accept(engine *e, corr_st *st, const char *rkey, int ev,
                  int64_t ts)
{
    const pb_correlation *k = st->rule;
    int64_t w = k->window * 1000;

    if (k->kind != PB_CORR_SEQUENCE) {
        trim(e, st, rkey, ts - w);
        return 1;
    }
    if (st->n && ts - st->v[0].ts > w) { /* the wait ran out */
        clear(e, st, rkey);
        st->dirty = 1;
        return ev == 0;
    }
    return (size_t)ev == st->n;
}

static void fire(engine *e, const sig *s, const fact *f, corr_st *st,
                 const char *key)
{
    const pb_correlation *k = st->rule;
    cstate *cs = eng_cs(e, s->cluster);
    strmap *open = k->by == PB_BY_JOB ? cs->open_job : cs->open_node;
    char ikey[sizeof ((incident *)0)->key];
    incident *inc;

    snprintf(ikey, sizeof ikey, "corr:%s|%s", k->scenario, key);
    inc = strmap_get(open, ikey);
    if (!eng_fresh(e, inc)) {
        inc = eng_open_incident(e, s, k->scenario, "corr", ikey);
        str_copy(inc->key, sizeof inc->key, ikey);
        inc->cause = *f;
        if (k->by == PB_BY_JOB) {
            inc->job_scope = 1;
            str_copy(inc->job, sizeof inc->job, key);
            str_copy(inc->root_job, sizeof inc->root_job, key);
        } else {
            str_copy(inc->node, sizeof inc->node, key);
            str_copy(inc->root_node, sizeof inc->root_node, key);
        }
        if (st->n && st->v[0].ts < inc->root_ts)
            inc->root_ts = inc->first = st->v[0].ts;
        strmap_put(open, ikey, inc);
    }
    eng_touch(inc, s);
    inc->count += (int)st->n - 1; /* every event it held, not only s */
    for (size_t i = 0; i < st->n; i++)
        if (st->v[i].source >= 0 && st->v[i].source < SRC__COUNT)
            inc->sources |= 1u << st->v[i].source;
}

/* The state of one rule and key, created empty on first use. */
static corr_st *state_of(engine *e, const char *cluster, const char *name,
                         const pb_correlation *k)
{
    cstate *cs = eng_cs(e, cluster);
    corr_st *st = strmap_get(cs->corr, name);

    if (!st) {
        st = calloc(1, sizeof *st);
        if (!st)
            abort();
        st->rule = k;
        strmap_put(cs->corr, name, st);
    }
    return st;
}

static void feed_one(engine *e, const sig *s, const fact *f,
                     const pb_correlation *k, int ev)
{
    const char *key = k->by == PB_BY_JOB ? f->job : f->host;
    char name[384], rkey[512], member[48];
    corr_st *st;

    if (!key[0])
        key = k->by == PB_BY_JOB ? s->job : s->host;
    if (!key || !key[0])
        return;
    state_name(name, sizeof name, k, key);
    eng_key(rkey, sizeof rkey, s->cluster, "w:corr", name);
    st = state_of(e, s->cluster, name, k);
    st->rule = k; /* a swapped rule set: the same rule, its new copy */
    if (st->until >= s->ts || st->cleared >= s->ts)
        return;
    /* older than the window of what it holds: it can complete nothing */
    if (st->n && s->ts < st->v[st->n - 1].ts - k->window * 1000)
        return;
    for (size_t i = 0; i < st->n; i++)
        if (st->v[i].sig == s->id && st->v[i].ev == ev)
            return; /* a redelivered signal counts once */
    if (!accept(e, st, rkey, ev, s->ts)) {
        if (st->dirty)
            save_marks(e, st, s->cluster, name);
        st->dirty = 0;
        return;
    }
    push(st, s->ts, s->id, ev, (int)s->source);
    snprintf(member, sizeof member, "%016llx %d %d",
             (unsigned long long)s->id, ev, (int)s->source);
    e->ops->window_add(e->ctx, rkey, s->ts, member);
    if (complete(st)) {
        fire(e, s, f, st, key);
        if (k->kind != PB_CORR_SEQUENCE)
            st->until = st->v[0].ts + k->window * 1000;
        clear(e, st, rkey);
        st->dirty = 1;
    }
    if (st->dirty)
        save_marks(e, st, s->cluster, name);
    st->dirty = 0;
}

void eng_corr_feed(engine *e, const sig *s, const fact *f)
{
    corr_refs *r;

    if (!f->sig_id || !(r = strmap_get(index_of(e), f->sig_id)))
        return;
    for (size_t i = 0; i < r->n; i++)
        feed_one(e, s, f, r->v[i].rule, r->v[i].ev);
}

/* States that hold nothing in their window, whose quiet time has passed
 * and whose used-up mark is older than the allowed lateness go, with
 * their field; at most once per event-time minute. */
void eng_corr_prune(engine *e, const char *cluster)
{
    cstate *cs = eng_cs(e, cluster);
    size_t pos = 0, ndead = 0, cap = 0;
    const char *name;
    void *val;
    char **dead = NULL, key[320];

    if (e->now < cs->corr_pruned + 60 * INT64_C(1000000))
        return;
    cs->corr_pruned = e->now;
    while (strmap_next(cs->corr, &pos, &name, &val)) {
        corr_st *st = val;
        int64_t w = st->rule->window * 1000;
        if (st->n && st->v[st->n - 1].ts >= e->now - w)
            continue;
        /* the used-up mark must outlive any redelivery: what is older
         * than the allowed lateness is refused as late anyway */
        if (st->until >= e->now ||
            (st->cleared && st->cleared >= e->now - ENG_ALLOWED_LATENESS))
            continue;
        if (ndead == cap) {
            cap = cap ? cap * 2 : 16;
            dead = realloc(dead, cap * sizeof *dead);
            if (!dead)
                abort();
        }
        dead[ndead++] = strdup(name);
    }
    eng_key(key, sizeof key, cluster, "corr", NULL);
    for (size_t i = 0; i < ndead; i++) {
        corr_st *st = strmap_del(cs->corr, dead[i]);
        char rkey[512];
        if (st->n) {
            eng_key(rkey, sizeof rkey, cluster, "w:corr", dead[i]);
            e->ops->window_trim(e->ctx, rkey, e->now);
        }
        if (st->until || st->cleared)
            e->ops->hash_del(e->ctx, key, dead[i]);
        eng_corr_state_free(st);
        free(dead[i]);
    }
    free(dead);
}

/* The rule a state name ("SCENARIO/KIND|KEY") belongs to, in the current
 * rule set; NULL when the rule is gone. */
static const pb_correlation *rule_of(engine *e, const char *name)
{
    size_t nk;
    const pb_correlation *ks = pb_correlations(e->cat, &nk);
    const char *bar = strchr(name, '|');
    char want[300];

    for (size_t i = 0; bar && i < nk; i++) {
        snprintf(want, sizeof want, "%s/%s", ks[i].scenario,
                 pb_corr_kind_name(ks[i].kind));
        if (strlen(want) == (size_t)(bar - name) &&
            !strncmp(want, name, (size_t)(bar - name)))
            return &ks[i];
    }
    return NULL;
}


int eng_corr_restore_entry(engine *e, const char *cluster, const char *name,
                           int64_t ts, const char *member)
{
    const pb_correlation *k = rule_of(e, name);
    unsigned long long id;
    int ev, source;
    corr_st *st;
    size_t at;

    if (sscanf(member, "%16llx %d %d", &id, &ev, &source) != 3 || ev < 0 ||
        ev >= PB_CORR_MAX_EVENTS)
        return -1;
    eng_mark_seen(e, cluster, id, ts);
    if (!k || ev >= k->nevents)
        return 0; /* its rule is gone: nothing waits for it */
    st = state_of(e, cluster, name, k);
    if (ts <= st->cleared)
        return 0; /* used up (its trim did not reach Redis) */
    for (size_t i = 0; i < st->n; i++)
        if (st->v[i].sig == id && st->v[i].ev == ev)
            return 0;
    push(st, ts, id, ev, source);
    /* Redis gives a set's members in score order; keep that order when
     * several sets' reads interleave. */
    for (at = st->n - 1; at > 0 && st->v[at - 1].ts > ts; at--) {
        corr_ev t = st->v[at];
        st->v[at] = st->v[at - 1];
        st->v[at - 1] = t;
    }
    return 0;
}

int eng_corr_restore_until(engine *e, const char *cluster, const char *name,
                           const char *value)
{
    const pb_correlation *k = rule_of(e, name);
    long long until, cleared;
    int used;
    corr_st *st;

    if (sscanf(value, "%lld %lld%n", &until, &cleared, &used) != 2 ||
        value[used])
        return -1;
    if (!k)
        return 0;
    st = state_of(e, cluster, name, k);
    st->until = until;
    st->cleared = cleared;
    /* entries read before this field may be used up already */
    size_t keep = 0;
    for (size_t i = 0; i < st->n; i++)
        if (st->v[i].ts > cleared)
            st->v[keep++] = st->v[i];
    st->n = keep;
    return 0;
}
