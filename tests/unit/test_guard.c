/* Guardrails on the built-in playbooks: the approval the catalog requires
 * (never less for what a request says), what runs alone, what waits for a
 * human and why, budgets per rack and per cluster (recovery never held
 * back), shadow and canary modes, and preconditions read on facts. */
#include "check.h"
#include "actions/guard.h"

#define MIN (60 * 1000LL)

static guard_req req(const pb_catalog *c, const char *playbook,
                     const char *rack, int64_t now)
{
    guard_req r = {0};

    r.pb = pb_playbook_find(c, playbook);
    r.mode = PB_MODE_ON;
    r.approval = APPR_AUTO;
    r.cluster = "c1";
    r.rack = rack;
    r.now = now;
    return r;
}

static void test_classes(const pb_catalog *c, guard *g)
{
    guard_req r = req(c, "ticket.create", "r1", 0);
    guard_decision d = guard_check(g, &r);

    CHECK_INT(d.verdict, GUARD_RUN); /* a notification runs alone */
    r = req(c, "node.cleanup", "r1", 0);
    d = guard_check(g, &r);
    CHECK_INT(d.verdict, GUARD_APPROVAL);
    CHECK_STR(d.why, "node.cleanup 1.0.0 is destructive: it always needs an "
                     "approval");
    r.canary = 1; /* a canary node does not stand in for an approval */
    CHECK_INT(guard_check(g, &r).verdict, GUARD_APPROVAL);
    r.approved = 1;
    CHECK_INT(guard_check(g, &r).verdict, GUARD_RUN);
    r = req(c, "node.drain", "r1", 0);
    CHECK_INT(guard_check(g, &r).verdict, GUARD_APPROVAL); /* not a canary */
    r.canary = 1;
    CHECK_INT(guard_check(g, &r).verdict, GUARD_RUN);
    r.approval = APPR_HITL; /* the executor requires a human */
    r.approval_why = "scenario hw.ecc_uncorrectable asks for hitl";
    d = guard_check(g, &r);
    CHECK_INT(d.verdict, GUARD_APPROVAL);
    CHECK_STR(d.why, "node.drain 1.0.0 needs a human's approval: scenario "
                     "hw.ecc_uncorrectable asks for hitl");
    /* the playbook's own approval holds whatever the caller passes: a GPU
     * reset (hitl) does not run alone on a canary node */
    r = req(c, "gpu.reset", "r1", 0);
    r.canary = 1;
    CHECK_INT(guard_check(g, &r).verdict, GUARD_APPROVAL);
}

/* The approval is the catalog's: the playbook's, its class's, and what the
 * incident's scenario asks for it; the request can only add to it. */
