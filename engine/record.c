/* The engine's state records (engine/state.h, "records"): what a restarted
 * correlator reads back to go on. Besides the windows, hashes per cluster
 * hold jobs, inventory, the internal state of each incident (its cause,
 * children and the actions already published, which the public record
 * does not carry), the open multi-line assemblies and each job's training
 * progress; every record holds the full current value, so writing it
 * again is harmless. Written through the store callbacks (engine.h);
 * read back one record at a time by restore.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jw.h"
#include "core/mem.h"
#include "core/str.h"
#include "engine/state.h"

#define STATE_VERSION 1

static void put_json(engine *e, const char *cluster, const char *kind,
                     const char *field, json_t *rec)
{
    char key[320];
    char *txt = jw_dumps(rec, 1);

    eng_key(key, sizeof key, cluster, kind, NULL);
    e->ops->hash_put(e->ctx, key, field, txt);
    free(txt);
    json_decref(rec);
}

void eng_persist_job(engine *e, const job *j)
{
    json_t *wd = j->wd_op[0]
                     ? json_pack("{s:I, s:s, s:i, s:s}", "seq",
                                 (json_int_t)j->wd_seq, "op", j->wd_op,
                                 "rank", j->wd_rank, "host", j->wd_host)
                     : NULL;

    put_json(e, j->cluster, "jobs", j->id,
             json_pack("{s:s, s:s, s:s, s:s, s:s, s:O, s:O*, s:s, s:I, s:O*, "
                       "s:s, s:o*}",
                       "job", j->id, "job_name", j->name, "team", j->team,
                       "state", j->state, "priority", j->priority, "nodes",
                       j->nodes, "config", j->config, "incident", j->incident,
                       "updated", (json_int_t)j->updated, "depends_on",
                       j->depends_on, "error", j->error, "watchdog", wd));
}

/* Progress changes with every step line: a short record of its own, not
 * the whole job (nodes, config) as JSON each time. */
void eng_persist_progress(engine *e, const job *j)
{
    char key[320], val[128];

    eng_key(key, sizeof key, j->cluster, "progress", NULL);
    snprintf(val, sizeof val, "%.17g %lld %lld %lld", j->step,
             (long long)j->progress_ts, (long long)j->stale_ts,
             (long long)j->stall_check);
    e->ops->hash_put(e->ctx, key, j->id, val);
}

static void key_str(jw *w, const char *k, const char *v)
{
    jw_key(w, k);
    jw_str(w, v);
}

static void key_int(jw *w, const char *k, long long v)
{
    jw_key(w, k);
    jw_int(w, v);
}

static void key_real(jw *w, const char *k, double v)
{
    jw_key(w, k);
    jw_real(w, v);
}

/* The cause, keys in sorted order (as the record's are): the text reads
 * back as the jansson dump of the same object did. */
static void fact_write(jw *w, const fact *f)
{
    jw_obj(w);
    key_real(w, "capacity", f->capacity);
    key_str(w, "detail", f->detail);
    key_str(w, "excerpt", f->excerpt);
    key_real(w, "free", f->free_b);
    key_str(w, "gpu", f->gpu);
    key_str(w, "host", f->host);
    key_str(w, "job", f->job);
    key_int(w, "kind", (int)f->kind);
    key_int(w, "pass", (int)f->pass);
    key_str(w, "pci", f->pci);
    key_int(w, "rank", f->rank);
    key_real(w, "reserved", f->reserved_unalloc);
    jw_key(w, "scenario");
    if (f->scenario)
        jw_str(w, f->scenario);
    else
        jw_raw(w, "null");
    key_real(w, "tried", f->tried);
    key_int(w, "xid", f->xid);
    jw_end_obj(w);
}

/* Written on every update of every incident, so written as text directly
 * (core/jw.h), keys in sorted order: building the jansson object and
 * dumping it with sorted keys was about a fifth of the correlator's time
 * on the dense log. Restore reads it with jansson (restore_incident). */
