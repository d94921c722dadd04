#include "actions/act.h"

#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions/guard.h"
#include "actions/httpc.h"
#include "actions/journal.h"
#include "actions/k8s.h"
#include "actions/slurm.h"
#include "actions/slurmrest.h"
#include "actions/vendors.h"
#include "core/log.h"
#include "core/str.h"
#include "core/ts.h"

#define KEY_PREFIX "cascade:act:"
#define LEDGER_KEY KEY_PREFIX "ledger"   /* zset: "ID|playbook|cluster|rack" */
#define PENDING_KEY KEY_PREFIX "pending" /* zset: ID by expiry (ms) */
#define ACTIVE_KEY KEY_PREFIX "active"   /* zset: ID by start (ms) */
#define LEDGER_SPAN_MS (24LL * 3600 * 1000) /* the longest budget window */
#define SYNC_POLL_MS 2
/* Actions in flight at once. Past it the consumer pauses: a storm of
 * requests queues on Kafka, where it is durable and visible as lag, not
 * in this process, where every HTTP call would wait for a connection
 * until its timeout ran out. */
#define ACT_MAX_RUNNING 64

enum { PH_STEPS, PH_VERIFY, PH_ROLLBACK };
static const char *const phase_names[] = {"steps", "verify", "rollback"};

typedef struct run run;
typedef void (*run_fn)(run *r);

struct run {
    act *a;
    run *next;
    char id[32];
    json_t *req, *target, *params; /* target, params: borrowed from req */
    const pb_playbook *pb;
    pb_approval approval;
    char who[96];          /* "engine" or "human:NAME" */
    int approved, in_batch, durable;
    int owner;             /* this run acts for its id (no other may) */
    int phase, step, interrupted; /* interrupted: the step found running */
    const pb_calls *calls;
    json_t *before, *facts;
    int64_t verify_deadline;
    char failure[512], new_job[64];
    kfk_tracker *trk;
    int jr_wait;           /* journal writes not yet acknowledged */
    run_fn then;           /* what runs once both are durable */
    run_fn facts_fn;       /* what runs once facts are read */
    struct event *timer;
    act_decided_fn decided; /* a human's decision waits on this run */
    void *decided_arg;
};

struct act {
    struct event_base *base;
    act_opts o;
    char canary[1024], group[128];
    kfk_producer *prod;
    kfk_consumer *cons;
    kfk_tracker *btrk; /* the held batch's dead letters */
    journal *jr;
    guard *g;
    httpc *http;  /* the HTTP executors' client; NULL without a config */
    /* The executors configured here, in the order a step's operation is
     * offered to them (act_start). */
    executor ex[8];
    size_t nex;
    run *runs;
    size_t batch_left, nruns;
    int holding, ready, closing, throttled;
    struct event *sweep, *commit_timer;
    act_stats st;
};

/* ---- helpers ---- */

/* Wall clock in ms: what playbook windows, timeouts and Redis scores use
 * (event time, ts_now, is in microseconds). */
static int64_t now_ms(void)
{
    return ts_now() / 1000;
}

static const char *req_str(const run *r, const char *k)
{
    return json_string_value(json_object_get(r->req, k));
}

static const char *target_str(const run *r, const char *k)
{
    return json_string_value(json_object_get(r->target, k));
}

static const char *node_of(const run *r)
{
    return target_str(r, "node");
}

static const char *job_of(const run *r)
{
    return r->new_job[0] ? r->new_job : target_str(r, "job");
}

