/* The jobs detector and the evidence kept for every fact (engine/detect.h):
 * what the scheduler says about jobs (started, failed, completed,
 * preempted, blocked by a job they depend on), nodes (inventory, back
 * again), Xids that follow a GPU or a program, NCCL timeouts, spot
 * reclaims, and the context a job's error lines give. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/jw.h"
#include "core/mem.h"
#include "core/str.h"
#include "core/strmap.h"
#include "engine/detect.h"
#include "engine/faults.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

static void on_job_preempted(engine *e, const sig *s, job *j);
/* Where the mark marked_cause chose was read: its node and time. */
typedef struct mark_at {
    const char *host;
    int64_t ts;
} mark_at;
static const char *marked_cause(engine *e, const job *j, const char *host,
                                const char *only, mark_at *at);

/* The NIC a failed job's NCCL transfers failed on is the suspect: the
 * node's NIC incident (the one marks.c opens when the errors spread over
 * jobs), with the job as its effect. */
static void nic_failed_job(engine *e, const sig *s, job *j, const mark_at *at)
{
    const char *host = at->host;
    char key[200];
    fact f;
    incident *inc;

    eng_rule_fact(&f, FACT_NODE_FAULT, "fabric.nic_flaky", host, "");
    snprintf(f.excerpt, sizeof f.excerpt, "job %.40s failed after NCCL IB "
             "errors on %.40s", j->id, host);
    snprintf(key, sizeof key, "nic:%.180s", host);
    inc = eng_advisory(e, s, &f, key, 1);
    if (!inc)
        inc = strmap_get(eng_cs(e, j->cluster)->open_node, key);
    if (!inc)
        return;
    /* the root is the first IB error the job logged there */
    if (at->ts < inc->root_ts) {
        inc->root_ts = at->ts;
        eng_dirty(inc);
    }
    eng_add_child(inc, j->id, j->state, s->ts);
}

/* A kernel or cgroup OOM kill on one of job j's nodes within
 * HOST_OOM_BEFORE before ts (its failure) that nothing took as its own
 * evidence (a checkpoint save, a memory ramp, a DataLoader worker's
 * death): that node, else NULL. A kernel line names no job: one of the
 * job's or of none. */
#define HOST_OOM_BEFORE (5 * TS_MIN)
static const char *host_oom_before(engine *e, const job *j, int64_t ts)
{
    char own[96];
    size_t i;

    snprintf(own, sizeof own, "job:%.80s", j->id);
    for (i = 0; i <= json_array_size(j->nodes); i++) {
        const char *h = i < json_array_size(j->nodes)
            ? json_string_value(json_array_get(j->nodes, i)) : own;
        node_win *w = h ? eng_win_find(e, j->cluster, h) : NULL;
        for (size_t k = w ? w->n : 0; k > 0; k--) {
            const entry *en = &w->v[k - 1];
            if (en->ts < ts - HOST_OOM_BEFORE)
                break;
            if (en->kind == FACT_HOST_OOM && en->ts <= ts &&
                (!en->job[0] || !strcmp(en->job, j->id)))
                return i < json_array_size(j->nodes)
                    ? h : json_string_value(json_array_get(j->nodes, 0));
        }
    }
    return NULL;
}

/* A failure nothing else explained, told by a mark of the job's: a job
 * of several nodes after NCCL chose loopback or a bridge, or could not
 * reach a peer over its bootstrap socket (the interface, whatever the
 * ranks printed); a job whose NCCL transfers failed on one node's NIC
 * (IB completion errors: the NIC is the suspect, on the node that logged
 * them); c10d that could not resolve the master's name; a Ray actor that
 * died, when no cause printed after it (the memory monitor's kill, say)
 * opened an incident of its own. */
static int failed_on_mark(engine *e, const sig *s, job *j)
{
    static const char *const explain[] = {
        "nccl.iface_mismatch", "fabric.nic_flaky", "dist.hostname_unresolved",
        "ray.actor_died"};
    mark_at at = {NULL, 0};
    const char *h;
    fact f;

    /* The host's OOM killer first: a rank it killed is also a hang to
     * its peers and an actor's death to Ray. */
    if (pb_find(e->cat, "oom.host_killed") &&
        (h = host_oom_before(e, j, s->ts))) {
        eng_rule_fact(&f, FACT_JOB_FAULT, "oom.host_killed", h, j->id);
        eng_on_job_fault(e, s, &f);
        eng_add_child(strmap_get(eng_cs(e, j->cluster)->open_job, j->id),
                      j->id, j->state, s->ts);
        return 1;
    }
    for (size_t i = 0; i < sizeof explain / sizeof *explain; i++) {
        if (!pb_find(e->cat, explain[i]) ||
            !marked_cause(e, j, NULL, explain[i], &at))
            continue;
        if (!strcmp(explain[i], "fabric.nic_flaky") && at.host) {
            nic_failed_job(e, s, j, &at);
            return 1;
        }
        eng_rule_fact(&f, FACT_JOB_FAULT, explain[i],
                      at.host ? at.host
                              : json_string_value(json_array_get(j->nodes, 0)),
                      j->id);
        eng_on_job_fault(e, s, &f);
        eng_add_child(strmap_get(eng_cs(e, j->cluster)->open_job, j->id),
                      j->id, j->state, s->ts);
        return 1;
    }
    return 0;
}