void eng_persist_incident(engine *e, const incident *inc)
{
    char key[320], *txt;
    jw w;

    jw_init(&w);
    jw_obj(&w);
    jw_key(&w, "cause");
    fact_write(&w, &inc->cause);
    jw_key(&w, "children");
    jw_arr(&w);
    for (size_t i = 0; i < inc->nchildren; i++) {
        const child *c = &inc->children[i];
        jw_arr(&w);
        jw_str(&w, c->job);
        jw_str(&w, c->state);
        jw_str(&w, c->scenario);
        jw_int(&w, (long long)c->ts);
        jw_end_arr(&w);
    }
    jw_end_arr(&w);
    key_str(&w, "cluster", inc->cluster);
    key_int(&w, "count", inc->count);
    if (inc->escalated_from[0])
        key_str(&w, "escalated_from", inc->escalated_from);
    key_int(&w, "first", (long long)inc->first);
    key_str(&w, "gpu", inc->gpu);
    key_str(&w, "job", inc->job);
    key_str(&w, "key", inc->key);
    key_int(&w, "last", (long long)inc->last);
    if (inc->nmembers || inc->merged[0]) {
        jw_key(&w, "members");
        jw_arr(&w);
        for (size_t i = 0; i < inc->nmembers; i++) {
            const storm_member *m = &inc->members[i];
            jw_arr(&w);
            jw_str(&w, m->node);
            jw_str(&w, m->id);
            jw_str(&w, m->scenario);
            jw_int(&w, (long long)m->ts);
            jw_int(&w, (long long)m->recovered);
            jw_end_arr(&w);
        }
        jw_end_arr(&w);
        key_str(&w, "merged", inc->merged);
    }
    key_str(&w, "node", inc->node);
    key_int(&w, "opened", (long long)inc->opened);
    key_int(&w, "pub_resolved", inc->pub_resolved);
    jw_key(&w, "published");
    jw_json(&w, inc->published, 1);
    if (inc->nmembers || inc->merged[0])
        key_str(&w, "rack", inc->rack);
    key_int(&w, "recovered", (long long)inc->recovered);
    key_int(&w, "reopened", inc->reopened);
    key_str(&w, "resolution", inc->resolution);
    key_str(&w, "root_job", inc->root_job);
    key_str(&w, "root_node", inc->root_node);
    key_str(&w, "root_scenario", inc->root_scenario);
    key_int(&w, "root_ts", (long long)inc->root_ts);
    key_str(&w, "scenario", inc->sc->id);
    key_str(&w, "scope", inc->job_scope ? "job" : "node");
    key_int(&w, "shown", inc->shown);
    key_int(&w, "sources", (long long)inc->sources);
    key_str(&w, "team", inc->team);
    key_int(&w, "updated", (long long)inc->updated);
    key_int(&w, "v", STATE_VERSION);
    jw_end_obj(&w);
    txt = jw_take(&w);
    eng_key(key, sizeof key, inc->cluster, "state", NULL);
    e->ops->hash_put(e->ctx, key, inc->id, txt);
    free(txt);
}

static void tb_change(void *arg, const char *key, const char *value)
{
    engine *e = arg;
    const char *bar = strchr(key, '|');
    char cluster[128], hkey[320];

    if (!bar)
        return;
    snprintf(cluster, sizeof cluster, "%.*s", (int)(bar - key), key);
    eng_key(hkey, sizeof hkey, cluster, "tb", NULL);
    if (value)
        e->ops->hash_put(e->ctx, hkey, bar + 1, value);
    else
        e->ops->hash_del(e->ctx, hkey, bar + 1);
}

static int64_t clock_of(void *arg, const char *cluster)
{
    return eng_clock(arg, cluster);
}

void eng_persist_tracebacks(engine *e)
{
    cls_tb_changes(e->cls, clock_of, tb_change, e);
}

/* "cascade:{C}:KIND[:NAME]" -> cluster and the kind that follows. */
int eng_split_key(const char *key, char *cluster, size_t len,
                     const char **kind)
{
    const char *open = strchr(key, '{');
    const char *close = open ? strstr(open, "}:") : NULL;

    if (!open || !close || (size_t)(close - open - 1) >= len)
        return -1;
    snprintf(cluster, len, "%.*s", (int)(close - open - 1), open + 1);
    *kind = close + 2;
    return 0;
}

