/* Correlation rules (rule files' `correlations:`): threshold, sequence and
 * group over signatures, per host or job, in event time.
 *
 * State per (rule, key) is a short list of the events it holds, its quiet
 * time after firing and the time up to which its events were used up. In
 * Redis it is one field of one hash per rule, cascade:{C}:cw:RULE, field
 * KEY (the host or job), written whole through the store ops whenever it
 * changes (so in the batch's pipeline), and read back on restart. One
 * field per key, not a sorted set per key: Redis spends about 200 bytes
 * on a key of its own, under 100 on a small hash field. The value packs
 * numbers in base 64 (fixed width) so that a one-event state fits
 * jemalloc's 32-byte class:
 *   [~UNTIL(9)CLEARED(9)][+SPILLED(5)FIRST(9)LAST(9)]
 *   then per event |TS(9)SIGID(11)EVENT(1)SOURCE(1)
 * (the marks only when either is set, the spill only when not empty). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/str.h"
#include "engine/detect.h"
#include "engine/state.h"

typedef struct corr_ev {
    int64_t ts;
    uint64_t sig;
    int ev;     /* index into the rule's events */
    int source; /* sig_source, for the incident's evidence */
} corr_ev;

typedef struct corr_st {
    const pb_correlation *rule;
    /* where it is kept (cstate corr map, Redis): the maps' own copies */
    const char *cluster, *name;
    int queued;           /* in the dirty list, to be written at the flush */
    int64_t until; /* events at or before this are ignored: it fired */
    /* Events at or before this were used up (fired, or a wait ran out):
     * a redelivered one must not count again, also after a restart. */
    int64_t cleared;
    int dirty; /* the marks changed: save them */
    corr_ev *v;    /* in arrival order: &one while it holds one */
    size_t n, cap;
    /* The first event, in place: most states hold one (a job's first
     * timeout), and a store of its own cost 112 bytes and a malloc for
     * each of the 100k/s run's million live keys. */
    corr_ev one;
    /* A group's events let go past GROUP_KEEP of one kind: how many, and
     * the earliest and latest of their times. */
    uint32_t spilled;
    int64_t spill_first, spill_last;
} corr_st;

/* Whether a group is complete needs only the latest of each of its
 * events. A storm of one of them (every rank's NCCL timeout on a host,
 * thousands a minute) would otherwise be held whole: scanned for every
 * signal and written whole to Redis in every batch. Past GROUP_KEEP of
 * one event the oldest goes, and is only counted (evidence.count) and
 * its time kept (the incident's first). */
#define GROUP_KEEP 4

/* What listens to one signature: (rule, event index) pairs. */
typedef struct corr_refs {
    size_t n;
    struct {
        const pb_correlation *rule;
        int ev;
    } v[];
} corr_refs;

static void eng_corr_state_free(void *p)
{
    corr_st *st = p;

    if (st) {
        if (st->v != &st->one)
            free(st->v);
        free(st);
    }
}

static void free_refs(void *p)
{
    free(p);
}

/* What the detector keeps for itself (its slot in the engine). */
typedef struct corr_eng {
    strmap *index;         /* signature id -> the rules it feeds */
    const pb_catalog *cat; /* the rule set the index was built on */
    /* States changed since the last eng_flush: each is written once per
     * batch, however many of its events the batch held. */
    corr_st **dirty;
    size_t ndirty, capdirty;
} corr_eng;

extern const eng_detector eng_det_corr;

static corr_eng *ce(engine *e)
{
    void **slot = eng_slot(e, &eng_det_corr);

    if (!*slot)
        *slot = xcalloc(1, sizeof(corr_eng));
    return *slot;
}

static void eng_corr_index_free(corr_eng *c)
{
    strmap_free(c->index, free_refs);
    c->index = NULL;
    c->cat = NULL;
}

/* The index follows the catalog: rebuilt when the rule set was swapped. */
static strmap *index_of(engine *e)
{
    corr_eng *c = ce(e);
    size_t nk;
    const pb_correlation *ks = pb_correlations(e->cat, &nk);

    if (c->cat == e->cat && c->index)
        return c->index;
    eng_corr_index_free(c);
    c->index = strmap_new();
    c->cat = e->cat;
    for (size_t i = 0; i < nk; i++)
        for (int j = 0; j < ks[i].nevents; j++) {
            corr_refs *r = strmap_get(c->index, ks[i].events[j]);
            size_t n = r ? r->n : 0;
            corr_refs *g = xrealloc(r, sizeof *g + (n + 1) * sizeof g->v[0]);
            g->v[n].rule = &ks[i];
            g->v[n].ev = j;
            g->n = n + 1;
            strmap_put(c->index, ks[i].events[j], g);
        }
    return c->index;
}

