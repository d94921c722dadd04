/* The HTTP executors' pieces that need no server: the executor config
 * (secrets by reference, errors with FILE:LINE:COL, modes per playbook),
 * the bodies sent to Slack, PagerDuty and Jira against their documented
 * limits, and what Kubernetes objects read back as facts and how a Job is
 * copied for a resubmission. The calls themselves are checked against a
 * server in live.act_http. */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "actions/excfg.h"
#include "actions/k8s.h"
#include "actions/slurmrest.h"
#include "actions/vendors.h"

static char dir[] = "/tmp/test_exec.XXXXXX";

static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* loads text as a config; returns 0 or -1 with err */
static int load(const pb_catalog *c, ex_conf *x, const char *text, cs_err *err)
{
    ex_conf_init(x);
    return ex_conf_load(x, write_file("act.yaml", text), c, err);
}

static void test_config(const pb_catalog *c)
{
    ex_conf x;
    cs_err err = {{0}};
    char text[1024];
    char tok[300];

    snprintf(tok, sizeof tok, "%s", write_file("jira.token", "s3cr3t-token\n"));
    setenv("TEST_EXEC_PD", "0123456789abcdef0123456789abcdef", 1);
    snprintf(text, sizeof text,
             "modes: {node.drain: canary, notify: shadow}\n"
             "jira:\n  url: https://jira.example\n  project: OPS\n"
             "  user: bot@example.com\n  token: file:%s\n"
             "pagerduty: {routing_key: env:TEST_EXEC_PD}\n"
             "http: {timeout_s: 3, ca_file: /etc/ca.pem}\n", tok);
    CHECK_INT(load(c, &x, text, &err), 0);
    CHECK_STR(x.jira.token, "s3cr3t-token");
    CHECK_STR(x.jira_issue_type, "Task");
    CHECK(!x.jira_bearer);
    CHECK_STR(x.pagerduty.token, "0123456789abcdef0123456789abcdef");
    CHECK_STR(x.pagerduty.url, "https://events.pagerduty.com/v2/enqueue");
    CHECK_STR(x.pagerduty.ca_file, "/etc/ca.pem"); /* http.ca_file as default */
    CHECK_INT(x.timeout_ms, 3000);
    CHECK(!x.slack.set && x.jira.set);
    CHECK_INT(ex_mode_for(&x, pb_playbook_find(c, "node.drain"), PB_MODE_ON),
              PB_MODE_CANARY);
    CHECK_INT(ex_mode_for(&x, pb_playbook_find(c, "notify"), PB_MODE_ON),
              PB_MODE_SHADOW);
    CHECK_INT(ex_mode_for(&x, pb_playbook_find(c, "job.cancel"), PB_MODE_ON),
              PB_MODE_ON);
    ex_conf_clear(&x);

    /* the one config file: the executor's part is its act section, the
     * rest (and an outgoing webhook vs the receiver's webhook) is not its */
    CHECK_INT(load(c, &x, "kafka: {brokers: k:9092}\n"
                   "webhook: {port: 9095}\n"
                   "act:\n  modes: {notify: shadow}\n"
                   "  pagerduty: {routing_key: env:TEST_EXEC_PD}\n", &err), 0);
    CHECK(x.pagerduty.set && !x.webhook.set && !x.jira.set);
    CHECK_INT(ex_mode_for(&x, pb_playbook_find(c, "notify"), PB_MODE_ON),
              PB_MODE_SHADOW);
    ex_conf_clear(&x);
    /* no act section: nothing configured, not an error */
    CHECK_INT(load(c, &x, "kafka: {brokers: k:9092}\n", &err), 0);
    CHECK(!x.pagerduty.set && !x.slack.set && x.nmodes == 0);
    ex_conf_clear(&x);
    /* a problem inside it is told at its place in the one file */
    CHECK_INT(load(c, &x, "redis: {address: r:6379}\nact:\n"
                   "  modes: {no.such: on}\n", &err), -1);
    CHECK(strstr(err.msg, "act.yaml:3:11: no playbook 'no.such' in the rules"));
    /* a nested key is named by its whole path in the one file */
    CHECK_INT(load(c, &x, "kafka: {brokers: k:9092}\nact:\n"
                   "  http: {timeout_s: 9000}\n", &err), -1);
    CHECK(strstr(err.msg, "act.yaml:3:21: act.http.timeout_s: expected an integer"));
    CHECK_INT(load(c, &x, "http: {timeout_s: 9000}\n", &err), -1);
    CHECK(strstr(err.msg, "act.yaml:1:19: http.timeout_s: expected an integer"));
    CHECK_INT(load(c, &x, "metrics: {act: 9466}\nact: [slack]\n", &err), -1);
    CHECK(strstr(err.msg, "act.yaml:2:6: section 'act' must be a mapping"));

    /* a secret written in the file itself is refused, with its place */
    CHECK_INT(load(c, &x, "webhook:\n  url: https://h.example/x\n"
                   "  token: abc123\n", &err), -1);
    CHECK(strstr(err.msg, "act.yaml:3:10: a secret must be file:PATH or env:NAME"));
    CHECK_INT(load(c, &x, "slack: {url: env:TEST_EXEC_UNSET_VAR}\n", &err), -1);
    CHECK(strstr(err.msg, ":1:14: environment variable TEST_EXEC_UNSET_VAR is not set"));
    CHECK(!strstr(err.msg, "s3cr3t"));
    CHECK_INT(load(c, &x, "modes: {node.dran: on}\n", &err), -1);
    CHECK(strstr(err.msg, ":1:9: no playbook 'node.dran' in the rules"));
    CHECK_INT(load(c, &x, "modes: {node.drain: always}\n", &err), -1);
    CHECK(strstr(err.msg, ":1:21: mode is shadow, canary or on"));
    CHECK_INT(load(c, &x, "jira: {url: https://j, project: OPS, auth: bearer}\n",
                   &err), -1);
    CHECK(strstr(err.msg, ":1:7: jira needs token"));
    CHECK_INT(load(c, &x, "kubernetes: {api: ftp://k8s}\n", &err), -1);
    CHECK(strstr(err.msg, ":1:19: 'ftp://k8s' is not an http:// or https:// URL"));
    CHECK_INT(load(c, &x, "slak: {}\n", &err), -1);
    CHECK(strstr(err.msg, ":1:1: unknown key 'slak' in the top level"));
    CHECK_INT(load(c, &x, "webhook: {url: https://x, insecure: yes}\n", &err), -1);
    CHECK(strstr(err.msg, "expected true or false"));
    /* the journal's key: named like every secret, and long enough */
    setenv("TEST_EXEC_KEY", "0123456789abcdef0123456789abcdef", 1);
    CHECK_INT(load(c, &x, "journal: {key: env:TEST_EXEC_KEY}\n", &err), 0);
    CHECK_STR(x.journal_key, "0123456789abcdef0123456789abcdef");
    ex_conf_clear(&x);
    setenv("TEST_EXEC_KEY", "too-short", 1);
    CHECK_INT(load(c, &x, "journal: {key: env:TEST_EXEC_KEY}\n", &err), -1);
    CHECK(strstr(err.msg, ":1:16: the key it names has fewer than 32 bytes"));
    CHECK(!strstr(err.msg, "too-short"));
    CHECK_INT(load(c, &x, "journal: {}\n", &err), -1);
    CHECK(strstr(err.msg, "key"));
    CHECK_INT(load(c, &x, "jira: [\n", &err), -1);
    CHECK(strstr(err.msg, "act.yaml:2:"));
    ex_conf_init(&x);
    CHECK_INT(ex_conf_load(&x, "/nonexistent/act.yaml", c, &err), -1);
    CHECK(strstr(err.msg, "/nonexistent/act.yaml: No such file"));
}

