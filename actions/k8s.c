#include "actions/k8s.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"

#define K8S_OWNER "cascade.io/cordoned-by"
#define MERGE_PATCH "application/merge-patch+json"

typedef struct kop kop;
typedef void (*kop_next)(kop *o, long status, const char *body);

struct kop {
    exec_link link; /* first: the executor's list of calls */
    k8s *k;
    exec_done_fn fn;
    void *arg;
    json_t *args, *target, *params;
    json_t *facts; /* borrowed: the caller's, for a facts read */
    kop_next then;
    int allow404;
    char op[32], what[160], incident[128], id[64];
    char node[128], job[128], ns[128];
};

struct k8s {
    httpc *h;
    const ex_conf *c;
    exec_link *list; /* calls in flight */
};

k8s *k8s_new(httpc *h, const ex_conf *c)
{
    k8s *k = calloc(1, sizeof *k);

    if (k) {
        k->h = h;
        k->c = c;
    }
    return k;
}

static void kop_free(kop *o)
{
    exec_link_del(&o->k->list, &o->link);
    json_decref(o->args);
    json_decref(o->target);
    json_decref(o->params);
    free(o);
}

void k8s_free(k8s *k)
{
    if (!k)
        return;
    while (k->list)
        kop_free((kop *)k->list);
    free(k);
}

static void kop_end(kop *o, exec_outcome oc, const char *detail,
                    json_t *out)
{
    exec_done_fn fn = o->fn;
    void *arg = o->arg;

    kop_free(o);
    fn(arg, oc, detail, out);
    json_decref(out);
}

static void on_http(void *arg, long status, const char *body, size_t len,
                    const char *error)
{
    kop *o = arg;
    char detail[512], ex[160];
    size_t n = 0;

    (void)len;
    if (!status) {
        snprintf(detail, sizeof detail, "%s: %s", o->what, error);
        kop_end(o, EXEC_RETRY, detail, NULL);
        return;
    }
    if ((status < 200 || status > 299) && !(status == 404 && o->allow404)) {
        /* the API server's Status message says why (Forbidden, conflict) */
        json_t *js = json_loads(body, 0, NULL);
        const char *m = json_string_value(json_object_get(js, "message"));
        for (const char *p = m ? m : body; *p && n < sizeof ex - 1; p++)
            ex[n++] = (*p >= 32 && *p < 127) ? *p : ' ';
        ex[n] = 0;
        json_decref(js);
        snprintf(detail, sizeof detail, "%s: HTTP %ld: %s", o->what, status, ex);
        kop_end(o, exec_http_outcome(status), detail, NULL);
        return;
    }
    o->then(o, status, body);
}

/* path: the API path (names already escaped); body is taken. */
static int send(kop *o, const char *method, const char *path, const char *ctype,
                json_t *body, kop_next then, cs_err *err)
{
    const ex_endpoint *e = &o->k->c->k8s;
    char url[2048], *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    httpc_req r = {.method = method, .url = url, .body = text,
                   .content_type = text ? ctype : NULL, .bearer = e->token,
                   .ca_file = e->ca_file[0] ? e->ca_file : NULL,
                   .insecure = e->insecure, .timeout_ms = o->k->c->timeout_ms};
    int rc;

    json_decref(body);
    snprintf(url, sizeof url, "%s%s", e->url, path);
    snprintf(o->what, sizeof o->what, "%s: %s %.120s", o->op, method, path);
    o->then = then;
    rc = httpc_send(o->k->h, &r, on_http, o, err);
    free(text);
    return rc;
}

static void done_ok(kop *o, long status, const char *body)
{
    char detail[200];

    (void)body;
    snprintf(detail, sizeof detail, "%s: HTTP %ld", o->what, status);
    kop_end(o, EXEC_OK, detail, NULL);
}

static void node_path(const kop *o, char *buf, size_t len)
{
    char n[400];

    httpc_escape(o->node, n, sizeof n);
    snprintf(buf, len, "/api/v1/nodes/%s", n);
}