static void test_required(const pb_catalog *c)
{
    const pb_playbook *cancel = pb_playbook_find(c, "job.cancel");
    const pb_playbook *resume = pb_playbook_find(c, "node.resume");
    const pb_playbook *drain = pb_playbook_find(c, "node.drain");
    const pb_playbook *cleanup = pb_playbook_find(c, "node.cleanup");
    const pb_playbook *resubmit = pb_playbook_find(c, "job.resubmit");
    char why[160];

    /* job.cancel: auto for an uncorrectable ECC error, hitl for a hang */
    CHECK_INT(guard_required(c, cancel, "hw.ecc_uncorrectable", NULL,
                             APPR_AUTO, why, sizeof why), APPR_AUTO);
    CHECK_INT(guard_required(c, cancel, "nccl.hang_busy_wait", NULL,
                             APPR_AUTO, why, sizeof why), APPR_HITL);
    CHECK_STR(why, "scenario nccl.hang_busy_wait asks for hitl");
    /* the request's field only ever makes it stricter */
    CHECK_INT(guard_required(c, cancel, "hw.ecc_uncorrectable", NULL,
                             APPR_HITL, why, sizeof why), APPR_HITL);
    CHECK_STR(why, "the request asks for hitl");
    /* no scenario proposes node.resume; an unknown scenario proposes nothing */
    CHECK_INT(guard_required(c, resume, "hw.ecc_uncorrectable", NULL,
                             APPR_AUTO, why, sizeof why), APPR_HITL);
    CHECK_STR(why, "scenario hw.ecc_uncorrectable does not propose it");
    CHECK_INT(guard_required(c, cancel, "no.such_scenario", NULL, APPR_AUTO,
                             why, sizeof why), APPR_HITL);
    CHECK_STR(why, "scenario 'no.such_scenario' is not in this executor's rules");
    CHECK_INT(guard_required(c, cancel, NULL, NULL, APPR_AUTO, why, sizeof why),
              APPR_HITL);
    /* canary where the scenario says canary: the node list decides */
    CHECK_INT(guard_required(c, drain, "hw.ecc_correctable_rising", NULL,
                             APPR_AUTO, why, sizeof why), APPR_CANARY);
    CHECK_INT(guard_required(c, drain, "hw.ecc_uncorrectable", NULL,
                             APPR_AUTO, why, sizeof why), APPR_HITL);
    /* destructive is hitl whatever anything says */
    CHECK_INT(guard_required(c, cleanup, "node.stale_state", NULL, APPR_AUTO,
                             why, sizeof why), APPR_HITL);
    CHECK_STR(why, "its playbook asks for hitl");
    /* a dependency chain keeps its root's response, and resubmits the
     * pipeline once a human approves: the same playbook on the same job,
     * which the request does not tell apart, so the strictest stands */
    CHECK_INT(guard_required(c, resubmit, "cascade.dependency_chain",
                             "oom.batch_size", APPR_AUTO, why, sizeof why),
              APPR_HITL);
    CHECK_INT(guard_required(c, pb_playbook_find(c, "ticket.create"),
                             "cascade.dependency_chain", "creds.expired",
                             APPR_AUTO, why, sizeof why), APPR_AUTO);
    /* the root counts only for a scenario that keeps the root's response */
    CHECK_INT(guard_required(c, cancel, "cascade.node_crash",
                             "hw.ecc_uncorrectable", APPR_AUTO, why, sizeof why),
              APPR_HITL);
}

/* node.drain: 2 per rack and 10 per cluster an hour. The third drain in a
 * rack waits, another rack still drains, an approval overrides the budget,
 * the hour passing frees it, and a resume is never held back. */
static void test_budgets(const pb_catalog *c)
{
    guard *g = guard_new();
    guard_req r = req(c, "node.drain", "r1", 0);
    guard_decision d;

    r.canary = 1;
    for (int i = 0; i < 2; i++) {
        r.now = i * MIN;
        CHECK_INT(guard_check(g, &r).verdict, GUARD_RUN);
        guard_record(g, &r);
    }
    r.now = 5 * MIN;
    d = guard_check(g, &r);
    CHECK_INT(d.verdict, GUARD_APPROVAL);
    CHECK_STR(d.why, "node.drain budget spent: 2 of 2 per rack in 60 min "
                     "(c1/r1); waits for a human");
    r.approved = 1;
    CHECK_INT(guard_check(g, &r).verdict, GUARD_RUN);
    r.approved = 0;
    guard_req other = r;
    other.rack = "r2";
    CHECK_INT(guard_check(g, &other).verdict, GUARD_RUN);
    guard_req back = req(c, "node.resume", "r1", 5 * MIN);
    for (int i = 0; i < 20; i++) {
        CHECK_INT(guard_check(g, &back).verdict, GUARD_RUN);
        guard_record(g, &back);
    }
    r.now = 61 * MIN; /* the first drain left the window */
    CHECK_INT(guard_check(g, &r).verdict, GUARD_RUN);
    /* the cluster cap: 10 an hour over all racks */
    guard *h = guard_new();
    guard_req x = req(c, "node.drain", NULL, 0);
    char rack[8];
    x.canary = 1;
    for (int i = 0; i < 10; i++) {
        snprintf(rack, sizeof rack, "r%d", i);
        x.rack = rack;
        CHECK_INT(guard_check(h, &x).verdict, GUARD_RUN);
        guard_record(h, &x);
    }
    x.rack = "r99";
    d = guard_check(h, &x);
    CHECK_INT(d.verdict, GUARD_APPROVAL);
    CHECK(strstr(d.why, "10 of 10 per cluster") != NULL);
    guard_free(h);
    guard_free(g);
}

struct uses {
    int n;
    char line[4][96];
};

static void collect(void *arg, const guard_use *u)
{
    struct uses *w = arg;

    if (w->n < 4)
        snprintf(w->line[w->n++], sizeof w->line[0], "%s %s %lld %d/%d",
                 u->playbook, u->scope, (long long)u->window, u->used, u->max);
}

