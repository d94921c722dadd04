#include "actions/vendors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"

typedef struct vop vop;
typedef void (*vop_next)(vop *o, long status, const char *body);

struct vop {
    exec_link link; /* first: the executor's list of calls */
    vendors *v;
    exec_done_fn fn;
    void *arg;
    json_t *req, *args;
    vop_next then;
    char what[64]; /* "jira: POST /rest/api/2/issue", for details */
};

struct vendors {
    httpc *h;
    const ex_conf *c;
    exec_link *list; /* calls in flight */
};

static const char *rq(const json_t *req, const char *k)
{
    const char *s = json_string_value(json_object_get(req, k));
    return s ? s : "";
}

static const char *target_of(const json_t *req, const char *k)
{
    const char *s = json_string_value(
        json_object_get(json_object_get(json_object_get(req, "action"),
                                        "target"), k));
    return s ? s : "";
}

static const char *playbook_of(const json_t *req)
{
    const char *s = json_string_value(
        json_object_get(json_object_get(req, "action"), "playbook"));
    return s ? s : "";
}

/* "scenario on node gpu-001 (job 42)" from the root cause object. */
static void root_cause_text(const json_t *req, char *buf, size_t len)
{
    const json_t *rc = json_object_get(req, "root_cause");
    const char *sc = json_string_value(json_object_get(rc, "scenario"));
    const char *node = json_string_value(json_object_get(rc, "node"));
    const char *job = json_string_value(json_object_get(rc, "job"));

    snprintf(buf, len, "%s%s%s%s%s%s", sc ? sc : rq(req, "scenario"),
             node ? " on node " : "", node ? node : "", job ? " (job " : "",
             job ? job : "", job ? ")" : "");
}

static void proposed_text(const json_t *req, const char *sep, char *buf,
                          size_t len)
{
    const json_t *p = json_object_get(req, "proposed"), *v;
    size_t i, n = 0;

    buf[0] = 0;
    json_array_foreach(p, i, v) {
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s",
                              i ? sep : "", json_string_value(v) ?
                              json_string_value(v) : "");
        if (n >= len)
            break;
    }
    if (!buf[0])
        snprintf(buf, len, "%s", playbook_of(req));
}

/* "*label*\ntext", or text alone when label is NULL. */
static json_t *mrkdwn(const char *label, const char *text)
{
    char buf[3000]; /* Slack's limit for a text object */

    snprintf(buf, sizeof buf, "%s%s%s%s", label ? "*" : "", label ? label : "",
             label ? "*\n" : "", text);
    return json_pack("{s:s, s:s}", "type", "mrkdwn", "text", buf);
}

/* Block Kit's actions block of one link button. */
static json_t *button(const char *text, const char *url)
{
    return json_pack("{s:s, s:[{s:s, s:{s:s, s:s}, s:s, s:s, s:s}]}", "type",
                     "actions", "elements", "type", "button", "text", "type",
                     "plain_text", "text", text, "url", url, "action_id",
                     "cascade-review", "style", "primary");
}

json_t *vn_slack_message(const json_t *req, const char *text,
                         const char *approval_url, const char *console_url)
{
    char head[151], cause[512], prop[2000], fallback[600], target[200];
    char url[1024];
    char ctx[200];
    json_t *blocks = json_array(), *fields;
    const char *node = target_of(req, "node"), *job = target_of(req, "job");

    snprintf(head, sizeof head, "%s on %s", rq(req, "scenario"),
             rq(req, "cluster"));
    root_cause_text(req, cause, sizeof cause);
    proposed_text(req, "\n• ", prop + 4, sizeof prop - 4);
    memcpy(prop, "• ", 4);
    snprintf(ctx, sizeof ctx, "action `%s` · `cascade approve %s`",
             rq(req, "id"), rq(req, "id"));
    snprintf(target, sizeof target, "%s%s%s%s", *node ? "node " : "", node,
             *node && *job ? ", " : "", *job ? "job " : "");
    if (*job)
        strncat(target, job, sizeof target - strlen(target) - 1);
    snprintf(fallback, sizeof fallback, "[cascade] %.150s: %.400s", head, text);
    json_array_append_new(blocks, json_pack("{s:s, s:{s:s, s:s}}", "type",
                                            "header", "text", "type",
                                            "plain_text", "text", head));
    json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "section",
                                            "text", mrkdwn(NULL, text)));
    fields = json_array();
    json_array_append_new(fields, mrkdwn("Incident", rq(req, "incident")));
    json_array_append_new(fields, mrkdwn("Status", *rq(req, "status") ?
                                         rq(req, "status") : "open"));
    json_array_append_new(fields, mrkdwn("Root cause", cause));
    json_array_append_new(fields, mrkdwn("Target", *target ? target :
                                         rq(req, "cluster")));
    json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "section",
                                            "fields", fields));
    json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "section",
                                            "text", mrkdwn("Proposed actions", prop)));
    if (console_url && *console_url && *rq(req, "incident")) {
        /* the incident's page: its chain, and Approve for what waits */
        snprintf(url, sizeof url, "%s/#/incidents/%s", console_url,
                 rq(req, "incident"));
        json_array_append_new(blocks, button("Open in the console", url));
    } else if (approval_url && *approval_url) {
        snprintf(url, sizeof url, "%s/v1/actions/%s", approval_url,
                 rq(req, "id"));
        json_array_append_new(blocks, button("Review and approve", url));
    }
    json_array_append_new(
        blocks, json_pack("{s:s, s:[o]}", "type", "context", "elements",
                          mrkdwn(NULL, ctx)));
    return json_pack("{s:s, s:o}", "text", fallback, "blocks", blocks);
}