static void ns_path(const kop *o, const char *group, const char *kind,
                    const char *name, char *buf, size_t len)
{
    char ns[400], nm[400];

    httpc_escape(o->ns, ns, sizeof ns);
    httpc_escape(name, nm, sizeof nm);
    snprintf(buf, len, "%.40s/namespaces/%.200s/%.20s%s%.250s", group, ns,
             kind, *nm ? "/" : "", nm);
}

static const char *arg(const kop *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o->args, k));
    return s ? s : "";
}

/* ---- node calls ---- */

static json_t *node_taints(const json_t *node)
{
    json_t *t = json_object_get(json_object_get(node, "spec"), "taints");
    return json_is_array(t) ? json_deep_copy(t) : json_array();
}

static const char *resource_version(const json_t *obj)
{
    const char *rv = json_string_value(
        json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    return rv ? rv : "";
}

static void taint_patch(kop *o, long status, const char *body)
{
    json_t *node = json_loads(body, 0, NULL), *taints = node_taints(node), *t;
    json_t *mine = json_pack("{s:s, s:s, s:s}", "key", arg(o, "key"), "value",
                             arg(o, "value"), "effect",
                             *arg(o, "effect") ? arg(o, "effect") : "NoSchedule");
    char path[512];
    size_t i;
    cs_err err;

    (void)status;
    json_array_foreach(taints, i, t) {
        if (!strcmp(json_string_value(json_object_get(t, "key")) ?: "",
                    arg(o, "key")) &&
            json_equal(json_object_get(t, "effect"), json_object_get(mine, "effect"))) {
            json_array_remove(taints, i);
            break;
        }
    }
    json_array_append_new(taints, mine);
    node_path(o, path, sizeof path);
    /* resourceVersion: a concurrent change to the taints makes this a 409,
     * not a silent overwrite */
    if (send(o, "PATCH", path, MERGE_PATCH,
             json_pack("{s:{s:s}, s:{s:o}}", "metadata", "resourceVersion",
                       resource_version(node), "spec", "taints", taints),
             done_ok, &err))
        kop_end(o, EXEC_FAIL, err.msg, NULL);
    json_decref(node);
}

static void uncordon_patch(kop *o, long status, const char *body)
{
    json_t *node = json_loads(body, 0, NULL), *taints = node_taints(node);
    json_t *keep = json_array(), *t;
    char path[512];
    size_t i;
    cs_err err;

    (void)status;
    json_array_foreach(taints, i, t)
        if (strncmp(json_string_value(json_object_get(t, "key")) ?: "",
                    "cascade.io/", 11))
            json_array_append(keep, t);
    json_decref(taints);
    node_path(o, path, sizeof path);
    if (send(o, "PATCH", path, MERGE_PATCH,
             json_pack("{s:{s:s, s:{s:n}}, s:{s:b, s:o}}", "metadata",
                       "resourceVersion", resource_version(node), "annotations",
                       K8S_OWNER, "spec", "unschedulable", 0, "taints",
                       json_array_size(keep) ? keep : (json_decref(keep), json_null())),
             done_ok, &err))
        kop_end(o, EXEC_FAIL, err.msg, NULL);
    json_decref(node);
}

static int node_call(kop *o, cs_err *err)
{
    char path[512], owner[200];

    if (!o->node[0]) {
        cs_err_set(err, "%s: the action names no node", o->op);
        return -1;
    }
    node_path(o, path, sizeof path);
    if (!strcmp(o->op, "k8s.cordon")) {
        snprintf(owner, sizeof owner, "cascade %s", o->incident);
        return send(o, "PATCH", path, MERGE_PATCH,
                    json_pack("{s:{s:{s:s}}, s:{s:b}}", "metadata", "annotations",
                              K8S_OWNER, owner, "spec", "unschedulable", 1),
                    done_ok, err);
    }
    if (!strcmp(o->op, "k8s.annotate")) {
        if (!*arg(o, "key")) {
            cs_err_set(err, "k8s.annotate needs key");
            return -1;
        }
        return send(o, "PATCH", path, MERGE_PATCH,
                    json_pack("{s:{s:{s:s}}}", "metadata", "annotations",
                              arg(o, "key"), arg(o, "value")),
                    done_ok, err);
    }
    if (!strcmp(o->op, "k8s.taint") && !*arg(o, "key")) {
        cs_err_set(err, "k8s.taint needs key");
        return -1;
    }
    return send(o, "GET", path, NULL, NULL,
                strcmp(o->op, "k8s.taint") ? uncordon_patch : taint_patch, err);
}

/* ---- job calls ---- */

static void strip_labels(json_t *labels)
{
    static const char *const gone[] = {"controller-uid", "job-name",
                                       "batch.kubernetes.io/controller-uid",
                                       "batch.kubernetes.io/job-name"};
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
        json_object_del(labels, gone[i]);
}

static void set_env(json_t *container, const char *name, const char *value)
{
    json_t *env = json_object_get(container, "env"), *e;
    size_t i;

    if (!json_is_array(env)) {
        env = json_array();
        json_object_set_new(container, "env", env);
    }
    json_array_foreach(env, i, e)
        if (!strcmp(json_string_value(json_object_get(e, "name")) ?: "", name)) {
            json_array_remove(env, i);
            break;
        }
    json_array_append_new(env, json_pack("{s:s, s:s}", "name", name, "value", value));
}

static void avoid_nodes(json_t *pod_spec, const json_t *nodes)
{
    json_t *aff, *req, *terms;

    if (!json_array_size(nodes))
        return;
    aff = json_object_get(pod_spec, "affinity");
    if (!json_is_object(aff))
        json_object_set_new(pod_spec, "affinity", aff = json_object());
    if (!json_is_object(json_object_get(aff, "nodeAffinity")))
        json_object_set_new(aff, "nodeAffinity", json_object());
    aff = json_object_get(aff, "nodeAffinity");
    req = json_object_get(aff, "requiredDuringSchedulingIgnoredDuringExecution");
    if (!json_is_object(req))
        json_object_set_new(aff, "requiredDuringSchedulingIgnoredDuringExecution",
                            req = json_pack("{s:[]}", "nodeSelectorTerms"));
    terms = json_object_get(req, "nodeSelectorTerms");
    if (!json_array_size(terms))
        json_array_append_new(terms, json_pack("{s:[]}", "matchExpressions"));
    /* terms are ORed: the exclusion must hold in each of them */
    for (size_t i = 0; i < json_array_size(terms); i++) {
        json_t *t = json_array_get(terms, i);
        json_t *ex = json_object_get(t, "matchExpressions");
        if (!json_is_array(ex))
            json_object_set_new(t, "matchExpressions", ex = json_array());
        json_array_append_new(ex, json_pack("{s:s, s:s, s:O}", "key",
                                            "kubernetes.io/hostname", "operator",
                                            "NotIn", "values", nodes));
    }
}

static void patch_containers(json_t *pod_spec, const json_t *params)
{
    json_t *cs = json_object_get(pod_spec, "containers"), *c;
    size_t i;

    json_array_foreach(cs, i, c) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)json_object_get(params, "env"), k, v)
            if (json_is_string(v))
                set_env(c, k, json_string_value(v));
        json_object_foreach((json_t *)params, k, v) {
            char name[160], val[256];
            if (!strcmp(k, "env") || !strcmp(k, "exclude_nodes"))
                continue;
            snprintf(name, sizeof name, "CASCADE_PATCH_%s", k);
            for (char *p = name; *p; p++)
                *p = (*p >= 'a' && *p <= 'z') ? (char)(*p - 32)
                     : ((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')) ? *p : '_';
            if (json_is_string(v))
                snprintf(val, sizeof val, "%s", json_string_value(v));
            else if (json_is_integer(v))
                snprintf(val, sizeof val, "%lld", (long long)json_integer_value(v));
            else if (json_is_real(v))
                snprintf(val, sizeof val, "%g", json_real_value(v));
            else
                continue;
            set_env(c, name, val);
        }
    }
}