/* "SCENARIO/KIND|KEY": the state's name in memory and in Redis. */
static void state_name(char *buf, size_t len, const pb_correlation *k,
                       const char *key)
{
    str_join(buf, len, (const char *const[]){k->scenario, "/",
                                             pb_corr_kind_name(k->kind), "|",
                                             key, NULL});
}

static void push(corr_st *st, int64_t ts, uint64_t id, int ev, int source)
{
    if (!st->cap) {
        st->v = &st->one;
        st->cap = 1;
    } else if (st->n == st->cap && st->v == &st->one) {
        st->v = xmalloc(4 * sizeof *st->v);
        st->v[0] = st->one;
        st->cap = 4;
    } else if (st->n == st->cap) {
        st->cap *= 2;
        st->v = xrealloc(st->v, st->cap * sizeof *st->v);
    }
    st->v[st->n++] = (corr_ev){ts, id, ev, source};
}

/* Drops events older than `before`. */
static void trim(corr_st *st, int64_t before)
{
    size_t keep = 0;

    for (size_t i = 0; i < st->n; i++)
        if (st->v[i].ts >= before)
            st->v[keep++] = st->v[i];
    if (keep != st->n)
        st->dirty = 1;
    st->n = keep;
    /* The spilled events' own times are gone: all of them left when the
     * latest did; while some may remain, the window's start stands for
     * the earliest, and the count is an upper bound. */
    if (st->spilled && st->spill_last < before) {
        st->spilled = 0;
        st->spill_first = st->spill_last = 0;
        st->dirty = 1;
    } else if (st->spilled && st->spill_first < before) {
        st->spill_first = before;
        st->dirty = 1;
    }
}

/* The time of the first event the state holds, also one let go (n > 0). */
static int64_t first_ts(const corr_st *st)
{
    return st->spilled && st->spill_first < st->v[0].ts ? st->spill_first
                                                        : st->v[0].ts;
}

/* Makes room for event `ev` at ts in a group that holds GROUP_KEEP of it:
 * the oldest goes and is counted. Returns 0, and lets nothing go, when
 * the new one is no newer than every one held: it adds nothing the group
 * needs, and after a restart it may be a redelivery of one let go (whose
 * signal id is not kept), so it is not counted either. */
static int spill(corr_st *st, int ev, int64_t at)
{
    size_t have = 0, oldest = 0;

    for (size_t i = 0; i < st->n; i++)
        if (st->v[i].ev == ev && (!have++ || st->v[i].ts < st->v[oldest].ts))
            oldest = i;
    if (have < GROUP_KEEP)
        return 1;
    int64_t ts = st->v[oldest].ts;
    if (at <= ts)
        return 0;
    if (!st->spilled || ts < st->spill_first)
        st->spill_first = ts;
    if (!st->spilled || ts > st->spill_last)
        st->spill_last = ts;
    if (st->spilled < (1u << 30) - 1) /* what five base-64 digits hold */
        st->spilled++;
    memmove(&st->v[oldest], &st->v[oldest + 1],
            (st->n - oldest - 1) * sizeof *st->v);
    st->n--;
    return 1;
}

/* The rule's hash and the key's field, from a state name. */
static void hash_of(char *key, size_t len, const char *cluster,
                    const char *name, const char **field)
{
    const char *bar = strchr(name, '|');
    char rule[300];
    size_t n = (size_t)(bar - name) < sizeof rule ? (size_t)(bar - name)
                                                  : sizeof rule - 1;

    memcpy(rule, name, n);
    rule[n] = '\0';
    eng_key(key, len, cluster, "cw", rule);
    *field = bar + 1;
}

static const char b64[] =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";

static char *put64(char *out, uint64_t v, int width)
{
    for (int i = width - 1; i >= 0; i--, v >>= 6)
        out[i] = b64[v & 63];
    return out + width;
}