/* Two budgets of one scope (an hour's and a day's, per cluster) each
 * count an action once; guard_each_use reports each with its use. */
static void test_budget_use(void)
{
    pb_budget b[2] = {{0, 2, 60 * MIN}, {0, 3, 24 * 60 * MIN}};
    pb_playbook pb = {.id = "job.resubmit", .version = "1.0.0",
                      .cls = PB_CLASS_JOB, .approval = APPR_AUTO,
                      .mode = PB_MODE_ON, .budgets = b, .nbudgets = 2};
    guard *g = guard_new();
    guard_req r = {.pb = &pb, .mode = PB_MODE_ON, .approval = APPR_AUTO,
                   .cluster = "c1", .rack = "r1"};
    struct uses w = {0};

    CHECK_INT(guard_check(g, &r).verdict, GUARD_RUN);
    guard_record(g, &r);
    r.now = 10 * MIN; /* one action counted once: 1 of 2, not 2 of 2 */
    CHECK_INT(guard_check(g, &r).verdict, GUARD_RUN);
    guard_record(g, &r);
    r.now = 70 * MIN; /* the hour's budget has room again, the day's 2/3 */
    CHECK_INT(guard_check(g, &r).verdict, GUARD_RUN);
    guard_record(g, &r);
    r.now = 80 * MIN;
    CHECK_INT(guard_check(g, &r).verdict, GUARD_APPROVAL); /* day: 3 of 3 */
    guard_each_use(g, 80 * MIN, collect, &w);
    CHECK_INT(w.n, 2);
    CHECK(!strcmp(w.line[0], "job.resubmit c1 3600000 1/2") ||
          !strcmp(w.line[1], "job.resubmit c1 3600000 1/2"));
    CHECK(!strcmp(w.line[0], "job.resubmit c1 86400000 3/3") ||
          !strcmp(w.line[1], "job.resubmit c1 86400000 3/3"));
    guard_free(g);
}

static void test_modes(const pb_catalog *c, guard *g)
{
    guard_req r = req(c, "job.resubmit", "r1", 0);

    CHECK_INT(guard_check(g, &r).verdict, GUARD_RUN);
    r.mode = PB_MODE_SHADOW;
    CHECK_INT(guard_check(g, &r).verdict, GUARD_SHADOW);
    r.approved = 1; /* shadow proposes, whatever anyone says */
    CHECK_INT(guard_check(g, &r).verdict, GUARD_SHADOW);
    r = req(c, "node.drain", "r1", 0);
    r.mode = PB_MODE_CANARY;
    CHECK_INT(guard_check(g, &r).verdict, GUARD_APPROVAL);
    r.canary = 1;
    CHECK_INT(guard_check(g, &r).verdict, GUARD_RUN);
}

static void test_preconditions(const pb_catalog *c)
{
    const pb_playbook *drain = pb_playbook_find(c, "node.drain");
    const pb_playbook *reset = pb_playbook_find(c, "gpu.reset");
    json_t *f = json_pack("{s:s, s:i, s:s}", "node.drained_by", "human",
                          "node.jobs", 1, "node.state", "DRAIN");
    char why[200];

    CHECK_INT(guard_checks(drain->pre, drain->npre, f, why, sizeof why), -1);
    CHECK_STR(why, "node.drained_by is human, in [\"human\"]");
    CHECK_INT(guard_checks(reset->pre, reset->npre, f, why, sizeof why), -1);
    CHECK_STR(why, "node.jobs is 1, more than 0");
    json_object_set_new(f, "node.drained_by", json_string("cascade"));
    json_object_set_new(f, "node.jobs", json_integer(0));
    CHECK_INT(guard_checks(drain->pre, drain->npre, f, why, sizeof why), 0);
    CHECK_INT(guard_checks(reset->pre, reset->npre, f, why, sizeof why), 0);
    json_object_del(f, "node.state");
    CHECK_INT(guard_checks(reset->pre, reset->npre, f, why, sizeof why), -1);
    CHECK_STR(why, "node.state is unknown");
    json_decref(f);
}

int main(void)
{
    pb_catalog *c = pb_catalog_embedded();
    guard *g = guard_new();

    test_classes(c, g);
    test_required(c);
    test_budgets(c);
    test_budget_use();
    test_modes(c, g);
    test_preconditions(c);
    guard_free(g);
    pb_catalog_free(c);
    return check_report();
}