/* Several jobs failing on one node within CRASH_WINDOW, none explained,
 * with different errors (SCENARIOS.md): the node. Jobs that all died of
 * the same error line (one library's bug, one bad input) are that error,
 * not the node; a job that printed none counts as different. */
static int crashed_node(engine *e, cstate *cs, const char *host)
{
    node_win *w = strmap_get(cs->nodes, host);
    const char *error = NULL;
    int failed = 0, same = 1;

    for (size_t k = 0; w && k < w->n; k++) {
        job *o = strmap_get(cs->jobs, w->v[k].job);
        if (w->v[k].kind != FACT_JOB_STATE ||
            w->v[k].ts < e->now - CRASH_WINDOW || !o || o->incident[0] ||
            !eng_is_failure(o->state))
            continue;
        failed++;
        if (!o->error[0] || (error && strcmp(error, o->error)))
            same = 0;
        error = o->error;
    }
    return failed >= 2 && !same;
}

/* A job failed. Explained by its own incident (OOM, ...), by a node fault
 * on one of its nodes, or, when two or more jobs fall on one node within
 * minutes with no other explanation, by a node crash. */
static void on_job_failed(engine *e, const sig *s, job *j)
{
    cstate *cs = eng_cs(e, j->cluster);
    size_t i;
    json_t *n;
    incident *inc;

    json_array_foreach(j->nodes, i, n)
        eng_win_add(e, s, json_string_value(n), FACT_JOB_STATE, j->id, NULL, NULL);
    inc = strmap_get(cs->open_job, j->id);
    if (eng_fresh(e, inc)) {
        eng_touch(inc, s);
        str_copy(j->incident, sizeof j->incident, inc->id);
        return;
    }
    /* Already explained by an incident that follows its logical job. */
    inc = j->incident[0] ? eng_incident_by_id(e, j->incident) : NULL;
    if (eng_fresh(e, inc)) {
        eng_touch(inc, s);
        eng_add_child(inc, j->id, j->state, s->ts);
        return;
    }
    json_array_foreach(j->nodes, i, n) {
        inc = strmap_get(cs->open_node, json_string_value(n));
        if (eng_fresh(e, inc)) {
            eng_touch(inc, s);
            eng_add_child(inc, j->id, j->state, s->ts);
            str_copy(j->incident, sizeof j->incident, inc->id);
            eng_maybe_escalate(e, inc);
            return;
        }
    }
    /* SLURM's NODE_FAIL on a one-node job names the node that failed. */
    if (strcmp(j->state, "NODE_FAIL") == 0 && json_array_size(j->nodes) == 1) {
        fact f;
        memset(&f, 0, sizeof f);
        f.kind = FACT_NODE_DOWN;
        f.scenario = "node.down";
        eng_on_node_fault(e, s, &f, json_string_value(json_array_get(j->nodes, 0)));
        return;
    }
    json_array_foreach(j->nodes, i, n) {
        const char *host = json_string_value(n);
        if (crashed_node(e, cs, host) && pb_find(e->cat, "cascade.node_crash")) {
            const entry *nf =
                eng_earliest_node_fault(e, j->cluster, host, e->now - CRASH_WINDOW);
            inc = eng_open_node_incident(e, s, host, "cascade.node_crash", NULL);
            inc->root_scenario = nf ? nf->scenario : "cascade.node_crash";
            eng_touch(inc, s);
            eng_absorb_failed_jobs(e, inc, host);
            eng_tell_incident(e, s, inc);
            return;
        }
    }
    if (failed_on_mark(e, s, j))
        return;
    eng_tell_job(e, s, j, ENG_JOB_UNEXPLAINED);
}

/* A job that will not run because of a job it depends on: cancelled, or
 * failed or pending with the scheduler's reason saying so. */
