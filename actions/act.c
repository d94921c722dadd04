/* The executor service (actions/act.h): action requests consumed from
 * cascade.actions in batches, dead letters, the table of executors, the
 * ledger and the runs a stop cut off read back at start, freeing. A run
 * is run.c, a human's decision decisions.c. */
#include "actions/act_priv.h"

#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/httpc.h"
#include "actions/k8s.h"
#include "actions/slurm.h"
#include "actions/slurmrest.h"
#include "actions/vendors.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/rconn.h"
#include "core/str.h"
#include "core/ts.h"


/* ---- input ---- */


static void dead_letter(act *a, const rd_kafka_message_t *m, const char *why)
{
    json_t *d = kfk_dead_letter(m, why);
    char *txt = json_dumps(d, JSON_COMPACT);
    cs_err err;

    log_warn("act", "dead letter %s[%d]@%lld: %s", rd_kafka_topic_name(m->rkt),
             (int)m->partition, (long long)m->offset, why);
    if (kfk_produce_tracked(a->prod, KFK_TOPIC_DEADLETTER, NULL, 0, txt,
                            strlen(txt), a->btrk, &err) != KFK_OK)
        log_error("act", "dead letter not queued: %s", err.msg);
    a->st.dead++;
    free(txt);
    json_decref(d);
}

static void on_batch(void *arg, rd_kafka_message_t **msgs, size_t n)
{
    act *a = arg;

    a->holding = 1;
    a->batch_left = 0;
    for (size_t i = 0; i < n; i++) {
        json_error_t jerr;
        char why[200];
        const char *bad;
        json_t *req = json_loadb(msgs[i]->payload, msgs[i]->len, 0, &jerr);

        if (!req) {
            snprintf(why, sizeof why, "not JSON: line %d column %d: %s",
                     jerr.line, jerr.column, jerr.text);
            dead_letter(a, msgs[i], why);
            continue;
        }
        if ((bad = run_invalid(a, req, why, sizeof why))) {
            dead_letter(a, msgs[i], bad);
            json_decref(req);
            continue;
        }
        run *r = run_new(a, req);
        r->in_batch = 1;
        a->batch_left++;
        run_load(r);
    }
    run_try_commit(a);
}

/* ---- start: the ledger and the actions a stop cut off ---- */

static void on_ledger(void *arg, redisReply *reply)
{
    act *a = arg;

    if (!reply || reply->type != REDIS_REPLY_ARRAY)
        return;
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
        char m[512], *f[4] = {0};
        int k = 0;
        str_copy(m, sizeof m, reply->element[i]->str ? reply->element[i]->str : "");
        for (char *p = m, *save = NULL; k < 4 && (p = strtok_r(k ? NULL : p, "|", &save));)
            f[k++] = p;
        const pb_playbook *pb = k >= 3 ? pb_playbook_find(a->o.rules, f[1]) : NULL;
        if (!pb)
            continue;
        guard_req gr = {.pb = pb, .cluster = f[2], .rack = k > 3 ? f[3] : "",
                        .now = atoll(reply->element[i + 1]->str)};
        guard_record(a->g, &gr);
    }
    log_info("act", "budget ledger: %zu action(s) of the last 24 h",
             reply->elements / 2);
}

/* An action a stop cut off: its id in the active set, its request read
 * from its journal entry. */
typedef struct resuming {
    act *a;
    char id[32];
} resuming;

/* The run goes on as the entry it was read from says, once its seal
 * verifies (run_load); an entry with no usable request is refused. */
static void on_resume_req(void *arg, redisReply *reply)
{
    resuming *rs = arg;
    json_t *req = NULL;
    char why[200];
    run *r;

    if (reply && reply->type == REDIS_REPLY_STRING)
        req = json_loads(reply->str, 0, NULL);
    if (req && !run_invalid(rs->a, req, why, sizeof why)) {
        r = run_new(rs->a, req);
        str_copy(r->id, sizeof r->id, rs->id);
        run_load(r);
    } else if (reply) {
        json_decref(req);
        r = run_new(rs->a, json_pack("{s:s}", "id", rs->id));
        r->durable = 1;
        run_jr_refuse(r, NULL, "its request is missing or unusable here");
    }
    free(rs);
}

