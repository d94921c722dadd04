/* The executor's journal read as lists (actions/act.h): the actions
 * waiting for a human (the pending set, by expiry) or running (the active
 * set, by start), each entry as JSON. On the loop for the approvals API,
 * blocking for the command line, which reads Redis directly and so works
 * with no executor running. */
#include "actions/act_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/str.h"

json_t *act_journal_json(const redisReply *reply)
{
    json_t *out;

    if (!reply || reply->type != REDIS_REPLY_ARRAY || !reply->elements)
        return NULL;
    out = json_object();
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
        const char *f = reply->element[i]->str, *v = reply->element[i + 1]->str;
        if (!f || !v)
            continue;
        if (!strcmp(f, "req"))
            json_object_set_new(out, "request", json_loads(v, 0, NULL));
        else if (strcmp(f, "mac")) /* the seal says nothing to a reader */
            json_object_set_new(out, f, json_string(v));
    }
    return out;
}

/* The set a state is listed from; NULL for a state not listed. */
static const char *set_of(const char *state)
{
    return !strcmp(state, "pending")   ? PENDING_KEY
           : !strcmp(state, "running") ? ACTIVE_KEY : NULL;
}

/* What the set's score means for its entries. */
static const char *score_name(const char *set)
{
    return !strcmp(set, PENDING_KEY) ? "expires_ms" : "started_ms";
}

/* An entry of the list: its id and score, then its journal over them. */
static json_t *entry_of(const char *set, const redisReply *id,
                        const redisReply *score)
{
    return json_pack("{s:s, s:I}", "id", id->str ? id->str : "",
                     score_name(set),
                     (json_int_t)(score->str ? atoll(score->str) : 0));
}

/* ---- on the loop ---- */

typedef struct listing {
    act *a;
    const char *set;
    act_list_fn fn;
    void *arg;
    json_t *out;
    size_t left;
    int failed;
} listing;

typedef struct entry {
    listing *l;
    json_t *slot; /* the entry's object in l->out, filled in place */
} entry;

static void finish(listing *l)
{
    l->fn(l->arg, l->failed ? 503 : 200, l->failed ? NULL : l->out);
    json_decref(l->out);
    free(l);
}

static void on_entry(void *arg, redisReply *reply)
{
    entry *e = arg;
    listing *l = e->l;
    json_t *j = act_journal_json(reply);

    if (!reply)
        l->failed = 1;
    if (j) {
        json_object_update(e->slot, j);
        json_decref(j);
    }
    free(e);
    if (--l->left == 0)
        finish(l);
}

static void on_ids(void *arg, redisReply *reply)
{
    listing *l = arg;
    char key[96];
    const char *argv[] = {"HGETALL", key};

    if (!reply || reply->type != REDIS_REPLY_ARRAY) {
        l->failed = 1;
        finish(l);
        return;
    }
    if (!(l->left = reply->elements / 2)) {
        finish(l);
        return;
    }
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
        entry *e = xcalloc(1, sizeof *e);
        e->l = l;
        e->slot = entry_of(l->set, reply->element[i], reply->element[i + 1]);
        json_array_append_new(l->out, e->slot);
        run_key_of(key, sizeof key, reply->element[i]->str ? reply->element[i]->str : "",
                   NULL);
        jr_cmd(l->a->jr, on_entry, e, 2, argv);
    }
}

int act_list(act *a, const char *state, size_t limit, act_list_fn fn,
             void *arg)
{
    const char *set = set_of(state);
    char last[24];
    const char *argv[] = {"ZRANGE", set, "0", last, "WITHSCORES"};
    listing *l;

    if (!set)
        return -1;
    l = xcalloc(1, sizeof *l);
    *l = (listing){.a = a, .set = set, .fn = fn, .arg = arg, .out = json_array()};
    snprintf(last, sizeof last, "%zu", limit ? limit - 1 : 999);
    jr_cmd(a->jr, on_ids, l, 5, argv);
    return 0;
}

/* ---- blocking, for the command line ---- */

json_t *act_list_sync(redisContext *c, const char *state, size_t limit,
                      cs_err *err)
{
    const char *set = set_of(state);
    char last[24];
    redisReply *ids;
    json_t *out;

    if (!set) {
        cs_err_set(err, "state is pending or running, not '%s'", state);
        return NULL;
    }
    snprintf(last, sizeof last, "%zu", limit ? limit - 1 : (size_t)999);
    ids = redisCommand(c, "ZRANGE %s 0 %s WITHSCORES", set, last);
    if (!ids || ids->type != REDIS_REPLY_ARRAY) {
        cs_err_set(err, "reading %s: %s", set,
                   ids && ids->str ? ids->str : c->errstr);
        freeReplyObject(ids);
        return NULL;
    }
    out = json_array();
    for (size_t i = 0; i + 1 < ids->elements; i += 2) {
        json_t *slot = entry_of(set, ids->element[i], ids->element[i + 1]);
        redisReply *h = redisCommand(c, "HGETALL " KEY_PREFIX "%s",
                                     ids->element[i]->str ? ids->element[i]->str : "");
        json_t *j = act_journal_json(h);
        if (j) {
            json_object_update(slot, j);
            json_decref(j);
        }
        freeReplyObject(h);
        json_array_append_new(out, slot);
    }
    freeReplyObject(ids);
    return out;
}