/* width characters of base 64 at *p; -1 when one is not a digit of it */
static int get64(const char **p, int width, uint64_t *v)
{
    *v = 0;
    for (int i = 0; i < width; i++) {
        const char *d = (*p)[i] ? strchr(b64, (*p)[i]) : NULL;
        if (!d)
            return -1;
        *v = *v << 6 | (uint64_t)(d - b64);
    }
    *p += width;
    return 0;
}

/* Writes the state whole (or deletes it when it holds nothing). */
static void save(engine *e, corr_st *st)
{
    char key[400], small[44 + 8 * 23], *val = small, *o;
    const char *field;

    st->dirty = 0;
    hash_of(key, sizeof key, st->cluster, st->name, &field);
    if (!st->n && !st->until && !st->cleared && !st->spilled) {
        e->ops->hash_del(e->ctx, key, field);
        return;
    }
    /* a few events, the usual case, need no allocation per signal */
    if (st->n > 8)
        val = xmalloc(44 + st->n * 23);
    o = val;
    if (st->until || st->cleared) {
        *o++ = '~';
        o = put64(o, (uint64_t)st->until, 9);
        o = put64(o, (uint64_t)st->cleared, 9);
    }
    if (st->spilled) {
        *o++ = '+';
        o = put64(o, st->spilled, 5);
        o = put64(o, (uint64_t)st->spill_first, 9);
        o = put64(o, (uint64_t)st->spill_last, 9);
    }
    for (size_t i = 0; i < st->n; i++) {
        *o++ = '|';
        o = put64(o, (uint64_t)st->v[i].ts, 9);
        o = put64(o, st->v[i].sig, 11);
        o = put64(o, (uint64_t)st->v[i].ev, 1);
        o = put64(o, (uint64_t)st->v[i].source, 1);
    }
    *o = '\0';
    e->ops->hash_put(e->ctx, key, field, val);
    if (val != small)
        free(val);
}

static void clear(corr_st *st)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->v[i].ts > st->cleared)
            st->cleared = st->v[i].ts;
    if (st->spilled && st->spill_last > st->cleared)
        st->cleared = st->spill_last;
    st->n = 0;
    st->spilled = 0;
    st->spill_first = st->spill_last = 0;
    st->dirty = 1;
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
static int accept(corr_st *st, int ev, int64_t ts)
{
    const pb_correlation *k = st->rule;
    int64_t w = k->window * 1000;

    if (k->kind != PB_CORR_SEQUENCE) {
        trim(st, ts - w);
        return 1;
    }
    if (st->n && ts - st->v[0].ts > w) { /* the wait ran out */
        clear(st);
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
        if (st->n && first_ts(st) < inc->root_ts)
            inc->root_ts = inc->first = first_ts(st);
        strmap_put(open, ikey, inc);
    }
    eng_touch(inc, s);
    /* every event it held, not only s */
    inc->count += (int)st->n + (int)st->spilled - 1;
    for (size_t i = 0; i < st->n; i++)
        if (st->v[i].source >= 0 && st->v[i].source < SRC__COUNT)
            inc->sources |= 1u << st->v[i].source;
}

/* The state of one rule and key, created empty on first use. */
static corr_st *state_of(engine *e, const char *cluster, const char *name,
                         const pb_correlation *k)
{
    cstate *cs = eng_cs(e, cluster);
    const char *kept;
    void **slot = strmap_slot(cs->corr, name, &kept);
    corr_st *st = *slot;

    if (!st) {
        st = xcalloc(1, sizeof *st);
        st->cluster = cs->name;
        st->name = kept;
        st->rule = k;
        *slot = st;
    }
    return st;
}

/* A changed state waits for the flush: a job whose threshold counts 1000
 * events in one batch is written once, not 1000 times. */
static void queue(engine *e, corr_st *st)
{
    corr_eng *c = ce(e);

    if (st->queued)
        return;
    if (c->ndirty == c->capdirty) {
        c->capdirty = c->capdirty ? c->capdirty * 2 : 64;
        c->dirty = xrealloc(c->dirty, c->capdirty * sizeof *c->dirty);
    }
    st->queued = 1;
    c->dirty[c->ndirty++] = st;
}

/* The hash a state is written to is its cluster's and its rule's; a
 * state of a hash among the first SAVE_GROUPS of the batch gets 1 + that
 * group's index, any other SAVE_GROUPS + 1. */
