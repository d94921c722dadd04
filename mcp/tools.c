/* The agents' tools (mcp/tools.h). */
#include "mcp/tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions/act.h"
#include "core/kafka_scan.h"
#include "core/rconn.h"
#include "core/signal.h"
#include "core/topics.h"
#include "core/ts.h"
#include "view/incidents.h"
#include "view/render.h"
#include "view/trail.h"

typedef json_t *(*tool_fn)(const mcp_env *e, const char *agent,
                           const json_t *args, char *why, size_t len);

/* ---- reading the topics ---- */

static int add_incident(void *arg, const rd_kafka_message_t *m)
{
    vw_incidents_add(arg, m->payload, m->len);
    return 0;
}

static int add_audit(void *arg, const rd_kafka_message_t *m)
{
    vw_trail_add(arg, m->payload, m->len);
    return 0;
}

static int scan(const mcp_env *e, const char *topic, int64_t since_ms, int seek,
                int (*fn)(void *, const rd_kafka_message_t *), void *arg,
                char *why, size_t len)
{
    cs_err err;
    kfk_scan_opts o = {.brokers = e->cfg->brokers, .props = &e->cfg->kprops,
                       .topic = topic, .since_ms = since_ms, .seek = seek,
                       .timeout_ms = e->timeout_ms, .fn = fn, .arg = arg};

    if (kfk_scan(&o, NULL, &err)) {
        snprintf(why, len, "%s", err.msg);
        return -1;
    }
    return 0;
}

static vw_incidents *incidents(const mcp_env *e, char *why, size_t len)
{
    vw_incidents *v = vw_incidents_new();

    if (scan(e, KFK_TOPIC_INCIDENTS, 0, 0, add_incident, v, why, len)) {
        vw_incidents_free(v);
        return NULL;
    }
    return v;
}

static const char *arg_str(const json_t *args, const char *k)
{
    return json_string_value(json_object_get(args, k));
}

/* An integer argument within [1, max], else dflt. */
static long arg_int(const json_t *args, const char *k, long dflt, long max)
{
    json_int_t v = json_integer_value(json_object_get(args, k));
    return v >= 1 && v <= max ? (long)v : dflt;
}

/* What a renderer writes to a FILE, as a string (a new reference). */
static json_t *text_of(void (*fn)(FILE *f, const void *a, const void *b),
                       const void *a, const void *b)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    json_t *t;

    if (!f)
        return json_string("");
    fn(f, a, b);
    fclose(f);
    t = json_stringn(buf ? buf : "", n);
    free(buf);
    return t ? t : json_string("(not UTF-8)");
}

static void table_text(FILE *f, const void *a, const void *b)
{
    vw_table(f, a, *(const size_t *)b, 0);
}

static void show_text(FILE *f, const void *a, const void *b)
{
    vw_show(f, a, b);
}

/* ---- the tools ---- */

static json_t *t_list_incidents(const mcp_env *e, const char *agent,
                                const json_t *args, char *why, size_t len)
{
    vw_filter f = {.status = arg_str(args, "status"),
                   .scenario = arg_str(args, "scenario"),
                   .cluster = arg_str(args, "cluster"),
                   .node = arg_str(args, "node"), .job = arg_str(args, "job")};
    long limit = arg_int(args, "limit", 50, 500);
    vw_incidents *v;
    const json_t **sel;
    json_t *list, *out;
    size_t n;

    (void)agent;
    if (arg_str(args, "since") &&
        vw_since(arg_str(args, "since"), ts_now(), &f.since_us)) {
        snprintf(why, len, "since is 90m, 12h, 7d or an RFC 3339 time");
        return NULL;
    }
    if (!(v = incidents(e, why, len)))
        return NULL;
    sel = vw_select(v, &f, &n);
    list = json_array();
    for (size_t i = 0; i < n && i < (size_t)limit; i++)
        json_array_append_new(list, vw_summary(sel[i]));
    n = n < (size_t)limit ? n : (size_t)limit;
    out = json_pack("{s:o, s:I, s:o}", "incidents", list, "matched",
                    (json_int_t)n, "text", text_of(table_text, sel, &n));
    free(sel);
    vw_incidents_free(v);
    return out;
}