json_t *k8s_job_copy(const json_t *job, const json_t *params,
                     const char *incident, const char *id)
{
    const json_t *meta = json_object_get(job, "metadata");
    json_t *spec = json_deep_copy(json_object_get(job, "spec"));
    json_t *labels = json_deep_copy(json_object_get(meta, "labels"));
    json_t *tmeta, *pod;
    const char *name = json_string_value(json_object_get(meta, "name"));
    char newname[64], suffix[8];
    size_t idl = strlen(id);

    if (!name || !json_is_object(spec))
        goto bad;
    /* "-" and the action id's last 6 hex digits: the same action gives
     * the same name, so a second POST is a 409, not a second Job */
    snprintf(suffix, sizeof suffix, "%s", idl > 6 ? id + idl - 6 : id);
    snprintf(newname, sizeof newname, "%.*s-%.6s", 56, name, suffix);
    json_object_del(spec, "selector");
    json_object_del(spec, "manualSelector");
    tmeta = json_object_get(json_object_get(spec, "template"), "metadata");
    strip_labels(json_object_get(tmeta, "labels"));
    pod = json_object_get(json_object_get(spec, "template"), "spec");
    if (!json_is_object(pod))
        goto bad;
    patch_containers(pod, params);
    avoid_nodes(pod, json_object_get(params, "exclude_nodes"));
    if (!json_is_object(labels)) { /* found by fuzz.k8s_api: a string leaked */
        json_decref(labels);
        labels = json_object();
    }
    strip_labels(labels);
    return json_pack("{s:s, s:s, s:{s:s, s:o, s:{s:s, s:s}}, s:o}", "apiVersion",
                     "batch/v1", "kind", "Job", "metadata", "name", newname,
                     "labels", labels, "annotations", "cascade.io/recreated-from",
                     name, "cascade.io/incident", incident, "spec", spec);
bad:
    json_decref(spec);
    json_decref(labels);
    return NULL;
}