static json_t *request(const char *summary)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:[s, s], "
                     "s:{s:s, s:{s:s}}}", "id", "act-00112233aabbccdd",
                     "incident", "inc-7", "scenario", "hw.ecc_uncorrectable",
                     "cluster", "prod-a", "summary", summary, "status", "open",
                     "root_cause", "scenario", "hw.xid_79", "node", "gpu-9",
                     "proposed", "node.drain (canary)", "ticket.create (auto)",
                     "action", "playbook", "notify", "target", "node", "gpu-9");
}

static void test_slack(void)
{
    char longtext[5000];
    json_t *req, *m, *blocks;

    memset(longtext, 'x', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = 0;
    req = request(longtext);
    m = vn_slack_message(req, longtext, "https://cascade.example", "");
    blocks = json_object_get(m, "blocks");
    CHECK(json_string_length(json_object_get(m, "text")) > 0);
    CHECK_STR(json_string_value(json_object_get(json_array_get(blocks, 0), "type")),
              "header");
    /* Block Kit's limits: a header 150, a section text 3000 */
    CHECK(json_string_length(json_object_get(
              json_object_get(json_array_get(blocks, 0), "text"), "text")) <= 150);
    CHECK(json_string_length(json_object_get(
              json_object_get(json_array_get(blocks, 1), "text"), "text")) <= 3000);
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(
                  json_array_get(blocks, 2), "fields"), 2), "text")),
              "*Root cause*\nhw.xid_79 on node gpu-9");
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(
                  json_array_get(blocks, 4), "elements"), 0), "url")),
              "https://cascade.example/v1/actions/act-00112233aabbccdd");
    json_decref(m);
    /* with the console: the button opens the incident's page there */
    m = vn_slack_message(req, "short", "https://cascade.example",
                         "https://console.example");
    blocks = json_object_get(m, "blocks");
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(
                  json_array_get(blocks, 4), "elements"), 0), "url")),
              "https://console.example/#/incidents/inc-7");
    json_decref(m);
    /* no approval URL: no button, still the command in the context */
    m = vn_slack_message(req, "short", "", "");
    blocks = json_object_get(m, "blocks");
    CHECK_STR(json_string_value(json_object_get(json_array_get(blocks, 4), "type")),
              "context");
    json_decref(m);
    json_decref(req);
}

