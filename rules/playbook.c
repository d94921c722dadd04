/* Reading playbooks and correlation rules (rules/catalog_priv.h). */
#include "rules/playbooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/catalog_priv.h"
#include "core/mem.h"

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

/* Every "{name}" in an argument names a value the action has. */
static void check_template(reader *r, yaml_node_t *at, const char *v)
{
    for (const char *p = strchr(v, '{'); p; p = strchr(p + 1, '{')) {
        const char *close = strchr(p, '}');
        char name[32];
        if (!close || close - p - 1 <= 0 || close - p - 1 >= (long)sizeof name) {
            yr_problem(r, at, "argument '%s': '{' without a name and '}'", v);
            return;
        }
        snprintf(name, sizeof name, "%.*s", (int)(close - p - 1), p + 1);
        if (yr_pick(name, template_names, N(template_names)) < 0)
            yr_problem(r, at, "argument '%s': {%s} is not one of incident, node, "
                    "job, cluster, rack, scenario, summary, playbook, version",
                    v, name);
    }
}

static int read_call(reader *r, yaml_node_t *n, pb_backend b, pb_call *out)
{
    const char *op = yr_scalar(yr_get(r, n, "call"));
    int before = r->errors;
    json_t *args;

    if (!n || n->type != YAML_MAPPING_NODE) {
        yr_problem(r, n, "a step is a mapping: {call: executor.operation, "
                      "arguments...}");
        return -1;
    }
    if (yr_pick(op, ops, N(ops)) < 0)
        yr_problem(r, yr_node_or(yr_get(r, n, "call"), n), "call '%s' is not an "
                "operation of an executor (slurm.*, k8s.*, node.*, "
                "jira.upsert, slack.post, pagerduty.trigger|acknowledge|"
                "resolve, webhook.post)",
                op ? op : "");
    else if ((b == PB_ON_SLURM && strncmp(op, "slurm.", 6)) ||
             (b == PB_ON_K8S && strncmp(op, "k8s.", 4)) ||
             (b == PB_ON_ANY && (!strncmp(op, "slurm.", 6) ||
                                 !strncmp(op, "k8s.", 4))))
        yr_problem(r, yr_get(r, n, "call"), "call '%s' does not belong under '%s'",
                op, backends[b]);
    args = json_object();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&r->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(&r->doc, p->value);
        const char *name = yr_scalar(k), *text = yr_scalar(v);
        if (name && !strcmp(name, "call"))
            continue;
        if (!name || !text || !yr_playbook_id_ok(name)) {
            yr_problem(r, v ? v : k, "argument '%s' must be a lower-case name "
                    "with a plain value", name ? name : "?");
            continue;
        }
        check_template(r, v, text);
        json_object_set_new(args, name, yr_json_scalar(text));
    }
    if (r->errors != before) {
        json_decref(args);
        return -1;
    }
    out->op = strdup(op);
    out->args = args;
    return 0;
}

/* steps/rollback: a mapping of any, slurm, k8s to lists of calls. */
static void read_calls(reader *r, yaml_node_t *n, const char *what,
                       pb_calls set[PB_ON__COUNT])
{
    if (!n)
        return;
    if (n->type != YAML_MAPPING_NODE) {
        yr_problem(r, n, "%s: a mapping of any, slurm or k8s to lists of calls",
                what);
        return;
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&r->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(&r->doc, p->value);
        int b = yr_pick(yr_scalar(k), backends, N(backends));
        if (b < 0) {
            yr_problem(r, k, "%s: '%s' is not any, slurm or k8s", what,
                    yr_scalar(k) ? yr_scalar(k) : "?");
            continue;
        }
        if (set[b].v) {
            yr_problem(r, k, "%s: '%s' given twice", what, backends[b]);
            continue;
        }
        if (!v || v->type != YAML_SEQUENCE_NODE || !yr_seq_len(v)) {
            yr_problem(r, yr_node_or(v, k), "%s.%s: a list of calls", what,
                    backends[b]);
            continue;
        }
        set[b].v = xcalloc(yr_seq_len(v), sizeof *set[b].v);
        for (size_t i = 0; i < yr_seq_len(v); i++)
            if (read_call(r, yr_seq_at(r, v, i), (pb_backend)b,
                          &set[b].v[set[b].n]) == 0)
                set[b].n++;
    }
}