#define SAVE_GROUPS 32

static int save_group(corr_st *st, const corr_st **heads, int *n)
{
    for (int g = 0; g < *n; g++)
        if (heads[g]->rule == st->rule &&
            (heads[g]->cluster == st->cluster ||
             !strcmp(heads[g]->cluster, st->cluster)))
            return g + 1;
    if (*n == SAVE_GROUPS)
        return SAVE_GROUPS + 1;
    heads[*n] = st;
    return ++*n;
}

/* Written hash by hash, each in the order its states changed: the store
 * sends a run of writes to one hash as one HSET, and a batch's signals
 * usually touch several rules in turn (an NCCL timeout: its job's
 * threshold, then its host's group), which made every write a command
 * of its own. Past SAVE_GROUPS hashes the rest go in the order they
 * changed, so the regrouping costs at most that many passes. */
static void eng_corr_save(engine *e)
{
    corr_eng *c = ce(e);
    const corr_st *heads[SAVE_GROUPS];
    int n = 0, last = 0;

    for (size_t i = 0; i < c->ndirty; i++) {
        int g = save_group(c->dirty[i], heads, &n);
        c->dirty[i]->queued = g;
        if (g > last)
            last = g;
    }
    for (int g = 1; g <= last; g++) {
        for (size_t i = 0; i < c->ndirty; i++) {
            corr_st *st = c->dirty[i];
            if (st->queued != g)
                continue;
            st->queued = 0;
            if (st->dirty)
                save(e, st);
        }
    }
    c->ndirty = 0;
}

static void eng_corr_forget(engine *e)
{
    corr_eng *c = ce(e);

    for (size_t i = 0; i < c->ndirty; i++)
        c->dirty[i]->queued = 0;
    c->ndirty = 0;
}

static void feed_one(engine *e, const sig *s, const fact *f,
                     const pb_correlation *k, int ev)
{
    const char *key = k->by == PB_BY_JOB ? f->job : f->host;
    char name[384];
    corr_st *st;

    if (!key[0])
        key = k->by == PB_BY_JOB ? s->job : s->host;
    if (!key || !key[0])
        return;
    state_name(name, sizeof name, k, key);
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
    if (accept(st, ev, s->ts) &&
        (k->kind != PB_CORR_GROUP || spill(st, ev, s->ts))) {
        push(st, s->ts, s->id, ev, (int)s->source);
        st->dirty = 1;
        if (complete(st)) {
            fire(e, s, f, st, key);
            if (k->kind != PB_CORR_SEQUENCE)
                st->until = first_ts(st) + k->window * 1000;
            clear(st);
        }
    }
    if (st->dirty)
        queue(e, st);
}

static void eng_corr_feed(engine *e, const sig *s, const fact *f)
{
    corr_refs *r;

    if (!f->sig_id || !(r = strmap_get(index_of(e), f->sig_id)))
        return;
    for (size_t i = 0; i < r->n; i++)
        feed_one(e, s, f, r->v[i].rule, r->v[i].ev);
}

/* Whether a state can go: nothing in its window, its quiet time passed,
 * and its used-up mark older than the allowed lateness (the mark must
 * outlive any redelivery; what is older is refused as late anyway).
 * Queued: it changed in this batch. */
static int prunable(const engine *e, const corr_st *st)
{
    int64_t w = st->rule->window * 1000;

    if (st->queued || (st->n && st->v[st->n - 1].ts >= e->now - w))
        return 0;
    return st->until < e->now &&
           !(st->cleared && st->cleared >= e->now - ENG_ALLOWED_LATENESS);
}

#define PRUNE_SLICE_MIN 4

/* The states that can go go, with their field. A pass starts at most
 * once per event-time minute and walks a slice of the map at each signal,
 * sized to end within half the signals of the last minute (at least 4):
 * one walk over millions of states at a minute's turn held a batch for
 * hundreds of milliseconds. A walk that keys are added under may miss or
 * see twice a few states; the next pass has them. */
