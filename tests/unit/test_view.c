/* The operator's views (view/): the last version of each incident,
 * selections by status, scenario family, cluster, node, job and time,
 * newest first; --since's forms; an action's state from its audit trail;
 * the executor's id of each action of an incident. */
#include "check.h"
#include "core/ts.h"
#include "rules/playbooks.h"
#include "view/incidents.h"
#include "view/render.h"
#include "view/report.h"
#include "view/trail.h"

#define INC(id, scen, status, node, job, opened, updated, extra)                \
    "{\"id\":\"" id "\",\"scenario\":\"" scen "\",\"status\":\"" status     \
    "\",\"scope\":{\"cluster\":\"c1\",\"node\":\"" node "\"},"              \
    "\"chain\":[{\"role\":\"root\",\"node\":\"" node "\"},{\"role\":"       \
    "\"effect\",\"job\":\"" job "\"}],\"opened\":\"" opened                 \
    "\",\"updated\":\"" updated "\"" extra "}"

static void add(vw_incidents *v, const char *s)
{
    CHECK_INT(vw_incidents_add(v, s, strlen(s)), 0);
}

static size_t count(const vw_incidents *v, vw_filter f)
{
    size_t n;
    free(vw_select(v, &f, &n));
    return n;
}

static void test_select(void)
{
    vw_incidents *v = vw_incidents_new();
    const json_t **sel;
    size_t n;
    int64_t t;

    add(v, INC("inc-1", "hw.ecc_uncorrectable", "open", "gpu-1", "100",
               "2026-03-02T08:00:00.000Z", "2026-03-02T08:00:00.000Z", ""));
    add(v, INC("inc-2", "nccl.timeout", "open", "gpu-2", "200",
               "2026-03-02T09:00:00.000Z", "2026-03-02T09:00:00.000Z", ""));
    /* a later version of inc-1 replaces the first */
    add(v, INC("inc-1", "hw.ecc_uncorrectable", "resolved", "gpu-1", "100",
               "2026-03-02T08:00:00.000Z", "2026-03-02T10:00:00.000Z", ""));
    add(v, INC("inc-3", "node.down", "resolved", "gpu-3", "300",
               "2026-03-02T07:00:00.000Z", "2026-03-02T07:30:00.000Z",
               ",\"merged_into\":\"inc-9\""));
    CHECK_INT(vw_incidents_add(v, "{\"id\":\"x\"}", 10), -1);
    CHECK_INT(vw_incidents_add(v, "not json", 8), -1);
    CHECK_INT((int)vw_incidents_count(v), 3);
    CHECK_STR(vw_status(vw_incidents_get(v, "inc-3")), "merged");
    CHECK_STR(vw_status(vw_incidents_get(v, "inc-1")), "resolved");

    sel = vw_select(v, &(vw_filter){0}, &n);
    CHECK_INT((int)n, 3);
    CHECK_STR(json_string_value(json_object_get(sel[0], "id")), "inc-2");
    CHECK_STR(json_string_value(json_object_get(sel[2], "id")), "inc-3");
    free(sel);
    CHECK_INT((int)count(v, (vw_filter){.status = "open"}), 1);
    CHECK_INT((int)count(v, (vw_filter){.status = "merged"}), 1);
    CHECK_INT((int)count(v, (vw_filter){.scenario = "hw."}), 1);
    CHECK_INT((int)count(v, (vw_filter){.scenario = "hw"}), 0);
    CHECK_INT((int)count(v, (vw_filter){.scenario = "nccl.timeout"}), 1);
    CHECK_INT((int)count(v, (vw_filter){.cluster = "c1"}), 3);
    CHECK_INT((int)count(v, (vw_filter){.cluster = "c2"}), 0);
    CHECK_INT((int)count(v, (vw_filter){.node = "gpu-2"}), 1);
    CHECK_INT((int)count(v, (vw_filter){.job = "300"}), 1);
    CHECK_INT((int)count(v, (vw_filter){.job = "30"}), 0);
    CHECK_INT(ts_parse_rfc3339("2026-03-02T08:30:00Z", &t), 0);
    CHECK_INT((int)count(v, (vw_filter){.since_us = t}), 2); /* inc-1 and 2 */
    vw_incidents_free(v);
}