static json_t *t_get_incident(const mcp_env *e, const char *agent,
                              const json_t *args, char *why, size_t len)
{
    const char *id = arg_str(args, "id");
    vw_incidents *v;
    vw_trail *t;
    const json_t *inc;
    json_t *out = NULL;

    (void)agent;
    if (!id) {
        snprintf(why, len, "id is required");
        return NULL;
    }
    if (!(v = incidents(e, why, len)))
        return NULL;
    if (!(inc = vw_incidents_get(v, id))) {
        snprintf(why, len, "no incident %.64s", id);
        vw_incidents_free(v);
        return NULL;
    }
    t = vw_trail_new(id);
    if (!scan(e, KFK_TOPIC_AUDIT, 0, 0, add_audit, t, why, len))
        out = json_pack("{s:O, s:o, s:O, s:o}", "incident", inc, "actions",
                        vw_actions(inc, t), "audit", vw_trail_records(t),
                        "text", text_of(show_text, inc, t));
    vw_trail_free(t);
    vw_incidents_free(v);
    return out;
}

static json_t *t_list_playbooks(const mcp_env *e, const char *agent,
                                const json_t *args, char *why, size_t len)
{
    size_t n;
    const pb_playbook *pb = pb_playbooks(e->rules, &n);
    json_t *list = json_array();

    (void)agent, (void)args, (void)why, (void)len;
    for (size_t i = 0; i < n; i++) {
        int changes = pb[i].cls != PB_CLASS_READ_ONLY && pb[i].cls != PB_CLASS_NOTIFY;
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "id", pb[i].id,
                            "version", pb[i].version, "class",
                            pb_class_name(pb[i].cls), "approval",
                            pb_approval_name(pb[i].approval), "mode",
                            pb_mode_name(pb[i].mode), "what",
                            pb[i].what ? pb[i].what : "", "from_an_agent",
                            changes ? "waits for a human's approval"
                                    : "runs alone (read-only or a notification)"));
    }
    return json_pack("{s:o}", "playbooks", list);
}

typedef struct sigsel {
    const char *node, *job, *cluster;
    size_t limit;
    json_t *ring; /* the newest limit signals kept */
} sigsel;

static int add_signal(void *arg, const rd_kafka_message_t *m)
{
    sigsel *s = arg;
    sig g;
    cs_err err;
    const char *p = m->payload;
    int bad = m->len && p[0] == '{' ? sig_parse_json(&g, p, m->len, &err)
                                    : sig_parse_msgpack(&g, p, m->len, &err);

    if (bad)
        return 0; /* the correlator dead-letters those */
    if ((!s->node || (g.host && !strcmp(g.host, s->node))) &&
        (!s->job || (g.job && !strcmp(g.job, s->job))) &&
        (!s->cluster || !strcmp(g.cluster, s->cluster))) {
        json_array_append_new(s->ring, sig_json(&g));
        if (json_array_size(s->ring) > s->limit)
            json_array_remove(s->ring, 0);
    }
    sig_free(&g);
    return 0;
}

static json_t *t_recent_signals(const mcp_env *e, const char *agent,
                                const json_t *args, char *why, size_t len)
{
    sigsel s = {.node = arg_str(args, "node"), .job = arg_str(args, "job"),
                .cluster = arg_str(args, "cluster"),
                .limit = (size_t)arg_int(args, "limit", 100, 1000),
                .ring = json_array()};
    const char *since = arg_str(args, "since") ? arg_str(args, "since") : "1h";
    int64_t from;

    (void)agent;
    if (!s.node && !s.job) {
        snprintf(why, len, "node or job is required");
    } else if (vw_since(since, ts_now(), &from)) {
        snprintf(why, len, "since is 90m, 12h, 7d or an RFC 3339 time");
    } else if (!scan(e, KFK_TOPIC_SIGNALS, from / 1000, 1, add_signal, &s, why,
                     len)) {
        return json_pack("{s:o, s:s}", "signals", s.ring, "since", since);
    }
    json_decref(s.ring);
    return NULL;
}