static int blocked(const char *state, const sig *s)
{
    const char *why = json_string_value(json_object_get(s->obj, "reason"));

    if (why && strstr(why, "DependencyNeverSatisfied"))
        return 1; /* SLURM; plain "Dependency" is waiting, not blocked */
    return strcmp(state, "CANCELLED") == 0;
}

/* The incident of the failure above j in its dependencies, at any depth
 * (a breadth-first walk up depends_on; jobs blocked themselves lead
 * further up through their own dependencies), or NULL. */
static incident *upstream_failure(engine *e, const job *j)
{
    const char *queue[64];
    size_t head = 0, tail = 0;

    queue[tail++] = j->id;
    while (head < tail) {
        const job *cur = eng_job_of(e, j->cluster, queue[head++]);
        size_t i;
        json_t *d;
        if (!cur || !cur->depends_on)
            continue;
        json_array_foreach(cur->depends_on, i, d) {
            const job *up = eng_job_of(e, j->cluster, json_string_value(d));
            incident *inc;
            int seen = 0;
            if (!up)
                continue;
            inc = up->incident[0] ? eng_incident_by_id(e, up->incident) : NULL;
            if (eng_fresh(e, inc))
                return inc;
            for (size_t k = 0; k < tail; k++)
                seen |= strcmp(queue[k], up->id) == 0;
            if (!seen && tail < sizeof queue / sizeof *queue)
                queue[tail++] = up->id;
        }
    }
    return NULL;
}

/* cascade.dependency_chain: the failure's incident becomes the chain's
 * (its root cause stays, and keeps its own response), and the job it
 * blocks joins it; the chain's scope is the job blocked last. A failure
 * of a node stays the node's incident: the blocked job joins it. */
static void on_blocked(engine *e, const sig *s, job *j)
{
    incident *inc = upstream_failure(e, j);
    const pb_scenario *chain = pb_find(e->cat, "cascade.dependency_chain");

    if (!inc || !chain)
        return;
    if (inc->job_scope) {
        if (inc->sc != chain) {
            inc->sc = chain;
            if (!inc->root_job[0])
                str_copy(inc->root_job, sizeof inc->root_job, inc->job);
        }
        str_copy(inc->job, sizeof inc->job, j->id);
    }
    eng_add_child(inc, j->id, j->state, s->ts);
    eng_touch(inc, s);
    str_copy(j->incident, sizeof j->incident, inc->id);
}

/* A job that completes resolves what was open about it, or about an
 * earlier attempt of its logical job (the resubmit worked). */
static void on_job_completed(engine *e, const sig *s, const job *j)
{
    char why[160];

    snprintf(why, sizeof why, "job %.*s%s%.*s completed",
             str_utf8_max(j->id, 40), j->id, j->name[0] ? " of " : "",
             str_utf8_max(j->name, 80), j->name);
    for (size_t i = 0; i < e->ninc; i++) {
        incident *inc = e->incs[i];
        const job *o;
        if (!inc->job_scope || inc->team[0] || strcmp(inc->cluster, j->cluster))
            continue;
        if (strcmp(inc->job, j->id) &&
            !(j->name[0] && (o = eng_job_of(e, j->cluster, inc->job)) &&
              !strcmp(o->name, j->name)))
            continue;
        eng_resolve(inc, s, why);
    }
}

/* A node back (the fact has no scenario: the scheduler or Kubernetes says
 * so) resolves what the node being down explains; an alert that resolved
 * resolves the incident of its scenario there. */
static void on_recovery(engine *e, const sig *s, const fact *f)
{
    const char *what = f->scenario ? f->scenario : "node.down";

    if (!f->host[0])
        return;
    eng_tell_recovered(e, s, f->host, what);
    for (size_t i = 0; i < e->ninc; i++) {
        incident *inc = e->incs[i];
        /* a rack's or an advisory's incident is more than this node */
        if (strcmp(inc->cluster, s->cluster) || eng_own_key(inc->key) ||
            (strcmp(inc->node, f->host) && strcmp(inc->root_node, f->host)) ||
            (strcmp(inc->sc->id, what) && strcmp(inc->root_scenario, what)))
            continue;
        eng_resolve(inc, s, f->excerpt);
    }
}