static int on_canary(const act *a, const char *node)
{
    size_t n;

    if (!node || !*node)
        return 0;
    n = strlen(node);
    for (const char *p = a->canary; (p = strstr(p, node)); p += n)
        if ((p == a->canary || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
            return 1;
    return 0;
}

static void key_of(char *buf, size_t len, const char *id, const char *suffix)
{
    snprintf(buf, len, KEY_PREFIX "%s%s", id, suffix ? suffix : "");
}

/* ---- durability: journal acknowledged and audit delivered ---- */

static void sync_check(run *r);

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sync_check(arg);
}

static void sync_check(run *r)
{
    struct timeval tv = {0, SYNC_POLL_MS * 1000};
    run_fn fn = r->then;
    unsigned long lost;

    if (!fn || r->a->closing)
        return;
    if (r->jr_wait || kfk_tracker_pending(r->trk)) {
        evtimer_add(r->timer, &tv);
        return;
    }
    if ((lost = kfk_tracker_take_failed(r->trk)))
        log_error("act", "%s: %lu audit record(s) could not be delivered to %s",
                  r->id, lost, KFK_TOPIC_AUDIT);
    r->then = NULL;
    fn(r);
}

/* Runs fn once every journal write and audit record so far is durable:
 * nothing acts before its record exists. */
static void after(run *r, run_fn fn)
{
    r->then = fn;
    sync_check(r);
}

static void on_jr_ack(void *arg, redisReply *reply)
{
    run *r = arg;

    r->jr_wait--;
    if (reply && reply->type == REDIS_REPLY_ERROR)
        log_error("act", "%s: redis refused a journal write: %s", r->id,
                  reply->str);
    if (reply)
        sync_check(r);
}

/* HSET act:ID f1 v1 f2 v2 ... NULL */
static void jr_set(run *r, ...)
{
    const char *argv[24];
    char key[96], now[24];
    int n = 0;
    va_list ap;

    key_of(key, sizeof key, r->id, NULL);
    argv[n++] = "HSET";
    argv[n++] = key;
    va_start(ap, r);
    for (const char *f; n < 20 && (f = va_arg(ap, const char *));) {
        argv[n++] = f;
        argv[n++] = va_arg(ap, const char *);
    }
    va_end(ap);
    snprintf(now, sizeof now, "%lld", (long long)now_ms());
    argv[n++] = "updated";
    argv[n++] = now;
    r->jr_wait++;
    jr_cmd(r->a->jr, on_jr_ack, r, n, argv);
}

static void jr_run(run *r, int argc, const char **argv)
{
    r->jr_wait++;
    jr_cmd(r->a->jr, on_jr_ack, r, argc, argv);
}

/* ---- audit ---- */

/* One record on cascade.audit, keyed by the action id: who, what, on
 * which target, under which playbook version; extra (stolen) adds
 * fields such as before/after. */
static void audit(run *r, const char *event, const char *detail, json_t *extra)
{
    char ts[40];
    json_t *rec;
    char *txt;
    cs_err err;

    ts_format(ts_now(), ts, sizeof ts); /* microseconds */
    rec = json_pack("{s:s, s:s, s:s, s:s, s:s?, s:s?, s:s?, s:s?, s:s?, s:O?, s:s}",
                    "ts", ts, "action", r->id, "event", event, "who", r->who,
                    "incident", req_str(r, "incident"), "cluster",
                    req_str(r, "cluster"), "playbook",
                    r->pb ? r->pb->id : NULL, "version",
                    r->pb ? r->pb->version : NULL, "scenario",
                    req_str(r, "scenario"), "target", r->target, "detail",
                    detail ? detail : "");
    if (!rec) /* text that is not UTF-8: keep the record, say so */
        rec = json_pack("{s:s, s:s, s:s, s:s, s:s}", "ts", ts, "action", r->id,
                        "event", event, "who", r->who, "detail",
                        "(detail was not valid UTF-8)");
    if (extra) {
        json_object_update(rec, extra);
        json_decref(extra);
    }
    txt = json_dumps(rec, JSON_COMPACT);
    if (kfk_produce_tracked(r->a->prod, KFK_TOPIC_AUDIT, r->id, strlen(r->id),
                            txt, strlen(txt), r->trk, &err) != KFK_OK)
        log_error("act", "%s: audit record '%s' not queued: %s", r->id, event,
                  err.msg);
    log_info("act", "%s %s %s: %s", r->id, r->pb ? r->pb->id : "?", event,
             detail ? detail : "");
    free(txt);
    json_decref(rec);
}

/* ---- the batch ---- */

static void try_commit(act *a);

static void on_commit_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    try_commit(arg);
}

static void try_commit(act *a)
{
    struct timeval tv = {0, SYNC_POLL_MS * 1000};
    cs_err err;

    if (!a->holding || a->batch_left || a->closing)
        return;
    if (kfk_tracker_pending(a->btrk)) {
        evtimer_add(a->commit_timer, &tv);
        return;
    }
    a->holding = 0;
    if (kfk_consumer_commit_held(a->cons, &err))
        log_warn("act", "offsets not committed: %s", err.msg);
}

/* The run's request no longer needs Kafka: its journal has it. */
static void mark_durable(run *r)
{
    if (r->durable)
        return;
    r->durable = 1;
    if (r->in_batch && r->a->batch_left) {
        r->a->batch_left--;
        try_commit(r->a);
    }
}

/* ---- runs ---- */

static void throttle(act *a)
{
    int busy = a->nruns >= ACT_MAX_RUNNING;

    if (busy == a->throttled || !a->ready || a->closing)
        return;
    a->throttled = busy;
    kfk_consumer_pause(a->cons, busy);
    log_debug("act", "%s consuming: %zu actions in flight", busy ? "paused"
              : "resumed", a->nruns);
}