json_t *vn_pagerduty_event(const json_t *req, const char *action,
                           const char *routing_key, const char *severity)
{
    char summary[1024], cause[512], prop[1000];
    const char *node = target_of(req, "node");
    json_t *ev = json_pack("{s:s, s:s, s:s}", "routing_key", routing_key,
                           "event_action", action, "dedup_key",
                           rq(req, "incident"));

    if (strcmp(action, "trigger"))
        return ev;
    snprintf(summary, sizeof summary, "%s on %s: %s", rq(req, "scenario"),
             rq(req, "cluster"), rq(req, "summary"));
    root_cause_text(req, cause, sizeof cause);
    proposed_text(req, ", ", prop, sizeof prop);
    json_object_set_new(
        ev, "payload",
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s}}",
                  "summary", summary, "source", *node ? node : rq(req, "cluster"),
                  "severity", severity, "component", *node ? node : "cluster",
                  "group", rq(req, "cluster"), "class", rq(req, "scenario"),
                  "custom_details", "incident", rq(req, "incident"),
                  "root_cause", cause, "proposed_actions", prop, "action",
                  rq(req, "id")));
    json_object_set_new(ev, "client", json_string("cascade"));
    return ev;
}

json_t *vn_jira_fields(const json_t *req, const char *summary,
                       const ex_conf *c, int create)
{
    char sum[256], desc[4000], cause[512], prop[2000], label[128], link[700];
    json_t *f;

    /* Jira's summary is one line of at most 255 characters */
    snprintf(sum, sizeof sum, "%s", summary);
    for (char *p = sum; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    root_cause_text(req, cause, sizeof cause);
    proposed_text(req, "\n* ", prop, sizeof prop);
    link[0] = '\0';
    if (c->console_url[0])
        snprintf(link, sizeof link, "*In the console:* %s/#/incidents/%s\n\n",
                 c->console_url, rq(req, "incident"));
    snprintf(desc, sizeof desc,
             "Incident %s (%s) on cluster %s, status %s.\n\n%s\n\n"
             "*Root cause:* %s\n\n*Proposed actions:*\n* %s\n\n%s"
             "Opened and updated by cascade; closing it is left to people.",
             rq(req, "incident"), rq(req, "scenario"), rq(req, "cluster"),
             *rq(req, "status") ? rq(req, "status") : "open", rq(req, "summary"),
             cause, prop, link);
    f = json_pack("{s:s, s:s}", "summary", sum, "description", desc);
    if (create) {
        snprintf(label, sizeof label, "cascade-%s", rq(req, "incident"));
        json_object_set_new(f, "project", json_pack("{s:s}", "key", c->jira_project));
        json_object_set_new(f, "issuetype",
                            json_pack("{s:s}", "name", c->jira_issue_type));
        json_object_set_new(f, "labels", json_pack("[s, s]", "cascade", label));
    }
    return json_pack("{s:o}", "fields", f);
}

/* ---- calls in flight ---- */

vendors *vn_new(httpc *h, const ex_conf *c)
{
    vendors *v = calloc(1, sizeof *v);

    if (v) {
        v->h = h;
        v->c = c;
    }
    return v;
}

static void vop_free(vop *o)
{
    exec_link_del(&o->v->list, &o->link);
    json_decref(o->req);
    json_decref(o->args);
    free(o);
}

void vn_free(vendors *v)
{
    if (!v)
        return;
    while (v->list)
        vop_free((vop *)v->list);
    free(v);
}

static void vop_end(vop *o, exec_outcome oc, const char *detail,
                    json_t *out)
{
    exec_done_fn fn = o->fn;
    void *arg = o->arg;

    vop_free(o);
    fn(arg, oc, detail, out);
    json_decref(out);
}

/* The answer's first line, printable ASCII only: it goes into the audit. */
static void excerpt(const char *body, char *buf, size_t len)
{
    size_t n = 0;

    for (; *body && n + 1 < len && n < 200; body++)
        buf[n++] = (*body >= 32 && *body < 127) ? *body : ' ';
    buf[n] = 0;
}

static void on_http(void *arg, long status, const char *body, size_t len,
                    const char *error)
{
    vop *o = arg;
    char detail[512], ex[256];

    (void)len;
    if (!status) {
        snprintf(detail, sizeof detail, "%s: %s", o->what, error);
        vop_end(o, EXEC_RETRY, detail, NULL);
        return;
    }
    if (status < 200 || status > 299) {
        excerpt(body, ex, sizeof ex);
        snprintf(detail, sizeof detail, "%s: HTTP %ld: %s", o->what, status, ex);
        vop_end(o, exec_http_outcome(status), detail, NULL);
        return;
    }
    o->then(o, status, body);
}

static int send_json(vop *o, const ex_endpoint *e, const char *method,
                     const char *url, json_t *body, vop_next then, cs_err *err)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    char basic[1200];
    httpc_req r = {.method = method, .url = url, .body = text,
                   .content_type = text ? "application/json" : NULL,
                   .ca_file = e->ca_file[0] ? e->ca_file : NULL,
                   .insecure = e->insecure, .timeout_ms = o->v->c->timeout_ms};
    int rc;

    json_decref(body);
    if (e == &o->v->c->jira && !o->v->c->jira_bearer) {
        snprintf(basic, sizeof basic, "%s:%s", e->user, e->token);
        r.basic = basic;
    } else if (e->token[0] && e != &o->v->c->pagerduty) {
        r.bearer = e->token;
    }
    o->then = then;
    rc = httpc_send(o->v->h, &r, on_http, o, err);
    explicit_bzero(basic, sizeof basic);
    free(text);
    return rc;
}

