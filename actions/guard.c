#include "actions/guard.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/strmap.h"

/* When actions ran, per budget scope ("PLAYBOOK|rack|CLUSTER|RACK" or
 * "PLAYBOOK|cluster|CLUSTER"); pruned to the budget's window on use. */
typedef struct ledger {
    int64_t *ts;
    size_t n, cap;
} ledger;

struct guard {
    strmap *ledgers;
};

static void ledger_free(void *p)
{
    ledger *l = p;

    if (l)
        free(l->ts);
    free(l);
}

guard *guard_new(void)
{
    guard *g = xcalloc(1, sizeof *g);
    g->ledgers = strmap_new();
    return g;
}

void guard_free(guard *g)
{
    if (!g)
        return;
    strmap_free(g->ledgers, ledger_free);
    free(g);
}

/* The budget's scope key. A per-rack budget for a node whose rack is
 * unknown counts per cluster under a key of its own, so it still binds. */
static void scope_key(char *buf, size_t len, const guard_req *r,
                      const pb_budget *b)
{
    if (b->per_rack && r->rack && *r->rack)
        snprintf(buf, len, "%s|rack|%s|%s", r->pb->id, r->cluster, r->rack);
    else
        snprintf(buf, len, "%s|%s|%s", r->pb->id,
                 b->per_rack ? "rack?" : "cluster", r->cluster);
}

/* How many ran within the window before now. */
static int used(guard *g, const char *key, int64_t window, int64_t now)
{
    ledger *l = strmap_get(g->ledgers, key);
    size_t keep = 0;

    if (!l)
        return 0;
    for (size_t i = 0; i < l->n; i++)
        if (l->ts[i] > now - window)
            l->ts[keep++] = l->ts[i];
    l->n = keep;
    return (int)keep;
}

/* The first budget the request would overspend, or NULL. */
static const pb_budget *spent(guard *g, const guard_req *r, int *count)
{
    char key[400];

    for (int i = 0; i < r->pb->nbudgets; i++) {
        const pb_budget *b = &r->pb->budgets[i];
        scope_key(key, sizeof key, r, b);
        if ((*count = used(g, key, b->window, r->now)) >= b->max)
            return b;
    }
    return NULL;
}

static guard_decision decide(guard_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static guard_decision decide(guard_verdict v, const char *fmt, ...)
{
    guard_decision d;
    va_list ap;

    d.verdict = v;
    va_start(ap, fmt);
    vsnprintf(d.why, sizeof d.why, fmt, ap);
    va_end(ap);
    return d;
}

guard_decision guard_check(guard *g, const guard_req *r)
{
    const pb_playbook *pb = r->pb;
    pb_mode mode = r->mode < pb->mode ? r->mode : pb->mode;
    const pb_budget *b;
    int count = 0;
    guard_decision d;

    if (mode == PB_MODE_SHADOW)
        return decide(GUARD_SHADOW, "%s %s in shadow mode: proposed only",
                      pb->id, pb->version);
    if (pb->cls == PB_CLASS_READ_ONLY || pb->cls == PB_CLASS_NOTIFY)
        return decide(GUARD_RUN, "%s %s: read-only or a notification, runs "
                      "alone", pb->id, pb->version);
    if (r->approved)
        return decide(GUARD_RUN, "%s %s: approved by a human", pb->id,
                      pb->version);
    if (pb->cls == PB_CLASS_DESTRUCTIVE)
        return decide(GUARD_APPROVAL, "%s %s is destructive: it always needs "
                      "an approval", pb->id, pb->version);
    if (pb->cls != PB_CLASS_RECOVERY && (b = spent(g, r, &count))) {
        d.verdict = GUARD_APPROVAL;
        snprintf(d.why, sizeof d.why, "%s budget spent: %d of %d per %s in "
                 "%lld min (%s%s%s); waits for a human", pb->id, count, b->max,
                 b->per_rack ? "rack" : "cluster",
                 (long long)(b->window / 60000), r->cluster,
                 b->per_rack && r->rack && *r->rack ? "/" : "",
                 b->per_rack && r->rack ? r->rack : "");
        return d;
    }
    if (r->approval == APPR_HITL)
        return decide(GUARD_APPROVAL, "%s %s: the incident asks for a human's "
                      "approval", pb->id, pb->version);
    if (mode == PB_MODE_CANARY && pb->cls == PB_CLASS_CHANGE && !r->canary)
        return decide(GUARD_APPROVAL, "%s %s in canary mode: runs alone on "
                      "canary nodes only, this one is not", pb->id,
                      pb->version);
    if (pb->cls == PB_CLASS_CHANGE && pb->approval != APPR_AUTO && !r->canary)
        return decide(GUARD_APPROVAL, "%s %s changes a node: it needs an "
                      "approval or a canary node", pb->id, pb->version);
    return decide(GUARD_RUN, "%s %s: within its guardrails", pb->id,
                  pb->version);
}

void guard_record(guard *g, const guard_req *r)
{
    char key[400];

    if (r->pb->cls == PB_CLASS_RECOVERY)
        return;
    for (int i = 0; i < r->pb->nbudgets; i++) {
        ledger *l;
        scope_key(key, sizeof key, r, &r->pb->budgets[i]);
        if (!(l = strmap_get(g->ledgers, key))) {
            l = xcalloc(1, sizeof *l);
            strmap_put(g->ledgers, key, l);
        }
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 8;
            l->ts = xrealloc(l->ts, l->cap * sizeof *l->ts);
        }
        l->ts[l->n++] = r->now;
    }
}

static int in_values(const json_t *list, const char *v)
{
    size_t i;
    json_t *x;

    json_array_foreach(list, i, x)
        if (!strcmp(json_string_value(x), v))
            return 1;
    return 0;
}

static int check_one(const pb_check *c, const json_t *facts, char *why,
                     size_t len)
{
    const json_t *v = json_object_get(facts, c->field);
    char *list;

    if (c->op == PB_CHECK_AT_MOST) {
        if (json_is_integer(v) &&
            json_integer_value(v) <= json_integer_value(c->value))
            return 0;
        if (json_is_integer(v))
            snprintf(why, len, "%s is %lld, more than %lld", c->field,
                     (long long)json_integer_value(v),
                     (long long)json_integer_value(c->value));
        else
            snprintf(why, len, "%s is unknown", c->field);
        return -1;
    }
    if (!json_is_string(v)) {
        snprintf(why, len, "%s is unknown", c->field);
        return -1;
    }
    if (in_values(c->value, json_string_value(v)) == (c->op == PB_CHECK_IN))
        return 0;
    list = json_dumps(c->value, JSON_COMPACT);
    snprintf(why, len, "%s is %s, %s %s", c->field, json_string_value(v),
             c->op == PB_CHECK_IN ? "not in" : "in", list ? list : "[]");
    free(list);
    return -1;
}

int guard_checks(const pb_check *v, int n, const json_t *facts, char *why,
                 size_t len)
{
    for (int i = 0; i < n; i++)
        if (check_one(&v[i], facts, why, len))
            return -1;
    if (len)
        why[0] = '\0';
    return 0;
}
