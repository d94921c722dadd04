/* Reading playbooks and correlation rules (rules/catalog_priv.h). */
#include "rules/playbooks.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/catalog_priv.h"
#include "core/mem.h"
#include "core/ydoc.h"

static const char *const backends[] = {"any", "slurm", "k8s"};
/* What preconditions and verifications may read about a node or a job. */
static const char *const check_fields[] = {
    "node.state", "node.jobs", "node.drained_by", "node.gpu_health",
    "job.state"};
/* The values "{name}" in a call's argument may take. */
static const char *const template_names[] = {
    "incident", "node", "job", "cluster", "rack", "scenario", "summary",
    "playbook", "version"};
/* Operations of the executors; slurm.* and k8s.* only in their
 * scheduler's steps. */
static const char *const ops[] = {
    "slurm.drain",      "slurm.resume",      "slurm.reboot",
    "slurm.requeue",    "slurm.resubmit",    "slurm.cancel",
    "slurm.comment",    "k8s.cordon",        "k8s.uncordon",
    "k8s.taint",        "k8s.annotate",      "k8s.delete_pod",
    "k8s.delete_job",   "k8s.recreate_job",  "node.gpu_reset",
    "node.gpu_power_limit", "node.driver_rebuild", "node.mig_apply",
    "node.health_probe", "node.diag_bundle", "jira.upsert",
    "slack.post",       "pagerduty.trigger", "webhook.post",
    "pagerduty.acknowledge", "pagerduty.resolve"};

#define AT(T, f) .off = offsetof(T, f)
#define ONE_OF(v) .names = v, .nnames = N(v)

/* Every "{name}" in an argument names a value the action has. */
static void check_template(yd_doc *d, yaml_node_t *at, const char *v)
{
    for (const char *p = strchr(v, '{'); p; p = strchr(p + 1, '{')) {
        const char *close = strchr(p, '}');
        char name[32];
        if (!close || close - p - 1 <= 0 || close - p - 1 >= (long)sizeof name) {
            yd_problem(d, at, "argument '%s': '{' without a name and '}'", v);
            return;
        }
        snprintf(name, sizeof name, "%.*s", (int)(close - p - 1), p + 1);
        if (yd_pick(name, template_names, N(template_names)) < 0)
            yd_problem(d, at, "argument '%s': {%s} is not one of incident, "
                       "node, job, cluster, rack, scenario, summary, playbook, "
                       "version", v, name);
    }
}

/* The operation, if it is one and belongs under b. */
static void check_op(yd_doc *d, yaml_node_t *n, pb_backend b, const char *op)
{
    if (yd_pick(op, ops, N(ops)) < 0)
        yd_problem(d, yd_or(yd_get(d, n, "call"), n), "call '%s' is not an "
                   "operation of an executor (slurm.*, k8s.*, node.*, "
                   "jira.upsert, slack.post, pagerduty.trigger|acknowledge|"
                   "resolve, webhook.post)", op ? op : "");
    else if ((b == PB_ON_SLURM && strncmp(op, "slurm.", 6)) ||
             (b == PB_ON_K8S && strncmp(op, "k8s.", 4)) ||
             (b == PB_ON_ANY && (!strncmp(op, "slurm.", 6) ||
                                 !strncmp(op, "k8s.", 4))))
        yd_problem(d, yd_get(d, n, "call"), "call '%s' does not belong under "
                   "'%s'", op, backends[b]);
}

/* {call: executor.operation, name: value...}: the names are the call's
 * arguments, so this block has no keyword table. */
static int read_call(yd_doc *d, yaml_node_t *n, pb_backend b, pb_call *out)
{
    const char *op = yd_scalar(yd_get(d, n, "call"));
    int before = yd_errors(d);
    json_t *args;

    if (!n || n->type != YAML_MAPPING_NODE) {
        yd_problem(d, n, "a step is a mapping: {call: executor.operation, "
                   "arguments...}");
        return -1;
    }
    check_op(d, n, b, op);
    args = json_object();
    for (size_t i = 0; i < yd_len(n); i++) {
        yaml_node_t *k = yd_pair_key(d, n, i), *v = yd_pair_value(d, n, i);
        const char *name = yd_scalar(k), *text = yd_scalar(v);
        if (name && !strcmp(name, "call"))
            continue;
        if (!name || !text || !cat_id_ok(name)) {
            yd_problem(d, v ? v : k, "argument '%s' must be a lower-case name "
                       "with a plain value", name ? name : "?");
            continue;
        }
        check_template(d, v, text);
        json_object_set_new(args, name, yd_json_scalar(text));
    }
    if (yd_errors(d) != before) {
        json_decref(args);
        return -1;
    }
    out->op = xstrdup(op);
    out->args = args;
    return 0;
}

