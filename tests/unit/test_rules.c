/* The response catalog as data: the built-in rule files load whole, and
 * every kind of mistake in a rule file is reported with its position. */
#include <stdlib.h>

#include "check.h"
#include "core/signal.h"
#include "rules/playbooks.h"

static char errs[4096];

static void collect(void *arg, const char *where, const char *msg)
{
    size_t n = strlen(errs);
    (void)arg;
    snprintf(errs + n, sizeof errs - n, "%s: %s\n", where, msg);
}

static int add(pb_catalog *c, const char *text)
{
    errs[0] = '\0';
    return pb_catalog_add(c, "t.yaml", text, strlen(text), collect, NULL);
}

static void test_embedded(void)
{
    pb_catalog *c = pb_catalog_embedded();
    const pb_scenario *s = pb_find(c, "hw.gpu_off_bus");

    CHECK(pb_catalog_count(c) >= 8);
    /* no built-in pattern backtracks catastrophically or escapes the
     * prefilter (what `rules check` warns of) */
    CHECK_INT(pb_catalog_lint(c, collect, NULL), 0);
    CHECK(s != NULL);
    if (s) {
        CHECK_INT(s->node_level, 1);
        CHECK_INT(s->nsteps, 5);
        CHECK_STR(s->steps[0].playbook, "node.drain");
        CHECK_INT(s->steps[0].approval, APPR_HITL);
        CHECK_INT(s->steps[1].fix, PB_FIX_EXCLUDE_NODE);
        CHECK_INT(s->steps[1].target, PB_TARGET_EACH_JOB);
        CHECK_STR(s->steps[4].category, "hardware");
    }
    s = pb_find(c, "oom.batch_size");
    CHECK(s && s->node_level == 0 && s->steps[0].fix == PB_FIX_BATCH);
    CHECK(pb_find(c, "cascade.node_crash") != NULL);
    CHECK(pb_find(c, "no.such") == NULL);
    CHECK(pb_find(c, NULL) == NULL);
    pb_catalog_free(c);
}

static void test_errors(void)
{
    pb_catalog *c = pb_catalog_new();

    CHECK_INT(add(c, "family: f\nscenarios:\n  - id: a.b\n    what: w\n"
                     "    todo: t\n    actions:\n"
                     "      - {playbook: node.drain, approval: maybe, target: node}\n"),
              1);
    CHECK_STR(errs, "t.yaml:7:42: approval 'maybe' is not auto, hitl or canary\n");
    CHECK_INT(pb_catalog_count(c), 0); /* nothing half-taken */
    CHECK_INT(add(c, "family: f\nscenarios:\n  - id: a.b\n    todo: t\n"
                     "    colour: red\n    actions: []\n"), 2);
    CHECK_STR(errs, "t.yaml:5:5: unknown key 'colour' in a scenario (known: id, "
              "node_level, what, todo, root_actions, actions, escalates)\n"
                    "t.yaml:3:5: scenario a.b: 'what' is required\n");
    CHECK_INT(add(c, "family: f\nscenarios:\n  - id: a.b\n    what: w\n"
                     "    todo: t\n    actions:\n"
                     "      - {playbook: ticket.create, approval: auto, "
                     "target: node, fix: ticket}\n"
                     "      - {playbook: Node.Drain, approval: auto, target: room}\n"),
              3);
    CHECK(strstr(errs, "t.yaml:7:9: fix: ticket needs a category\n") != NULL);
    CHECK(strstr(errs, "t.yaml:8:20: action: playbook 'Node.Drain' is not "
                       "'family.name'\n") != NULL);
    CHECK(strstr(errs, "t.yaml:8:56: target 'room' is not node, job, each_job, "
                       "each_affected, rack, team or none\n") != NULL);
    CHECK_INT(add(c, "family: f\nscenarios: [\n"), 1);
    CHECK(strncmp(errs, "t.yaml:3:1: YAML: ", 18) == 0);
    CHECK_INT(add(c, "scenarios: {}\n"), 2);
    /* a valid one, then the same id again */
    CHECK_INT(add(c, "family: f\nscenarios:\n  - id: a.b\n    what: w\n"
                     "    todo: t\n    actions: []\n"), 0);
    CHECK_INT(pb_catalog_count(c), 1);
    CHECK_INT(add(c, "family: f\nscenarios:\n  - id: a.b\n    what: w\n"
                     "    todo: t\n    actions: []\n"), 1);
    CHECK_STR(errs, "t.yaml:3:9: scenario 'a.b' defined twice\n");
    CHECK_INT(pb_catalog_load_dir(c, "/nonexistent-rules", collect, NULL), -1);
    pb_catalog_free(c);
}