static void test_pagerduty(void)
{
    json_t *req = request("ECC on gpu-9"), *e;

    e = vn_pagerduty_event(req, "trigger", "KEY", "critical");
    CHECK_STR(json_string_value(json_object_get(e, "dedup_key")), "inc-7");
    CHECK_STR(json_string_value(json_object_get(e, "event_action")), "trigger");
    CHECK_STR(json_string_value(json_object_get(json_object_get(e, "payload"),
                                                "severity")), "critical");
    CHECK_STR(json_string_value(json_object_get(json_object_get(e, "payload"),
                                                "source")), "gpu-9");
    CHECK(json_string_length(json_object_get(json_object_get(e, "payload"),
                                             "summary")) <= 1024);
    json_decref(e);
    e = vn_pagerduty_event(req, "resolve", "KEY", "critical");
    CHECK(!json_object_get(e, "payload")); /* resolve carries none */
    CHECK_INT(json_object_size(e), 3);
    json_decref(e);
    json_decref(req);
}

static void test_jira(void)
{
    ex_conf x;
    json_t *req = request("ECC on gpu-9"), *w, *f;

    ex_conf_init(&x);
    snprintf(x.jira_project, sizeof x.jira_project, "OPS");
    w = vn_jira_fields(req, "line one\nline two", &x, 1);
    f = json_object_get(w, "fields");
    CHECK_STR(json_string_value(json_object_get(f, "summary")), "line one line two");
    CHECK_STR(json_string_value(json_object_get(json_object_get(f, "project"), "key")),
              "OPS");
    CHECK_STR(json_string_value(json_array_get(json_object_get(f, "labels"), 1)),
              "cascade-inc-7");
    CHECK(strstr(json_string_value(json_object_get(f, "description")),
                 "*Root cause:* hw.xid_79 on node gpu-9"));
    CHECK(!strstr(json_string_value(json_object_get(f, "description")), "console"));
    json_decref(w);
    snprintf(x.console_url, sizeof x.console_url, "https://console.example");
    w = vn_jira_fields(req, "s", &x, 0);
    f = json_object_get(w, "fields");
    CHECK(!json_object_get(f, "project") && !json_object_get(f, "labels"));
    CHECK(strstr(json_string_value(json_object_get(f, "description")),
                 "*In the console:* https://console.example/#/incidents/inc-7\n"));
    json_decref(w);
    json_decref(req);
}