static void on_active(void *arg, redisReply *reply)
{
    act *a = arg;

    if (!reply)
        return;
    if (reply->type == REDIS_REPLY_ARRAY) {
        if (reply->elements)
            log_info("act", "%zu action(s) were running when the executor "
                     "last stopped; resuming them", reply->elements);
        for (size_t i = 0; i < reply->elements; i++) {
            resuming *rs;
            char key[96];
            const char *argv[] = {"HGET", key, "req"};
            if (!reply->element[i]->str || !*reply->element[i]->str)
                continue;
            rs = xcalloc(1, sizeof *rs);
            rs->a = a;
            str_copy(rs->id, sizeof rs->id, reply->element[i]->str);
            run_key_of(key, sizeof key, rs->id, NULL);
            jr_cmd(a->jr, on_resume_req, rs, 3, argv);
        }
    }
    a->ready = 1;
    kfk_consumer_pause(a->cons, 0);
    run_throttle(a); /* actions resumed from the journal count too */
}

static void load_state(act *a)
{
    char from[24], cut[24];
    int64_t now = run_now_ms();
    const char *trim[] = {"ZREMRANGEBYSCORE", LEDGER_KEY, "-inf", cut};
    const char *ledger[] = {"ZRANGEBYSCORE", LEDGER_KEY, from, "+inf",
                            "WITHSCORES"};
    const char *active[] = {"ZRANGE", ACTIVE_KEY, "0", "-1"};

    snprintf(cut, sizeof cut, "(%lld", (long long)(now - LEDGER_SPAN_MS));
    snprintf(from, sizeof from, "%lld", (long long)(now - LEDGER_SPAN_MS));
    jr_cmd(a->jr, NULL, NULL, 4, trim);
    jr_cmd(a->jr, on_ledger, a, 5, ledger);
    jr_cmd(a->jr, on_active, a, 4, active);
}

/* The table of executors, one row each, in the order a step's operation
 * is offered to them: slurmrestd before SLURM's own tools (it reads and
 * cancels for them), then the vendors' HTTP APIs, then Kubernetes. */
static int executors(act *a, struct event_base *base, const act_opts *o,
                     cs_err *err)
{
    slurm *sl = o->scheduler == PB_ON_SLURM
                    ? slurm_new(base, o->slurm_bin, 30000) : NULL;
    srest *sr = NULL;

    if (o->ex && !(a->http = httpc_new(base, err))) {
        slurm_free(sl);
        return -1;
    }
    if (o->ex && o->scheduler == PB_ON_SLURM && o->ex->slurmrestd.set)
        sr = srest_new(a->http, o->ex);
    if (sr)
        a->ex[a->nex++] = srest_executor(sr);
    if (sl)
        a->ex[a->nex++] = slurm_executor(sl, !sr);
    if (o->ex)
        a->ex[a->nex++] = vn_executor(vn_new(a->http, o->ex));
    if (o->ex && o->scheduler == PB_ON_K8S && o->ex->k8s.set)
        a->ex[a->nex++] = k8s_executor(k8s_new(a->http, o->ex));
    return 0;
}

/* Where an operation's executor is configured, for the warning below. */
static const char *section_of(const char *op)
{
    static const struct {
        const char *prefix, *where;
    } map[] = {{"slack.", "act.slack"},     {"jira.", "act.jira"},
               {"pagerduty.", "act.pagerduty"}, {"webhook.", "act.webhook"},
               {"k8s.", "act.kubernetes (and --scheduler k8s)"},
               {"slurm.", "--scheduler slurm (SLURM's tools) or act.slurmrestd"}};

    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strncmp(op, map[i].prefix, strlen(map[i].prefix)))
            return map[i].where;
    return NULL;
}

/* Said at start, not when the first action fails: every operation of a
 * playbook (on this scheduler) that no configured executor takes. */
static void unmet(const act *a, pb_backend sched)
{
    size_t n;
    const pb_playbook *pbs = pb_playbooks(a->o.rules, &n);

    for (size_t i = 0; i < n; i++) {
        const pb_calls *calls = pb_calls_for(pbs[i].steps, sched);
        for (int s = 0; calls && s < calls->n; s++) {
            const char *op = calls->v[s].op;
            size_t e = 0;
            while (e < a->nex && !a->ex[e].knows(a->ex[e].self, op))
                e++;
            if (e == a->nex && section_of(op))
                log_warn("act", "playbook %s cannot run here: no executor "
                         "takes its step %s (configure %s); its actions will "
                         "fail until then", pbs[i].id, op, section_of(op));
            else if (e == a->nex)
                log_warn("act", "playbook %s cannot run here: no executor of "
                         "this build takes its step %s (docs/ACTIONS.md)",
                         pbs[i].id, op);
        }
    }
}

/* Nothing more comes from Kafka: what runs is left to its journal, as at
 * a stop, and the process ends. */
static void on_fatal(void *arg, const char *reason)
{
    act *a = arg;

    log_error("act", "kafka: %s; stopping", reason);
    a->failed = 1;
    event_base_loopbreak(a->base);
}

