/* Reading the state back after a restart, and retention. A correlator
 * keeps nothing it cannot rebuild from Redis and Kafka
 * (docs/ARCHITECTURE.md): each record read back goes to what owns it (the
 * state's own records, record.c; a detector's, through the detector
 * table), then the links between them are made again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "engine/detect.h"
#include "engine/state.h"

/* ---- reading back ---------------------------------------------------- */

int eng_restore_window(engine *e, const char *key, int64_t ts,
                       const char *member)
{
    const char *host = strstr(key, ":w:node:"), *kind;
    const char *name = strstr(key, ":w:name:");
    char kc, jobid[64], scen[64], src[32] = "", sid[64] = "", cluster[128];
    unsigned long long id;
    sig_source source = SRC__COUNT; /* unknown: older records lack it */
    node_win *w;

    if (name && !eng_split_key(key, cluster, sizeof cluster, &kind)) {
        EACH_DETECTOR(d) {
            int rc = (*d)->restore_window
                         ? (*d)->restore_window(e, cluster, kind, ts, member)
                         : 0;
            if (rc)
                return rc < 0 ? -1 : 0;
        }
        return -1;
    }
    if (!host || eng_split_key(key, cluster, sizeof cluster, &kind) ||
        sscanf(member, "%16llx %c %63s %63s %31s %63s", &id, &kc,
                        jobid, scen, src, sid) < 4)
        return -1;
    const char *k = strchr(eng_kind_code, kc);
    if (!k || !kc)
        return -1;
    if (src[0])
        sig_source_parse(src, &source);
    w = eng_win_of(e, cluster, host + 8);
    if (eng_win_has(w, ts, id, (fact_kind)(k - eng_kind_code), NULL))
        return 0; /* twice in Redis under two members: keep one */
    entry *en = eng_win_insert(w, ts);
    en->ts = ts;
    en->sig = id;
    en->kind = (fact_kind)(k - eng_kind_code);
    en->source = source;
    str_copy(en->job, sizeof en->job, strcmp(jobid, "-") ? jobid : "");
    en->scenario = NULL;
    en->sig_id = NULL;
    if (sid[0] && strcmp(sid, "-")) {
        const pb_signature *g = pb_signature_find(e->cat, sid);
        en->sig_id = g ? g->id : NULL;
    }
    if (strcmp(scen, "-")) {
        const pb_scenario *sc = pb_find(e->cat, scen);
        en->scenario = sc ? sc->id : NULL;
    }
    /* A signal in a window was processed: seeing it again (Kafka redelivers
     * what was not committed) must change nothing. */
    eng_mark_seen(e, cluster, id, ts);
    eng_clock_advance(e, cluster, ts);
    return 0;
}

/* A record kind of a list: the name, or a prefix ending in ':'. */
static int kind_in(const char *kind, const char *const *list)
{
    for (; list && *list; list++) {
        size_t n = strlen(*list);
        if ((*list)[n - 1] == ':' ? !strncmp(kind, *list, n)
                                  : !strcmp(kind, *list))
            return 1;
    }
    return 0;
}

int eng_restore_wants(const char *key)
{
    /* The state layer's records; the detectors name their own. */
    static const char *const state_records[] = {
        "jobs", "inventory", "state", "tb", "progress", NULL};
    char cluster[128];
    const char *kind;

    if (eng_split_key(key, cluster, sizeof cluster, &kind))
        return 0;
    if (kind_in(kind, state_records))
        return 1;
    EACH_DETECTOR(d)
        if (kind_in(kind, (*d)->records))
            return 1;
    return 0;
}

int eng_restore_hash(engine *e, const char *key, const char *field,
                     const char *value, cs_err *err)
{
    char cluster[128];
    const char *kind;
    json_error_t je;
    json_t *o;
    int rc = -1;

    if (eng_split_key(key, cluster, sizeof cluster, &kind)) {
        cs_err_set(err, "%s: not a cascade state key", key);
        return -1;
    }
    if (strcmp(kind, "tb") == 0) {
        char full[400];
        snprintf(full, sizeof full, "%s|%s", cluster, field);
        if (cls_tb_restore(e->cls, full, value) == 0)
            return 0;
        cs_err_set(err, "%s %s: malformed assembly '%s'", key, field, value);
        return -1;
    }
    /* a detector's own record (metric series, correlation states) */
    EACH_DETECTOR(d) {
        int r = (*d)->restore ? (*d)->restore(e, cluster, kind, field, value,
                                             err)
                              : 0;
        if (r)
            return r < 0 ? -1 : 0;
    }
    if (strcmp(kind, "progress") == 0)
        return eng_record_progress(e, cluster, field, value, err);
    o = json_loads(value, 0, &je);
    if (!json_is_object(o)) {
        cs_err_set(err, "%s %s: not a JSON object (%s)", key, field, je.text);
        json_decref(o);
        return -1;
    }
    if (strcmp(kind, "jobs") == 0)
        rc = eng_record_job(e, cluster, field, o, err);
    else if (strcmp(kind, "inventory") == 0)
        rc = eng_record_inventory(e, cluster, field, o);
    else if (strcmp(kind, "state") == 0)
        rc = eng_record_incident(e, field, o, err);
    else
        cs_err_set(err, "%s: not a state hash", key);
    json_decref(o);
    return rc;
}