static void test_k8s_facts(void)
{
    json_t *facts = json_object();
    json_t *node = json_loads(
        "{\"metadata\":{\"annotations\":{\"cascade.io/cordoned-by\":\"cascade inc-4\"}},"
        "\"spec\":{\"unschedulable\":true},"
        "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}", 0, NULL);

    k8s_node_facts(node, facts);
    CHECK_STR(json_string_value(json_object_get(facts, "node.state")), "CORDONED");
    CHECK_STR(json_string_value(json_object_get(facts, "node.drained_by")), "cascade");
    json_object_del(json_object_get(node, "metadata"), "annotations");
    k8s_node_facts(node, facts);
    CHECK_STR(json_string_value(json_object_get(facts, "node.drained_by")), "human");
    json_object_set_new(json_object_get(node, "spec"), "unschedulable", json_false());
    json_object_set_new(json_array_get(json_object_get(json_object_get(node, "status"),
                                                       "conditions"), 0),
                        "status", json_string("False"));
    k8s_node_facts(node, facts);
    CHECK_STR(json_string_value(json_object_get(facts, "node.state")), "NOT_READY");
    CHECK_STR(json_string_value(json_object_get(facts, "node.drained_by")), "none");
    json_decref(node);

    node = json_loads("{\"status\":{\"active\":0,\"conditions\":[{\"type\":"
                      "\"Failed\",\"status\":\"True\"}]}}", 0, NULL);
    k8s_job_facts(node, facts);
    CHECK_STR(json_string_value(json_object_get(facts, "job.state")), "FAILED");
    json_decref(node);
    k8s_job_facts(NULL, facts);
    CHECK_STR(json_string_value(json_object_get(facts, "job.state")), "PENDING");
    json_decref(facts);
}