static json_t *t_list_approvals(const mcp_env *e, const char *agent,
                                const json_t *args, char *why, size_t len)
{
    cs_err err;
    redisContext *rc = rconn_open(&e->cfg->redis, NULL, 0, &err);
    json_t *list;

    (void)agent, (void)args;
    if (!rc) {
        snprintf(why, len, "%s", err.msg);
        return NULL;
    }
    list = act_list_sync(rc, "pending", 100, &err);
    redisFree(rc);
    if (!list) {
        snprintf(why, len, "%s", err.msg);
        return NULL;
    }
    return json_pack("{s:o}", "approvals", list);
}

/* The request an agent's proposal becomes: the correlator's form
 * (correlate/correlator.c), approval hitl (the executor's guardrails
 * decide from their own catalog; a request can only make it stricter),
 * and requested_by, which the executor's audit records carry. */
static json_t *request_of(const char *agent, const json_t *args,
                          const json_t *inc, char *id, size_t idlen)
{
    const json_t *scope = json_object_get(inc, "scope");
    const char *cluster = arg_str(args, "cluster");
    json_t *params = json_object_get(args, "params");
    json_t *action = json_pack("{s:s, s:s, s:O, s:o, s:s}", "playbook",
                               arg_str(args, "playbook"), "approval", "hitl",
                               "target", json_object_get(args, "target"),
                               "params", json_is_object(params) ? json_incref(params)
                                                                : json_object(),
                               "state", "proposed");
    char seed[160];
    /* one id per proposal: the agent and the moment it asked */
    snprintf(seed, sizeof seed, "%s@%lld", agent, (long long)ts_now());
    pb_action_id(seed, action, id, idlen);
    if (!cluster)
        cluster = json_string_value(json_object_get(scope, "cluster"));
    return json_pack("{s:s, s:s, s:s, s:s, s:s?, s:s, s:s, s:o}", "id", id,
                     "incident", inc ? json_string_value(json_object_get(inc, "id")) : "",
                     "scenario", inc ? json_string_value(json_object_get(inc, "scenario"))
                                     : "agent.request",
                     "cluster", cluster ? cluster : "default", "rack",
                     json_string_value(json_object_get(scope, "rack")), "summary",
                     arg_str(args, "reason"), "requested_by", agent, "action", action);
}

static json_t *t_propose_action(const mcp_env *e, const char *agent,
                                const json_t *args, char *why, size_t len)
{
    const char *name = arg_str(args, "playbook"), *incident = arg_str(args, "incident");
    const pb_playbook *pb = name ? pb_playbook_find(e->rules, name) : NULL;
    const json_t *target = json_object_get(args, "target");
    vw_incidents *v = NULL;
    const json_t *inc = NULL;
    json_t *req, *out = NULL;
    char id[32], *txt;
    unsigned long failed;
    cs_err err;

    if (!pb) {
        snprintf(why, len, "no playbook '%.80s' (list_playbooks names them)",
                 name ? name : "");
        return NULL;
    }
    if (!json_is_object(target) || !json_object_size(target) || !arg_str(args, "reason")) {
        snprintf(why, len, "target (an object: node, job, gpu) and reason are required");
        return NULL;
    }
    if (incident && (!(v = incidents(e, why, len)) ||
                     !(inc = vw_incidents_get(v, incident)))) {
        if (v)
            snprintf(why, len, "no incident %.64s", incident);
        vw_incidents_free(v);
        return NULL;
    }
    req = request_of(agent, args, inc, id, sizeof id);
    txt = json_dumps(req, JSON_COMPACT);
    failed = kfk_producer_failed(e->prod);
    if (!txt || kfk_produce(e->prod, KFK_TOPIC_ACTIONS, id, strlen(id), txt,
                            strlen(txt), &err) != KFK_OK ||
        kfk_producer_flush(e->prod, e->timeout_ms) ||
        kfk_producer_failed(e->prod) != failed) {
        snprintf(why, len, "the request was not delivered to %s", KFK_TOPIC_ACTIONS);
    } else {
        int alone = pb->cls == PB_CLASS_READ_ONLY || pb->cls == PB_CLASS_NOTIFY;
        out = json_pack("{s:s, s:s, s:s, s:s}", "action", id, "playbook", pb->id,
                        "class", pb_class_name(pb->cls), "next",
                        alone ? "the executor runs it alone (read-only or a "
                                "notification)"
                              : "it waits for a human's approval (cascade "
                                "actions list --pending); the executor never "
                                "runs it on an agent's word");
    }
    free(txt);
    json_decref(req);
    vw_incidents_free(v);
    return out;
}

