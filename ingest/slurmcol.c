#include "ingest/slurmcol.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "core/hash.h"
#include "core/log.h"
#include "core/proc.h"
#include "core/signal.h"
#include "core/str.h"
#include "core/strmap.h"
#include "ingest/fpos.h"
#include "ingest/jobconf.h"
#include "ingest/slurmjson.h"
#include "ingest/slurmtopo.h"
#include "rules/hostlist.h"

/* squeue --json of a big controller: about 5 KiB a job. */
#define SC_MAX_OUTPUT (512u << 20)
#define SC_CMD_MS 60000
#define SC_SCRIPT_MS 10000
#define SC_SCRIPTS_AT_ONCE 2
#define SC_MAX_BACKOFF_MS (5 * 60 * 1000)
#define SC_MAX_NODES 4096
/* A job forgotten this long after the controller stopped showing it. */
#define SC_FORGET_S (2 * 3600)

/* The reason a job waits for a dependency that failed: it never runs. */
#define NEVER "DependencyNeverSatisfied"

/* What was told of one job. */
typedef struct sc_job {
    char shown[32]; /* the engine state last published, "" none */
    int attempt;    /* of that signal */
    int64_t start;  /* its attempt's start */
    char *nodes;    /* its attempt's hostlist (malloc'd; NULL: none yet) */
    json_t *deps;   /* job ids it waits for, kept once SLURM drops them */
    json_t *config; /* NULL: not read yet; an object once read */
    int fetching;
    int blocked;    /* DependencyNeverSatisfied told */
    int64_t seen;   /* the last poll that showed it */
} sc_job;

/* What was told of one node. */
typedef struct sc_node {
    char state[32], flags[256], reason[512];
    char inventory[700]; /* the last inventory told, as its text */
    int unresponsive;    /* polls in a row it was NOT_RESPONDING */
    int told_down;       /* "not responding, setting DOWN" published */
} sc_node;

struct sc_collector {
    struct event_base *base;
    sc_opts o;
    kfk_producer *p;
    strmap *jobs, *nodes;
    struct event *timer;
    proc *cmd;        /* squeue or sinfo running */
    char *squeue_out; /* the poll's squeue answer, until sinfo's comes */
    size_t squeue_len;
    sj_job *snap;     /* the last poll's jobs */
    size_t nsnap;
    sj_node *nsnapv;  /* and nodes */
    size_t nnodes;
    int scripts;      /* fetches in flight */
    proc *script_proc[SC_SCRIPTS_AT_ONCE];
    void *script_arg[SC_SCRIPTS_AT_ONCE];
    char (*names)[128]; /* SC_MAX_NODES: a hostlist expanded */
    kfk_tracker *t;   /* every signal, for the whole run */
    int resend;       /* a signal went undelivered: tell everything again */
    int stopping, failures;
    int64_t last_inventory;
    strmap *rack_of;  /* node -> its leaf switch (scontrol show topology) */
    strmap *canary;   /* the canary_nodes hostlist's nodes */
    int64_t last_topology; /* 0: read it before the next poll */
    int topology_said;     /* its absence logged once */
    sc_stats st;
};

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *cluster_of(const sc_collector *c)
{
    return c->o.cluster ? c->o.cluster : "default";
}