/* steps or rollback, being read: the calls per scheduler. */
typedef struct calls_in {
    const char *what;
    pb_calls *set;
} calls_in;

static int read_call_list(yd_doc *d, const yd_key *k, yaml_node_t *v,
                          void *obj);

/* In the order of pb_backend. */
static const yd_key calls_keys[] = {
    {"any", YD_LIST, .set = read_call_list},
    {"slurm", YD_LIST, .set = read_call_list},
    {"k8s", YD_LIST, .set = read_call_list},
};

static int read_call_list(yd_doc *d, const yd_key *k, yaml_node_t *v,
                          void *obj)
{
    calls_in *in = obj;
    pb_backend b = (pb_backend)(k - calls_keys);
    pb_calls *set = &in->set[b];

    if (!yd_len(v)) {
        yd_problem(d, v, "%s.%s: a list of calls", in->what, k->name);
        return -1;
    }
    set->v = xcalloc(yd_len(v), sizeof *set->v);
    for (size_t i = 0; i < yd_len(v); i++)
        if (read_call(d, yd_item(d, v, i), b, &set->v[set->n]) == 0)
            set->n++;
    return 0;
}

/* steps/rollback: a mapping of any, slurm, k8s to lists of calls. */
static void read_calls(yd_doc *d, yaml_node_t *n, const char *what,
                       pb_calls set[PB_ON__COUNT])
{
    const yd_table t = YD_TABLE(what, calls_keys);
    calls_in in = {what, set};
    char prefix[32];

    snprintf(prefix, sizeof prefix, "%s.", what);
    if (n)
        yd_read(d, n, &t, prefix, &in);
}

typedef struct check_in {
    int field, at_most;
    yaml_node_t *in, *not_in;
} check_in;

static const yd_key check_keys[] = {
    {"field", YD_ENUM, YD_REQUIRED, AT(check_in, field), ONE_OF(check_fields),
     .bad = "field '%s' is not one of node.state, node.jobs, node.drained_by, "
            "node.gpu_health, job.state"},
    {"in", YD_LIST, 0, AT(check_in, in),
     .bad = "in / not_in must be a list of values"},
    {"not_in", YD_LIST, 0, AT(check_in, not_in),
     .bad = "in / not_in must be a list of values"},
    {"at_most", YD_INT, 0, AT(check_in, at_most), .min = 0, .max = 1 << 30,
     .bad = "at_most must be a whole number, 0 or more"},
};
static const yd_table check_table = YD_TABLE("a check", check_keys);

/* in / not_in: a list of plain values. */
static json_t *check_values(yd_doc *d, yaml_node_t *list)
{
    json_t *value = json_array();

    if (!yd_len(list))
        yd_problem(d, list, "in / not_in must be a list of values");
    for (size_t i = 0; i < yd_len(list); i++) {
        const char *v = yd_scalar(yd_item(d, list, i));
        if (!v)
            yd_problem(d, yd_item(d, list, i), "in / not_in: plain values only");
        else
            json_array_append_new(value, json_string(v));
    }
    return value;
}

static int read_check(yd_doc *d, yaml_node_t *n, pb_check *out)
{
    check_in in = {.at_most = -1};
    int before = yd_errors(d);
    json_t *value = NULL;

    if (yd_read(d, n, &check_table, NULL, &in))
        return -1;
    if (!!in.in + !!in.not_in + (in.at_most >= 0) != 1)
        yd_problem(d, n, "a check has exactly one of in, not_in, at_most");
    else if (in.at_most >= 0)
        value = json_integer(in.at_most);
    else
        value = check_values(d, in.in ? in.in : in.not_in);
    if (yd_errors(d) != before) {
        json_decref(value);
        return -1;
    }
    out->field = xstrdup(check_fields[in.field]);
    out->op = in.at_most >= 0 ? PB_CHECK_AT_MOST
              : in.in         ? PB_CHECK_IN
                              : PB_CHECK_NOT_IN;
    out->value = value;
    return 0;
}