/* Signature mistakes: a pattern that does not compile, a field name the
 * classifier does not know, a fact kind a signature cannot make, a source
 * without text, a scenario missing from the catalog (found by link). */
static void test_signature_errors(void)
{
    pb_catalog *c = pb_catalog_new();

    CHECK_INT(add(c, "family: f\nsignatures:\n"
                     "  - id: s1\n    source: app\n    fact: job_fault\n"
                     "    match: 'a(b'\n"
                     "    examples: [{line: x, scenario: none}]\n"), 1);
    CHECK(strstr(errs, "t.yaml:6:12: signature s1: match: missing closing "
                       "parenthesis at offset 3\n") != NULL);
    CHECK_INT(add(c, "family: f\nsignatures:\n"
                     "  - id: s2\n    source: metric\n    fact: telepathy\n"
                     "    match: '(?<colour>red)'\n"
                     "    examples: [{line: red, fact: job_fault}]\n"), 3);
    CHECK(strstr(errs, "t.yaml:4:13: signature s2: source 'metric' is not "
                       "kernel, app, ray, slurm, k8s or alertmanager\n") != NULL);
    CHECK(strstr(errs, "t.yaml:5:11: signature s2: fact 'telepathy' is not a "
                       "fact kind a signature can make\n") != NULL);
    CHECK(strstr(errs, "t.yaml:6:12: match: field (?<colour>...) is not one "
                       "of host") != NULL);
    CHECK_INT(add(c, "family: f\nsignatures:\n"
                     "  - id: s3\n    source: k8s\n    fact: job_fault\n"
                     "    scenario: no.such\n    match: 'x'\n"
                     "    examples: [{line: x, scenario: no.such}]\n"
                     "xid_codes:\n  - {codes: [79, 79], scenario: no.such}\n"),
              1);
    CHECK(strstr(errs, "t.yaml:10:18: xid_codes: Xid 79 mapped twice\n") != NULL);
    errs[0] = '\0';
    CHECK_INT(pb_catalog_link(c, collect, NULL), 3);
    CHECK(strstr(errs, "t.yaml:3:1: signature s3: scenario 'no.such' is not "
                       "in the catalog\n") != NULL);
    CHECK(strstr(errs, "t.yaml:8:1: example of s3: scenario 'no.such'") != NULL);
    CHECK(strstr(errs, "t.yaml:10:14: xid_codes: scenario 'no.such' is not in "
                       "the catalog\n") != NULL);
    pb_catalog_free(c);
}

/* `source` as a list: every name checked, alertmanager alone, and an
 * example may only arrive on one of its signature's sources. */