static run *run_new(act *a, json_t *req)
{
    run *r = calloc(1, sizeof *r);
    const char *pb;

    if (!r)
        abort();
    r->a = a;
    r->req = req;
    json_t *action = json_object_get(req, "action");
    r->target = json_object_get(action, "target");
    r->params = json_object_get(action, "params");
    pb = json_string_value(json_object_get(action, "playbook"));
    r->pb = pb ? pb_playbook_find(a->o.rules, pb) : NULL;
    const char *appr = json_string_value(json_object_get(action, "approval"));
    r->approval = appr && !strcmp(appr, "auto") ? APPR_AUTO : APPR_HITL;
    str_copy(r->id, sizeof r->id, req_str(r, "id") ? req_str(r, "id") : "");
    if (!r->id[0])
        pb_action_id(req_str(r, "incident") ? req_str(r, "incident") : "",
                     action, r->id, sizeof r->id);
    str_copy(r->who, sizeof r->who, "engine");
    r->interrupted = -1;
    r->trk = kfk_tracker_new();
    r->timer = evtimer_new(a->base, on_timer, r);
    r->next = a->runs;
    a->runs = r;
    a->nruns++;
    throttle(a);
    return r;
}

static void run_free(run *r)
{
    act *a = r->a;

    for (run **p = &a->runs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            a->nruns--;
            break;
        }
    throttle(a);
    if (r->decided) /* a human is waiting for an answer */
        r->decided(r->decided_arg, 503, "the executor is stopping");
    event_free(r->timer);
    kfk_tracker_release(r->trk);
    json_decref(r->req);
    json_decref(r->before);
    json_decref(r->facts);
    free(r);
}

static void run_end(run *r)
{
    mark_durable(r);
    if (r->decided) {
        r->decided(r->decided_arg, 200, r->approved ? "approved" : "denied");
        r->decided = NULL;
    }
    run_free(r);
}

static void finish_state(run *r, const char *state, const char *event,
                         const char *detail, json_t *extra)
{
    const char *zrem[] = {"ZREM", ACTIVE_KEY, r->id};

    if (!strcmp(state, "done"))
        r->a->st.done++;
    else if (!strcmp(state, "failed"))
        r->a->st.failed++;
    jr_set(r, "state", state, "why", detail, NULL);
    jr_run(r, 3, zrem);
    audit(r, event, detail, extra);
    after(r, run_end);
}

static int running_here(const act *a, const run *self)
{
    for (const run *r = a->runs; r; r = r->next)
        if (r != self && r->owner && !strcmp(r->id, self->id))
            return 1;
    return 0;
}

/* ---- facts ---- */

static void on_facts(void *arg, exec_outcome oc, const char *detail,
                     json_t *out)
{
    run *r = arg;
    run_fn fn = r->facts_fn;

    (void)out;
    if (oc != EXEC_OK)
        json_object_set_new(r->facts, "error", json_string(detail));
    r->facts_fn = NULL;
    fn(r);
}

/* Reads what the checks need from the scheduler into r->facts, then fn.
 * A read that fails leaves the fields out: checks on them fail. */
static void facts_then(run *r, run_fn fn)
{
    cs_err err;

    exec_query q = {node_of(r), job_of(r), target_str(r, "namespace"), NULL,
                    on_facts, r};
    size_t readers = 0;

    json_decref(r->facts);
    r->facts = q.out = json_object();
    r->facts_fn = fn;
    for (size_t i = 0; i < r->a->nex; i++)
        readers += r->a->ex[i].facts != NULL;
    if (!readers)
        cs_err_set(&err, "no executor reads this scheduler's state here");
    else if (!q.node && !q.job)
        cs_err_set(&err, "the target names no node and no job");
    else
        for (size_t i = 0; i < r->a->nex; i++) {
            executor *x = &r->a->ex[i];
            if (x->facts && !x->facts(x->self, &q, &err))
                return;
        }
    json_object_set_new(r->facts, "error", json_string(err.msg));
    r->facts_fn = NULL;
    after(r, fn); /* from the loop, never re-entered */
}

/* ---- steps ---- */

static void next_step(run *r);
static void verify(run *r);
static void rollback(run *r);