static void stamp(int64_t secs, char out[32])
{
    time_t t = (time_t)secs;
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void id_of(const sc_collector *c, const char *const *parts, char id[17])
{
    uint64_t h = hash_fnv1a(HASH_FNV_SEED, cluster_of(c),
                            strlen(cluster_of(c)) + 1);

    for (; *parts; parts++)
        h = hash_fnv1a(h, *parts, strlen(*parts) + 1);
    for (int i = 15; i >= 0; i--, h >>= 4)
        id[i] = "0123456789abcdef"[h & 15];
    id[16] = '\0';
}

/* ---- publishing --------------------------------------------------------- */

/* o (taken) as a signal on cascade.signals, counted by the poll's
 * tracker. -1 when it could not be: everything is told again next poll. */
static int publish(sc_collector *c, json_t *o)
{
    sig s;
    char *buf;
    size_t len;
    cs_err err;
    int rc;

    json_object_set_new(o, "cluster", json_string(cluster_of(c)));
    if (sig_adopt_json(&s, o, &err)) {
        log_error("slurm", "a signal cascade made is refused: %s", err.msg);
        return -1;
    }
    sig_to_msgpack(&s, &buf, &len);
    rc = kfk_produce_take(c->p, KFK_TOPIC_SIGNALS, s.cluster, strlen(s.cluster),
                          buf, len, c->t, &err);
    sig_free(&s);
    if (rc != KFK_OK) {
        log_warn("slurm", "cannot publish: %s: told again at the next poll",
                 rc == KFK_QUEUE_FULL ? "the producer's queue is full"
                                      : err.msg);
        c->resend = 1;
        return -1;
    }
    c->st.published++;
    return 0;
}

/* ---- jobs --------------------------------------------------------------- */

/* SLURM's state as one of the eight a job signal has; NULL when it is
 * none (SUSPENDED) or only a flag shows (COMPLETING: wait). */
static const char *engine_state(const sj_job *j)
{
    static const char *const same[] = {"PENDING",   "RUNNING",  "COMPLETED",
                                       "FAILED",    "CANCELLED", "TIMEOUT",
                                       "NODE_FAIL", "PREEMPTED"};

    for (size_t i = 0; i < sizeof same / sizeof *same; i++)
        if (!strcmp(j->state, same[i]))
            return same[i];
    if (!strcmp(j->state, "OUT_OF_MEMORY"))
        return "FAILED";
    if (!strcmp(j->state, "BOOT_FAIL"))
        return "NODE_FAIL";
    if (!strcmp(j->state, "DEADLINE"))
        return "TIMEOUT";
    if (!j->state[0] && (!strcmp(j->flag, "REQUEUED") ||
                         !strcmp(j->flag, "REQUEUE_HOLD") ||
                         !strcmp(j->flag, "REQUEUE_FED")))
        return "PENDING";
    return NULL;
}

static int terminal(const char *state)
{
    return strcmp(state, "PENDING") && strcmp(state, "RUNNING");
}

/* "afterok:5512(unfulfilled),afterany:7_*(failed)?singleton" -> the
 * job ids, added to deps (which keeps what SLURM no longer shows). */
static void add_deps(json_t *deps, const char *dep)
{
    char buf[1024], *save = NULL;

    str_copy(buf, sizeof buf, dep);
    for (char *item = strtok_r(buf, ",?", &save); item;
         item = strtok_r(NULL, ",?", &save)) {
        char *ids = strchr(item, ':'), *s2 = NULL;
        if (!ids)
            continue; /* singleton */
        for (char *id = strtok_r(ids + 1, ":+", &s2); id;
             id = strtok_r(NULL, ":+", &s2)) {
            id[strcspn(id, "(_")] = '\0';
            if (!*id || strspn(id, "0123456789") != strlen(id))
                continue;
            size_t i;
            json_t *e;
            int have = 0;
            json_array_foreach(deps, i, e) have |= !strcmp(json_string_value(e), id);
            if (!have)
                json_array_append_new(deps, json_string(id));
        }
    }
}

static json_t *node_list(const sc_collector *c, const char *hostlist)
{
    json_t *a = json_array();
    int n = hostlist && hostlist[0]
                ? hostlist_expand(hostlist, c->names, SC_MAX_NODES) : 0;

    for (int i = 0; a && i < n; i++)
        json_array_append_new(a, json_string(c->names[i]));
    return a;
}

static json_t *job_signal(const sc_collector *c, const sj_job *j,
                          const sc_job *r, const char *state, int attempt,
                          int64_t ts)
{
    char when[32], id[17], att[16];
    /* a job blocked for good is news though its state stays PENDING */
    const char *parts[] = {"job", j->id, att, state,
                           strcmp(j->reason, NEVER) ? NULL : NEVER, NULL};
    json_t *o;

    snprintf(att, sizeof att, "%d", attempt);
    id_of(c, parts, id);
    stamp(ts, when);
    o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:o, s:s, s:s}", "ts", when,
                  "source", "job", "job", j->id, "state", state, "id", id,
                  "attempt", attempt, "nodes", node_list(c, r->nodes),
                  "slurm_state", j->state[0] ? j->state : j->flag,
                  "partition", j->partition);
    if (!o)
        return NULL;
    if (j->name[0])
        json_object_set_new(o, "job_name", json_string(j->name));
    if (j->account[0])
        json_object_set_new(o, "team", json_string(j->account));
    if (j->reason[0])
        json_object_set_new(o, "reason", json_string(j->reason));
    if (json_array_size(r->deps))
        json_object_set(o, "depends_on", r->deps);
    if (j->gpus)
        json_object_set_new(o, "gpus", json_integer(j->gpus));
    if (r->config && json_object_size(r->config))
        json_object_set(o, "config", r->config);
    if (terminal(state))
        json_object_set_new(o, "exit_code", json_integer(j->exit_code));
    return o;
}