static void on_job_state(engine *e, const sig *s)
{
    cstate *cs = eng_cs(e, s->cluster);
    job *j = strmap_get(cs->jobs, s->job);
    json_t *v;

    if (!j) {
        j = xcalloc(1, sizeof *j);
        str_copy(j->id, sizeof j->id, s->job);
        str_copy(j->cluster, sizeof j->cluster, s->cluster);
        strmap_put(cs->jobs, s->job, j);
    } else if (s->ts < j->updated) {
        return; /* older than the state it has (a redelivery, a late
                 * signal): applying it would move the job back */
    }
    if (strcmp(s->state, "RUNNING") == 0 && strcmp(j->state, "RUNNING")) {
        eng_tell_job(e, s, j, ENG_JOB_STARTING);
        /* a requeue under the same id: its SeqNums start over */
        j->wd_op[0] = '\0';
    }
    str_copy(j->state, sizeof j->state, s->state);
    j->updated = s->ts;
    if (s->job_name)
        str_copy(j->name, sizeof j->name, s->job_name);
    if ((v = json_object_get(s->obj, "team")) && json_is_string(v))
        str_copy(j->team, sizeof j->team, json_string_value(v));
    if ((v = json_object_get(s->obj, "priority")) && json_is_string(v))
        str_copy(j->priority, sizeof j->priority, json_string_value(v));
    if (s->nodes) {
        json_decref(j->nodes);
        j->nodes = json_incref(s->nodes);
    }
    if (s->config) {
        json_decref(j->config);
        j->config = json_incref(s->config);
    }
    if (eng_is_failure(s->state) && json_is_integer(v = json_object_get(s->obj, "step")))
        j->step = (double)json_integer_value(v); /* where it stopped */
    if (json_is_array(v = json_object_get(s->obj, "depends_on"))) {
        json_decref(j->depends_on);
        j->depends_on = json_incref(v);
    }
    if (!j->nodes)
        j->nodes = json_array();
    if (strcmp(s->state, "RUNNING") == 0 || strcmp(s->state, "PENDING") == 0)
        j->incident[0] = '\0'; /* a new attempt starts unexplained */

    if (eng_is_failure(j->state)) {
        eng_tell_job(e, s, j, ENG_JOB_FAILED);
        on_job_failed(e, s, j);
    }
    else if (strcmp(j->state, "COMPLETED") == 0)
        on_job_completed(e, s, j);
    else if (strcmp(j->state, "PREEMPTED") == 0)
        on_job_preempted(e, s, j);
    if (j->depends_on && !j->incident[0] && blocked(j->state, s))
        on_blocked(e, s, j);
    eng_persist_job(e, j); /* after: it records the explanation */
}

static void on_inventory(engine *e, const sig *s)
{
    node_info *ni = eng_inventory_set(e, s->cluster, s->host, s->obj);
    json_t *rec = eng_inventory_record(ni, s->obj);
    char key[320], *txt = rec ? jw_dumps(rec, 1) : NULL;

    json_decref(rec);
    if (!txt)
        return;
    eng_key(key, sizeof key, s->cluster, "inventory", NULL);
    e->ops->hash_put(e->ctx, key, s->host, txt);
    free(txt);
}

/* A job's error line: evidence for whatever explains it, or an anomaly on
 * its host that a later node fault will claim as its earliest sign. */
static void on_app_error(engine *e, const sig *s, const fact *f)
{
    cstate *cs = eng_cs(e, s->cluster);
    incident *inc = f->job[0] ? strmap_get(cs->open_job, f->job) : NULL;
    job *j = eng_job_of(e, s->cluster, f->job);
    size_t i;
    json_t *n;

    if (f->host[0])
        eng_win_add(e, s, f->host, f->kind, f->job, NULL, f->sig_id);
    if (eng_fresh(e, inc)) {
        eng_touch(inc, s);
        return;
    }
    inc = f->host[0] ? strmap_get(cs->open_node, f->host) : NULL;
    if (!eng_fresh(e, inc) && j) {
        inc = NULL;
        json_array_foreach(j->nodes, i, n) {
            incident *c = strmap_get(cs->open_node, json_string_value(n));
            if (eng_fresh(e, c)) {
                inc = c;
                break;
            }
        }
    }
    if (eng_fresh(e, inc)) {
        eng_touch(inc, s);
        if (f->job[0])
            eng_add_child(inc, f->job, NULL, s->ts);
    }
}

/* Context only: the host's window keeps it for later decisions (a mark
 * explains a later timeout, a kernel OOM kill backs a worker's death). */