/* "{incident}" and friends in a call's argument strings. */
static json_t *fill_args(const run *r, const json_t *args)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)args, k, v) {
        const char *s = json_string_value(v);
        char buf[1024];
        size_t n = 0;
        if (!s) {
            json_object_set(out, k, v);
            continue;
        }
        while (*s && n + 1 < sizeof buf) {
            const char *close = *s == '{' ? strchr(s, '}') : NULL;
            const char *val = NULL;
            if (close) {
                char name[32];
                snprintf(name, sizeof name, "%.*s", (int)(close - s - 1), s + 1);
                if (!strcmp(name, "playbook"))
                    val = r->pb->id;
                else if (!strcmp(name, "version"))
                    val = r->pb->version;
                else if (!strcmp(name, "node") || !strcmp(name, "job"))
                    val = target_str(r, name);
                else
                    val = req_str(r, name);
                if (!val && (!strcmp(name, "node") || !strcmp(name, "job") ||
                             !strcmp(name, "rack")))
                    val = "";
            }
            if (val) {
                n += (size_t)snprintf(buf + n, sizeof buf - n, "%s", val);
                if (n >= sizeof buf)
                    n = sizeof buf - 1;
                s = close + 1;
            } else {
                buf[n++] = *s++;
            }
        }
        buf[n] = 0;
        json_object_set_new(out, k, json_string(buf));
    }
    return out;
}

static void on_step(void *arg, exec_outcome oc, const char *detail,
                    json_t *out)
{
    run *r = arg;
    int ok = oc == EXEC_OK;
    char step[16];
    const char *job = json_string_value(json_object_get(out, "job"));

    snprintf(step, sizeof step, "%d", r->step + 1);
    if (job) {
        str_copy(r->new_job, sizeof r->new_job, job);
        jr_set(r, "step", step, "running", "-1", "new_job", job, NULL);
    } else {
        jr_set(r, "step", step, "running", "-1", NULL);
    }
    audit(r, ok ? "step_ok" : "step_failed", detail,
          json_pack("{s:s, s:i, s:s}", "phase", phase_names[r->phase], "step",
                    r->step, "call", r->calls->v[r->step].op));
    if (!ok && r->phase == PH_STEPS) {
        snprintf(r->failure, sizeof r->failure, "step %d %s failed: %s",
                 r->step, r->calls->v[r->step].op, detail);
        after(r, rollback);
        return;
    }
    r->step++;
    after(r, next_step);
}

static void start_step(run *r)
{
    const pb_call *c = &r->calls->v[r->step];
    json_t *args = fill_args(r, c->args);
    cs_err err;
    int rc = -1, skipped = 0;

    executor *x = NULL;

    for (size_t i = 0; i < r->a->nex && !x; i++)
        if (r->a->ex[i].knows(r->a->ex[i].self, c->op))
            x = &r->a->ex[i];
    if (x) {
        exec_call call = {c->op,   args, r->target, r->params, r->req,
                          req_str(r, "incident"), r->id, on_step, r};
        rc = x->call(x->self, &call, &err);
    } else if (json_is_true(json_object_get(args, "optional")))
        skipped = 1; /* a channel this site does not use */
    else
        cs_err_set(&err, "no executor for %s is configured here", c->op);
    json_decref(args);
    if (skipped) {
        char why[160];
        snprintf(why, sizeof why, "skipped: %.60s is optional and not "
                 "configured here", c->op);
        on_step(r, 1, why, NULL);
    } else if (rc) {
        on_step(r, 0, err.msg, NULL);
    }
}

/* Write-ahead: the journal says the step is running, and the audit topic
 * has its start, before the step acts. */
static void next_step(run *r)
{
    char step[16];

    if (!r->calls || r->step >= r->calls->n) {
        if (r->phase == PH_STEPS) {
            r->phase = PH_VERIFY;
            jr_set(r, "phase", "verify", NULL);
            r->verify_deadline = now_ms() + r->pb->verify_timeout;
            after(r, verify);
        } else {
            finish_state(r, "failed", "failed", r->failure,
                         json_pack("{s:O?}", "before", r->before));
        }
        return;
    }
    if (r->step == r->interrupted) {
        char why[256];
        snprintf(why, sizeof why, "step %d %s was running when the executor "
                 "stopped; it is not run again, the verification decides",
                 r->step, r->calls->v[r->step].op);
        r->interrupted = -1;
        audit(r, "step_interrupted", why,
              json_pack("{s:s, s:i}", "phase", phase_names[r->phase], "step",
                        r->step));
        r->step++;
        snprintf(step, sizeof step, "%d", r->step);
        jr_set(r, "step", step, "running", "-1", NULL);
        after(r, next_step);
        return;
    }
    snprintf(step, sizeof step, "%d", r->step);
    jr_set(r, "running", step, NULL);
    json_t *args = fill_args(r, r->calls->v[r->step].args);
    audit(r, "step_started", r->calls->v[r->step].op,
          json_pack("{s:s, s:i, s:s, s:o}", "phase", phase_names[r->phase],
                    "step", r->step, "call", r->calls->v[r->step].op, "args",
                    args));
    after(r, start_step);
}