static const char *jstr(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

static int64_t jint(json_t *o, const char *k)
{
    return (int64_t)json_integer_value(json_object_get(o, k));
}

static void copy_progress(job *to, const job *from)
{
    if (!from)
        return;
    to->step = from->step;
    to->progress_ts = from->progress_ts;
    to->stale_ts = from->stale_ts;
    to->stall_check = from->stall_check;
}

int eng_record_job(engine *e, const char *cluster, const char *field,
                       json_t *o, cs_err *err)
{
    json_t *nodes = json_object_get(o, "nodes");
    json_t *config = json_object_get(o, "config"), *wd;
    strmap *jobs;
    job *j;

    if (!json_is_array(nodes) || strcmp(jstr(o, "job"), field)) {
        cs_err_set(err, "job record %s: no nodes array or a different id",
                   field);
        return -1;
    }
    j = xcalloc(1, sizeof *j);
    str_copy(j->id, sizeof j->id, field);
    str_copy(j->cluster, sizeof j->cluster, cluster);
    str_copy(j->name, sizeof j->name, jstr(o, "job_name"));
    str_copy(j->team, sizeof j->team, jstr(o, "team"));
    str_copy(j->state, sizeof j->state, jstr(o, "state"));
    str_copy(j->priority, sizeof j->priority, jstr(o, "priority"));
    str_copy(j->incident, sizeof j->incident, jstr(o, "incident"));
    str_copy(j->error, sizeof j->error, jstr(o, "error"));
    if ((wd = json_object_get(o, "watchdog")) && json_is_object(wd)) {
        j->wd_seq = (long)jint(wd, "seq");
        j->wd_rank = (int)jint(wd, "rank");
        str_copy(j->wd_op, sizeof j->wd_op, jstr(wd, "op"));
        str_copy(j->wd_host, sizeof j->wd_host, jstr(wd, "host"));
    }
    j->updated = jint(o, "updated");
    j->nodes = json_incref(nodes);
    j->config = json_is_object(config) ? json_incref(config) : NULL;
    if (json_is_array(json_object_get(o, "depends_on")))
        j->depends_on = json_incref(json_object_get(o, "depends_on"));
    jobs = eng_cs(e, cluster)->jobs;
    copy_progress(j, strmap_get(jobs, field)); /* read back before it */
    eng_job_free(strmap_put(jobs, field, j));
    return 0;
}

/* A progress record read before its job's record makes a placeholder job
 * (no state: never watched, and pruned if its record never comes). */
int eng_record_progress(engine *e, const char *cluster, const char *field,
                            const char *value, cs_err *err)
{
    strmap *jobs = eng_cs(e, cluster)->jobs;
    job p = {0}, *j;
    long long pr, st, ck;

    if (sscanf(value, "%lg %lld %lld %lld", &p.step, &pr, &st, &ck) != 4) {
        cs_err_set(err, "progress %s: malformed record '%s'", field, value);
        return -1;
    }
    p.progress_ts = pr;
    p.stale_ts = st;
    p.stall_check = ck;
    if (!(j = strmap_get(jobs, field))) {
        j = xcalloc(1, sizeof *j);
        str_copy(j->id, sizeof j->id, field);
        str_copy(j->cluster, sizeof j->cluster, cluster);
        strmap_put(jobs, field, j);
    }
    copy_progress(j, &p);
    return 0;
}

int eng_record_inventory(engine *e, const char *cluster, const char *host,
                             json_t *o)
{
    eng_inventory_set(e, cluster, host, o);
    return 0;
}

static void restore_fact(engine *e, json_t *o, fact *f)
{
    const pb_scenario *sc = pb_find(e->cat, jstr(o, "scenario"));

    memset(f, 0, sizeof *f);
    f->kind = (fact_kind)jint(o, "kind");
    f->scenario = sc ? sc->id : NULL;
    str_copy(f->host, sizeof f->host, jstr(o, "host"));
    str_copy(f->job, sizeof f->job, jstr(o, "job"));
    str_copy(f->gpu, sizeof f->gpu, jstr(o, "gpu"));
    str_copy(f->pci, sizeof f->pci, jstr(o, "pci"));
    str_copy(f->excerpt, sizeof f->excerpt, jstr(o, "excerpt"));
    str_copy(f->detail, sizeof f->detail, jstr(o, "detail"));
    f->step = f->pid = -1;
    f->xid = (int)jint(o, "xid");
    f->rank = (int)jint(o, "rank");
    f->tried = json_number_value(json_object_get(o, "tried"));
    f->free_b = json_number_value(json_object_get(o, "free"));
    f->capacity = json_number_value(json_object_get(o, "capacity"));
    f->reserved_unalloc = json_number_value(json_object_get(o, "reserved"));
    f->pass = (enum oom_pass)jint(o, "pass");
}

static int restore_children(incident *inc, json_t *kids)
{
    size_t i;
    json_t *k;

    inc->children = xcalloc(json_array_size(kids) + 1, sizeof *inc->children);
    json_array_foreach(kids, i, k) {
        child *c = &inc->children[inc->nchildren++];
        if (!json_is_array(k) || json_array_size(k) != 4)
            return -1;
        str_copy(c->job, sizeof c->job, json_string_value(json_array_get(k, 0)));
        str_copy(c->state, sizeof c->state,
                 json_string_value(json_array_get(k, 1)));
        str_copy(c->scenario, sizeof c->scenario,
                 json_string_value(json_array_get(k, 2)));
        c->ts = (int64_t)json_integer_value(json_array_get(k, 3));
    }
    return 0;
}

/* A storm's nodes: [[node, incident id, scenario, ts, recovered], ...]. */
static int restore_members(incident *inc, json_t *ms)
{
    size_t i;
    json_t *m;

    if (!ms)
        return 0;
    inc->members = xcalloc(json_array_size(ms) + 1, sizeof *inc->members);
    json_array_foreach(ms, i, m) {
        storm_member *p = &inc->members[inc->nmembers];
        if (!json_is_array(m) || json_array_size(m) != 5 ||
            !json_is_string(json_array_get(m, 0)))
            return -1;
        str_copy(p->node, sizeof p->node, json_string_value(json_array_get(m, 0)));
        str_copy(p->id, sizeof p->id, json_string_value(json_array_get(m, 1)));
        str_copy(p->scenario, sizeof p->scenario,
                 json_string_value(json_array_get(m, 2)));
        p->ts = (int64_t)json_integer_value(json_array_get(m, 3));
        p->recovered = (int64_t)json_integer_value(json_array_get(m, 4));
        inc->nmembers++;
    }
    return 0;
}

int eng_record_incident(engine *e, const char *field, json_t *o,
                            cs_err *err)
{
    const pb_scenario *sc = pb_find(e->cat, jstr(o, "scenario"));
    const pb_scenario *root = pb_find(e->cat, jstr(o, "root_scenario"));
    json_t *published = json_object_get(o, "published");
    incident *inc;

    if (jint(o, "v") != STATE_VERSION || !sc || !root ||
        !json_is_array(published) || !json_is_object(json_object_get(o, "cause"))) {
        cs_err_set(err, "incident state %s: version %lld, scenario '%s', root "
                        "'%s' (unknown version, scenario or missing fields)",
                   field, (long long)jint(o, "v"), jstr(o, "scenario"),
                   jstr(o, "root_scenario"));
        return -1;
    }
    inc = eng_incident_new(e);
    str_copy(inc->id, sizeof inc->id, field);
    inc->job_scope = strcmp(jstr(o, "scope"), "job") == 0;
    inc->sc = sc;
    inc->root_scenario = root->id;
    str_copy(inc->cluster, sizeof inc->cluster, jstr(o, "cluster"));
    str_copy(inc->node, sizeof inc->node, jstr(o, "node"));
    str_copy(inc->gpu, sizeof inc->gpu, jstr(o, "gpu"));
    str_copy(inc->job, sizeof inc->job, jstr(o, "job"));
    str_copy(inc->key, sizeof inc->key,
             *jstr(o, "key") ? jstr(o, "key") : inc->job);
    /* Records written before clusters kept logical jobs apart. */
    if (!strncmp(inc->key, "name:", 5) && !strchr(inc->key, '|'))
        eng_name_key(inc->key, sizeof inc->key, inc->cluster,
                     jstr(o, "key") + 5);
    str_copy(inc->root_node, sizeof inc->root_node, jstr(o, "root_node"));
    str_copy(inc->root_job, sizeof inc->root_job, jstr(o, "root_job"));
    str_copy(inc->escalated_from, sizeof inc->escalated_from,
             jstr(o, "escalated_from"));
    str_copy(inc->team, sizeof inc->team, jstr(o, "team"));
    inc->root_ts = jint(o, "root_ts");
    inc->opened = jint(o, "opened");
    inc->updated = jint(o, "updated");
    inc->first = jint(o, "first");
    inc->last = jint(o, "last");
    inc->count = (int)jint(o, "count");
    inc->sources = (unsigned)jint(o, "sources");
    inc->recovered = jint(o, "recovered");
    str_copy(inc->resolution, sizeof inc->resolution, jstr(o, "resolution"));
    inc->reopened = (int)jint(o, "reopened");
    inc->pub_resolved = (int)jint(o, "pub_resolved");
    inc->shown = (int)jint(o, "shown");
    str_copy(inc->rack, sizeof inc->rack, jstr(o, "rack"));
    str_copy(inc->merged, sizeof inc->merged, jstr(o, "merged"));
    if (restore_members(inc, json_object_get(o, "members"))) {
        cs_err_set(err, "incident state %s: a malformed storm member", field);
        return -1;
    }
    restore_fact(e, json_object_get(o, "cause"), &inc->cause);
    json_array_extend(inc->published, published);
    if (restore_children(inc, json_object_get(o, "children"))) {
        cs_err_set(err, "incident state %s: a malformed child", field);
        return -1; /* kept, with the children read so far */
    }
    return 0;
}