static void on_context(engine *e, const sig *s, const fact *f)
{
    char wbuf[200];
    incident *inc =
        f->host[0] ? strmap_get(eng_cs(e, s->cluster)->open_node, f->host) : NULL;

    if (f->host[0] || f->job[0])
        eng_win_add(e, s, eng_window_of(f, wbuf, sizeof wbuf), f->kind, f->job,
                f->scenario, f->sig_id);
    /* A mark of the node's open fault (NCCL fell back to sockets on a node
     * whose IB link is down) names a job that fault degrades. */
    if (f->kind == FACT_MARK && f->scenario && f->job[0] && eng_fresh(e, inc) &&
        strcmp(inc->sc->id, f->scenario) == 0) {
        eng_touch(inc, s);
        eng_add_child(inc, f->job, NULL, s->ts);
    }
}

/* Whether a mark of this scenario can explain this job's failure. NCCL's
 * own lines are judged with the job's topology (SCENARIOS.md): loopback
 * or a bridge between the nodes of one job explains its hang only when
 * it has several nodes; on one node NCCL needs no network at all. A node
 * without IB is judged against its peers (marks.c), never by a hang. */
static int mark_explains(const job *j, const char *scenario)
{
    if (!strcmp(scenario, "net.ib_down"))
        return 0;
    if (!strcmp(scenario, "nccl.iface_mismatch"))
        return json_array_size(j->nodes) >= 2;
    return 1;
}

/* The scenario a mark in this job's windows gives its collective timeouts:
 * NCCL that bootstrapped on loopback explains every later hang. `only`
 * limits it to one scenario (NULL: any). The earliest such mark wins;
 * *at (when given) gets its node and time. */
static const char *marked_cause(engine *e, const job *j, const char *host,
                                const char *only, mark_at *at)
{
    size_t i;
    const char *best = NULL;
    int64_t best_ts = 0;

    for (i = 0; j && i <= json_array_size(j->nodes); i++) {
        const char *h = i < json_array_size(j->nodes)
            ? json_string_value(json_array_get(j->nodes, i)) : host;
        node_win *w = h ? eng_win_find(e, j->cluster, h) : NULL;
        for (size_t k = 0; w && k < w->n; k++) {
            const entry *en = &w->v[k];
            if (en->kind != FACT_MARK || !en->scenario ||
                strcmp(en->job, j->id) || (best && en->ts >= best_ts) ||
                (only && strcmp(en->scenario, only)) ||
                !mark_explains(j, en->scenario))
                continue;
            best = en->scenario;
            best_ts = en->ts;
            if (at)
                *at = (mark_at){h, en->ts};
        }
    }
    return best;
}

/* Two ranks whose watchdogs time out on the same SeqNum in different
 * collectives (a BROADCAST on one, an ALLREDUCE on the other) ran
 * different code: the job's first timeout is kept, each later one of
 * another rank compared with it. 1 when f shows the desync (g made). */
static int desync(engine *e, const fact *f, job *j, fact *g)
{
    if (!j || f->step < 0 || !f->detail[0])
        return 0;
    if (!j->wd_op[0]) {
        j->wd_seq = f->step;
        j->wd_rank = f->rank;
        str_copy(j->wd_op, sizeof j->wd_op, f->detail);
        str_copy(j->wd_host, sizeof j->wd_host, f->host);
        eng_persist_job(e, j);
        return 0;
    }
    if (j->wd_seq != f->step || !strcmp(j->wd_op, f->detail) ||
        (j->wd_rank == f->rank && !strcmp(j->wd_host, f->host)) ||
        !pb_find(e->cat, "nccl.rank_desync"))
        return 0;
    *g = *f;
    g->scenario = "nccl.rank_desync";
    snprintf(g->detail, sizeof g->detail, "SeqNum %ld: %s on rank %d, %.40s "
             "on rank %d", f->step, j->wd_op, j->wd_rank, f->detail, f->rank);
    return 1;
}

/* A collective timed out: the cause is what the job's evidence says (a
 * mark), or a desync its ranks' timeouts show; with neither yet, the line
 * is evidence like any fatal error. */
static void on_nccl_timeout(engine *e, const sig *s, const fact *f)
{
    job *j = eng_job_of(e, s->cluster, f->job);
    const char *cause = marked_cause(e, j, f->host, NULL, NULL);
    fact g;

    if (cause && pb_find(e->cat, cause)) {
        g = *f;
        g.scenario = cause;
        eng_on_job_fault(e, s, &g);
        return;
    }
    if (desync(e, f, j, &g)) {
        eng_on_job_fault(e, s, &g);
        return;
    }
    on_app_error(e, s, f);
}

/* Faults that follow the logical job (its name): spot reclaims, a program
 * faulting GPU after GPU. Repeats within a day are one incident, each
 * attempt one child. */