static pb_check *read_checks(yd_doc *d, yaml_node_t *n, int *count)
{
    pb_check *v;

    *count = 0;
    if (!n)
        return NULL;
    v = xcalloc(yd_len(n) + 1, sizeof *v);
    for (size_t i = 0; i < yd_len(n); i++)
        if (read_check(d, yd_item(d, n, i), &v[*count]) == 0)
            (*count)++;
    return v;
}

typedef struct budget_in {
    int per, max;
    int64_t window;
} budget_in;

static const char *const pers[] = {"cluster", "rack"};
static const yd_key budget_keys[] = {
    {"per", YD_ENUM, YD_REQUIRED, AT(budget_in, per), ONE_OF(pers),
     .bad = "per is rack or cluster"},
    {"max", YD_INT, YD_REQUIRED, AT(budget_in, max), .min = 1, .max = 100000,
     .bad = "max is a whole number from 1"},
    {"window", YD_DURATION, YD_REQUIRED, AT(budget_in, window),
     .bad = "window is a duration such as 30m or 1h"},
};
static const yd_table budget_table = YD_TABLE("a budget", budget_keys);

static void read_budgets(yd_doc *d, yaml_node_t *n, pb_playbook *p)
{
    if (!n)
        return;
    p->budgets = xcalloc(yd_len(n) + 1, sizeof *p->budgets);
    for (size_t i = 0; i < yd_len(n); i++) {
        budget_in in = {0};
        if (yd_read(d, yd_item(d, n, i), &budget_table, "budget: ", &in) == 0)
            p->budgets[p->nbudgets++] = (pb_budget){in.per, in.max, in.window};
    }
}

typedef struct verify_in {
    int64_t timeout;
    yaml_node_t *checks;
} verify_in;

static const yd_key verify_keys[] = {
    {"timeout", YD_DURATION, YD_REQUIRED, AT(verify_in, timeout),
     .bad = "timeout is a duration such as 60s or 5m"},
    {"checks", YD_LIST, YD_REQUIRED, AT(verify_in, checks),
     .bad = "checks must be a list of checks"},
};
static const yd_table verify_table = YD_TABLE("verify", verify_keys);

static void read_verify(yd_doc *d, yaml_node_t *n, pb_playbook *p)
{
    verify_in in = {0};

    if (!n || yd_read(d, n, &verify_table, "verify: ", &in))
        return;
    p->verify_timeout = in.timeout;
    p->verify = read_checks(d, in.checks, &p->nverify);
    if (!p->nverify)
        yd_problem(d, n, "verify: checks must name at least one check");
}

/* The guardrails a playbook's own data must keep (docs/ACTIONS.md). */
static void check_guardrails(yd_doc *d, yaml_node_t *n, const char *id,
                             const pb_playbook *p)
{
    if (p->cls == PB_CLASS_CHANGE && p->approval == APPR_AUTO)
        yd_problem(d, n, "playbook %s: a change needs approval canary or hitl, "
                   "not auto", id);
    if (p->cls == PB_CLASS_DESTRUCTIVE && p->approval != APPR_HITL)
        yd_problem(d, n, "playbook %s: a destructive playbook always needs "
                   "approval hitl", id);
    if (p->cls == PB_CLASS_JOB && !p->nbudgets)
        yd_problem(d, n, "playbook %s: class job needs a budget", id);
    if (p->cls == PB_CLASS_RECOVERY && p->nbudgets)
        yd_problem(d, n, "playbook %s: recovery is never held back by a budget",
                   id);
    if (!pb_calls_for(p->steps, PB_ON_SLURM) &&
        !pb_calls_for(p->steps, PB_ON_K8S))
        yd_problem(d, n, "playbook %s: steps name no call", id);
}

typedef struct playbook_in {
    const char *id, *version, *what;
    int cls, approval, mode;
    yaml_node_t *budgets, *pre, *steps, *verify, *rollback;
} playbook_in;