static void recreated(kop *o, long status, const char *body)
{
    json_t *js = json_loads(body, 0, NULL);
    const char *name = json_string_value(
        json_object_get(json_object_get(js, "metadata"), "name"));
    char detail[300];

    snprintf(detail, sizeof detail, "%s: HTTP %ld, created Job %.100s", o->what,
             status, name ? name : "?");
    kop_end(o, name ? EXEC_OK : EXEC_FAIL, name ? detail : "k8s.recreate_job: the answer "
            "names no Job", name ? json_pack("{s:s}", "job", name) : NULL);
    json_decref(js);
}

static void recreate_post(kop *o, long status, const char *body)
{
    json_t *job = json_loads(body, 0, NULL);
    json_t *copy = k8s_job_copy(job, o->params, o->incident, o->id);
    char path[1024];
    cs_err err;

    (void)status;
    json_decref(job);
    if (!copy) {
        kop_end(o, EXEC_FAIL, "k8s.recreate_job: the Job has no name or pod template",
                NULL);
        return;
    }
    ns_path(o, "/apis/batch/v1", "jobs", "", path, sizeof path);
    if (send(o, "POST", path, "application/json", copy, recreated, &err))
        kop_end(o, EXEC_FAIL, err.msg, NULL);
}

static void gone_ok(kop *o, long status, const char *body)
{
    char detail[200];

    (void)body;
    snprintf(detail, sizeof detail, "%s: %s", o->what,
             status == 404 ? "already gone" : "deleted");
    kop_end(o, EXEC_OK, detail, NULL);
}

static int job_call(kop *o, cs_err *err)
{
    char path[1024], sel[300], q[600];
    const char *pod = json_string_value(json_object_get(o->target, "pod"));

    if (!strcmp(o->op, "k8s.delete_pod") && pod) {
        ns_path(o, "/api/v1", "pods", pod, path, sizeof path);
        o->allow404 = 1;
        return send(o, "DELETE", path, NULL, NULL, gone_ok, err);
    }
    if (!o->job[0]) {
        cs_err_set(err, "%s: the action names no job%s", o->op,
                   strcmp(o->op, "k8s.delete_pod") ? "" : " or pod");
        return -1;
    }
    if (!strcmp(o->op, "k8s.delete_pod")) {
        snprintf(sel, sizeof sel, "job-name=%s", o->job);
        httpc_escape(sel, q, sizeof q);
        ns_path(o, "/api/v1", "pods", "", path, sizeof path);
        strncat(path, "?labelSelector=", sizeof path - strlen(path) - 1);
        strncat(path, q, sizeof path - strlen(path) - 1);
        return send(o, "DELETE", path, NULL, NULL, done_ok, err);
    }
    ns_path(o, "/apis/batch/v1", "jobs", o->job, path, sizeof path);
    if (!strcmp(o->op, "k8s.delete_job")) {
        o->allow404 = 1;
        return send(o, "DELETE", path, "application/json",
                    json_pack("{s:s, s:s, s:s}", "kind", "DeleteOptions",
                              "apiVersion", "v1", "propagationPolicy",
                              "Background"),
                    gone_ok, err);
    }
    return send(o, "GET", path, NULL, NULL, recreate_post, err);
}

