/* A run of one action request (actions/act_priv.h): what the guardrails
 * decide, the facts and preconditions, the steps through the executors'
 * table, verification and rollback; every step written ahead to the
 * journal and the audit topic, and the batch committed once its runs are
 * durable. */
#include "actions/act_priv.h"

#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions/guard.h"
#include "actions/journal.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/str.h"
#include "core/ts.h"

static const char *const phase_names[] = {"steps", "verify", "rollback"};

/* ---- helpers ---- */

/* Wall clock in ms: what playbook windows, timeouts and Redis scores use
 * (event time, ts_now, is in microseconds). */
int64_t run_now_ms(void)
{
    return ts_now() / 1000;
}

const char *run_req_str(const run *r, const char *k)
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

void run_key_of(char *buf, size_t len, const char *id, const char *suffix)
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
void run_after(run *r, run_fn fn)
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

/* HSET act:ID f1 v1 f2 v2 ... NULL, and the entry's seal as it stands
 * after them: one command, so Redis never holds the one without the
 * other. */
void run_jr_set(run *r, ...)
{
    const char *argv[28];
    char key[96], now[24], mac[SEAL_HEX];
    int n = 0, k;
    va_list ap;

    run_key_of(key, sizeof key, r->id, NULL);
    argv[n++] = "HSET";
    argv[n++] = key;
    va_start(ap, r);
    for (const char *f; n < 22 && (f = va_arg(ap, const char *));) {
        argv[n++] = f;
        argv[n++] = va_arg(ap, const char *);
        if ((k = seal_field_of(f)) >= 0)
            seal_entry_set(&r->jr, k, argv[n - 1]);
    }
    va_end(ap);
    snprintf(now, sizeof now, "%lld", (long long)run_now_ms());
    argv[n++] = "updated";
    argv[n++] = now;
    seal_sign(r->a->seal, r->id, &r->jr, mac);
    argv[n++] = "mac";
    argv[n++] = mac;
    r->jr_wait++;
    jr_cmd(r->a->jr, on_jr_ack, r, n, argv);
}

void run_jr_run(run *r, int argc, const char **argv)
{
    r->jr_wait++;
    jr_cmd(r->a->jr, on_jr_ack, r, argc, argv);
}

/* ---- audit ---- */

/* One record on cascade.audit, keyed by the action id: who, what, on
 * which target, under which playbook version; extra (stolen) adds
 * fields such as before/after. */
void run_audit(run *r, const char *event, const char *detail, json_t *extra)
{
    char ts[40];
    json_t *rec;
    char *txt;
    cs_err err;

    ts_format(ts_now(), ts, sizeof ts); /* microseconds */
    rec = json_pack("{s:s, s:s, s:s, s:s, s:s?, s:s?, s:s?, s:s?, s:s?, s:O?, s:s, s:s?}",
                    "ts", ts, "action", r->id, "event", event, "who", r->who,
                    "incident", run_req_str(r, "incident"), "cluster",
                    run_req_str(r, "cluster"), "playbook",
                    r->pb ? r->pb->id : NULL, "version",
                    r->pb ? r->pb->version : NULL, "scenario",
                    run_req_str(r, "scenario"), "target", r->target, "detail",
                    detail ? detail : "",
                    /* an agent's request (cascade mcp): its initiator */
                    "requested_by", run_req_str(r, "requested_by"));
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

void run_commit_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    run_try_commit(arg);
}

void run_try_commit(act *a)
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
        run_try_commit(r->a);
    }
}

/* ---- runs ---- */

void run_throttle(act *a)
{
    int busy = a->nruns >= ACT_MAX_RUNNING;

    if (busy == a->throttled || !a->ready || a->closing)
        return;
    a->throttled = busy;
    kfk_consumer_pause(a->cons, busy);
    log_debug("act", "%s consuming: %zu actions in flight", busy ? "paused"
              : "resumed", a->nruns);
}