static void name_incident(engine *e, const sig *s, const fact *f, job *j,
                          const char *state)
{
    char key[192], idkey[192];
    incident *inc;

    eng_name_key(key, sizeof key, j->cluster, j->name[0] ? j->name : j->id);
    snprintf(idkey, sizeof idkey, "name:%s", j->name[0] ? j->name : j->id);
    inc = strmap_get(eng_cs(e, j->cluster)->open_job, key);
    if (!eng_fresh(e, inc)) {
        inc = eng_open_incident(e, s, f->scenario, "job", idkey);
        inc->job_scope = 1;
        inc->cause = *f;
        str_copy(inc->key, sizeof inc->key, key);
        str_copy(inc->root_job, sizeof inc->root_job, j->id);
        str_copy(inc->root_node, sizeof inc->root_node, f->host);
        strmap_put(eng_cs(e, j->cluster)->open_job, key, inc);
    }
    /* The newest attempt is the one to resubmit. */
    str_copy(inc->job, sizeof inc->job, j->id);
    str_copy(inc->node, sizeof inc->node, f->host);
    eng_touch(inc, s);
    eng_add_child(inc, j->id, state, s->ts);
    str_copy(j->incident, sizeof j->incident, inc->id);
    eng_persist_job(e, j); /* a restart must know what explains it */
}

static void on_spot(engine *e, const sig *s, const fact *f)
{
    job *j = eng_job_of(e, s->cluster, f->job);

    on_context(e, s, f);
    if (j && pb_find(e->cat, f->scenario))
        name_incident(e, s, f, j, NULL);
}

/* A preempted job whose node had a spot notice within minutes was
 * reclaimed by the cloud. */
static void on_job_preempted(engine *e, const sig *s, job *j)
{
    size_t i;
    json_t *n;

    json_array_foreach(j->nodes, i, n)
        eng_win_add(e, s, json_string_value(n), FACT_JOB_STATE, j->id, NULL, NULL);

    json_array_foreach(j->nodes, i, n) {
        node_win *w = eng_win_find(e, j->cluster, json_string_value(n));
        for (size_t k = 0; w && k < w->n; k++) {
            const entry *en = &w->v[k];
            fact f;
            if (en->kind != FACT_SPOT || en->ts < e->now - CRASH_WINDOW ||
                !pb_find(e->cat, en->scenario))
                continue;
            memset(&f, 0, sizeof f);
            f.kind = FACT_SPOT;
            f.scenario = en->scenario;
            f.rank = -1;
            str_copy(f.host, sizeof f.host, json_string_value(n));
            str_copy(f.job, sizeof f.job, j->id);
            name_incident(e, s, &f, j, j->state);
            return;
        }
    }
}

/* Distinct logical jobs in one GPU's history. */
static size_t jobs_on_gpu(engine *e, const char *cluster, const char *gpu_win)
{
    node_win *w = eng_win_find(e, cluster, gpu_win);
    size_t n = 0;

    for (size_t i = 0; w && i < w->n; i++) {
        int dup = 0;
        for (size_t k = 0; k < i && !dup; k++)
            dup = strcmp(w->v[k].job, w->v[i].job) == 0;
        n += !dup && w->v[i].ts >= e->now - NAME_WINDOW;
    }
    return n;
}

/* Distinct GPUs whose history holds this logical job. */
static size_t gpus_of_job(engine *e, const char *cluster, const char *name)
{
    const strmap *wins = eng_cs(e, cluster)->nodes;
    size_t pos = 0, n = 0;
    const char *k;
    void *v;

    while (strmap_next(wins, &pos, &k, &v)) {
        node_win *w = v;
        int hit = 0;
        if (strncmp(k, "hist:", 5))
            continue;
        for (size_t i = 0; i < w->n && !hit; i++)
            hit = !strcmp(w->v[i].job, name) && w->v[i].ts >= e->now - NAME_WINDOW;
        n += hit;
    }
    return n;
}

/* Xid 13/31/43: the GPU's fault or the program's. Each one goes to its
 * GPU's day-long history under the logical job running there; the same GPU
 * under two or more jobs is the GPU's fault, the same job on two or more
 * GPUs is the program's (seed 002). One occurrence decides nothing. */