/* ---- dispatch ---- */

static const char *const node_ops[] = {"k8s.cordon", "k8s.uncordon",
                                       "k8s.taint", "k8s.annotate"};
static const char *const job_ops[] = {"k8s.delete_pod", "k8s.delete_job",
                                      "k8s.recreate_job"};

static int in(const char *op, const char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(op, v[i]))
            return 1;
    return 0;
}

int k8s_knows(const char *op)
{
    return in(op, node_ops, 4) || in(op, job_ops, 3);
}

static kop *kop_new(k8s *k, const char *op, const char *node, const char *job,
                    const char *ns, exec_done_fn fn, void *arg)
{
    kop *o = calloc(1, sizeof *o);

    if (!o)
        return NULL;
    o->k = k;
    o->fn = fn;
    o->arg = arg;
    str_copy(o->op, sizeof o->op, op);
    str_copy(o->node, sizeof o->node, node ? node : "");
    str_copy(o->job, sizeof o->job, job ? job : "");
    str_copy(o->ns, sizeof o->ns, ns && *ns ? ns : k->c->k8s_namespace);
    exec_link_add(&k->list, &o->link);
    return o;
}

int k8s_call(k8s *k, const char *op, const json_t *args, const json_t *target,
             const json_t *params, const char *incident, const char *id,
             exec_done_fn fn, void *arg, cs_err *err)
{
    kop *o = kop_new(k, op, json_string_value(json_object_get(target, "node")),
                     json_string_value(json_object_get(target, "job")),
                     json_string_value(json_object_get(target, "namespace")),
                     fn, arg);
    int rc;

    if (!o) {
        cs_err_set(err, "%s: out of memory", op);
        return -1;
    }
    o->args = json_deep_copy(args);
    o->target = json_deep_copy(target);
    o->params = params ? json_deep_copy(params) : json_object();
    str_copy(o->incident, sizeof o->incident, incident);
    str_copy(o->id, sizeof o->id, id);
    rc = in(op, node_ops, 4) ? node_call(o, err) : job_call(o, err);
    if (rc)
        kop_free(o);
    return rc;
}

/* ---- facts ---- */

void k8s_node_facts(const json_t *node, json_t *facts)
{
    const json_t *spec = json_object_get(node, "spec");
    const char *owner = json_string_value(json_object_get(
        json_object_get(json_object_get(node, "metadata"), "annotations"),
        K8S_OWNER));
    const json_t *conds = json_object_get(json_object_get(node, "status"),
                                          "conditions"), *c;
    int cordoned = json_is_true(json_object_get(spec, "unschedulable"));
    int ready = 1;
    size_t i;

    json_array_foreach(conds, i, c)
        if (!strcmp(json_string_value(json_object_get(c, "type")) ?: "", "Ready"))
            ready = !strcmp(json_string_value(json_object_get(c, "status")) ?: "",
                            "True");
    json_object_set_new(facts, "node.state",
                        json_string(cordoned ? "CORDONED"
                                    : ready  ? "SCHEDULABLE" : "NOT_READY"));
    json_object_set_new(facts, "node.drained_by",
                        json_string(!cordoned ? "none" : owner ? "cascade" : "human"));
    json_object_set_new(facts, "node.reason", json_string(owner ? owner : ""));
}