static void rollback(run *r)
{
    r->phase = PH_ROLLBACK;
    r->step = 0;
    r->calls = pb_calls_for(r->pb->rollback, r->a->o.scheduler);
    jr_set(r, "phase", "rollback", "step", "0", "running", "-1", "why",
           r->failure, NULL);
    audit(r, "rollback", r->calls ? "undoing the steps" : "nothing to undo",
          json_pack("{s:s}", "reason", r->failure));
    after(r, next_step);
}

static void verify_read(run *r);

static void verify_check(run *r)
{
    char why[256];
    struct timeval tv;

    if (!guard_checks(r->pb->verify, r->pb->nverify, r->facts, why, sizeof why)) {
        finish_state(r, "done", "done", "steps ran and the verification holds",
                     json_pack("{s:O?, s:O}", "before", r->before, "after",
                               r->facts));
        return;
    }
    if (now_ms() >= r->verify_deadline) {
        snprintf(r->failure, sizeof r->failure, "verification failed after "
                 "%lld s: %s", (long long)(r->pb->verify_timeout / 1000), why);
        audit(r, "verify_failed", r->failure,
              json_pack("{s:O}", "after", r->facts));
        after(r, rollback);
        return;
    }
    tv.tv_sec = r->a->o.verify_poll_ms / 1000;
    tv.tv_usec = (r->a->o.verify_poll_ms % 1000) * 1000;
    r->then = verify_read;
    evtimer_add(r->timer, &tv);
}

static void verify_read(run *r)
{
    facts_then(r, verify_check);
}

static void verify(run *r)
{
    if (!r->pb->nverify) {
        finish_state(r, "done", "done", "steps ran; nothing to verify",
                     json_pack("{s:O?}", "before", r->before));
        return;
    }
    verify_read(r);
}

static void preconditions(run *r)
{
    char why[256];

    r->before = json_deep_copy(r->facts);
    if (guard_checks(r->pb->pre, r->pb->npre, r->facts, why, sizeof why)) {
        char msg[320];
        snprintf(msg, sizeof msg, "precondition does not hold: %s", why);
        r->a->st.refused++;
        finish_state(r, "refused", "refused", msg,
                     json_pack("{s:O}", "before", r->facts));
        return;
    }
    r->phase = PH_STEPS;
    r->step = 0;
    r->calls = pb_calls_for(r->pb->steps, r->a->o.scheduler);
    next_step(r);
}

static void started(run *r)
{
    mark_durable(r);
    facts_then(r, preconditions);
}

static void decide(run *r)
{
    act *a = r->a;
    guard_req gr = {.pb = r->pb, .mode = ex_mode_for(a->o.ex, r->pb, a->o.mode),
                  .approval = r->approval,
                    .approved = r->approved, .canary = on_canary(a, node_of(r)),
                    .cluster = req_str(r, "cluster") ? req_str(r, "cluster")
                                                     : "default",
                    .rack = req_str(r, "rack"), .now = now_ms()};
    guard_decision d = guard_check(a->g, &gr);
    char now[24], exp[24], member[512];

    snprintf(now, sizeof now, "%lld", (long long)gr.now);
    if (d.verdict == GUARD_SHADOW) {
        a->st.proposed++;
        finish_state(r, "proposed", "proposed", d.why, NULL);
        return;
    }
    if (d.verdict == GUARD_APPROVAL) {
        snprintf(exp, sizeof exp, "%lld",
                 (long long)(gr.now + a->o.approval_ttl_s * 1000LL));
        const char *zadd[] = {"ZADD", PENDING_KEY, exp, r->id};
        a->st.waiting++;
        jr_set(r, "state", "pending", "why", d.why, "expires", exp, NULL);
        jr_run(r, 4, zadd);
        audit(r, "waiting", d.why, json_pack("{s:s}", "needs", "approval"));
        after(r, run_end);
        return;
    }
    guard_record(a->g, &gr);
    snprintf(member, sizeof member, "%s|%s|%s|%s", r->id, r->pb->id, gr.cluster,
             gr.rack ? gr.rack : "");
    const char *ledger[] = {"ZADD", LEDGER_KEY, now, member};
    const char *active[] = {"ZADD", ACTIVE_KEY, now, r->id};
    jr_set(r, "state", "running", "phase", "steps", "step", "0", "running",
           "-1", "who", r->who, NULL);
    jr_run(r, 4, ledger);
    jr_run(r, 4, active);
    audit(r, "started", d.why, NULL);
    after(r, started);
}