static void done_ok(vop *o, long status, const char *body)
{
    char detail[128];

    (void)body;
    snprintf(detail, sizeof detail, "%s: HTTP %ld", o->what, status);
    vop_end(o, EXEC_OK, detail, NULL);
}

/* ---- Jira: search by label, then update or create ---- */

static void jira_created(vop *o, long status, const char *body)
{
    json_t *js = json_loads(body, 0, NULL);
    const char *key = json_string_value(json_object_get(js, "key"));
    char detail[160];

    (void)status;
    if (!key) {
        json_decref(js);
        vop_end(o, EXEC_FAIL, "jira: the create answer has no issue key", NULL);
        return;
    }
    snprintf(detail, sizeof detail, "jira: created %.60s", key);
    vop_end(o, EXEC_OK, detail, json_pack("{s:s, s:b}", "issue", key, "created", 1));
    json_decref(js);
}

static void jira_updated(vop *o, long status, const char *body)
{
    char detail[160];
    const char *key = strrchr(o->what, '/');

    (void)status;
    (void)body;
    key = key ? key + 1 : "";
    snprintf(detail, sizeof detail, "jira: updated %.60s", key);
    vop_end(o, EXEC_OK, detail, json_pack("{s:s, s:b}", "issue", key, "created", 0));
}

static const char *arg_str(const vop *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o->args, k));
    return s ? s : dflt;
}

static void jira_found(vop *o, long status, const char *body)
{
    const ex_conf *c = o->v->c;
    json_t *js = json_loads(body, 0, NULL);
    json_t *issues = json_object_get(js, "issues");
    const char *key = json_string_value(json_object_get(json_array_get(issues, 0), "key"));
    const char *summary = arg_str(o, "summary", rq(o->req, "summary"));
    char url[1300];
    cs_err err;
    int rc;

    (void)status;
    if (!json_is_array(issues)) {
        json_decref(js);
        vop_end(o, EXEC_FAIL, "jira: the search answer has no issues list", NULL);
        return;
    }
    if (key) {
        snprintf(url, sizeof url, "%s/rest/api/2/issue/%s", c->jira.url, key);
        snprintf(o->what, sizeof o->what, "jira: PUT /rest/api/2/issue/%.20s", key);
        rc = send_json(o, &c->jira, "PUT", url,
                       vn_jira_fields(o->req, summary, c, 0), jira_updated, &err);
    } else {
        snprintf(url, sizeof url, "%s/rest/api/2/issue", c->jira.url);
        snprintf(o->what, sizeof o->what, "jira: POST /rest/api/2/issue");
        rc = send_json(o, &c->jira, "POST", url,
                       vn_jira_fields(o->req, summary, c, 1), jira_created, &err);
    }
    json_decref(js);
    if (rc)
        vop_end(o, EXEC_FAIL, err.msg, NULL);
}