static int read_check(reader *r, yaml_node_t *n, pb_check *out)
{
    static const char *const keys[] = {"field", "in", "not_in", "at_most", NULL};
    const char *field = yr_scalar(yr_get(r, n, "field"));
    yaml_node_t *in = yr_get(r, n, "in"), *not_in = yr_get(r, n, "not_in");
    yaml_node_t *most = yr_get(r, n, "at_most"), *list = in ? in : not_in;
    int before = r->errors;
    json_t *value = NULL;

    if (!n || n->type != YAML_MAPPING_NODE) {
        yr_problem(r, n, "a check is a mapping: {field, in | not_in | at_most}");
        return -1;
    }
    yr_only_keys(r, n, "a check", keys);
    if (yr_pick(field, check_fields, N(check_fields)) < 0)
        yr_problem(r, yr_node_or(yr_get(r, n, "field"), n), "field '%s' is not one of "
                "node.state, node.jobs, node.drained_by, node.gpu_health, "
                "job.state", field ? field : "");
    if (!!in + !!not_in + !!most != 1)
        yr_problem(r, n, "a check has exactly one of in, not_in, at_most");
    else if (most) {
        char *end;
        const char *v = yr_scalar(most);
        long long m = v ? strtoll(v, &end, 10) : -1;
        if (!v || *end || m < 0)
            yr_problem(r, most, "at_most must be a whole number, 0 or more");
        else
            value = json_integer(m);
    } else if (list->type != YAML_SEQUENCE_NODE || !yr_seq_len(list)) {
        yr_problem(r, list, "in / not_in must be a list of values");
    } else {
        value = json_array();
        for (size_t i = 0; i < yr_seq_len(list); i++) {
            const char *v = yr_scalar(yr_seq_at(r, list, i));
            if (!v)
                yr_problem(r, yr_seq_at(r, list, i), "in / not_in: plain values only");
            else
                json_array_append_new(value, json_string(v));
        }
    }
    if (r->errors != before) {
        json_decref(value);
        return -1;
    }
    out->field = strdup(field);
    out->op = most ? PB_CHECK_AT_MOST : in ? PB_CHECK_IN : PB_CHECK_NOT_IN;
    out->value = value;
    return 0;
}

static pb_check *read_checks(reader *r, yaml_node_t *n, const char *what,
                             int *count)
{
    pb_check *v;

    *count = 0;
    if (!n)
        return NULL;
    if (n->type != YAML_SEQUENCE_NODE) {
        yr_problem(r, n, "%s must be a list of checks", what);
        return NULL;
    }
    v = xcalloc(yr_seq_len(n) + 1, sizeof *v);
    for (size_t i = 0; i < yr_seq_len(n); i++)
        if (read_check(r, yr_seq_at(r, n, i), &v[*count]) == 0)
            (*count)++;
    return v;
}

static void read_budgets(reader *r, yaml_node_t *n, pb_playbook *p)
{
    static const char *const keys[] = {"per", "max", "window", NULL};

    if (!n)
        return;
    if (n->type != YAML_SEQUENCE_NODE) {
        yr_problem(r, n, "budgets must be a list of {per, max, window}");
        return;
    }
    p->budgets = xcalloc(yr_seq_len(n) + 1, sizeof *p->budgets);
    for (size_t i = 0; i < yr_seq_len(n); i++) {
        yaml_node_t *b = yr_seq_at(r, n, i);
        const char *per = yr_scalar(yr_get(r, b, "per")), *max = yr_scalar(yr_get(r, b, "max"));
        int64_t window = yr_duration_ms(yr_scalar(yr_get(r, b, "window")));
        char *end = NULL;
        long m = max ? strtol(max, &end, 10) : 0;
        if (!b || b->type != YAML_MAPPING_NODE) {
            yr_problem(r, b, "a budget is a mapping {per, max, window}");
            continue;
        }
        yr_only_keys(r, b, "a budget", keys);
        if (!per || (strcmp(per, "rack") && strcmp(per, "cluster")))
            yr_problem(r, yr_node_or(yr_get(r, b, "per"), b), "budget: per is rack or "
                    "cluster");
        else if (!max || *end || m < 1 || m > 100000)
            yr_problem(r, yr_node_or(yr_get(r, b, "max"), b), "budget: max is a whole "
                    "number from 1");
        else if (window < 0)
            yr_problem(r, yr_node_or(yr_get(r, b, "window"), b), "budget: window is a "
                    "duration such as 30m or 1h");
        else
            p->budgets[p->nbudgets++] =
                (pb_budget){!strcmp(per, "rack"), (int)m, window};
    }
}

static void read_verify(reader *r, yaml_node_t *n, pb_playbook *p)
{
    static const char *const keys[] = {"timeout", "checks", NULL};
    const char *t;

    if (!n)
        return;
    if (n->type != YAML_MAPPING_NODE) {
        yr_problem(r, n, "verify is a mapping {timeout, checks}");
        return;
    }
    yr_only_keys(r, n, "verify", keys);
    t = yr_scalar(yr_get(r, n, "timeout"));
    if ((p->verify_timeout = yr_duration_ms(t)) < 0)
        yr_problem(r, yr_node_or(yr_get(r, n, "timeout"), n), "verify: timeout is a "
                "duration such as 60s or 5m");
    p->verify = read_checks(r, yr_get(r, n, "checks"), "verify.checks",
                            &p->nverify);
    if (!p->nverify)
        yr_problem(r, n, "verify: checks must name at least one check");
}

