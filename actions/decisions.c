/* A human's decisions on waiting actions (actions/act_priv.h): approve or
 * deny through the approvals API, look one up, and the sweep that expires
 * approvals past their time. */
#include "actions/act_priv.h"

#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/str.h"
#include "core/ts.h"

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
    run_decide(r);
}

/* A waiting entry whose seal does not verify is nobody's to decide: it is
 * refused (audited, out of the waiting set) whoever asks, and never run.
 * 1 when so. */
static int refused(decision *d, run *r, const redisReply *reply)
{
    char why[400], msg[600];
    const char *zrem[] = {"ZREM", PENDING_KEY, r->id};

    if (!run_jr_check(r, reply, why, sizeof why))
        return 0;
    r->durable = 1;
    run_jr_run(r, 3, zrem);
    run_jr_refuse(r, reply, why);
    snprintf(msg, sizeof msg, "action %s: its journal entry fails "
             "verification (%s); refused", d->id, why);
    decided(d, 409, msg);
    return 1;
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
    if (!(j = json_loads(req, 0, NULL)) || run_invalid(d->a, j, msg, sizeof msg)) {
        json_decref(j);
        snprintf(msg, sizeof msg, "action %s: its stored request is unusable",
                 d->id);
        decided(d, 409, msg);
        return;
    }
    r = run_new(d->a, j);
    /* the entry it was read from: a request naming another id fails its seal */
    str_copy(r->id, sizeof r->id, d->id);
    if (run_running_here(d->a, r)) {
        run_free(r);
        snprintf(msg, sizeof msg, "action %s is being decided already", d->id);
        decided(d, 409, msg);
        return;
    }
    if (refused(d, r, reply))
        return;
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
    run_jr_run(r, 3, zrem);
    if (d->expire) {
        d->a->st.expired++;
        snprintf(msg, sizeof msg, "nobody decided within %d s",
                 d->a->o.approval_ttl_s);
        run_finish_state(r, "expired", "expired", msg, NULL);
        decided(d, 200, "expired");
        return;
    }
    snprintf(r->who, sizeof r->who, "human:%.80s", d->who);
    r->decided = d->fn;
    r->decided_arg = d->arg;
    d->fn = NULL;
    if (d->approve) {
        r->approved = 1;
        run_jr_set(r, "state", "approved", "who", r->who, NULL);
        run_audit(r, "approved", d->reason[0] ? d->reason : "approved", NULL);
        run_after(r, approved_run);
    } else {
        run_finish_state(r, "denied", "denied", d->reason, NULL);
    }
    decided(d, 200, NULL);
}

static void load_decision(decision *d)
{
    char key[96];
    const char *argv[] = {"HGETALL", key};

    run_key_of(key, sizeof key, d->id, NULL);
    jr_cmd(d->a->jr, on_decision_loaded, d, 2, argv);
}

typedef struct lookup {
    act_lookup_fn fn;
    void *arg;
} lookup;

static void on_lookup(void *arg, redisReply *reply)
{
    lookup *l = arg;
    json_t *out = act_journal_json(reply);

    l->fn(l->arg, reply ? (out ? 200 : 404) : 503, out);
    json_decref(out);
    free(l);
}

void act_lookup(act *a, const char *id, act_lookup_fn fn, void *arg)
{
    lookup *l = xcalloc(1, sizeof *l);
    char key[96];
    const char *argv[] = {"HGETALL", key};

    l->fn = fn;
    l->arg = arg;
    run_key_of(key, sizeof key, id, NULL);
    jr_cmd(a->jr, on_lookup, l, 2, argv);
}

void act_decide(act *a, const char *id, int approve, const char *who,
                unsigned classes, const char *reason, act_decided_fn fn,
                void *arg)
{
    decision *d = xcalloc(1, sizeof *d);
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
        decision *d = xcalloc(1, sizeof *d);
        d->a = a;
        d->expire = 1;
        str_copy(d->id, sizeof d->id, reply->element[i]->str ? reply->element[i]->str : "");
        str_copy(d->who, sizeof d->who, "engine");
        load_decision(d);
    }
}

static void on_pending_count(void *arg, redisReply *reply)
{
    act *a = arg;

    if (reply && reply->type == REDIS_REPLY_INTEGER)
        a->pending = (long)reply->integer;
}

void dec_sweep(evutil_socket_t fd, short what, void *arg)
{
    act *a = arg;
    char now[24];
    const char *argv[] = {"ZRANGEBYSCORE", PENDING_KEY, "-inf", now, "LIMIT",
                          "0", "100"};
    const char *count[] = {"ZCARD", PENDING_KEY};

    (void)fd;
    (void)what;
    snprintf(now, sizeof now, "%lld", (long long)run_now_ms());
    jr_cmd(a->jr, on_expired_ids, a, 7, argv);
    /* the gauge of actions waiting on a human (act_metrics) */
    jr_cmd(a->jr, on_pending_count, a, 2, count);
}