/* The request the run carries out (stolen), and what it names. */
static void set_req(run *r, json_t *req)
{
    json_t *action = json_object_get(req, "action");
    const char *pb = json_string_value(json_object_get(action, "playbook"));

    if (r->req != req)
        json_decref(r->req);
    r->req = req;
    r->target = json_object_get(action, "target");
    r->params = json_object_get(action, "params");
    r->pb = pb ? pb_playbook_find(r->a->o.rules, pb) : NULL;
}

run *run_new(act *a, json_t *req)
{
    run *r = xcalloc(1, sizeof *r);

    r->a = a;
    set_req(r, req);
    str_copy(r->id, sizeof r->id, run_req_str(r, "id") ? run_req_str(r, "id") : "");
    if (!r->id[0])
        pb_action_id(run_req_str(r, "incident") ? run_req_str(r, "incident") : "",
                     json_object_get(req, "action"), r->id, sizeof r->id);
    str_copy(r->who, sizeof r->who, "engine");
    r->interrupted = -1;
    r->trk = kfk_tracker_new();
    r->timer = evtimer_new(a->base, on_timer, r);
    r->next = a->runs;
    a->runs = r;
    a->nruns++;
    run_throttle(a);
    return r;
}

void run_free(run *r)
{
    act *a = r->a;

    for (run **p = &a->runs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            a->nruns--;
            break;
        }
    run_throttle(a);
    if (r->decided) /* a human is waiting for an answer */
        r->decided(r->decided_arg, 503, "the executor is stopping");
    event_free(r->timer);
    kfk_tracker_release(r->trk);
    json_decref(r->req);
    json_decref(r->before);
    json_decref(r->facts);
    seal_entry_clear(&r->jr);
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

void run_finish_state(run *r, const char *state, const char *event,
                         const char *detail, json_t *extra)
{
    const char *zrem[] = {"ZREM", ACTIVE_KEY, r->id};
    char key[160];
    unsigned long *n;

    snprintf(key, sizeof key, "%.100s\t%.40s", r->pb ? r->pb->id : "?", state);
    if (!(n = strmap_get(r->a->outcomes, key))) {
        n = xcalloc(1, sizeof *n);
        strmap_put(r->a->outcomes, key, n);
    }
    (*n)++;
    if (!strcmp(state, "done"))
        r->a->st.done++;
    else if (!strcmp(state, "failed"))
        r->a->st.failed++;
    run_jr_set(r, "state", state, "why", detail, NULL);
    run_jr_run(r, 3, zrem);
    run_audit(r, event, detail, extra);
    run_after(r, run_end);
}

int run_running_here(const act *a, const run *self)
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

    exec_query q = {.node = node_of(r), .job = job_of(r),
                    .ns = target_str(r, "namespace"), .done = on_facts,
                    .arg = r};
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
    run_after(r, fn); /* from the loop, never re-entered */
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
                    val = run_req_str(r, name);
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
        run_jr_set(r, "step", step, "running", "-1", "new_job", job, NULL);
    } else {
        run_jr_set(r, "step", step, "running", "-1", NULL);
    }
    run_audit(r, ok ? "step_ok" : "step_failed", detail,
          json_pack("{s:s, s:i, s:s}", "phase", phase_names[r->phase], "step",
                    r->step, "call", r->calls->v[r->step].op));
    if (!ok && r->phase == PH_STEPS) {
        snprintf(r->failure, sizeof r->failure, "step %d %s failed: %s",
                 r->step, r->calls->v[r->step].op, detail);
        run_after(r, rollback);
        return;
    }
    r->step++;
    run_after(r, next_step);
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
        exec_call call = {.op = c->op, .args = args, .target = r->target,
                          .params = r->params, .req = r->req,
                          .incident = run_req_str(r, "incident"),
                          .action = r->id, .done = on_step, .arg = r};
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
        on_step(r, EXEC_OK, why, NULL);
    } else if (rc) {
        on_step(r, EXEC_FAIL, err.msg, NULL);
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
            run_jr_set(r, "phase", "verify", NULL);
            r->verify_deadline = run_now_ms() + r->pb->verify_timeout;
            run_after(r, verify);
        } else {
            run_finish_state(r, "failed", "failed", r->failure,
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
        run_audit(r, "step_interrupted", why,
              json_pack("{s:s, s:i}", "phase", phase_names[r->phase], "step",
                        r->step));
        r->step++;
        snprintf(step, sizeof step, "%d", r->step);
        run_jr_set(r, "step", step, "running", "-1", NULL);
        run_after(r, next_step);
        return;
    }
    snprintf(step, sizeof step, "%d", r->step);
    run_jr_set(r, "running", step, NULL);
    json_t *args = fill_args(r, r->calls->v[r->step].args);
    run_audit(r, "step_started", r->calls->v[r->step].op,
          json_pack("{s:s, s:i, s:s, s:o}", "phase", phase_names[r->phase],
                    "step", r->step, "call", r->calls->v[r->step].op, "args",
                    args));
    run_after(r, start_step);
}