static int cmp_opened(const void *a, const void *b)
{
    const incident *x = *(incident *const *)a, *y = *(incident *const *)b;
    if (x->opened != y->opened)
        return x->opened < y->opened ? -1 : 1;
    return strcmp(x->id, y->id);
}

size_t eng_restore_done(engine *e)
{
    size_t open = 0;

    /* Later incidents win the node and job slots, as when they opened. */
    if (e->ninc > 1)
        qsort(e->incs, e->ninc, sizeof *e->incs, cmp_opened);
    e->next_seq = 0; /* flushes publish in this order now */
    e->quiet_due = 0;
    for (size_t i = 0; i < e->ninc; i++) {
        incident *inc = e->incs[i];
        cstate *cs = eng_cs(e, inc->cluster);
        inc->seq = e->next_seq++;
        if (inc->job_scope && (inc->job[0] || inc->team[0]))
            strmap_put(cs->open_job, inc->key, inc);
        else if (!inc->job_scope && eng_own_key(inc->key))
            strmap_put(cs->open_node, inc->key, inc);
        else if (!inc->job_scope && inc->node[0])
            strmap_put(cs->open_node, inc->node, inc);
        EACH_DETECTOR(d)
            if ((*d)->relink)
                (*d)->relink(e, inc);
        if (eng_clock(e, inc->cluster) - inc->updated <= FOLD_WINDOW)
            open++;
    }
    eng_prune(e);
    EACH_DETECTOR(d)
        if ((*d)->restored)
            (*d)->restored(e);
    return open;
}

/* ---- retention ------------------------------------------------------- */

static void unlink_incident(engine *e, const incident *inc)
{
    cstate *cs = eng_cs(e, inc->cluster);

    if (inc->key[0] && strmap_get(cs->open_job, inc->key) == inc)
        strmap_del(cs->open_job, inc->key);
    if (inc->node[0] && strmap_get(cs->open_node, inc->node) == inc)
        strmap_del(cs->open_node, inc->node);
    if (inc->key[0] && strmap_get(cs->open_node, inc->key) == inc)
        strmap_del(cs->open_node, inc->key);
    /* a storm or a maintenance stands for its nodes too */
    for (size_t i = 0; i < inc->nmembers; i++)
        if (strmap_get(cs->open_node, inc->members[i].node) == inc)
            strmap_del(cs->open_node, inc->members[i].node);
}

static size_t prune_incidents(engine *e)
{
    size_t keep = 0, dropped = 0;
    char key[320];

    for (size_t i = 0; i < e->ninc; i++) {
        incident *inc = e->incs[i];
        int64_t keep_for = eng_fold_window(inc) > HORIZON ? eng_fold_window(inc)
                                                          : HORIZON;
        if (inc->dirty || eng_clock(e, inc->cluster) - inc->updated <= keep_for) {
            e->incs[keep++] = inc;
            continue;
        }
        unlink_incident(e, inc);
        eng_key(key, sizeof key, inc->cluster, "state", NULL);
        e->ops->hash_del(e->ctx, key, inc->id);
        eng_incident_free(inc);
        dropped++;
    }
    e->ninc = keep;
    return dropped;
}

static int finished(const char *state)
{
    return strcmp(state, "RUNNING") && strcmp(state, "PENDING");
}

/* Up to `budget` jobs of the walk under way: the finished ones untouched
 * for the horizon go, here and in Redis. Deleting leaves the walk's place
 * alone (strmap_next). Returns how many went; *done when the walk is. */
static size_t prune_jobs(engine *e, size_t budget, int *done)
{
    size_t n = 0;
    job *j;

    *done = 0;
    for (; budget; budget--) {
        if (!eng_next_job(e, &e->prune_it, &j)) {
            *done = 1;
            e->pruning = 0;
            break;
        }
        if (!finished(j->state) ||
            eng_clock(e, j->cluster) - j->updated <= HORIZON)
            continue;
        char key[320];
        eng_key(key, sizeof key, j->cluster, "jobs", NULL);
        e->ops->hash_del(e->ctx, key, j->id);
        eng_key(key, sizeof key, j->cluster, "progress", NULL);
        e->ops->hash_del(e->ctx, key, j->id);
        /* the key, not the id: an id may have been cut to fit */
        eng_job_free(strmap_del(e->prune_it.cs->jobs, e->prune_it.key));
        n++;
    }
    return n;
}

size_t eng_prune_begin(engine *e)
{
    if (!e->pruning) {
        e->prune_it = (eng_iter){0};
        e->pruning = 1;
    }
    size_t n = prune_incidents(e);

    EACH_DETECTOR(d)
        if ((*d)->prune)
            n += (*d)->prune(e);
    return n;
}

size_t eng_prune_step(engine *e, size_t budget, int *done)
{
    if (!e->pruning) {
        *done = 1;
        return 0;
    }
    return prune_jobs(e, budget, done);
}

size_t eng_prune(engine *e)
{
    size_t n;
    int done = 0;

    e->pruning = 0; /* a whole walk, not the rest of one under way */
    n = eng_prune_begin(e);

    while (!done)
        n += eng_prune_step(e, SIZE_MAX, &done);
    return n;
}