/* The guardrails a playbook's own data must keep (docs/ACTIONS.md). */
static void check_guardrails(reader *r, yaml_node_t *n, const char *id,
                             const pb_playbook *p)
{
    if (p->cls == PB_CLASS_CHANGE && p->approval == APPR_AUTO)
        yr_problem(r, n, "playbook %s: a change needs approval canary or hitl, "
                "not auto", id);
    if (p->cls == PB_CLASS_DESTRUCTIVE && p->approval != APPR_HITL)
        yr_problem(r, n, "playbook %s: a destructive playbook always needs "
                "approval hitl", id);
    if (p->cls == PB_CLASS_JOB && !p->nbudgets)
        yr_problem(r, n, "playbook %s: class job needs a budget", id);
    if (p->cls == PB_CLASS_RECOVERY && p->nbudgets)
        yr_problem(r, n, "playbook %s: recovery is never held back by a budget",
                id);
    if (!pb_calls_for(p->steps, PB_ON_SLURM) &&
        !pb_calls_for(p->steps, PB_ON_K8S))
        yr_problem(r, n, "playbook %s: steps name no call", id);
}

void cat_read_playbook(reader *r, pb_catalog *c, yaml_node_t *n)
{
    static const char *const keys[] = {
        "id", "version", "class", "approval", "mode", "what", "budgets",
        "preconditions", "steps", "verify", "rollback", NULL};
    const char *id, *ver, *v;
    int before = r->errors, k;
    pb_playbook p = {0};

    if (!n || n->type != YAML_MAPPING_NODE) {
        yr_problem(r, n, "a playbook must be a mapping (id, version, class, "
                      "approval, mode, steps)");
        return;
    }
    yr_only_keys(r, n, "a playbook", keys);
    id = yr_scalar(yr_get(r, n, "id"));
    ver = yr_scalar(yr_get(r, n, "version"));
    if (!yr_playbook_id_ok(id))
        yr_problem(r, yr_node_or(yr_get(r, n, "id"), n), "playbook: id missing or not "
                "'family.name'");
    else if (pb_playbook_find(c, id))
        yr_problem(r, yr_get(r, n, "id"), "playbook '%s' defined twice", id);
    if (!yr_version_ok(ver))
        yr_problem(r, yr_node_or(yr_get(r, n, "version"), n), "playbook %s: version "
                "'%s' is not MAJOR.MINOR.PATCH", id ? id : "?", ver ? ver : "");
    if (!yr_scalar(yr_get(r, n, "what")))
        yr_problem(r, n, "playbook %s: 'what' (what it does) is required",
                id ? id : "?");
    v = yr_scalar(yr_get(r, n, "class"));
    if ((k = yr_pick(v, cat_classes, N(cat_classes))) < 0)
        yr_problem(r, yr_node_or(yr_get(r, n, "class"), n), "class '%s' is not "
                "read_only, notify, job, change, recovery or destructive",
                v ? v : "");
    p.cls = (pb_class)k;
    v = yr_scalar(yr_get(r, n, "approval"));
    if ((k = yr_pick(v, cat_approvals, N(cat_approvals))) < 0)
        yr_problem(r, yr_node_or(yr_get(r, n, "approval"), n), "approval '%s' is not "
                "auto, hitl or canary", v ? v : "");
    p.approval = (pb_approval)k;
    v = yr_scalar(yr_get(r, n, "mode"));
    if ((k = yr_pick(v, cat_modes, N(cat_modes))) < 0)
        yr_problem(r, yr_node_or(yr_get(r, n, "mode"), n), "mode '%s' is not shadow, "
                "canary or on", v ? v : "");
    p.mode = (pb_mode)k;
    read_budgets(r, yr_get(r, n, "budgets"), &p);
    p.pre = read_checks(r, yr_get(r, n, "preconditions"), "preconditions", &p.npre);
    read_calls(r, yr_get(r, n, "steps"), "steps", p.steps);
    read_verify(r, yr_get(r, n, "verify"), &p);
    read_calls(r, yr_get(r, n, "rollback"), "rollback", p.rollback);
    if (r->errors == before)
        check_guardrails(r, n, id, &p);
    if (r->errors != before) {
        cat_free_playbook(&p);
        return;
    }
    p.id = strdup(id);
    p.version = strdup(ver);
    p.what = strdup(yr_scalar(yr_get(r, n, "what")));
    p.file = strdup(r->name);
    p.line = (int)n->start_mark.line + 1;
    cat_push_playbook(c, &p);
}

