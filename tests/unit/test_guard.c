/* Guardrails on the built-in playbooks: what runs alone, what waits for a
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
    r.approval = APPR_HITL; /* the incident asked for a human */
    d = guard_check(g, &r);
    CHECK_INT(d.verdict, GUARD_APPROVAL);
    CHECK_STR(d.why, "node.drain 1.0.0: the incident asks for a human's "
                     "approval");
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
    test_budgets(c);
    test_modes(c, g);
    test_preconditions(c);
    guard_free(g);
    pb_catalog_free(c);
    return check_report();
}