act *act_start(struct event_base *base, const act_opts *o, kfk_producer *prod,
               cs_err *err)
{
    act *a = xcalloc(1, sizeof *a);

    a->pending = -1;
    struct timeval sweep = {o->approval_ttl_s > 40 ? 10 : 1, 0};

    a->outcomes = strmap_new();
    a->base = base;
    a->o = *o;
    str_copy(a->canary, sizeof a->canary, o->canary ? o->canary : "");
    str_copy(a->group, sizeof a->group, o->group && *o->group ? o->group
                                                                : KFK_GROUP_ACT);
    a->o.group = a->group;
    if (a->o.approval_ttl_s <= 0)
        a->o.approval_ttl_s = 3600;
    if (a->o.verify_poll_ms <= 0)
        a->o.verify_poll_ms = 1000;
    a->prod = prod;
    a->btrk = kfk_tracker_new();
    a->g = guard_new();
    a->o.journal_key = NULL; /* the seal holds its copy */
    if (!(a->seal = seal_new(o->journal_key, o->journal_key ?
                             strlen(o->journal_key) : 0, err)))
        goto fail;
    if (!seal_kept(a->seal))
        log_warn("act", "no journal key (act.journal.key in --config, or "
                 "--journal-key): actions a restart finds running or waiting "
                 "will be refused, since their seals cannot be verified");
    if (executors(a, base, o, err))
        goto fail;
    unmet(a, o->scheduler);
    if (rconn_check(o->redis, err) || !(a->jr = jr_new(base, o->redis, err)))
        goto fail;
    a->commit_timer = evtimer_new(base, run_commit_timer, a);
    kfk_consumer_opts co = kfk_consumer_defaults(o->brokers, a->group,
                                                 KFK_TOPIC_ACTIONS);
    co.props = o->props;
    co.instance_id = o->instance_id;
    co.max_batch = 64;
    co.on_batch = on_batch;
    co.on_fatal = on_fatal;
    co.arg = a;
    a->cons = kfk_consumer_open(base, &co, err);
    if (!a->cons)
        goto fail;
    kfk_consumer_pause(a->cons, 1); /* until the journal is read */
    load_state(a);
    a->sweep = event_new(base, -1, EV_PERSIST, dec_sweep, a);
    event_add(a->sweep, &sweep);
    return a;
fail:
    act_free(a);
    return NULL;
}

int act_failed(const act *a)
{
    return a->failed;
}

void act_get_stats(const act *a, act_stats *s)
{
    *s = a->st;
}

void act_free(act *a)
{
    if (!a)
        return;
    strmap_free(a->outcomes, free);
    a->closing = 1;
    kfk_consumer_free(a->cons);
    /* The tools' programs in flight are cancelled first; the HTTP client
     * then drops its requests in flight, calling back through the
     * executors that made them, which go last. */
    for (size_t i = 0; i < a->nex; i++)
        if (!a->ex[i].http)
            a->ex[i].free(a->ex[i].self);
    httpc_free(a->http);
    for (size_t i = 0; i < a->nex; i++)
        if (a->ex[i].http)
            a->ex[i].free(a->ex[i].self);
    jr_free(a->jr);       /* pending replies come back NULL */
    while (a->runs)
        run_free(a->runs);
    if (a->sweep)
        event_free(a->sweep);
    if (a->commit_timer)
        event_free(a->commit_timer);
    guard_free(a->g);
    seal_free(a->seal);
    kfk_tracker_release(a->btrk);
    free(a);
}

/* Declared once: act_metrics writes them from act_stats. */
enum { AM_ACTIONS, AM_REQUESTS, AM_WAITING, AM_PENDING, AM_REDIS, AM_KAFKA,
       AM_ASSIGNED, AM_LAG, AM_BY_PLAYBOOK, AM_BUDGET_USED, AM_BUDGET_MAX,
       AM__COUNT };