/* What the journal says of an action id: new, finished, waiting, or cut
 * off mid-run by a stop. */
static void on_loaded(void *arg, redisReply *reply)
{
    run *r = arg;
    const char *state = NULL, *phase = "steps";
    int step = 0, running = -1;

    r->jr_wait--;
    if (!reply)
        return;
    if (reply->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i + 1 < reply->elements; i += 2) {
            const char *f = reply->element[i]->str, *v = reply->element[i + 1]->str;
            if (!f || !v)
                continue;
            if (!strcmp(f, "state"))
                state = v;
            else if (!strcmp(f, "phase"))
                phase = v;
            else if (!strcmp(f, "step"))
                step = atoi(v);
            else if (!strcmp(f, "running"))
                running = atoi(v);
            else if (!strcmp(f, "new_job"))
                str_copy(r->new_job, sizeof r->new_job, v);
            else if (!strcmp(f, "who"))
                str_copy(r->who, sizeof r->who, v);
        }
    if (!state) {
        if (running_here(r->a, r))
            goto duplicate; /* the same request twice in one batch */
        r->owner = 1;
        r->a->st.requests++;
        char *txt = json_dumps(r->req, JSON_COMPACT);
        jr_set(r, "state", "new", "req", txt, NULL);
        free(txt);
        audit(r, "request", json_string_value(json_object_get(r->req, "summary")),
              json_pack("{s:O?}", "params", r->params));
        after(r, decide);
        return;
    }
    if (strcmp(state, "running") || running_here(r->a, r)) {
duplicate:;
        char why[128];
        snprintf(why, sizeof why, "already %s%s; not run again",
                 state ? state : "taken", state && strcmp(state, "running")
                 ? "" : " here");
        r->a->st.duplicates++;
        audit(r, "duplicate", why, NULL);
        after(r, run_end);
        return;
    }
    /* cut off by a stop: go on where the journal says */
    r->owner = 1;
    r->a->st.resumed++;
    r->phase = !strcmp(phase, "rollback") ? PH_ROLLBACK
               : !strcmp(phase, "verify") ? PH_VERIFY : PH_STEPS;
    r->step = step;
    r->interrupted = running;
    r->calls = pb_calls_for(r->phase == PH_ROLLBACK ? r->pb->rollback
                                                    : r->pb->steps,
                            r->a->o.scheduler);
    audit(r, "resumed", "the executor stopped during this action; going on "
          "from its journal", json_pack("{s:s, s:i, s:i}", "phase", phase,
                                       "step", step, "running", running));
    mark_durable(r);
    if (r->phase == PH_VERIFY) {
        r->verify_deadline = now_ms() + r->pb->verify_timeout;
        after(r, verify);
    } else {
        after(r, next_step);
    }
}

static void run_load(run *r)
{
    char key[96];
    const char *argv[] = {"HGETALL", key};

    key_of(key, sizeof key, r->id, NULL);
    r->jr_wait++;
    jr_cmd(r->a->jr, on_loaded, r, 2, argv);
}

/* ---- input ---- */

/* NULL when the request can be used; else why not. */
static const char *invalid(const act *a, const json_t *req, char *why,
                           size_t len)
{
    const json_t *action = json_object_get(req, "action");
    const char *pb = json_string_value(json_object_get(action, "playbook"));

    if (!json_is_object(req))
        return "not a JSON object";
    if (!json_is_string(json_object_get(req, "incident")))
        return "no 'incident' string";
    if (!json_is_object(action))
        return "no 'action' object";
    if (!pb)
        return "no 'action.playbook' string";
    if (!json_is_object(json_object_get(action, "target")))
        return "no 'action.target' object";
    if (!pb_playbook_find(a->o.rules, pb)) {
        snprintf(why, len, "playbook '%.100s' is not in this executor's rules",
                 pb);
        return why;
    }
    return NULL;
}

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
        if ((bad = invalid(a, req, why, sizeof why))) {
            dead_letter(a, msgs[i], bad);
            json_decref(req);
            continue;
        }
        run *r = run_new(a, req);
        r->in_batch = 1;
        a->batch_left++;
        run_load(r);
    }
    try_commit(a);
}

/* ---- human decisions and expiry ---- */