/* ---- the table ---- */

#define STR(d) "{\"type\":\"string\",\"description\":\"" d "\"}"
#define INT(d) "{\"type\":\"integer\",\"minimum\":1,\"description\":\"" d "\"}"

static const struct tool {
    const char *name, *title, *description, *schema;
    int read_only;
    tool_fn fn;
} TOOLS[] = {
    {"list_incidents", "List incidents",
     "The incidents cascade published, newest first: id, scenario, status "
     "(open, resolved, merged), scope (cluster, node, job, rack), times, "
     "summary and how many actions it proposed.",
     "{\"type\":\"object\",\"properties\":{"
     "\"status\":{\"type\":\"string\",\"enum\":[\"open\",\"resolved\",\"merged\"]},"
     "\"scenario\":" STR("a scenario id, or a family ending in a dot: hw.") ","
     "\"cluster\":" STR("a cluster") ",\"node\":" STR("a node the incident names") ","
     "\"job\":" STR("a job the incident names") ","
     "\"since\":" STR("updated since: 90m, 12h, 7d or an RFC 3339 time") ","
     "\"limit\":" INT("at most this many (default 50, at most 500)") "}}",
     1, t_list_incidents},
    {"get_incident", "Get an incident with its chain",
     "One incident whole: its chain from the root cause to the jobs it broke "
     "(with the line that showed the root), its evidence, its actions with "
     "the executor's ids and states, and their audit trail.",
     "{\"type\":\"object\",\"properties\":{\"id\":" STR("inc-... from list_incidents")
     "},\"required\":[\"id\"]}", 1, t_get_incident},
    {"list_playbooks", "The playbook catalog",
     "Every playbook an action may run: id, version, class (read_only, "
     "notify, job, change, recovery, destructive), least approval, mode, "
     "what it does, and what happens when an agent proposes it.",
     "{\"type\":\"object\",\"properties\":{}}", 1, t_list_playbooks},
    {"recent_signals", "A node's or job's recent signals",
     "The signals of a node or a job on cascade.signals (log lines, alerts, "
     "metrics, job states), oldest first, the newest limit of them.",
     "{\"type\":\"object\",\"properties\":{\"node\":" STR("a host name") ","
     "\"job\":" STR("a job id") ",\"cluster\":" STR("a cluster") ","
     "\"since\":" STR("from: 90m, 12h, 7d or an RFC 3339 time (default 1h)") ","
     "\"limit\":" INT("the newest this many (default 100, at most 1000)") "}}",
     1, t_recent_signals},
    {"list_approvals", "Actions waiting for a human",
     "The actions in the executor's journal that wait for a human's "
     "decision, soonest to expire first, with why they wait.",
     "{\"type\":\"object\",\"properties\":{}}", 1, t_list_approvals},
    {"propose_action", "Propose an action",
     "Asks the executor to run a playbook. It goes through the same "
     "guardrails as any request: a read-only or notification playbook runs "
     "alone; anything that changes state becomes a pending approval for a "
     "human, never a direct run. Audited with the agent as its initiator.",
     "{\"type\":\"object\",\"properties\":{\"playbook\":" STR("a playbook id (list_playbooks)")
     ",\"target\":{\"type\":\"object\",\"description\":\"node, job, gpu\"},"
     "\"params\":{\"type\":\"object\"},\"incident\":" STR("the incident it answers")
     ",\"cluster\":" STR("the cluster (else the incident's, else default)")
     ",\"reason\":" STR("why, for the human who decides") "},"
     "\"required\":[\"playbook\",\"target\",\"reason\"]}", 0, t_propose_action},
};