static const mx_family ACT_MX[AM__COUNT] = {
    [AM_ACTIONS] = {"cascade_act_actions_total", MX_COUNTER,
                    "Action requests the executor ended, by outcome.",
                    "outcome"},
    [AM_REQUESTS] = {"cascade_act_requests_total", MX_COUNTER,
                     "Action requests read from cascade.actions.", NULL},
    [AM_WAITING] = {"cascade_act_approvals_requested_total", MX_COUNTER,
                    "Actions put to wait for a human's approval.", NULL},
    [AM_PENDING] = {"cascade_act_approvals_pending", MX_GAUGE,
                    "Actions waiting for a human's decision now (the "
                    "journal's pending set, shared by the group: read at "
                    "each expiry sweep).", NULL},
    [AM_REDIS] = {"cascade_act_redis_up", MX_GAUGE,
                  "1 while the journal's Redis link is connected.", NULL},
    [AM_KAFKA] = {"cascade_act_kafka_up", MX_GAUGE,
                  "1 while the executor's consumer and producer each have a "
                  "broker connection up.", NULL},
    [AM_ASSIGNED] = {"cascade_act_partitions_assigned", MX_GAUGE,
                     "Partitions of cascade.actions this executor owns.", NULL},
    [AM_LAG] = {"cascade_act_consumer_lag", MX_GAUGE,
                "Action requests of a partition not read yet.", "partition"},
    [AM_BY_PLAYBOOK] = {"cascade_act_runs_ended_total", MX_COUNTER,
                        "Actions ended, by playbook and final state (done, "
                        "failed, refused, proposed, denied, expired).",
                        "playbook,state"},
    [AM_BUDGET_USED] = {"cascade_act_budget_used", MX_GAUGE,
                        "Actions counted against a playbook's budget within "
                        "its window, by scope (cluster, or cluster/rack).",
                        "playbook,scope,window"},
    [AM_BUDGET_MAX] = {"cascade_act_budget_limit", MX_GAUGE,
                       "The most a budget allows within its window; at it, "
                       "further actions of the playbook wait for a human.",
                       "playbook,scope,window"},
};

static int act_kafka_up(const act *a)
{
    return kfk_consumer_up(a->cons) && (!a->prod || kfk_producer_up(a->prod));
}

struct budget_write {
    mx_out *o;
    int limit;
};

static void budget_sample(void *arg, const guard_use *u)
{
    struct budget_write *w = arg;
    char window[32];
    const char *v[] = {u->playbook, u->scope, window};

    snprintf(window, sizeof window, "%llds", (long long)(u->window / 1000));
    mx_sample(w->o, &ACT_MX[w->limit ? AM_BUDGET_MAX : AM_BUDGET_USED], v,
              w->limit ? u->max : u->used);
}

void act_metrics(const act *a, mx_out *o)
{
    const struct {
        const char *outcome;
        unsigned long n;
    } out[] = {{"done", a->st.done},          {"failed", a->st.failed},
               {"refused", a->st.refused},    {"proposed", a->st.proposed},
               {"duplicate", a->st.duplicates}, {"dead_lettered", a->st.dead},
               {"expired", a->st.expired},    {"resumed", a->st.resumed}};

    mx_family_begin(o, &ACT_MX[AM_ACTIONS]);
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) {
        const char *v[] = {out[i].outcome};
        mx_sample(o, &ACT_MX[AM_ACTIONS], v, (double)out[i].n);
    }
    mx_single(o, &ACT_MX[AM_REQUESTS], (double)a->st.requests);
    mx_single(o, &ACT_MX[AM_WAITING], (double)a->st.waiting);
    if (a->pending >= 0)
        mx_single(o, &ACT_MX[AM_PENDING], (double)a->pending);
    mx_single(o, &ACT_MX[AM_REDIS], jr_connected(a->jr));
    mx_single(o, &ACT_MX[AM_KAFKA], act_kafka_up(a));
    mx_single(o, &ACT_MX[AM_ASSIGNED], (double)kfk_consumer_owned(a->cons));
    kfk_consumer_lag_write(a->cons, o, &ACT_MX[AM_LAG]);
    mx_family_begin(o, &ACT_MX[AM_BY_PLAYBOOK]);
    size_t pos = 0;
    const char *k;
    void *n;
    while (strmap_next(a->outcomes, &pos, &k, &n)) {
        char pb[160];
        const char *v[2] = {pb, ""};
        char *tab;
        snprintf(pb, sizeof pb, "%s", k);
        if ((tab = strchr(pb, '\t'))) {
            *tab = '\0';
            v[1] = tab + 1;
        }
        mx_sample(o, &ACT_MX[AM_BY_PLAYBOOK], v, (double)*(unsigned long *)n);
    }
    for (int limit = 0; limit < 2; limit++) {
        struct budget_write w = {o, limit};
        mx_family_begin(o, &ACT_MX[limit ? AM_BUDGET_MAX : AM_BUDGET_USED]);
        guard_each_use(a->g, run_now_ms(), budget_sample, &w);
    }
}

int act_ready(const act *a, char *why, size_t len)
{
    if (a->failed)
        snprintf(why, len, "its Kafka consumer failed for good");
    else if (!jr_connected(a->jr))
        snprintf(why, len, "not connected to Redis (the journal)");
    else if (!act_kafka_up(a))
        snprintf(why, len, "no connection to a Kafka broker up");
    else if (!a->ready)
        snprintf(why, len, "journal not read back yet");
    else if (!kfk_consumer_owned(a->cons))
        snprintf(why, len, "no partition of %s assigned yet",
                 KFK_TOPIC_ACTIONS);
    else
        return 1;
    return 0;
}