static void test_source_list(void)
{
    pb_catalog *c = pb_catalog_new();
    size_t n;
    const pb_signature *g;

    CHECK_INT(add(c, "family: f\nsignatures:\n"
                     "  - id: s1\n    source: [ray, app]\n    fact: job_fault\n"
                     "    match: 'x'\n"
                     "    examples: [{line: x, fact: job_fault},\n"
                     "               {source: app, line: x, fact: job_fault}]\n"),
              0);
    g = pb_signatures(c, &n);
    CHECK_INT((int)n, 1);
    CHECK_INT(g[0].source, SRC_RAY);
    CHECK(g[0].sources == ((1u << SRC_RAY) | (1u << SRC_APP)));
    CHECK_INT(g[0].examples[0].source, SRC_RAY);
    CHECK_INT(g[0].examples[1].source, SRC_APP);
    CHECK_INT(add(c, "family: f\nsignatures:\n"
                     "  - id: s2\n    source: [ray, metric]\n"
                     "    fact: job_fault\n    match: 'x'\n"
                     "    examples: [{line: x, fact: job_fault}]\n"), 1);
    CHECK(strstr(errs, "t.yaml:4:19: signature s2: source 'metric' is not "
                       "kernel, app, ray, slurm, k8s or alertmanager\n") != NULL);
    CHECK_INT(add(c, "family: f\nsignatures:\n"
                     "  - id: s3\n    source: [alertmanager, app]\n"
                     "    fact: job_fault\n    match: 'x'\n"
                     "    examples: [{line: x, fact: job_fault}]\n"), 1);
    CHECK(strstr(errs, "t.yaml:4:13: signature s3: alertmanager reads alert "
                       "labels, not text") != NULL);
    CHECK_INT(add(c, "family: f\nsignatures:\n"
                     "  - id: s4\n    source: ray\n    fact: job_fault\n"
                     "    match: 'x'\n"
                     "    examples: [{source: kernel, line: x, fact: job_fault}]\n"),
              1);
    CHECK(strstr(errs, "t.yaml:7:25: example source 'kernel' is not one of its "
                       "signature's sources\n") != NULL);
    pb_catalog_free(c);
}

/* Playbooks (rules/playbooks.yaml): the built-in ones, every kind of
 * mistake with its position, the guardrails their data must keep, and
 * scenarios that propose a playbook the catalog lacks or ask for less
 * approval than it needs (found by link). */
