#include "actions/guard.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/strmap.h"

/* When actions ran, per budget ("PLAYBOOK|rack|CLUSTER|RACK|WINDOW" or
 * "PLAYBOOK|cluster|CLUSTER|WINDOW": the window in the key, so that two
 * budgets of one scope never count an action twice); pruned to the
 * budget's window on use. What it is for is kept for the metrics. */
typedef struct ledger {
    int64_t *ts;
    size_t n, cap;
    char playbook[96], scope[200];
    int64_t window;
    int max;
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
        snprintf(buf, len, "%s|rack|%s|%s|%lld", r->pb->id, r->cluster,
                 r->rack, (long long)b->window);
    else
        snprintf(buf, len, "%s|%s|%s|%lld", r->pb->id,
                 b->per_rack ? "rack?" : "cluster", r->cluster,
                 (long long)b->window);
}

/* The budget's ledger, made on first use. */
static ledger *ledger_of(guard *g, const guard_req *r, const pb_budget *b)
{
    char key[400];
    ledger *l;

    scope_key(key, sizeof key, r, b);
    if (!(l = strmap_get(g->ledgers, key))) {
        l = xcalloc(1, sizeof *l);
        snprintf(l->playbook, sizeof l->playbook, "%s", r->pb->id);
        if (b->per_rack && r->rack && *r->rack)
            snprintf(l->scope, sizeof l->scope, "%s/%s", r->cluster, r->rack);
        else
            snprintf(l->scope, sizeof l->scope, "%s%s", r->cluster,
                     b->per_rack ? "/?" : "");
        l->window = b->window;
        strmap_put(g->ledgers, key, l);
    }
    l->max = b->max; /* a reload may have changed it */
    return l;
}

/* How many ran within the window before now. */
static int used(ledger *l, int64_t now)
{
    size_t keep = 0;

    for (size_t i = 0; i < l->n; i++)
        if (l->ts[i] > now - l->window)
            l->ts[keep++] = l->ts[i];
    l->n = keep;
    return (int)keep;
}

/* The first budget the request would overspend, or NULL. */
static const pb_budget *spent(guard *g, const guard_req *r, int *count)
{
    for (int i = 0; i < r->pb->nbudgets; i++) {
        const pb_budget *b = &r->pb->budgets[i];
        if ((*count = used(ledger_of(g, r, b), r->now)) >= b->max)
            return b;
    }
    return NULL;
}

void guard_each_use(guard *g, int64_t now, guard_use_fn fn, void *arg)
{
    size_t pos = 0;
    const char *key;
    void *v;

    while (strmap_next(g->ledgers, &pos, &key, &v)) {
        ledger *l = v;
        guard_use u = {l->playbook, l->scope, l->window, 0, l->max};
        u.used = used(l, now);
        fn(arg, &u);
    }
}

/* auto < canary < hitl */
static const pb_approval by_rank[] = {APPR_AUTO, APPR_CANARY, APPR_HITL};

static int rank(pb_approval a)
{
    return a == APPR_AUTO ? 0 : a == APPR_CANARY ? 1 : 2;
}

static pb_approval stricter(pb_approval a, pb_approval b)
{
    return rank(a) >= rank(b) ? a : b;
}

/* The least a class may run under, whatever its playbook says. */
static pb_approval class_floor(pb_class k)
{
    return k == PB_CLASS_DESTRUCTIVE ? APPR_HITL
           : k == PB_CLASS_CHANGE    ? APPR_CANARY : APPR_AUTO;
}

/* The strictest approval s asks for pb over its steps; -1: none proposes
 * it. Several steps may (one per `when`): the request does not say which
 * it came from, so the strictest stands. */
static int scenario_asks(const pb_scenario *s, const pb_playbook *pb)
{
    int best = -1;

    for (int i = 0; s && i < s->nsteps; i++)
        if (!strcmp(s->steps[i].playbook, pb->id) &&
            rank(s->steps[i].approval) > best)
            best = rank(s->steps[i].approval);
    return best;
}

pb_approval guard_required(const pb_catalog *c, const pb_playbook *pb,
                           const char *scenario, const char *root,
                           pb_approval asked, char *why, size_t len)
{
    const pb_scenario *s = scenario ? pb_find(c, scenario) : NULL;
    const pb_scenario *rs = s && s->root_actions && root ? pb_find(c, root)
                                                         : NULL;
    int own = scenario_asks(s, pb);
    int of_root = rs && rs != s ? scenario_asks(rs, pb) : -1;
    pb_approval need = stricter(pb->approval, class_floor(pb->cls));

    if (!s) {
        snprintf(why, len, "scenario '%.80s' is not in this executor's rules",
                 scenario ? scenario : "");
        return APPR_HITL;
    }
    if (own < 0 && of_root < 0) {
        snprintf(why, len, "scenario %s does not propose it", s->id);
        return APPR_HITL;
    }
    snprintf(why, len, "its playbook asks for hitl");
    if (need != APPR_HITL && (own == 2 || of_root == 2))
        snprintf(why, len, "scenario %s asks for hitl",
                 own == 2 ? s->id : rs->id);
    need = stricter(need, by_rank[own > of_root ? own : of_root]);
    if (need != APPR_HITL && asked == APPR_HITL)
        snprintf(why, len, "the request asks for hitl");
    return stricter(need, asked);
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
    pb_approval need = stricter(stricter(r->approval, pb->approval),
                                class_floor(pb->cls));
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
    if (need == APPR_HITL)
        return decide(GUARD_APPROVAL, "%s %s needs a human's approval%s%s",
                      pb->id, pb->version, r->approval_why ? ": " : "",
                      r->approval_why ? r->approval_why : "");
    if (mode == PB_MODE_CANARY && pb->cls == PB_CLASS_CHANGE && !r->canary)
        return decide(GUARD_APPROVAL, "%s %s in canary mode: runs alone on "
                      "canary nodes only, this one is not", pb->id,
                      pb->version);
    if (need == APPR_CANARY && !r->canary)
        return decide(GUARD_APPROVAL, "%s %s%s: it needs an approval or a "
                      "canary node", pb->id, pb->version,
                      pb->cls == PB_CLASS_CHANGE ? " changes a node" : "");
    return decide(GUARD_RUN, "%s %s: within its guardrails", pb->id,
                  pb->version);
}

void guard_record(guard *g, const guard_req *r)
{
    if (r->pb->cls == PB_CLASS_RECOVERY)
        return;
    for (int i = 0; i < r->pb->nbudgets; i++) {
        ledger *l = ledger_of(g, r, &r->pb->budgets[i]);
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