static void test_job_copy(void)
{
    json_t *job = json_loads(
        "{\"metadata\":{\"name\":\"train-1\",\"uid\":\"u\",\"resourceVersion\":\"9\","
        "\"labels\":{\"team\":\"llm\",\"controller-uid\":\"u\"}},"
        "\"spec\":{\"selector\":{\"matchLabels\":{\"controller-uid\":\"u\"}},"
        "\"template\":{\"metadata\":{\"labels\":{\"controller-uid\":\"u\",\"job-name\":\"train-1\"}},"
        "\"spec\":{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
        "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"gpu\",\"operator\":\"In\",\"values\":[\"h100\"]}]},"
        "{\"matchExpressions\":[]}]}}},"
        "\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":\"NCCL_IB_HCA\",\"value\":\"mlx5_0\"}]},{\"name\":\"b\"}]}}},"
        "\"status\":{\"active\":1}}", 0, NULL);
    json_t *params = json_loads("{\"env\":{\"NCCL_IB_HCA\":\"mlx5_1\"},"
                                "\"exclude_nodes\":[\"gpu-9\"],\"micro-batch\":8}",
                                0, NULL);
    json_t *c = k8s_job_copy(job, params, "inc-7", "act-00112233aabbccdd");
    json_t *spec = json_object_get(c, "spec"), *pod, *terms, *env;

    CHECK_STR(json_string_value(json_object_get(json_object_get(c, "metadata"), "name")),
              "train-1-bbccdd");
    CHECK(!json_object_get(json_object_get(c, "metadata"), "uid"));
    CHECK(!json_object_get(c, "status"));
    CHECK(!json_object_get(spec, "selector"));
    CHECK_INT(json_object_size(json_object_get(json_object_get(c, "metadata"), "labels")), 1);
    CHECK_INT(json_object_size(json_object_get(json_object_get(
                  json_object_get(spec, "template"), "metadata"), "labels")), 0);
    pod = json_object_get(json_object_get(spec, "template"), "spec");
    terms = json_object_get(json_object_get(json_object_get(json_object_get(pod, "affinity"),
        "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms");
    /* ORed terms: the exclusion joins each, the operator's own stays */
    CHECK_INT(json_array_size(json_object_get(json_array_get(terms, 0), "matchExpressions")), 2);
    CHECK_INT(json_array_size(json_object_get(json_array_get(terms, 1), "matchExpressions")), 1);
    env = json_object_get(json_array_get(json_object_get(pod, "containers"), 0), "env");
    CHECK_INT(json_array_size(env), 2); /* replaced, not duplicated */
    CHECK_STR(json_string_value(json_object_get(json_array_get(env, 0), "value")), "mlx5_1");
    CHECK_STR(json_string_value(json_object_get(json_array_get(env, 1), "name")),
              "CASCADE_PATCH_MICRO_BATCH");
    env = json_object_get(json_array_get(json_object_get(pod, "containers"), 1), "env");
    CHECK_INT(json_array_size(env), 2);
    json_decref(c);
    /* a Job without a pod template cannot be copied */
    json_object_del(json_object_get(job, "spec"), "template");
    CHECK(k8s_job_copy(job, params, "inc-7", "act-1") == NULL);
    json_decref(job);
    json_decref(params);
}

/* slurmrestd v0.0.38 objects read with scontrol's rules */
static void test_slurmrest(void)
{
    json_t *facts = json_object();
    json_t *node = json_loads(
        "{\"name\":\"gpu-003\",\"state\":\"idle\",\"state_flags\":[\"DRAIN\"],"
        "\"reason\":\"bad fan, OPS-7\",\"reason_set_by_user\":\"root\"}", 0, NULL);
    cs_err err;

    CHECK_INT(srest_node_facts(node, facts, &err), 0);
    CHECK_STR(json_string_value(json_object_get(facts, "node.state")), "DRAINED");
    CHECK_STR(json_string_value(json_object_get(facts, "node.drained_by")), "human");
    CHECK_STR(json_string_value(json_object_get(facts, "node.reason")), "bad fan, OPS-7");
    CHECK_STR(json_string_value(json_object_get(facts, "node.reason_by")), "root");
    json_object_set_new(node, "state", json_string("mixed"));
    json_object_set_new(node, "reason", json_string("cascade inc-4: hw.xid_79"));
    CHECK_INT(srest_node_facts(node, facts, &err), 0);
    CHECK_STR(json_string_value(json_object_get(facts, "node.state")), "DRAINING");
    CHECK_STR(json_string_value(json_object_get(facts, "node.drained_by")), "cascade");
    json_object_del(node, "name");
    CHECK_INT(srest_node_facts(node, facts, &err), -1);
    CHECK(strstr(err.msg, "not a node object"));
    json_decref(node);
    json_decref(facts);

    CHECK(srest_hostlist_has("gpu-[001-003,007]", "gpu-002"));
    CHECK(srest_hostlist_has("gpu-[001-003,007]", "gpu-007"));
    CHECK(!srest_hostlist_has("gpu-[001-003,007]", "gpu-004"));
    CHECK(!srest_hostlist_has("gpu-[001-003]", "gpu-2"));   /* padded: width 3 */
    CHECK(srest_hostlist_has("n[1-10]", "n10"));
    CHECK(!srest_hostlist_has("n[1-10]", "n01"));
    CHECK(srest_hostlist_has("a-1,gpu-[001-002],b", "b"));
    CHECK(srest_hostlist_has("a-1,gpu-[001-002],b", "gpu-001"));
    CHECK(!srest_hostlist_has("a-1,gpu-[001-002],b", "gpu-00"));
    CHECK(srest_hostlist_has("gpu-001", "gpu-001"));
    CHECK(!srest_hostlist_has("gpu-[001", "gpu-001")); /* unclosed: no match */
}

int main(void)
{
    pb_catalog *c = pb_catalog_embedded();

    if (!mkdtemp(dir))
        return 2;
    test_config(c);
    test_slack();
    test_pagerduty();
    test_jira();
    test_k8s_facts();
    test_job_copy();
    test_slurmrest();
    pb_catalog_free(c);
    unlink(write_file("act.yaml", ""));
    unlink(write_file("jira.token", ""));
    rmdir(dir);
    return check_report();
}