static const yd_key playbook_keys[] = {
    {"id", YD_TEXT, YD_REQUIRED, AT(playbook_in, id)},
    {"version", YD_TEXT, YD_REQUIRED, AT(playbook_in, version)},
    {"class", YD_ENUM, YD_REQUIRED, AT(playbook_in, cls), ONE_OF(cat_classes),
     .bad = "class '%s' is not read_only, notify, job, change, recovery or "
            "destructive"},
    {"approval", YD_ENUM, YD_REQUIRED, AT(playbook_in, approval),
     ONE_OF(cat_approvals), .bad = "approval '%s' is not auto, hitl or canary"},
    {"mode", YD_ENUM, YD_REQUIRED, AT(playbook_in, mode), ONE_OF(cat_modes),
     .bad = "mode '%s' is not shadow, canary or on"},
    {"what", YD_TEXT, YD_REQUIRED, AT(playbook_in, what)},
    {"budgets", YD_LIST, 0, AT(playbook_in, budgets),
     .bad = "budgets must be a list of {per, max, window}"},
    {"preconditions", YD_LIST, 0, AT(playbook_in, pre),
     .bad = "preconditions must be a list of checks"},
    {"steps", YD_MAP, YD_REQUIRED, AT(playbook_in, steps),
     .bad = "steps: a mapping of any, slurm or k8s to lists of calls"},
    {"verify", YD_MAP, 0, AT(playbook_in, verify),
     .bad = "verify is a mapping {timeout, checks}"},
    {"rollback", YD_MAP, 0, AT(playbook_in, rollback),
     .bad = "rollback: a mapping of any, slurm or k8s to lists of calls"},
};
static const yd_table playbook_table = YD_TABLE("a playbook", playbook_keys);

/* The playbook's id and version, as the catalog needs them. */
static void check_identity(yd_doc *d, const pb_catalog *c, yaml_node_t *n,
                           const playbook_in *in)
{
    if (in->id && !cat_id_ok(in->id))
        yd_problem(d, yd_get(d, n, "id"), "playbook: id '%s' is not "
                   "'family.name'", in->id);
    else if (in->id && pb_playbook_find(c, in->id))
        yd_problem(d, yd_get(d, n, "id"), "playbook '%s' defined twice", in->id);
    if (in->version && !cat_version_ok(in->version))
        yd_problem(d, yd_get(d, n, "version"), "playbook %s: version '%s' is "
                   "not MAJOR.MINOR.PATCH", in->id ? in->id : "?", in->version);
}

void cat_read_playbook(yd_doc *d, pb_catalog *c, yaml_node_t *n)
{
    playbook_in in = {0};
    pb_playbook p = {0};
    int before = yd_errors(d);
    char prefix[160];

    cat_prefix(d, n, "playbook", "id", prefix, sizeof prefix);
    yd_read(d, n, &playbook_table, prefix, &in);
    check_identity(d, c, n, &in);
    p.cls = (pb_class)in.cls;
    p.approval = (pb_approval)in.approval;
    p.mode = (pb_mode)in.mode;
    read_budgets(d, in.budgets, &p);
    p.pre = read_checks(d, in.pre, &p.npre);
    read_calls(d, in.steps, "steps", p.steps);
    read_verify(d, in.verify, &p);
    read_calls(d, in.rollback, "rollback", p.rollback);
    if (yd_errors(d) == before)
        check_guardrails(d, n, in.id, &p);
    if (yd_errors(d) != before) {
        cat_free_playbook(&p);
        return;
    }
    p.id = xstrdup(in.id);
    p.version = xstrdup(in.version);
    p.what = xstrdup(in.what);
    p.file = xstrdup(yd_name(d));
    p.line = yd_line(n);
    cat_push_playbook(c, &p);
}

typedef struct correlation_in {
    const char *scenario;
    int kind, by, count;
    int64_t window;
    yaml_node_t *events;
} correlation_in;