static void on_tracked_xid(engine *e, const sig *s, const fact *f,
                           const char *same_gpu, const char *same_job)
{
    job *j = eng_job_on(e, s->cluster, f->host);
    char gpu_win[300];
    fact g = *f;

    if (!j) {
        eng_win_add(e, s, f->host, f->kind, s->job, NULL, f->sig_id);
        return;
    }
    snprintf(gpu_win, sizeof gpu_win, "hist:%s/%s", f->host,
             f->pci[0] ? f->pci : f->gpu[0] ? f->gpu : "?");
    eng_win_add(e, s, gpu_win, f->kind, j->name[0] ? j->name : j->id, NULL,
            f->sig_id);
    if (jobs_on_gpu(e, s->cluster, gpu_win) >= 2 && pb_find(e->cat, same_gpu)) {
        incident *inc;
        g.scenario = same_gpu;
        eng_on_node_fault(e, s, &g, f->host);
        inc = strmap_get(eng_cs(e, s->cluster)->open_node, f->host);
        if (inc && !inc->key[0])
            snprintf(inc->key, sizeof inc->key, "gpu:%.*s",
                     str_utf8_max(gpu_win + 5, 180), gpu_win + 5);
        return;
    }
    eng_win_add(e, s, f->host, f->kind, j->id, NULL, f->sig_id);
    if (gpus_of_job(e, s->cluster, j->name[0] ? j->name : j->id) >= 2 &&
        pb_find(e->cat, same_job)) {
        g.scenario = same_job;
        str_copy(g.job, sizeof g.job, j->id);
        name_incident(e, s, &g, j, NULL);
    }
}

/* What tells two error lines apart: the signature, and for a plain fatal
 * error (app_error: "CUDA error: ...", whatever follows) the words of the
 * line too, numbers left out (pids, addresses, sizes). */
static void error_key(const fact *f, char *key, size_t len)
{
    uint64_t h = HASH_FNV_SEED;

    if (f->kind != FACT_APP_ERROR) {
        str_copy(key, len, f->sig_id);
        return;
    }
    for (const char *p = f->excerpt; *p; p++)
        if (!(*p >= '0' && *p <= '9'))
            h = hash_fnv1a(h, p, 1);
    snprintf(key, len, "%.40s#%08x", f->sig_id, (unsigned)(h & 0xffffffffu));
}

/* A job's latest error line, by error_key: its attempts are told apart
 * by it (cascade.shifting_symptoms), and jobs that all died of one error
 * are no node's crash (crashed_node). Kept with the job record. */
static void note_error(engine *e, const sig *s, const fact *f)
{
    char key[64];
    job *j;

    switch (f->kind) {
    case FACT_APP_ERROR:
    case FACT_NCCL_TIMEOUT:
    case FACT_CUDA_OOM:
    case FACT_JOB_FAULT:
    case FACT_XID:
        break;
    default:
        return;
    }
    /* An alert that a job failed (KubeJobFailed) is no error line of its
     * own: it would make every attempt look alike. */
    if (s->source == SRC_ALERTMANAGER)
        return;
    if (!f->sig_id || !(j = eng_job_of(e, s->cluster, f->job)))
        return;
    error_key(f, key, sizeof key);
    if (!strcmp(j->error, key))
        return;
    str_copy(j->error, sizeof j->error, key);
    eng_persist_job(e, j);
}

/* A fact that names no host: the window of its job ("job:NAME") or, when
 * it names no job either (a fact about the cluster as a whole), the
 * cluster's ("cluster:NAME"; w:node:cluster:NAME in Redis) keeps it for
 * the horizon, so a restart knows it was seen and a redelivery of it
 * (a KubeJobFailed alert, say) changes nothing. */
static void hostless_window(engine *e, const sig *s, const fact *f)
{
    char win[300];

    if (f->host[0] || f->kind == FACT_INVENTORY)
        return;
    if (f->job[0])
        snprintf(win, sizeof win, "job:%.200s", f->job);
    else
        snprintf(win, sizeof win, "cluster:%.80s", s->cluster);
    eng_win_add(e, s, win, f->kind, f->job[0] ? f->job : NULL, f->scenario,
                f->sig_id);
}

/* Every fact but the rules' own events: a window for one that names no
 * host, a job's latest error. */
static int evidence_on_fact(engine *e, const sig *s, const fact *f)
{
    hostless_window(e, s, f);
    note_error(e, s, f);
    return 0;
}

const eng_detector eng_det_evidence = {
    .name = "evidence",
    .on_fact = evidence_on_fact,
};

/* A node's fault told by a job's own text ("CUDA error: uncorrectable
 * ECC error encountered") is the fault of the node the job ran on
 * (SCENARIOS.md, "Reading the catalog"): the line's host, else the job's
 * one node. A job on several nodes whose line names no host leaves it
 * unknown: draining a guess is worse than waiting for the kernel's line. */