static int node_down_now(const sc_collector *c, const char *name)
{
    for (size_t i = 0; i < c->nnodes; i++)
        if (!strcmp(c->nsnapv[i].name, name))
            return sj_node_down(&c->nsnapv[i]);
    return 0;
}

/* The end of an attempt no poll saw (a requeue makes it PENDING again in
 * the same RPC): told as what the nodes and the times show. */
static void unseen_end(sc_collector *c, const sj_job *j, sc_job *r)
{
    int n = r->nodes && r->nodes[0]
                ? hostlist_expand(r->nodes, c->names, SC_MAX_NODES) : 0;
    const char *state = NULL;
    json_t *o;

    for (int i = 0; i < n && !state; i++)
        if (node_down_now(c, c->names[i]))
            state = "NODE_FAIL";
    if (!state && j->preempt && j->preempt >= r->start)
        state = "PREEMPTED";
    if (!state) {
        log_info("slurm", "job %s: attempt %d ended unseen (requeued)", j->id,
                 r->attempt);
        return;
    }
    if ((o = job_signal(c, j, r, state, r->attempt, now_s())) &&
        publish(c, o) == 0)
        c->st.job_signals++;
}

static int64_t time_of(const sj_job *j, const char *state)
{
    int64_t t = !strcmp(state, "PENDING")   ? j->submit
                : !strcmp(state, "RUNNING") ? j->start
                                            : j->end;

    return t > 0 && t <= now_s() + 60 ? t : now_s();
}

static void fetch_script(sc_collector *c, const char *id);

static void free_job(void *v)
{
    sc_job *r = v;

    json_decref(r->deps);
    json_decref(r->config);
    free(r->nodes);
    free(r);
}

/* One job of a poll against what was told of it. */
static void diff_job(sc_collector *c, const sj_job *j)
{
    sc_job *r = strmap_get(c->jobs, j->id);
    const char *state = engine_state(j);
    int attempt = j->restart_cnt + 1;
    json_t *o;

    if (!r) {
        if (!(r = calloc(1, sizeof *r)) || !(r->deps = json_array())) {
            free(r);
            return;
        }
        strmap_put(c->jobs, j->id, r);
    }
    r->seen = now_s();
    if (j->dependency[0])
        add_deps(r->deps, j->dependency);
    if (!r->config && j->batch && !r->fetching)
        fetch_script(c, j->id); /* may find no free slot: asked again */
    if (!state)
        return;
    /* PENDING and RUNNING wait for the config while it is being read; an
     * end is told at once (the job may leave the controller soon) */
    if (r->fetching && !terminal(state))
        return;
    if (attempt > r->attempt && r->attempt && !strcmp(r->shown, "RUNNING"))
        unseen_end(c, j, r);
    int blocked = !strcmp(state, "PENDING") && !strcmp(j->reason, NEVER);
    if (!strcmp(r->shown, state) && r->attempt == attempt &&
        blocked <= r->blocked)
        return;
    if (!strcmp(state, "RUNNING") || (terminal(state) && j->nodes[0])) {
        char *nl = strdup(j->nodes);
        if (nl) {
            free(r->nodes);
            r->nodes = nl;
        }
        r->start = j->start;
    }
    if (!(o = job_signal(c, j, r, state, attempt, time_of(j, state))) ||
        publish(c, o))
        return;
    c->st.job_signals++;
    str_copy(r->shown, sizeof r->shown, state);
    r->attempt = attempt;
    r->blocked = blocked;
}

static void diff_jobs(sc_collector *c)
{
    size_t pos = 0;
    const char *id;
    void *v;

    for (size_t i = 0; i < c->nsnap && !c->resend; i++)
        diff_job(c, &c->snap[i]);
    /* jobs the controller no longer shows (MinJobAge): forgotten later;
     * their keys are gathered first, as a deletion moves the others */
    char **gone = NULL;
    size_t ngone = 0;
    while (strmap_next(c->jobs, &pos, &id, &v)) {
        sc_job *r = v;
        char **g;
        if (r->fetching || now_s() - r->seen <= SC_FORGET_S)
            continue;
        if (!(g = realloc(gone, (ngone + 1) * sizeof *gone)))
            break;
        gone = g;
        if ((gone[ngone] = strdup(id)))
            ngone++;
    }
    for (size_t i = 0; i < ngone; i++) {
        free_job(strmap_del(c->jobs, gone[i]));
        free(gone[i]);
    }
    free(gone);
}