void k8s_job_facts(const json_t *job, json_t *facts)
{
    const json_t *st = json_object_get(job, "status");
    const json_t *conds = json_object_get(st, "conditions"), *c;
    const char *state = json_integer_value(json_object_get(st, "active")) > 0
                            ? "RUNNING" : "PENDING";
    size_t i;

    json_array_foreach(conds, i, c) {
        const char *t = json_string_value(json_object_get(c, "type")) ?: "";
        if (strcmp(json_string_value(json_object_get(c, "status")) ?: "", "True"))
            continue;
        if (!strcmp(t, "Complete"))
            state = "COMPLETED";
        else if (!strcmp(t, "Failed"))
            state = "FAILED";
    }
    json_object_set_new(facts, "job.state", json_string(state));
}

static void facts_job(kop *o, long status, const char *body);

static void facts_next_job(kop *o)
{
    char path[1024];
    cs_err err;

    if (!o->job[0]) {
        kop_end(o, EXEC_OK, "facts read", NULL);
        return;
    }
    ns_path(o, "/apis/batch/v1", "jobs", o->job, path, sizeof path);
    o->allow404 = 1;
    if (send(o, "GET", path, NULL, NULL, facts_job, &err))
        kop_end(o, EXEC_FAIL, err.msg, NULL);
}

static void facts_job(kop *o, long status, const char *body)
{
    json_t *js = status == 404 ? NULL : json_loads(body, 0, NULL);

    if (status == 404)
        json_object_set_new(o->facts, "job.state", json_string("DELETED"));
    else
        k8s_job_facts(js, o->facts);
    json_decref(js);
    kop_end(o, EXEC_OK, "facts read", NULL);
}

static void facts_pods(kop *o, long status, const char *body)
{
    json_t *js = json_loads(body, 0, NULL), *p, *ref;
    size_t i, j;
    long n = 0;

    (void)status;
    json_array_foreach(json_object_get(js, "items"), i, p) {
        int daemon = 0;
        json_array_foreach(json_object_get(json_object_get(p, "metadata"),
                                           "ownerReferences"), j, ref)
            daemon |= !strcmp(json_string_value(json_object_get(ref, "kind")) ?: "",
                              "DaemonSet");
        n += !daemon;
    }
    json_object_set_new(o->facts, "node.jobs", json_integer(n));
    json_decref(js);
    facts_next_job(o);
}

static void facts_node(kop *o, long status, const char *body)
{
    json_t *js = json_loads(body, 0, NULL);
    char path[1024], sel[300], q[600];
    cs_err err;

    (void)status;
    k8s_node_facts(js, o->facts);
    json_decref(js);
    snprintf(sel, sizeof sel, "spec.nodeName=%s,status.phase=Running", o->node);
    httpc_escape(sel, q, sizeof q);
    snprintf(path, sizeof path, "/api/v1/pods?fieldSelector=%s", q);
    if (send(o, "GET", path, NULL, NULL, facts_pods, &err))
        kop_end(o, EXEC_FAIL, err.msg, NULL);
}

int k8s_facts(k8s *k, const char *node, const char *job, const char *ns,
              json_t *facts, exec_done_fn fn, void *arg, cs_err *err)
{
    kop *o = kop_new(k, "k8s.facts", node, job, ns, fn, arg);
    char path[512];

    if (!o) {
        cs_err_set(err, "k8s facts: out of memory");
        return -1;
    }
    o->facts = facts;
    if (!o->node[0]) {
        facts_next_job(o);
        return 0;
    }
    node_path(o, path, sizeof path);
    if (send(o, "GET", path, NULL, NULL, facts_node, err)) {
        kop_free(o);
        return -1;
    }
    return 0;
}

/* ---- the executor contract (actions/exec.h) ---- */

static int ex_knows(const void *self, const char *op)
{
    (void)self;
    return k8s_knows(op);
}

static int ex_call(void *self, const exec_call *c, cs_err *err)
{
    return k8s_call(self, c->op, c->args, c->target, c->params, c->incident,
                    c->action, c->done, c->arg, err);
}

static int ex_facts(void *self, const exec_query *q, cs_err *err)
{
    return k8s_facts(self, q->node, q->job, q->ns, q->out, q->done, q->arg,
                     err);
}

static void ex_free(void *self)
{
    k8s_free(self);
}

executor k8s_executor(k8s *k)
{
    return (executor){.name = "kubernetes", .self = k, .http = 1,
                      .knows = ex_knows, .call = ex_call, .facts = ex_facts,
                      .free = ex_free};
}