typedef struct decision {
    act *a;
    char id[32], who[96], reason[512];
    int approve, expire;
    unsigned classes;
    act_decided_fn fn;
    void *arg;
} decision;

static void decided(decision *d, int status, const char *msg)
{
    if (d->fn)
        d->fn(d->arg, status, msg);
    free(d);
}

static void tell_recorded(run *r)
{
    if (r->decided) {
        r->decided(r->decided_arg, 200, r->approved ? "approved" : "denied");
        r->decided = NULL;
    }
}

static void approved_run(run *r)
{
    tell_recorded(r);
    decide(r);
}

static void on_decision_loaded(void *arg, redisReply *reply)
{
    decision *d = arg;
    const char *state = NULL, *req = NULL;
    json_t *j;
    run *r;
    char msg[200];

    if (!reply) {
        decided(d, 503, "the executor is stopping");
        return;
    }
    if (reply->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i + 1 < reply->elements; i += 2) {
            const char *f = reply->element[i]->str, *v = reply->element[i + 1]->str;
            if (f && v && !strcmp(f, "state"))
                state = v;
            else if (f && v && !strcmp(f, "req"))
                req = v;
        }
    if (!state || !req) {
        snprintf(msg, sizeof msg, "no action %s is known", d->id);
        decided(d, 404, msg);
        return;
    }
    if (strcmp(state, "pending")) {
        snprintf(msg, sizeof msg, "action %s is not waiting for a decision: "
                 "it is %s", d->id, state);
        decided(d, 409, msg);
        return;
    }
    if (!(j = json_loads(req, 0, NULL)) || invalid(d->a, j, msg, sizeof msg)) {
        json_decref(j);
        snprintf(msg, sizeof msg, "action %s: its stored request is unusable",
                 d->id);
        decided(d, 409, msg);
        return;
    }
    r = run_new(d->a, j);
    if (running_here(d->a, r)) {
        run_free(r);
        snprintf(msg, sizeof msg, "action %s is being decided already", d->id);
        decided(d, 409, msg);
        return;
    }
    if (!d->expire && d->approve && !(d->classes & (1u << r->pb->cls))) {
        snprintf(msg, sizeof msg, "%.80s may not approve %s playbooks (%s)",
                 d->who, pb_class_name(r->pb->cls), r->pb->id);
        run_free(r);
        decided(d, 403, msg);
        return;
    }
    r->owner = 1;
    r->durable = 1;
    const char *zrem[] = {"ZREM", PENDING_KEY, r->id};
    jr_run(r, 3, zrem);
    if (d->expire) {
        d->a->st.expired++;
        snprintf(msg, sizeof msg, "nobody decided within %d s",
                 d->a->o.approval_ttl_s);
        finish_state(r, "expired", "expired", msg, NULL);
        decided(d, 200, "expired");
        return;
    }
    snprintf(r->who, sizeof r->who, "human:%.80s", d->who);
    r->decided = d->fn;
    r->decided_arg = d->arg;
    d->fn = NULL;
    if (d->approve) {
        r->approved = 1;
        jr_set(r, "state", "approved", "who", r->who, NULL);
        audit(r, "approved", d->reason[0] ? d->reason : "approved", NULL);
        after(r, approved_run);
    } else {
        finish_state(r, "denied", "denied", d->reason, NULL);
    }
    decided(d, 200, NULL);
}

static void load_decision(decision *d)
{
    char key[96];
    const char *argv[] = {"HGETALL", key};

    key_of(key, sizeof key, d->id, NULL);
    jr_cmd(d->a->jr, on_decision_loaded, d, 2, argv);
}

typedef struct lookup {
    act_lookup_fn fn;
    void *arg;
} lookup;

static void on_lookup(void *arg, redisReply *reply)
{
    lookup *l = arg;
    json_t *out = NULL;

    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements) {
        out = json_object();
        for (size_t i = 0; i + 1 < reply->elements; i += 2) {
            const char *f = reply->element[i]->str, *v = reply->element[i + 1]->str;
            if (!f || !v)
                continue;
            if (!strcmp(f, "req"))
                json_object_set_new(out, "request", json_loads(v, 0, NULL));
            else
                json_object_set_new(out, f, json_string(v));
        }
    }
    l->fn(l->arg, reply ? (out ? 200 : 404) : 503, out);
    json_decref(out);
    free(l);
}

void act_lookup(act *a, const char *id, act_lookup_fn fn, void *arg)
{
    lookup *l = calloc(1, sizeof *l);
    char key[96];
    const char *argv[] = {"HGETALL", key};

    if (!l)
        abort();
    l->fn = fn;
    l->arg = arg;
    key_of(key, sizeof key, id, NULL);
    jr_cmd(a->jr, on_lookup, l, 2, argv);
}