/* ---- batch scripts ------------------------------------------------------ */

typedef struct script_fetch {
    sc_collector *c;
    char id[32];
} script_fetch;

static void on_script(void *arg, const proc_result *res)
{
    script_fetch *f = arg;
    sc_collector *c = f->c;
    sc_job *r = strmap_get(c->jobs, f->id);

    c->scripts--;
    for (int i = 0; i < SC_SCRIPTS_AT_ONCE; i++)
        if (c->script_arg[i] == f)
            c->script_proc[i] = NULL, c->script_arg[i] = NULL;
    if (r) {
        r->fetching = 0;
        if (res->status == 0) {
            r->config = jc_parse(res->out, res->outlen);
            c->st.scripts++;
        } else {
            log_info("slurm", "job %s: no batch script (%s): no config",
                     f->id, res->errlen ? res->err : "scontrol failed");
            c->st.scripts_failed++;
        }
        if (!r->config)
            r->config = json_object();
    }
    free(f);
    if (!c->stopping)
        diff_jobs(c); /* tell what waited for it */
}

static void cmd_path(const sc_collector *c, const char *name, char *out,
                     size_t cap)
{
    if (c->o.bindir)
        snprintf(out, cap, "%s/%s", c->o.bindir, name);
    else
        snprintf(out, cap, "%s", name);
}

static void fetch_script(sc_collector *c, const char *id)
{
    sc_job *r = strmap_get(c->jobs, id);
    char exe[PATH_MAX], idbuf[32];
    char *argv[] = {exe, "write", "batch_script", idbuf, "-", NULL};
    script_fetch *f;
    cs_err err;
    int slot = 0;

    while (slot < SC_SCRIPTS_AT_ONCE && c->script_proc[slot])
        slot++;
    if (slot == SC_SCRIPTS_AT_ONCE || !r || !(f = calloc(1, sizeof *f)))
        return; /* the next poll asks again */
    cmd_path(c, "scontrol", exe, sizeof exe);
    str_copy(idbuf, sizeof idbuf, id);
    f->c = c;
    str_copy(f->id, sizeof f->id, id);
    if (!(c->script_proc[slot] = proc_run(c->base, argv, NULL, 0, SC_SCRIPT_MS,
                                          on_script, f, &err))) {
        log_warn("slurm", "job %s: %s", id, err.msg);
        r->config = json_object();
        free(f);
        return;
    }
    c->script_arg[slot] = f;
    r->fetching = 1;
    c->scripts++;
}

/* ---- nodes -------------------------------------------------------------- */

static json_t *slurm_line(const sc_collector *c, const sj_node *n,
                          const char *line, int64_t ts)
{
    char when[32], id[17], at[24];
    const char *parts[] = {"node", n->name, line, at, NULL};

    snprintf(at, sizeof at, "%lld", (long long)n->reason_at);
    id_of(c, parts, id);
    stamp(ts, when);
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "ts", when, "source",
                     "slurm", "host", n->name, "line", line, "id", id);
}

static int tell_node(sc_collector *c, const sj_node *n, const char *line,
                     int64_t ts)
{
    json_t *o = slurm_line(c, n, line, ts > 0 && ts <= now_s() + 60 ? ts
                                                                   : now_s());

    if (!o || publish(c, o))
        return -1;
    c->st.node_signals++;
    return 0;
}

/* The node as scontrol prints it: evidence for the operator's view, and
 * for rules that read drains. */