static const yd_key correlation_keys[] = {
    {"scenario", YD_TEXT, YD_REQUIRED, AT(correlation_in, scenario)},
    {"kind", YD_ENUM, YD_REQUIRED, AT(correlation_in, kind),
     .names = cat_corr_kinds, .nnames = 3,
     .bad = "kind must be threshold, sequence or group"},
    {"by", YD_ENUM, YD_REQUIRED, AT(correlation_in, by), .names = cat_corr_bys,
     .nnames = 2, .bad = "by must be host or job"},
    {"events", YD_LIST, YD_REQUIRED, AT(correlation_in, events),
     .bad = "events must list signature ids"},
    {"count", YD_INT, 0, AT(correlation_in, count), .min = 2, .max = 100000,
     .bad = "a threshold needs count: 2 or more"},
    {"window", YD_DURATION, YD_REQUIRED, AT(correlation_in, window),
     .bad = "window must be a duration such as 60s or 5m"},
};
static const yd_table correlation_table = YD_TABLE("a correlation",
                                                   correlation_keys);

/* The signature ids a correlation counts. */
static void read_events(yd_doc *d, const correlation_in *in,
                        pb_correlation *k)
{
    size_t nev = yd_len(in->events);

    if (nev == 0 || nev > PB_CORR_MAX_EVENTS) {
        yd_problem(d, in->events, "correlation %s: events must list 1 to %d "
                   "signature ids", in->scenario, PB_CORR_MAX_EVENTS);
        return;
    }
    for (size_t i = 0; i < nev; i++) {
        yaml_node_t *ev = yd_item(d, in->events, i);
        const char *id = yd_scalar(ev);
        if (!id || !*id) {
            yd_problem(d, ev, "correlation %s: an event is a signature id",
                       in->scenario);
            continue;
        }
        for (int j = 0; j < k->nevents; j++)
            if (!strcmp(k->events[j], id))
                yd_problem(d, ev, "correlation %s: event %s listed twice",
                           in->scenario, id);
        k->events[k->nevents++] = xstrdup(id);
    }
}

/* count belongs to a threshold, of one event; the others need two. */
static void check_kind(yd_doc *d, yaml_node_t *n, const correlation_in *in)
{
    yaml_node_t *cn = yd_get(d, n, "count");
    size_t nev = yd_len(in->events);

    if (in->kind == PB_CORR_THRESHOLD) {
        if (!cn)
            yd_problem(d, n, "correlation %s: a threshold needs count: 2 or "
                       "more", in->scenario);
        if (nev > 1)
            yd_problem(d, in->events, "correlation %s: a threshold counts one "
                       "event (list the others in a group)", in->scenario);
        return;
    }
    if (cn)
        yd_problem(d, cn, "correlation %s: count is for a threshold only",
                   in->scenario);
    if (nev == 1)
        yd_problem(d, in->events, "correlation %s: a %s needs two events or "
                   "more", in->scenario, cat_corr_kinds[in->kind]);
}

/* correlations: [{scenario, kind, by, events: [sig ids], count, window}].
 * Names are checked against the whole catalog in pb_catalog_link. */
void cat_read_correlation(yd_doc *d, pb_catalog *c, yaml_node_t *n)
{
    correlation_in in = {.kind = -1};
    pb_correlation k = {0};
    int before = yd_errors(d);
    char prefix[160];

    cat_prefix(d, n, "correlation", "scenario", prefix, sizeof prefix);
    yd_read(d, n, &correlation_table, prefix, &in);
    if (in.scenario && !*in.scenario)
        yd_problem(d, n, "correlation: 'scenario' (what it opens) is required");
    if (!in.scenario)
        in.scenario = "?";
    if (in.events)
        read_events(d, &in, &k);
    if (in.kind >= 0)
        check_kind(d, n, &in);
    if (yd_errors(d) != before) {
        cat_free_correlation(&k);
        return;
    }
    k.scenario = xstrdup(in.scenario);
    k.kind = (pb_corr_kind)in.kind;
    k.by = (pb_corr_by)in.by;
    k.window = in.window;
    k.count = in.count;
    yd_where(d, n, k.where, sizeof k.where);
    if (c->ncorrs == c->capcorrs) {
        c->capcorrs = c->capcorrs ? c->capcorrs * 2 : 8;
        c->corrs = xrealloc(c->corrs, c->capcorrs * sizeof *c->corrs);
    }
    c->corrs[c->ncorrs++] = k;
}