void act_decide(act *a, const char *id, int approve, const char *who,
                unsigned classes, const char *reason, act_decided_fn fn,
                void *arg)
{
    decision *d = calloc(1, sizeof *d);

    if (!d)
        abort();
    d->a = a;
    d->approve = approve;
    d->classes = classes;
    d->fn = fn;
    d->arg = arg;
    str_copy(d->id, sizeof d->id, id);
    str_copy(d->who, sizeof d->who, who);
    str_copy(d->reason, sizeof d->reason, reason ? reason : "");
    if (!approve && !d->reason[0]) {
        decided(d, 400, "a denial needs a reason");
        return;
    }
    load_decision(d);
}

static void on_expired_ids(void *arg, redisReply *reply)
{
    act *a = arg;

    if (!reply || reply->type != REDIS_REPLY_ARRAY)
        return;
    for (size_t i = 0; i < reply->elements; i++) {
        decision *d = calloc(1, sizeof *d);
        if (!d)
            abort();
        d->a = a;
        d->expire = 1;
        str_copy(d->id, sizeof d->id, reply->element[i]->str ? reply->element[i]->str : "");
        str_copy(d->who, sizeof d->who, "engine");
        load_decision(d);
    }
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    act *a = arg;
    char now[24];
    const char *argv[] = {"ZRANGEBYSCORE", PENDING_KEY, "-inf", now, "LIMIT",
                          "0", "100"};

    (void)fd;
    (void)what;
    snprintf(now, sizeof now, "%lld", (long long)now_ms());
    jr_cmd(a->jr, on_expired_ids, a, 7, argv);
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

static void on_resume_req(void *arg, redisReply *reply)
{
    act *a = arg;
    json_t *req;
    char why[200];

    if (!reply)
        return;
    if (reply->type == REDIS_REPLY_STRING &&
        (req = json_loads(reply->str, 0, NULL))) {
        if (!invalid(a, req, why, sizeof why))
            run_load(run_new(a, req));
        else
            json_decref(req);
    }
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
            char key[96];
            const char *argv[] = {"HGET", key, "req"};
            key_of(key, sizeof key, reply->element[i]->str ? reply->element[i]->str : "", NULL);
            jr_cmd(a->jr, on_resume_req, a, 3, argv);
        }
    }
    a->ready = 1;
    kfk_consumer_pause(a->cons, 0);
    throttle(a); /* actions resumed from the journal count too */
}

static void load_state(act *a)
{
    char from[24], cut[24];
    int64_t now = now_ms();
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

act *act_start(struct event_base *base, const act_opts *o, kfk_producer *prod,
               cs_err *err)
{
    act *a = calloc(1, sizeof *a);
    struct timeval sweep = {o->approval_ttl_s > 40 ? 10 : 1, 0};

    if (!a)
        abort();
    a->base = base;
    a->o = *o;
    str_copy(a->canary, sizeof a->canary, o->canary ? o->canary : "");
    str_copy(a->group, sizeof a->group, o->group && *o->group ? o->group
                                                                : "cascade-act");
    a->o.group = a->group;
    if (a->o.approval_ttl_s <= 0)
        a->o.approval_ttl_s = 3600;
    if (a->o.verify_poll_ms <= 0)
        a->o.verify_poll_ms = 1000;
    a->prod = prod;
    a->btrk = kfk_tracker_new();
    a->g = guard_new();
    if (executors(a, base, o, err))
        goto fail;
    if (!(a->jr = jr_new(base, o->redis, err)))
        goto fail;
    a->commit_timer = evtimer_new(base, on_commit_timer, a);
    kfk_consumer_opts co = kfk_consumer_defaults(o->brokers, a->group,
                                                 KFK_TOPIC_ACTIONS);
    co.max_batch = 64;
    co.on_batch = on_batch;
    co.arg = a;
    a->cons = kfk_consumer_open(base, &co, err);
    if (!a->cons)
        goto fail;
    kfk_consumer_pause(a->cons, 1); /* until the journal is read */
    load_state(a);
    a->sweep = event_new(base, -1, EV_PERSIST, on_sweep, a);
    event_add(a->sweep, &sweep);
    return a;
fail:
    act_free(a);
    return NULL;
}

void act_get_stats(const act *a, act_stats *s)
{
    *s = a->st;
}

void act_free(act *a)
{
    if (!a)
        return;
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
    kfk_tracker_release(a->btrk);
    free(a);
}