static void tell_record(sc_collector *c, const sj_node *n)
{
    char line[1200], state[300];

    snprintf(state, sizeof state, "%s%s%s", n->state, n->flags[0] ? "+" : "",
             n->flags);
    for (char *p = state; *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    snprintf(line, sizeof line, "NodeName=%s State=%s Reason=%s%s%s%s",
             n->name, state, n->reason[0] ? n->reason : "(null)",
             n->reason_by[0] ? " [" : "", n->reason_by,
             n->reason_by[0] ? "]" : "");
    tell_node(c, n, line, n->reason_at);
}

static void inventory(sc_collector *c, const sj_node *n, sc_node *r, int force)
{
    char rack[128], text[700], when[32], id[17];
    int canary = sj_node_features(n, c->o.canary_feature ? c->o.canary_feature
                                                         : "canary",
                                  rack, sizeof rack);
    json_t *o, *addrs;

    /* a rack feature is the site's own word; else the leaf switch */
    if (!rack[0] && strmap_get(c->rack_of, n->name))
        str_copy(rack, sizeof rack, strmap_get(c->rack_of, n->name));
    if (c->canary && strmap_get(c->canary, n->name))
        canary = 1;
    snprintf(text, sizeof text, "%s|%d|%d|%s|%s", rack, n->gpus, canary,
             n->address, n->hostname);
    if (!force && !strcmp(text, r->inventory))
        return;
    const char *parts[] = {"inventory", n->name, text, NULL};
    id_of(c, parts, id);
    stamp(now_s(), when);
    o = json_pack("{s:s, s:s, s:s, s:i, s:b, s:s}", "ts", when, "source",
                  "inventory", "host", n->name, "gpus", n->gpus, "canary",
                  canary, "id", id);
    if (o && rack[0])
        json_object_set_new(o, "rack", json_string(rack));
    if (o && (addrs = sj_node_addrs(n)))
        json_object_set_new(o, "addrs", addrs);
    if (o && publish(c, o) == 0) {
        c->st.inventory_signals++;
        str_copy(r->inventory, sizeof r->inventory, text);
    }
}

static void diff_node(sc_collector *c, const sj_node *n, int all_inventory)
{
    sc_node *r = strmap_get(c->nodes, n->name);
    int unresp = strstr(n->flags, "NOT_RESPONDING") != NULL;
    char line[300];

    if (!r && (r = calloc(1, sizeof *r)))
        strmap_put(c->nodes, n->name, r);
    if (!r)
        return;
    inventory(c, n, r, all_inventory);
    r->unresponsive = unresp ? r->unresponsive + 1 : 0;
    /* NOT_RESPONDING flaps on a loaded machine: two polls in a row, and
     * down, before it is told */
    if (r->unresponsive >= 2 && !strcmp(n->state, "down") && !r->told_down) {
        snprintf(line, sizeof line, "error: Nodes %s not responding, setting DOWN",
                 n->name);
        if (tell_node(c, n, line, n->reason_at) == 0)
            r->told_down = 1;
    } else if (r->told_down && !sj_node_down(n)) {
        snprintf(line, sizeof line, "Node %s now responding", n->name);
        if (tell_node(c, n, line, now_s()) == 0)
            r->told_down = 0;
    }
    if (!strcmp(r->state, n->state) && !strcmp(r->flags, n->flags) &&
        !strcmp(r->reason, n->reason))
        return;
    int first = !r->state[0];
    str_copy(r->state, sizeof r->state, n->state);
    str_copy(r->flags, sizeof r->flags, n->flags);
    str_copy(r->reason, sizeof r->reason, n->reason);
    /* a healthy node at the first sight says nothing; cascade's own
     * drains are in its audit already */
    if ((first && !n->reason[0]) || !strncmp(n->reason, "cascade", 7))
        return;
    tell_record(c, n);
}

static void diff_nodes(sc_collector *c)
{
    int64_t now = mono_ms();
    int all = !c->last_inventory ||
              now - c->last_inventory >= (c->o.inventory_ms > 0
                                              ? c->o.inventory_ms : 600000);

    if (all)
        c->last_inventory = now;
    for (size_t i = 0; i < c->nnodes && !c->resend; i++)
        diff_node(c, &c->nsnapv[i], all);
}

/* ---- the state file ----------------------------------------------------- */

static json_t *state_json(const sc_collector *c)
{
    json_t *jobs = json_object(), *nodes = json_object();
    size_t pos = 0;
    const char *k;
    void *v;

    while (strmap_next(c->jobs, &pos, &k, &v)) {
        const sc_job *r = v;
        if (!r->shown[0])
            continue;
        json_object_set_new(jobs, k, json_pack("{s:s, s:i, s:I, s:s, s:O, s:O?, s:I, s:b}",
            "shown", r->shown, "attempt", r->attempt, "start", (json_int_t)r->start,
            "nodes", r->nodes ? r->nodes : "", "deps", r->deps, "config", r->config,
            "seen", (json_int_t)r->seen, "blocked", r->blocked));
    }
    pos = 0;
    while (strmap_next(c->nodes, &pos, &k, &v)) {
        const sc_node *r = v;
        json_object_set_new(nodes, k, json_pack("{s:s, s:s, s:s, s:s, s:b}",
            "state", r->state, "flags", r->flags, "reason", r->reason,
            "inventory", r->inventory, "told_down", r->told_down));
    }
    return json_pack("{s:i, s:o, s:o}", "version", 1, "jobs", jobs, "nodes",
                     nodes);
}

static int write_state(FILE *f, void *arg)
{
    return json_dumpf(arg, f, JSON_COMPACT);
}

static int save_state(sc_collector *c, cs_err *err)
{
    json_t *s;
    int rc;

    if (!c->o.state)
        return 0;
    if (!(s = state_json(c))) {
        cs_err_set(err, "state %s: out of memory", c->o.state);
        return -1;
    }
    rc = fpos_replace(c->o.state, "state", write_state, s, err);
    json_decref(s);
    return rc;
}

static void str_field(json_t *o, const char *k, char *dst, size_t cap)
{
    const char *v = json_string_value(json_object_get(o, k));

    str_copy(dst, cap, v ? v : "");
}

static int load_state(sc_collector *c, cs_err *err)
{
    json_error_t je;
    json_t *s, *o;
    const char *k;

    if (!c->o.state)
        return 0;
    if (!(s = json_load_file(c->o.state, 0, &je))) {
        char aside[PATH_MAX + 8];
        if (access(c->o.state, F_OK) && errno == ENOENT)
            return 0;
        /* ours, and cut (a power cut before the rename reached the disk):
         * set aside, and everything told again, which the ids make
         * harmless */
        snprintf(aside, sizeof aside, "%s.bad", c->o.state);
        if (rename(c->o.state, aside)) {
            cs_err_set(err, "state %s:%d: %s (and it cannot be set aside: "
                       "%s)", c->o.state, je.line, je.text, strerror(errno));
            return -1;
        }
        log_warn("slurm", "state %s:%d: %s: set aside as %s; telling every "
                 "job and node again", c->o.state, je.line, je.text, aside);
        return 0;
    }
    json_object_foreach(json_object_get(s, "jobs"), k, o) {
        sc_job *r = calloc(1, sizeof *r);
        if (!r)
            break;
        str_field(o, "shown", r->shown, sizeof r->shown);
        {
            const char *nl = json_string_value(json_object_get(o, "nodes"));
            r->nodes = nl ? strdup(nl) : NULL;
        }
        r->attempt = (int)json_integer_value(json_object_get(o, "attempt"));
        r->start = json_integer_value(json_object_get(o, "start"));
        r->seen = json_integer_value(json_object_get(o, "seen"));
        r->blocked = json_is_true(json_object_get(o, "blocked"));
        r->deps = json_is_array(json_object_get(o, "deps"))
                      ? json_incref(json_object_get(o, "deps")) : json_array();
        if (json_is_object(json_object_get(o, "config")))
            r->config = json_incref(json_object_get(o, "config"));
        strmap_put(c->jobs, k, r);
    }
    json_object_foreach(json_object_get(s, "nodes"), k, o) {
        sc_node *r = calloc(1, sizeof *r);
        if (!r)
            break;
        str_field(o, "state", r->state, sizeof r->state);
        str_field(o, "flags", r->flags, sizeof r->flags);
        str_field(o, "reason", r->reason, sizeof r->reason);
        str_field(o, "inventory", r->inventory, sizeof r->inventory);
        r->told_down = json_is_true(json_object_get(o, "told_down"));
        strmap_put(c->nodes, k, r);
    }
    json_decref(s);
    return 0;
}

/* ---- polls -------------------------------------------------------------- */

static void schedule(sc_collector *c, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    if (!c->stopping)
        evtimer_add(c->timer, &tv);
}

/* Once every signal told is acknowledged, the state says so (not
 * before: a restart must tell again what may not have arrived). */
static void on_acked(void *arg)
{
    sc_collector *c = arg;
    cs_err err;

    if (kfk_tracker_take_failed(c->t)) {
        log_warn("slurm", "signals went undelivered: told again next poll");
        c->resend = 1;
        return;
    }
    if (save_state(c, &err))
        log_error("slurm", "%s", err.msg);
}

static void poll_failed(sc_collector *c, const char *what, const char *why)
{
    int ms = (c->o.poll_ms > 0 ? c->o.poll_ms : 10000) << (c->failures < 5
                                                                ? c->failures
                                                                : 5);

    if (ms > SC_MAX_BACKOFF_MS)
        ms = SC_MAX_BACKOFF_MS;
    c->failures++;
    c->st.failed_polls++;
    log_warn("slurm", "%s: %s; next try in %d s", what, why, ms / 1000);
    free(c->squeue_out);
    c->squeue_out = NULL;
    schedule(c, ms);
}

/* Both answers in: nodes first (a requeue's unseen end reads them), then
 * jobs; then the next poll. */
static void poll_done(sc_collector *c)
{
    c->failures = 0;
    c->st.polls++;
    if (c->resend) { /* what was told may not have arrived: all again */
        size_t pos = 0;
        const char *k;
        void *v;
        while (strmap_next(c->jobs, &pos, &k, &v))
            ((sc_job *)v)->shown[0] = '\0';
        pos = 0;
        while (strmap_next(c->nodes, &pos, &k, &v))
            ((sc_node *)v)->inventory[0] = ((sc_node *)v)->state[0] = '\0';
        c->resend = 0;
    }
    diff_nodes(c);
    diff_jobs(c);
    c->st.jobs = c->nsnap;
    c->st.nodes = c->nnodes;
    if (!kfk_tracker_pending(c->t) && !c->resend) { /* else on_acked */
        cs_err err;
        if (save_state(c, &err))
            log_error("slurm", "%s", err.msg);
    }
    schedule(c, c->o.poll_ms > 0 ? c->o.poll_ms : 10000);
}

static void run_cmd(sc_collector *c, const char *name, char *arg1,
                    char *arg2, proc_done_fn fn);

static void on_sinfo(void *arg, const proc_result *r)
{
    sc_collector *c = arg;
    sj_node *nodes;
    sj_job *jobs;
    size_t n, nj;
    cs_err err;

    c->cmd = NULL;
    if (r->status != 0 || r->out_cut) {
        poll_failed(c, "sinfo --json", r->out_cut ? "its answer is too long"
                                                  : r->errlen ? r->err : "failed");
        return;
    }
    if (sj_parse_nodes(r->out, r->outlen, &nodes, &n, &err)) {
        poll_failed(c, "sinfo --json", err.msg);
        return;
    }
    if (sj_parse_jobs(c->squeue_out, c->squeue_len, &jobs, &nj, &err)) {
        free(nodes);
        poll_failed(c, "squeue --json", err.msg);
        return;
    }
    free(c->squeue_out);
    c->squeue_out = NULL;
    sj_free_jobs(c->snap, c->nsnap);
    free(c->nsnapv);
    c->snap = jobs;
    c->nsnap = nj;
    c->nsnapv = nodes;
    c->nnodes = n;
    poll_done(c);
}

static void on_squeue(void *arg, const proc_result *r)
{
    sc_collector *c = arg;

    c->cmd = NULL;
    if (r->status != 0 || r->out_cut) {
        poll_failed(c, "squeue --json", r->out_cut ? "its answer is too long"
                                                   : r->errlen ? r->err : "failed");
        return;
    }
    free(c->squeue_out);
    if (!(c->squeue_out = malloc(r->outlen + 1))) {
        poll_failed(c, "squeue --json", "out of memory");
        return;
    }
    memcpy(c->squeue_out, r->out, r->outlen + 1);
    c->squeue_len = r->outlen;
    run_cmd(c, "sinfo", "--json", NULL, on_sinfo);
}

/* name with arg1 (and arg2 when given): `squeue --json`, ... */
static void run_cmd(sc_collector *c, const char *name, char *arg1,
                    char *arg2, proc_done_fn fn)
{
    char exe[PATH_MAX];
    char *argv[] = {exe, arg1, arg2, NULL};
    cs_err err;

    cmd_path(c, name, exe, sizeof exe);
    if (!(c->cmd = proc_run(c->base, argv, NULL, 0, SC_CMD_MS, fn, c, &err))) {
        poll_failed(c, name, err.msg);
        return;
    }
    proc_max_output(c->cmd, SC_MAX_OUTPUT);
}

/* The leaf switches, read at start and with each inventory round: a
 * controller without topology/tree (no topology.conf) answers with an
 * error or no switch, and the racks then come from features alone. */
static void on_topology(void *arg, const proc_result *r)
{
    sc_collector *c = arg;
    strmap *m = NULL;
    cs_err err = {{0}};

    c->cmd = NULL;
    if (r->status == 0 && !r->out_cut)
        m = stopo_racks(r->out, r->outlen, &err);
    if (m && strmap_len(m)) {
        strmap_free(c->rack_of, free);
        c->rack_of = m;
        c->topology_said = 0;
    } else {
        /* without topology/tree, scontrol exits 0 and says on stderr
         * "No topology information available" */
        const char *why = err.msg[0] ? err.msg : r->errlen ? r->err
                          : r->status ? "scontrol failed" : "no leaf switch";
        if (!c->topology_said)
            log_info("slurm", "no racks from the topology (%.*s): racks from "
                     "node features only", (int)strcspn(why, "\n"), why);
        c->topology_said = 1;
        if (m)
            strmap_free(m, free);
    }
    run_cmd(c, "squeue", "--json", NULL, on_squeue);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    sc_collector *c = arg;
    int64_t every = c->o.inventory_ms > 0 ? c->o.inventory_ms : 600000;

    (void)fd;
    (void)what;
    if (!c->last_topology || mono_ms() - c->last_topology >= every) {
        c->last_topology = mono_ms(); /* a failed start is not retried at once */
        run_cmd(c, "scontrol", "show", "topology", on_topology);
    } else {
        run_cmd(c, "squeue", "--json", NULL, on_squeue);
    }
}

/* ---- the collector ------------------------------------------------------ */

sc_collector *sc_start(struct event_base *base, const sc_opts *o,
                       kfk_producer *p, cs_err *err)
{
    sc_collector *c = calloc(1, sizeof *c);

    if (!c || !(c->jobs = strmap_new()) || !(c->nodes = strmap_new()) ||
        !(c->rack_of = strmap_new()) ||
        !(c->names = malloc(SC_MAX_NODES * sizeof *c->names)) ||
        !(c->t = kfk_tracker_new()) ||
        !(c->timer = evtimer_new(base, on_timer, c))) {
        cs_err_set(err, "out of memory");
        sc_free(c);
        return NULL;
    }
    c->base = base;
    c->o = *o;
    c->p = p;
    kfk_tracker_on_done(c->t, on_acked, c);
    if (o->canary_nodes && o->canary_nodes[0] &&
        !(c->canary = stopo_set(o->canary_nodes, err)))
        cs_err_prefix(err, "canary nodes ");
    if ((o->canary_nodes && o->canary_nodes[0] && !c->canary) ||
        load_state(c, err)) {
        sc_free(c);
        return NULL;
    }
    if (strmap_len(c->nodes)) /* told before the restart: due later */
        c->last_inventory = mono_ms();
    schedule(c, 0);
    return c;
}

void sc_get_stats(const sc_collector *c, sc_stats *st)
{
    *st = c->st;
}

int sc_stop(sc_collector *c, int timeout_ms, cs_err *err)
{
    c->stopping = 1;
    evtimer_del(c->timer);
    if (c->cmd) {
        proc_cancel(c->cmd);
        c->cmd = NULL;
    }
    if (kfk_producer_flush(c->p, timeout_ms)) {
        cs_err_set(err, "signals still undelivered after %d ms: told again "
                   "at the next start", timeout_ms);
        return -1;
    }
    /* a failure reported meanwhile (on_acked set resend) counts too: the
     * state must not say told what did not arrive */
    if (kfk_tracker_pending(c->t) || kfk_tracker_take_failed(c->t) ||
        c->resend) {
        cs_err_set(err, "signals went undelivered: told again at the next "
                   "start");
        return -1;
    }
    return save_state(c, err);
}

void sc_free(sc_collector *c)
{
    if (!c)
        return;
    if (c->cmd)
        proc_cancel(c->cmd);
    for (int i = 0; i < SC_SCRIPTS_AT_ONCE; i++)
        if (c->script_proc[i]) {
            proc_cancel(c->script_proc[i]);
            free(c->script_arg[i]);
        }
    if (c->timer)
        event_free(c->timer);
    free(c->names);
    kfk_tracker_release(c->t);
    if (c->jobs)
        strmap_free(c->jobs, free_job);
    if (c->nodes)
        strmap_free(c->nodes, free);
    if (c->rack_of)
        strmap_free(c->rack_of, free);
    if (c->canary)
        strmap_free(c->canary, NULL);
    free(c->squeue_out);
    sj_free_jobs(c->snap, c->nsnap);
    free(c->nsnapv);
    free(c);
}