static const fact *on_jobs_node(engine *e, const sig *s, const fact *f,
                                fact *buf)
{
    const job *j;

    if (f->host[0] || !f->job[0] ||
        (f->kind != FACT_NODE_FAULT && f->kind != FACT_XID))
        return f;
    j = eng_job_of(e, s->cluster, f->job);
    if (!j || json_array_size(j->nodes) != 1)
        return f;
    *buf = *f;
    str_copy(buf->host, sizeof buf->host,
             json_string_value(json_array_get(j->nodes, 0)));
    return buf;
}

/* A node-down line in a job's own output (slurmstepd's cancel banner
 * names the node that reports it, the batch host) when the job already
 * has a node down: srun named the node that failed first ("Node failure
 * on X"). The banner is then evidence for that node's incident, never a
 * second node down (SCENARIOS.md: the node named as failed, never the
 * host that printed the line). */
static int told_by_peer(engine *e, const sig *s, const fact *f)
{
    const job *j;
    size_t i;
    json_t *n;

    if (!f->job[0] || (s->source != SRC_APP && s->source != SRC_SLURM) ||
        !(j = eng_job_of(e, s->cluster, f->job)) ||
        json_array_size(j->nodes) < 2)
        return 0;
    json_array_foreach(j->nodes, i, n) {
        const char *h = json_string_value(n);
        incident *inc = strmap_get(eng_cs(e, s->cluster)->open_node, h);
        if (!strcmp(h, f->host) || !eng_fresh(e, inc) ||
            strcmp(inc->root_scenario, "node.down") ||
            s->ts - inc->opened > CRASH_WINDOW)
            continue;
        /* kept as the reporter's error line: a restart knows it was seen */
        eng_win_add(e, s, f->host, FACT_APP_ERROR, j->id, NULL, f->sig_id);
        eng_touch(inc, s);
        eng_add_child(inc, j->id, NULL, s->ts);
        return 1;
    }
    return 0;
}

/* What one fact means, by its kind (the facts no detector before it in
 * the table took). */
static int jobs_on_fact(engine *e, const sig *s, const fact *f)
{
    const char *same_gpu, *same_job;
    fact placed;

    f = on_jobs_node(e, s, f, &placed);

    switch (f->kind) {
    case FACT_INVENTORY:
        on_inventory(e, s);
        break;
    case FACT_JOB_STATE:
        on_job_state(e, s);
        break;
    case FACT_XID:
        if (!f->scenario && f->host[0] &&
            pb_xid_tracked(e->cat, f->xid, &same_gpu, &same_job)) {
            on_tracked_xid(e, s, f, same_gpu, same_job);
            break;
        }
        /* fall through */
    case FACT_NODE_DOWN:
        if (told_by_peer(e, s, f))
            break;
        if (pb_find(e->cat, f->scenario))
            eng_on_node_fault(e, s, f, f->host);
        else if (f->host[0])
            eng_win_add(e, s, f->host, f->kind, s->job, NULL, f->sig_id);
        break;
    case FACT_CUDA_OOM: /* one in a Serve replica's context is taken */
    case FACT_JOB_FAULT:
        if (f->job[0] && pb_find(e->cat, f->scenario))
            eng_on_job_fault(e, s, f);
        else
            on_context(e, s, f);
        break;
    case FACT_NODE_FAULT:
        if (f->host[0] && pb_find(e->cat, f->scenario))
            eng_on_node_fault(e, s, f, f->host);
        break;
    case FACT_NCCL_TIMEOUT:
        on_nccl_timeout(e, s, f);
        break;
    case FACT_SPOT:
        on_spot(e, s, f);
        break;
    case FACT_HOST_OOM: /* one a checkpoint or a leak explains is taken */
    case FACT_MARK:
        on_context(e, s, f);
        break;
    case FACT_APP_ERROR:
        on_app_error(e, s, f);
        break;
    case FACT_RECOVERY:
        on_recovery(e, s, f);
        break;
    case FACT_CHECKPOINT:
        /* Context only: never opens an incident (seed 004), but the
         * rules that read a host's OOM or a slow step look for it. */
        if (f->host[0])
            eng_win_add(e, s, f->host, f->kind, f->job, NULL, f->sig_id);
        break;
    case FACT_PROGRESS:
    case FACT_EVENT:
    case FACT__COUNT:
        break;
    }
    return 0;
}

static const char *const jobs_scenarios[] = {
    "cascade.node_crash", "cascade.dependency_chain", "node.down",
    "oom.host_killed", NULL};

const eng_detector eng_det_jobs = {
    .name = "jobs",
    .scenarios = jobs_scenarios,
    .on_fact = jobs_on_fact,
};