json_t *mcp_tools_list(void)
{
    json_t *list = json_array();

    for (size_t i = 0; i < sizeof TOOLS / sizeof *TOOLS; i++) {
        const struct tool *t = &TOOLS[i];
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:s, s:o, s:{s:b, s:b, s:b, s:b}}", "name",
                            t->name, "title", t->title, "description",
                            t->description, "inputSchema",
                            json_loads(t->schema, 0, NULL), "annotations",
                            "readOnlyHint", t->read_only, "destructiveHint", 0,
                            "idempotentHint", t->read_only, "openWorldHint", 0));
    }
    return json_pack("{s:o}", "tools", list);
}

/* Every call on cascade.audit, keyed by the agent: who, which tool, with
 * what, and how it ended (the action id of a proposal). */
static void audit(const mcp_env *e, const char *agent, const char *name,
                  const json_t *args, const json_t *out, const char *why)
{
    char ts[40], *txt;
    json_t *rec;
    cs_err err;

    ts_format(ts_now(), ts, sizeof ts);
    rec = json_pack("{s:s, s:s, s:s, s:s, s:O, s:s, s:s}", "ts", ts, "event",
                    "tool_call", "who", agent, "tool", name, "arguments", args,
                    "outcome", out ? "ok" : "error", "detail", out ? "" : why);
    if (rec && out && json_is_string(json_object_get(out, "action")))
        json_object_set(rec, "action", json_object_get(out, "action"));
    if (rec && (txt = json_dumps(rec, JSON_COMPACT))) {
        if (kfk_produce(e->prod, KFK_TOPIC_AUDIT, agent, strlen(agent), txt,
                        strlen(txt), &err) == KFK_OK)
            kfk_producer_flush(e->prod, e->timeout_ms < 5000 ? e->timeout_ms : 5000);
        free(txt);
    }
    json_decref(rec);
}

json_t *mcp_tools_call(const mcp_env *env, const char *agent,
                       const char *name, const json_t *args)
{
    char why[512] = "", *dump;
    json_t *out, *text, *empty = NULL, *res;
    const struct tool *t = NULL;

    for (size_t i = 0; i < sizeof TOOLS / sizeof *TOOLS; i++)
        if (name && !strcmp(TOOLS[i].name, name))
            t = &TOOLS[i];
    if (!t)
        return NULL;
    if (!json_is_object(args))
        args = empty = json_object();
    out = t->fn(env, agent, args, why, sizeof why);
    audit(env, agent, name, args, out, why);
    json_decref(empty);
    if (!out)
        return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text",
                         "text", why[0] ? why : "failed", "isError", 1);
    /* the text for people (a table, a chain) beside the structured result */
    text = json_incref(json_object_get(out, "text"));
    json_object_del(out, "text");
    if (!text) {
        dump = json_dumps(out, JSON_COMPACT);
        text = json_string(dump ? dump : "{}");
        free(dump);
    }
    res = json_pack("{s:[{s:s, s:o}], s:o}", "content", "type", "text", "text",
                    text, "structuredContent", out);
    return res;
}