static void test_since(void)
{
    int64_t now = 1000 * 86400 * TS_SEC, t;

    CHECK_INT(vw_since("90m", now, &t), 0);
    CHECK(t == now - 90 * TS_MIN);
    CHECK_INT(vw_since("7d", now, &t), 0);
    CHECK(t == now - 7 * 86400 * TS_SEC);
    CHECK_INT(vw_since("2026-03-02T08:00:00Z", now, &t), 0);
    CHECK_INT(vw_since("7w", now, &t), -1);
    CHECK_INT(vw_since("h", now, &t), -1);
    CHECK_INT(vw_since("-3h", now, &t), -1);
    CHECK_INT(vw_since("", now, &t), -1);
}

static void test_trail(void)
{
    static const char *const recs[] = {
        "{\"action\":\"act-1\",\"incident\":\"inc-1\",\"event\":\"request\",\"who\":\"engine\"}",
        "{\"action\":\"act-1\",\"incident\":\"inc-1\",\"event\":\"waiting\",\"who\":\"engine\"}",
        "{\"action\":\"act-2\",\"incident\":\"inc-2\",\"event\":\"done\",\"who\":\"engine\"}",
        "{\"action\":\"act-1\",\"incident\":\"inc-1\",\"event\":\"approved\",\"who\":\"human:alice\"}",
        "{\"action\":\"act-1\",\"incident\":\"inc-1\",\"event\":\"step_ok\",\"who\":\"human:alice\"}",
    };
    vw_trail *t = vw_trail_new("inc-1");
    const char *who = NULL;

    for (size_t i = 0; i < sizeof recs / sizeof *recs; i++)
        CHECK_INT(vw_trail_add(t, recs[i], strlen(recs[i])), 0);
    CHECK_INT(vw_trail_add(t, "{\"event\":\"done\"}", 16), -1);
    CHECK_INT((int)json_array_size(vw_trail_records(t)), 4); /* not inc-2's */
    /* step_ok changes nothing: approved, by alice, is the state */
    CHECK_STR(vw_action_state(t, "act-1", &who), "approved");
    CHECK_STR(who, "human:alice");
    CHECK(vw_action_state(t, "act-2", NULL) == NULL);
    CHECK(vw_event_state("step_ok") == NULL);
    CHECK_STR(vw_event_state("resumed"), "running");
    vw_trail_free(t);
}

/* The id of an incident's action is the one the correlator gave its
 * request (correlate/correlator.c: pb_action_id of the action sent). */
static void test_action_ids(void)
{
    const char *txt = "{\"id\":\"inc-1\",\"scenario\":\"x.y\",\"actions\":[{\"playbook\":"
                      "\"node.drain\",\"approval\":\"hitl\",\"target\":{\"node\":\"g\"},"
                      "\"params\":{},\"state\":\"proposed\"}]}";
    json_t *inc = json_loads(txt, 0, NULL), *acts;
    char id[32], rec[256];
    vw_trail *t = vw_trail_new(NULL);

    pb_action_id("inc-1", json_array_get(json_object_get(inc, "actions"), 0), id,
                 sizeof id);
    snprintf(rec, sizeof rec, "{\"action\":\"%s\",\"incident\":\"inc-1\","
             "\"event\":\"waiting\",\"who\":\"engine\"}", id);
    CHECK_INT(vw_trail_add(t, rec, strlen(rec)), 0);
    acts = vw_actions(inc, t);
    CHECK_STR(json_string_value(json_object_get(json_array_get(acts, 0), "id")), id);
    CHECK_STR(json_string_value(json_object_get(json_array_get(acts, 0), "state")),
              "waiting");
    json_decref(acts);
    json_decref(inc);
    vw_trail_free(t);
}

static void test_percentile(void)
{
    double v[] = {9, 1, 5, 3, 7, 2, 8, 4, 6, 10};

    CHECK(vw_percentile(v, 10, 50) == 5);  /* nearest rank: the 5th */
    CHECK(vw_percentile(v, 10, 90) == 9);
    CHECK(vw_percentile(v, 10, 100) == 10);
    CHECK(vw_percentile(v, 1, 90) == 1);
    CHECK(vw_percentile(v, 0, 50) == 0);
}

int main(void)
{
    test_percentile();
    test_select();
    test_since();
    test_trail();
    test_action_ids();
    return check_report();
}