static void eng_corr_prune(engine *e, const char *cluster)
{
    cstate *cs = eng_cs(e, cluster);
    const char *name;
    void *val;
    char key[400];

    cs->corr_fed++;
    if (!cs->corr_slice) {
        size_t fed = cs->corr_fed > 1 ? cs->corr_fed : 1;
        if (e->now < cs->corr_pruned + 60 * INT64_C(1000000))
            return;
        cs->corr_pruned = e->now;
        cs->corr_pos = 0;
        cs->corr_fed = 0;
        cs->corr_slice = 2 * strmap_len(cs->corr) / fed;
        if (cs->corr_slice < PRUNE_SLICE_MIN)
            cs->corr_slice = PRUNE_SLICE_MIN;
    }
    for (size_t n = 0; n < cs->corr_slice; n++) {
        if (!strmap_next(cs->corr, &cs->corr_pos, &name, &val)) {
            cs->corr_slice = 0; /* the pass is over */
            return;
        }
        if (!prunable(e, val))
            continue;
        const char *field;
        hash_of(key, sizeof key, cluster, name, &field);
        e->ops->hash_del(e->ctx, key, field);
        eng_corr_state_free(strmap_del(cs->corr, name)); /* frees name */
    }
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


/* One field of a cw hash (its format above save()). */
static int eng_corr_restore(engine *e, const char *cluster, const char *rule,
                     const char *field, const char *value)
{
    char name[512];
    const pb_correlation *k;
    uint64_t until = 0, cleared = 0, spilled = 0, first = 0, last = 0, ts, id,
             ev, source;
    const char *p = value;
    corr_st *st;

    if (*p == '~' && (p++, get64(&p, 9, &until) || get64(&p, 9, &cleared)))
        return -1;
    if (*p == '+' && (p++, get64(&p, 5, &spilled) || get64(&p, 9, &first) ||
                      get64(&p, 9, &last)))
        return -1;
    snprintf(name, sizeof name, "%s|%s", rule, field);
    k = rule_of(e, name);
    st = k ? state_of(e, cluster, name, k) : NULL;
    if (st) {
        st->until = (int64_t)until;
        st->cleared = (int64_t)cleared;
        st->spilled = (uint32_t)spilled;
        st->spill_first = (int64_t)first;
        st->spill_last = (int64_t)last;
    }
    while (*p == '|') {
        p++;
        if (get64(&p, 9, &ts) || get64(&p, 11, &id) || get64(&p, 1, &ev) ||
            get64(&p, 1, &source))
            return -1;
        /* seen, even when its rule is gone: a redelivery is no news */
        eng_mark_seen(e, cluster, id, (int64_t)ts);
        if (st && ev < (uint64_t)k->nevents && (int64_t)ts > st->cleared)
            push(st, (int64_t)ts, id, (int)ev, (int)source);
    }
    return *p ? -1 : 0;
}

/* ---- the detector ----------------------------------------------------- */

static int corr_on_fact(engine *e, const sig *s, const fact *f)
{
    eng_corr_feed(e, s, f);
    return f->kind == FACT_EVENT; /* for the correlation rules only */
}

static void corr_on_facts(engine *e, const sig *s)
{
    eng_corr_prune(e, s->cluster);
}

static int corr_restore(engine *e, const char *cluster, const char *kind,
                        const char *field, const char *value, cs_err *err)
{
    if (strncmp(kind, "cw:", 3))
        return 0;
    if (eng_corr_restore(e, cluster, kind + 3, field, value) == 0)
        return 1;
    cs_err_set(err, "cascade:{%s}:%s %s: unreadable correlation state '%.80s'",
               cluster, kind, field, value);
    return -1;
}

/* Every cluster's states go with the changes queued for them. */
static void corr_forget(engine *e)
{
    size_t pos = 0;
    const char *k;
    void *v;

    eng_corr_forget(e);
    while (strmap_next(e->clusters, &pos, &k, &v)) {
        cstate *cs = v;
        strmap_free(cs->corr, eng_corr_state_free);
        cs->corr = NULL;
    }
}

static void corr_free(engine *e)
{
    void **slot = eng_slot(e, &eng_det_corr);
    corr_eng *c = *slot;

    if (!c)
        return;
    eng_corr_index_free(c);
    free(c->dirty);
    free(c);
    *slot = NULL;
}

static const char *const corr_records[] = {"cw:", NULL};

const eng_detector eng_det_corr = {
    .name = "correlation",
    .records = corr_records,
    .on_fact = corr_on_fact,
    .on_facts = corr_on_facts,
    .restore = corr_restore,
    .flush = eng_corr_save,
    .forget = corr_forget,
    .free = corr_free,
};