/* correlations: [{scenario, kind, by, events: [sig ids], count, window}].
 * Names are checked against the whole catalog in pb_catalog_link. */
void cat_read_correlation(reader *r, pb_catalog *c, yaml_node_t *n)
{
    static const char *const keys[] = {"scenario", "kind", "by", "events",
                                       "count", "window", NULL};
    pb_correlation k = {0};
    yaml_node_t *evs = yr_get(r, n, "events"), *cn = yr_get(r, n, "count");
    const char *sc = yr_scalar(yr_get(r, n, "scenario"));
    int before = r->errors, kind, by;
    size_t nev;

    if (!n || n->type != YAML_MAPPING_NODE) {
        yr_problem(r, n, "a correlation is a mapping (scenario, kind, by, "
                      "events, window)");
        return;
    }
    yr_only_keys(r, n, "a correlation", keys);
    if (!sc || !*sc)
        yr_problem(r, n, "correlation: 'scenario' (what it opens) is required");
    kind = yr_pick(yr_scalar(yr_get(r, n, "kind")), cat_corr_kinds, 3);
    if (kind < 0)
        yr_problem(r, yr_node_or(yr_get(r, n, "kind"), n), "correlation %s: kind must "
                "be threshold, sequence or group", sc ? sc : "?");
    by = yr_pick(yr_scalar(yr_get(r, n, "by")), cat_corr_bys, 2);
    if (by < 0)
        yr_problem(r, yr_node_or(yr_get(r, n, "by"), n), "correlation %s: by must be "
                "host or job", sc ? sc : "?");
    k.window = yr_duration_ms(yr_scalar(yr_get(r, n, "window")));
    if (k.window < 0)
        yr_problem(r, yr_node_or(yr_get(r, n, "window"), n), "correlation %s: window "
                "must be a duration such as 60s or 5m", sc ? sc : "?");
    nev = evs && evs->type == YAML_SEQUENCE_NODE ? yr_seq_len(evs) : 0;
    if (nev == 0 || nev > PB_CORR_MAX_EVENTS) {
        yr_problem(r, yr_node_or(evs, n), "correlation %s: events must list 1 to "
                "%d signature ids", sc ? sc : "?", PB_CORR_MAX_EVENTS);
        nev = 0;
    }
    for (size_t i = 0; i < nev; i++) {
        yaml_node_t *ev = yr_seq_at(r, evs, i);
        const char *id = yr_scalar(ev);
        if (!id || !*id) {
            yr_problem(r, ev, "correlation %s: an event is a signature id",
                    sc ? sc : "?");
            continue;
        }
        for (int j = 0; j < k.nevents; j++)
            if (!strcmp(k.events[j], id))
                yr_problem(r, ev, "correlation %s: event %s listed twice",
                        sc ? sc : "?", id);
        k.events[k.nevents++] = strdup(id);
    }
    if (kind == PB_CORR_THRESHOLD) {
        const char *v = yr_scalar(cn);
        char *end = NULL;
        long cnt = v ? strtol(v, &end, 10) : 0;
        if (!v || *end || cnt < 2 || cnt > 100000)
            yr_problem(r, yr_node_or(cn, n), "correlation %s: a threshold needs "
                    "count: 2 or more", sc ? sc : "?");
        if (nev > 1)
            yr_problem(r, evs, "correlation %s: a threshold counts one event "
                    "(list the others in a group)", sc ? sc : "?");
        k.count = (int)cnt;
    } else if (kind >= 0) {
        if (cn)
            yr_problem(r, cn, "correlation %s: count is for a threshold only",
                    sc ? sc : "?");
        if (nev == 1)
            yr_problem(r, evs, "correlation %s: a %s needs two events or more",
                    sc ? sc : "?", cat_corr_kinds[kind]);
    }
    if (r->errors != before) {
        cat_free_correlation(&k);
        return;
    }
    k.scenario = strdup(sc);
    k.kind = (pb_corr_kind)kind;
    k.by = (pb_corr_by)by;
    snprintf(k.where, sizeof k.where, "%s:%zu:%zu", r->name,
             n->start_mark.line + 1, n->start_mark.column + 1);
    if (c->ncorrs == c->capcorrs) {
        c->capcorrs = c->capcorrs ? c->capcorrs * 2 : 8;
        c->corrs = xrealloc(c->corrs, c->capcorrs * sizeof *c->corrs);
    }
    c->corrs[c->ncorrs++] = k;
}