static int jira_upsert(vop *o, cs_err *err)
{
    char jql[300], q[900], url[2000];

    snprintf(jql, sizeof jql, "labels = \"cascade-%.100s\"", rq(o->req, "incident"));
    httpc_escape(jql, q, sizeof q);
    snprintf(url, sizeof url, "%s/rest/api/2/search?jql=%s&fields=key&maxResults=1",
             o->v->c->jira.url, q);
    snprintf(o->what, sizeof o->what, "jira: GET /rest/api/2/search");
    return send_json(o, &o->v->c->jira, "GET", url, NULL, jira_found, err);
}

/* ---- dispatch ---- */

static const char *const ops[] = {"slack.post", "jira.upsert",
                                  "pagerduty.trigger", "pagerduty.acknowledge",
                                  "pagerduty.resolve", "webhook.post"};

int vn_knows(const char *op)
{
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (!strcmp(op, ops[i]))
            return 1;
    return 0;
}

static const ex_endpoint *endpoint(const vendors *v, const char *op)
{
    if (!strncmp(op, "slack.", 6))
        return &v->c->slack;
    if (!strncmp(op, "jira.", 5))
        return &v->c->jira;
    if (!strncmp(op, "pagerduty.", 10))
        return &v->c->pagerduty;
    return &v->c->webhook;
}

int vn_ready(const vendors *v, const char *op)
{
    return v && vn_knows(op) && endpoint(v, op)->set;
}

static int start(vop *o, const char *op, cs_err *err)
{
    const ex_conf *c = o->v->c;

    if (!strcmp(op, "slack.post")) {
        snprintf(o->what, sizeof o->what, "slack: POST incoming webhook");
        return send_json(o, &c->slack, "POST", c->slack.url,
                         vn_slack_message(o->req, arg_str(o, "text", rq(o->req, "summary")),
                                          c->approval_url, c->console_url),
                         done_ok, err);
    }
    if (!strcmp(op, "jira.upsert"))
        return jira_upsert(o, err);
    if (!strncmp(op, "pagerduty.", 10)) {
        snprintf(o->what, sizeof o->what, "pagerduty: %s", op + 10);
        return send_json(o, &c->pagerduty, "POST", c->pagerduty.url,
                         vn_pagerduty_event(o->req, op + 10, c->pagerduty.token,
                                            arg_str(o, "severity", "error")),
                         done_ok, err);
    }
    snprintf(o->what, sizeof o->what, "webhook: POST");
    return send_json(o, &c->webhook, "POST", c->webhook.url,
                     json_pack("{s:s, s:O, s:O?}", "event", "cascade.action",
                               "request", o->req, "args", o->args),
                     done_ok, err);
}

int vn_call(vendors *v, const char *op, const json_t *args, const json_t *req,
            exec_done_fn fn, void *arg, cs_err *err)
{
    vop *o;

    if (!vn_ready(v, op)) {
        cs_err_set(err, "%s: no %.*s section in the executor's config", op,
                   (int)strcspn(op, "."), op);
        return -1;
    }
    if (!(o = calloc(1, sizeof *o))) {
        cs_err_set(err, "%s: out of memory", op);
        return -1;
    }
    o->v = v;
    o->fn = fn;
    o->arg = arg;
    o->req = json_deep_copy(req);
    o->args = json_deep_copy(args);
    exec_link_add(&v->list, &o->link);
    if (start(o, op, err)) {
        vop_free(o);
        return -1;
    }
    return 0;
}

/* ---- the executor contract (actions/exec.h) ---- */

static int ex_knows(const void *self, const char *op)
{
    return vn_ready(self, op);
}

static int ex_call(void *self, const exec_call *c, cs_err *err)
{
    return vn_call(self, c->op, c->args, c->req, c->done, c->arg, err);
}

static void ex_free(void *self)
{
    vn_free(self);
}

executor vn_executor(vendors *v)
{
    return (executor){.name = "vendors", .self = v, .http = 1,
                      .knows = ex_knows, .call = ex_call, .free = ex_free};
}