static void rollback(run *r)
{
    r->phase = PH_ROLLBACK;
    r->step = 0;
    r->calls = pb_calls_for(r->pb->rollback, r->a->o.scheduler);
    run_jr_set(r, "phase", "rollback", "step", "0", "running", "-1", "why",
           r->failure, NULL);
    run_audit(r, "rollback", r->calls ? "undoing the steps" : "nothing to undo",
          json_pack("{s:s}", "reason", r->failure));
    run_after(r, next_step);
}

static void verify_read(run *r);

static void verify_check(run *r)
{
    char why[256];
    struct timeval tv;

    if (!guard_checks(r->pb->verify, r->pb->nverify, r->facts, why, sizeof why)) {
        run_finish_state(r, "done", "done", "steps ran and the verification holds",
                     json_pack("{s:O?, s:O}", "before", r->before, "after",
                               r->facts));
        return;
    }
    if (run_now_ms() >= r->verify_deadline) {
        snprintf(r->failure, sizeof r->failure, "verification failed after "
                 "%lld s: %s", (long long)(r->pb->verify_timeout / 1000), why);
        run_audit(r, "verify_failed", r->failure,
              json_pack("{s:O}", "after", r->facts));
        run_after(r, rollback);
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
        run_finish_state(r, "done", "done", "steps ran; nothing to verify",
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
        run_finish_state(r, "refused", "refused", msg,
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

/* The approval the request asks for: it can only add to what the
 * catalog requires (guard_required), so anything but "auto" is hitl. */
static pb_approval asked_of(const run *r)
{
    const char *a = json_string_value(
        json_object_get(json_object_get(r->req, "action"), "approval"));

    return a && !strcmp(a, "auto") ? APPR_AUTO : APPR_HITL;
}

void run_decide(run *r)
{
    act *a = r->a;
    char awhy[160];
    const char *root = json_string_value(
        json_object_get(json_object_get(r->req, "root_cause"), "scenario"));
    pb_approval need = guard_required(a->o.rules, r->pb,
                                      run_req_str(r, "scenario"), root,
                                      asked_of(r), awhy, sizeof awhy);
    guard_req gr = {.pb = r->pb, .mode = ex_mode_for(a->o.ex, r->pb, a->o.mode),
                    .approval = need, .approval_why = awhy,
                    .approved = r->approved, .canary = on_canary(a, node_of(r)),
                    .cluster = run_req_str(r, "cluster") ? run_req_str(r, "cluster")
                                                     : "default",
                    .rack = run_req_str(r, "rack"), .now = run_now_ms()};
    guard_decision d = guard_check(a->g, &gr);
    char now[24], exp[24], member[512];

    snprintf(now, sizeof now, "%lld", (long long)gr.now);
    if (d.verdict == GUARD_SHADOW) {
        a->st.proposed++;
        run_finish_state(r, "proposed", "proposed", d.why, NULL);
        return;
    }
    if (d.verdict == GUARD_APPROVAL) {
        snprintf(exp, sizeof exp, "%lld",
                 (long long)(gr.now + a->o.approval_ttl_s * 1000LL));
        const char *zadd[] = {"ZADD", PENDING_KEY, exp, r->id};
        a->st.waiting++;
        run_jr_set(r, "state", "pending", "why", d.why, "expires", exp, NULL);
        run_jr_run(r, 4, zadd);
        run_audit(r, "waiting", d.why, json_pack("{s:s}", "needs", "approval"));
        run_after(r, run_end);
        return;
    }
    guard_record(a->g, &gr);
    snprintf(member, sizeof member, "%s|%s|%s|%s", r->id, r->pb->id, gr.cluster,
             gr.rack ? gr.rack : "");
    const char *ledger[] = {"ZADD", LEDGER_KEY, now, member};
    const char *active[] = {"ZADD", ACTIVE_KEY, now, r->id};
    run_jr_set(r, "state", "running", "phase", "steps", "step", "0", "running",
           "-1", "who", r->who, NULL);
    run_jr_run(r, 4, ledger);
    run_jr_run(r, 4, active);
    run_audit(r, "started", d.why, NULL);
    run_after(r, started);
}

/* The value of field name in an HGETALL reply, or NULL. */
static const char *field_of(const redisReply *reply, const char *name)
{
    for (size_t i = 0; reply->type == REDIS_REPLY_ARRAY &&
                       i + 1 < reply->elements; i += 2)
        if (reply->element[i]->str && reply->element[i + 1]->str &&
            !strcmp(reply->element[i]->str, name))
            return reply->element[i + 1]->str;
    return NULL;
}

/* Takes the entry's sealed fields; -1 when one holds a NUL, which the
 * seal (over C strings) could not tell from its shorter self. */
static int take_sealed(run *r, const redisReply *reply, const char **mac)
{
    int bad = 0, k;

    seal_entry_clear(&r->jr);
    *mac = NULL;
    for (size_t i = 0; reply->type == REDIS_REPLY_ARRAY &&
                       i + 1 < reply->elements; i += 2) {
        const redisReply *f = reply->element[i], *v = reply->element[i + 1];
        if (!f->str || !v->str)
            continue;
        if (!strcmp(f->str, "mac"))
            *mac = v->str;
        else if ((k = seal_field_of(f->str)) >= 0) {
            bad |= strlen(v->str) != v->len;
            seal_entry_set(&r->jr, k, v->str);
        }
    }
    return bad ? -1 : 0;
}

static void playbook_version(const run *r, char *buf, size_t len)
{
    snprintf(buf, len, "%s %s", r->pb->id, r->pb->version);
}

const char *run_jr_check(run *r, const redisReply *reply, char *why,
                         size_t len)
{
    const char *mac, *nokey = seal_kept(r->a->seal) ? "" :
        "; this executor has no journal key (journal.key or --journal-key), "
        "so it cannot verify what an earlier process wrote";
    char pbv[160];
    json_t *req;

    if (take_sealed(r, reply, &mac) || (mac && seal_verify(r->a->seal, r->id,
                                                           &r->jr, mac))) {
        snprintf(why, len, "its seal does not match its fields%s", nokey);
        return why;
    }
    if (!mac) {
        snprintf(why, len, "it carries no seal%s", nokey);
        return why;
    }
    req = r->jr.v[SEAL_REQ] ? json_loads(r->jr.v[SEAL_REQ], 0, NULL) : NULL;
    if (!req || run_invalid(r->a, req, why, len)) {
        json_decref(req);
        snprintf(why, len, "its request is missing or unusable here");
        return why;
    }
    set_req(r, req); /* what was journaled, not what a message says now */
    playbook_version(r, pbv, sizeof pbv);
    if (r->jr.v[SEAL_PLAYBOOK] && !strcmp(r->jr.v[SEAL_PLAYBOOK], pbv))
        return NULL;
    snprintf(why, len, "it was journaled under playbook %.60s; this "
             "executor's rules have %.60s", r->jr.v[SEAL_PLAYBOOK]
             ? r->jr.v[SEAL_PLAYBOOK] : "(none)", pbv);
    return why;
}

void run_jr_refuse(run *r, const redisReply *reply, const char *why)
{
    static const char *const shown[] = {"state", "phase", "step", "running",
                                        "who", "new_job", "playbook"};
    json_t *claimed = json_object();
    char detail[512];

    for (size_t i = 0; reply && i < sizeof shown / sizeof *shown; i++) {
        const char *v = field_of(reply, shown[i]);
        if (v) /* not UTF-8: left out (json_string gives NULL) */
            json_object_set_new(claimed, shown[i], json_string(v));
    }
    snprintf(detail, sizeof detail, "journal entry refused: %s", why);
    log_error("act", "%s: %s", r->id, detail);
    str_copy(r->who, sizeof r->who, "engine");
    r->owner = 1;
    r->a->st.refused++;
    run_finish_state(r, "refused", "refused", detail,
                     json_pack("{s:o}", "journal", claimed));
}

/* Cut off by a stop: go on where the journal, verified, says. */
static void resume(run *r)
{
    const seal_entry *e = &r->jr;
    const char *phase = e->v[SEAL_PHASE] ? e->v[SEAL_PHASE] : "steps";
    int step = e->v[SEAL_STEP] ? atoi(e->v[SEAL_STEP]) : 0;
    int running = e->v[SEAL_RUNNING] ? atoi(e->v[SEAL_RUNNING]) : -1;

    if (e->v[SEAL_NEW_JOB])
        str_copy(r->new_job, sizeof r->new_job, e->v[SEAL_NEW_JOB]);
    if (e->v[SEAL_WHO])
        str_copy(r->who, sizeof r->who, e->v[SEAL_WHO]);
    r->owner = 1;
    r->a->st.resumed++;
    r->phase = !strcmp(phase, "rollback") ? PH_ROLLBACK
               : !strcmp(phase, "verify") ? PH_VERIFY : PH_STEPS;
    r->step = step;
    r->interrupted = running;
    r->calls = pb_calls_for(r->phase == PH_ROLLBACK ? r->pb->rollback
                                                    : r->pb->steps,
                            r->a->o.scheduler);
    run_audit(r, "resumed", "the executor stopped during this action; going on "
          "from its journal", json_pack("{s:s, s:i, s:i}", "phase", phase,
                                       "step", step, "running", running));
    mark_durable(r);
    if (r->phase == PH_VERIFY) {
        r->verify_deadline = run_now_ms() + r->pb->verify_timeout;
        run_after(r, verify);
    } else {
        run_after(r, next_step);
    }
}

/* A new action id: its request journaled before anything else. */
static void record_new(run *r)
{
    char *txt = json_dumps(r->req, JSON_COMPACT);
    char pbv[160];

    r->owner = 1;
    r->a->st.requests++;
    playbook_version(r, pbv, sizeof pbv);
    run_jr_set(r, "state", "new", "req", txt, "playbook", pbv, NULL);
    free(txt);
    run_audit(r, "request", json_string_value(json_object_get(r->req, "summary")),
          json_pack("{s:O?}", "params", r->params));
    run_after(r, run_decide);
}

/* What the journal says of an action id: new, finished, waiting, or cut
 * off mid-run by a stop; a run goes on only from an entry whose seal
 * verifies. */
static void on_loaded(void *arg, redisReply *reply)
{
    run *r = arg;
    const char *state;
    char why[400];

    r->jr_wait--;
    if (!reply)
        return;
    state = field_of(reply, "state");
    if (!state && !run_running_here(r->a, r)) {
        record_new(r);
        return;
    }
    if (!state || strcmp(state, "running") || run_running_here(r->a, r)) {
        snprintf(why, sizeof why, "already %s%s; not run again",
                 state ? state : "taken", state && strcmp(state, "running")
                 ? "" : " here");
        r->a->st.duplicates++;
        run_audit(r, "duplicate", why, NULL);
        run_after(r, run_end);
        return;
    }
    if (run_jr_check(r, reply, why, sizeof why))
        run_jr_refuse(r, reply, why);
    else
        resume(r);
}

void run_load(run *r)
{
    char key[96];
    const char *argv[] = {"HGETALL", key};

    run_key_of(key, sizeof key, r->id, NULL);
    r->jr_wait++;
    jr_cmd(r->a->jr, on_loaded, r, 2, argv);
}

/* NULL when the request can be used; else why not. */
const char *run_invalid(const act *a, const json_t *req, char *why,
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