static void test_playbooks(void)
{
    pb_catalog *c = pb_catalog_embedded();
    const pb_playbook *p = pb_playbook_find(c, "node.drain");
    size_t n;

    pb_playbooks(c, &n);
    CHECK(n >= 18);
    CHECK(p != NULL);
    if (p) {
        const pb_calls *k8s = pb_calls_for(p->steps, PB_ON_K8S);
        CHECK_STR(p->version, "1.0.0");
        CHECK_INT(p->cls, PB_CLASS_CHANGE);
        CHECK_INT(p->approval, APPR_CANARY);
        CHECK_INT(p->nbudgets, 2);
        CHECK_INT(p->budgets[0].per_rack, 1);
        CHECK_INT(p->budgets[0].max, 2);
        CHECK(p->budgets[0].window == 3600000);
        CHECK_STR(pb_calls_for(p->steps, PB_ON_SLURM)->v[0].op, "slurm.drain");
        CHECK(k8s && k8s->n == 2 && !strcmp(k8s->v[0].op, "k8s.cordon"));
        CHECK_STR(p->pre[0].field, "node.drained_by");
        CHECK_INT(p->pre[0].op, PB_CHECK_NOT_IN);
        CHECK(p->verify_timeout == 60000);
    }
    /* ticket.create runs the same call on any scheduler */
    p = pb_playbook_find(c, "ticket.create");
    CHECK(p && pb_calls_for(p->steps, PB_ON_SLURM) == pb_calls_for(p->steps, PB_ON_K8S));
    /* every playbook a built-in scenario proposes is defined */
    CHECK_INT(pb_catalog_link(c, collect, NULL), 0);
    pb_catalog_free(c);

    c = pb_catalog_new();
    CHECK_INT(add(c, "family: p\nplaybooks:\n"
                     "  - id: node.zap\n    version: 1.0\n    class: risky\n"
                     "    approval: auto\n    mode: on\n    what: w\n"
                     "    budgets: [{per: room, max: 1, window: 1h}]\n"
                     "    preconditions: [{field: node.mood, in: [calm]}]\n"
                     "    steps:\n      any:\n"
                     "        - {call: slurm.drain, reason: \"{why}\"}\n"
                     "      mars:\n        - {call: slack.post}\n"), 7);
    CHECK(strstr(errs, "t.yaml:4:14: playbook node.zap: version '1.0' is not "
                       "MAJOR.MINOR.PATCH\n") != NULL);
    CHECK(strstr(errs, "t.yaml:5:12: playbook node.zap: class 'risky' is not read_only, notify, "
                       "job, change, recovery or destructive\n") != NULL);
    CHECK(strstr(errs, "t.yaml:9:21: budget: per is rack or cluster\n") != NULL);
    CHECK(strstr(errs, "t.yaml:10:29: field 'node.mood' is not one of") != NULL);
    CHECK(strstr(errs, "t.yaml:13:18: call 'slurm.drain' does not belong under "
                       "'any'\n") != NULL);
    CHECK(strstr(errs, "t.yaml:13:39: argument '{why}': {why} is not one of "
                       "incident") != NULL);
    CHECK(strstr(errs, "t.yaml:14:7: unknown key 'mars' in steps (known: any, slurm, "
                       "k8s)\n")
          != NULL);
    /* a scheduler given twice (found by fuzz_rules: it leaked the first) */
    CHECK_INT(add(c, "family: p\nplaybooks:\n"
                     "  - id: a.b\n    version: 1.0.0\n    class: notify\n"
                     "    approval: auto\n    mode: on\n    what: w\n"
                     "    steps:\n      any:\n        - {call: slack.post}\n"
                     "      any:\n        - {call: slack.post}\n"), 1);
    CHECK_STR(errs, "t.yaml:12:7: 'any' given twice in steps\n");
    /* the guardrails: a change cannot be auto, a destructive cleanup needs
     * hitl, a job playbook needs a budget, recovery takes none */
    CHECK_INT(add(c, "family: p\nplaybooks:\n"
                     "  - {id: a.change, version: 1.0.0, class: change, "
                     "approval: auto, mode: on, what: w, steps: {slurm: "
                     "[{call: slurm.drain}]}}\n"
                     "  - {id: a.wipe, version: 1.0.0, class: destructive, "
                     "approval: canary, mode: on, what: w, steps: {slurm: "
                     "[{call: slurm.drain}]}}\n"
                     "  - {id: a.job, version: 1.0.0, class: job, "
                     "approval: auto, mode: on, what: w, steps: {slurm: "
                     "[{call: slurm.cancel}]}}\n"
                     "  - {id: a.back, version: 1.0.0, class: recovery, "
                     "approval: auto, mode: on, what: w, budgets: [{per: "
                     "cluster, max: 1, window: 1h}], steps: {slurm: "
                     "[{call: slurm.resume}]}}\n"), 4);
    CHECK(strstr(errs, "t.yaml:3:5: playbook a.change: a change needs approval "
                       "canary or hitl, not auto\n") != NULL);
    CHECK(strstr(errs, "t.yaml:4:5: playbook a.wipe: a destructive playbook "
                       "always needs approval hitl\n") != NULL);
    CHECK(strstr(errs, "t.yaml:5:5: playbook a.job: class job needs a budget\n")
          != NULL);
    CHECK(strstr(errs, "t.yaml:6:5: playbook a.back: recovery is never held "
                       "back by a budget\n") != NULL);
    {
        size_t none;
        pb_playbooks(c, &none);
        CHECK_INT(none, 0); /* nothing half-taken */
    }
    /* link: a scenario asking auto for a canary playbook, and one naming a
     * playbook nobody defined */
    CHECK_INT(add(c, "family: p\nplaybooks:\n"
                     "  - {id: node.drain, version: 2.1.0, class: change, "
                     "approval: canary, mode: on, what: w, steps: {slurm: "
                     "[{call: slurm.drain}]}}\n"
                     "scenarios:\n  - id: a.b\n    what: w\n    todo: t\n"
                     "    actions:\n"
                     "      - {playbook: node.drain, approval: auto, target: node}\n"
                     "      - {playbook: node.drain, approval: hitl, target: node}\n"
                     "      - {playbook: node.dance, approval: hitl, target: node}\n"),
              0);
    errs[0] = '\0';
    CHECK_INT(pb_catalog_link(c, collect, NULL), 2);
    CHECK(strstr(errs, "t.yaml:9:9: scenario a.b: node.drain asks for approval "
                       "auto; playbook node.drain 2.1.0 (change) needs at least "
                       "canary\n") != NULL);
    CHECK(strstr(errs, "t.yaml:11:9: scenario a.b: playbook 'node.dance' is not "
                       "in the catalog (rules/playbooks.yaml)\n") != NULL);
    pb_catalog_free(c);
}

int main(void)
{
    test_embedded();
    test_errors();
    test_signature_errors();
    test_source_list();
    test_playbooks();
    return check_report();
}
