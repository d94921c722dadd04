#include "ingest/k8sobj.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/idset.h"
#include "core/nodeaddr.h"
#include "core/str.h"
#include "core/strmap.h"
#include "core/ts.h"
#include "ingest/jobconf.h"

/* A deleted pod stays in the index this long: Events about it and the
 * end of its Job come after it is gone. */
#define KO_POD_KEEP_S 600
#define KO_DERIVED "cascade.io/k8s"
#define KO_GPU "nvidia.com/gpu"

typedef struct ko_pod {
    char ns[254], job[254], node[254];
    int64_t deleted; /* 0: alive */
} ko_pod;

typedef struct ko_node {
    char inventory[512]; /* the last inventory told, as its text */
} ko_node;

struct ko_index {
    ko_opts o;
    strmap *pods;  /* "ns/name" -> ko_pod */
    strmap *nodes; /* name -> ko_node */
    idset *told;   /* ids published, stamped with when */
    ko_stats st;
};

static const char *const kind_names[KO_NKINDS] = {"nodes", "pods", "jobs",
                                                  "events", "workloads"};

const char *ko_kind_name(ko_kind k)
{
    return k < KO_NKINDS ? kind_names[k] : "?";
}

ko_index *ko_new(const ko_opts *o)
{
    ko_index *x = calloc(1, sizeof *x);

    if (!x)
        return NULL;
    x->o = *o;
    if (!x->o.team_label)
        x->o.team_label = "cascade.io/team";
    if (!x->o.job_name_label)
        x->o.job_name_label = "cascade.io/job-name";
    if (!x->o.rack_label)
        x->o.rack_label = "cascade.io/rack";
    if (!x->o.canary_label)
        x->o.canary_label = "cascade.io/canary";
    if (x->o.max_age_s <= 0)
        x->o.max_age_s = 7200;
    x->pods = strmap_new();
    x->nodes = strmap_new();
    x->told = ids_new();
    if (!x->pods || !x->nodes || !x->told) {
        ko_free(x);
        return NULL;
    }
    return x;
}

void ko_free(ko_index *x)
{
    if (!x)
        return;
    strmap_free(x->pods, free);
    strmap_free(x->nodes, free);
    ids_free(x->told);
    free(x);
}

void ko_forget(ko_index *x)
{
    ids_drop_before(x->told, INT64_MAX);
}

void ko_get_stats(const ko_index *x, ko_stats *st)
{
    *st = x->st;
}

size_t ko_pods(const ko_index *x)
{
    return strmap_len(x->pods);
}

void ko_expire(ko_index *x, int64_t now)
{
    size_t pos = 0, n = 0, cap = 0;
    const char *key;
    char **gone = NULL, **g;
    void *val;

    /* the keys first, then the deletions: a walk must not see the table
     * change under it */
    while (strmap_next(x->pods, &pos, &key, &val)) {
        ko_pod *p = val;
        if (!p->deleted || now - p->deleted <= KO_POD_KEEP_S)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            if (!(g = realloc(gone, cap * sizeof *gone)))
                break; /* the rest next time */
            gone = g;
        }
        if (!(gone[n] = strdup(key)))
            break;
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        free(strmap_del(x->pods, gone[i]));
        free(gone[i]);
    }
    free(gone);
    ids_drop_before(x->told, (now - x->o.max_age_s) * 1000000);
}

/* ---- reading objects ----------------------------------------------------- */

/* The string at a dotted path ("metadata.name"), or NULL. */
static const char *sget(json_t *o, const char *path)
{
    char key[64];

    while (o && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof key)
            return NULL;
        memcpy(key, path, n);
        key[n] = 0;
        o = json_object_get(o, key);
        path += n + (path[n] == '.');
    }
    return json_string_value(o);
}

static const char *label(json_t *obj, const char *name)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"),
                                        "labels"),
                        name));
}

static int valid_ts(const char *s, int64_t *us)
{
    return s && *s && ts_parse_rfc3339(s, us) == 0;
}

/* The condition of this type with status True, or NULL. */
static json_t *condition(json_t *obj, const char *type, const char *status)
{
    json_t *c, *conds = json_object_get(json_object_get(obj, "status"),
                                        "conditions");
    size_t i;

    json_array_foreach(conds, i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (t && s && !strcmp(t, type) && (!status || !strcmp(s, status)))
            return c;
    }
    return NULL;
}

/* ---- telling ------------------------------------------------------------ */

static uint64_t id_of(const char *const *parts)
{
    uint64_t h = HASH_FNV_SEED;

    for (; *parts; parts++)
        h = hash_fnv1a(h, *parts, strlen(*parts) + 1);
    return h;
}

/* sig (taken) with id and ts, unless told already or too old. */
static int tell(ko_index *x, json_t *sig, uint64_t id, const char *ts,
                int64_t now, ko_emit_fn fn, void *arg)
{
    char hex[17];
    int64_t us;
    uint64_t v;

    if (ids_get(x->told, id, NULL)) {
        x->st.repeats++;
        goto skip;
    }
    if (!valid_ts(ts, &us)) {
        char buf[32];
        ts_format(now * 1000000, buf, sizeof buf);
        json_object_set_new(sig, "ts", json_string(buf));
    } else if (us < (now - x->o.max_age_s) * 1000000) {
        x->st.old++;
        goto skip;
    } else {
        json_object_set_new(sig, "ts", json_string(ts));
    }
    v = id;
    for (int i = 15; i >= 0; i--, v >>= 4)
        hex[i] = "0123456789abcdef"[v & 15];
    hex[16] = 0;
    json_object_set_new(sig, "id", json_string(hex));
    if (fn(arg, sig) < 0)
        return -1;
    ids_put(x->told, id, now * 1000000);
    x->st.signals++;
    return 0;
skip:
    json_decref(sig);
    return 0;
}

static void set_str(json_t *o, const char *k, const char *v)
{
    if (v && *v)
        json_object_set_new(o, k, json_string(v));
}

/* The edge filter over "REASON: MESSAGE" (counted when it drops). */
static int keep_text(ko_index *x, const char *reason, const char *message)
{
    char text[2048];

    if (!x->o.keep)
        return 1;
    snprintf(text, sizeof text, "%s: %s", reason ? reason : "",
             message ? message : "");
    if (x->o.keep(x->o.keep_arg, text))
        return 1;
    x->st.filtered++;
    return 0;
}

/* keep_text on an Event object: its message, or note (events.k8s.io). */
static int keep(ko_index *x, json_t *ev, const char *reason)
{
    const char *msg = json_string_value(json_object_get(ev, "message"));

    if (!msg)
        msg = json_string_value(json_object_get(ev, "note"));
    return keep_text(x, reason, msg);
}

int ko_keep_event(ko_index *x, const char *reason, const char *message)
{
    if (keep_text(x, reason, message))
        return 1;
    x->st.objects++; /* an object applied, and dropped */
    return 0;
}

/* A k8s signal for ev (taken), enriched with host and job; passed
 * through the edge filter unless kept says it was. */
static int tell_event(ko_index *x, json_t *ev, uint64_t id, const char *ts,
                      const char *host, const char *job, int64_t now,
                      ko_emit_fn fn, void *arg, int kept)
{
    json_t *sig;

    if (!kept && !keep(x, ev, json_string_value(json_object_get(ev, "reason")))) {
        json_decref(ev);
        return 0;
    }
    sig = json_pack("{s:s, s:o}", "source", "k8s", "event", ev);
    if (!sig)
        return -1;
    set_str(sig, "host", host);
    set_str(sig, "job", job);
    return tell(x, sig, id, ts, now, fn, arg);
}

/* A Pod's index entry, or NULL. */
static ko_pod *pod_of(ko_index *x, const char *ns, const char *name)
{
    char key[512];

    if (!ns || !name)
        return NULL;
    snprintf(key, sizeof key, "%s/%s", ns, name);
    return strmap_get(x->pods, key);
}

/* ---- Events -------------------------------------------------------------- */

/* An Event's time: the series' last, else its last, else when it was
 * recorded (eventTime, the new API's), else its first, else created. */
static const char *event_ts(json_t *ev)
{
    static const char *const order[] = {
        "series.lastObservedTime", "lastTimestamp", "deprecatedLastTimestamp",
        "eventTime", "firstTimestamp", "deprecatedFirstTimestamp",
        "metadata.creationTimestamp"};
    int64_t us;

    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        const char *s = sget(ev, order[i]);
        if (valid_ts(s, &us))
            return s;
    }
    return NULL;
}

static int apply_event(ko_index *x, const char *type, json_t *obj,
                       int64_t now, ko_emit_fn fn, void *arg)
{
    json_t *about = json_object_get(obj, "involvedObject"), *meta;
    const char *kind, *name, *host = NULL, *job = NULL, *ts, *uid;
    const char *reason = json_string_value(json_object_get(obj, "reason"));
    char count[32];
    json_int_t n;
    ko_pod *p;

    /* an Event expiring tells nothing; nor does one without a reason (a
     * k8s signal is named by it: cascade's format refuses it empty) */
    if (!strcmp(type, "DELETED") || !reason || !*reason)
        return 0;
    /* the edge filter first: most Events are Normal ones no rule reads,
     * and everything below costs */
    if (!keep(x, obj, reason))
        return 0;
    if (!about)
        about = json_object_get(obj, "regarding");
    if (!json_is_object(about))
        about = NULL;
    kind = sget(about, "kind");
    name = sget(about, "name");
    if (kind && !strcmp(kind, "Node"))
        host = name;
    if (!host)
        host = sget(obj, "source.host");
    if (!host || !*host)
        host = sget(obj, "deprecatedSource.host");
    if (kind && !strcmp(kind, "Pod") &&
        (p = pod_of(x, sget(about, "namespace"), name))) {
        if ((!host || !*host) && p->node[0])
            host = p->node;
        if (p->job[0])
            job = p->job;
    }
    if (kind && !strcmp(kind, "Job"))
        job = name;
    n = json_integer_value(json_object_get(json_object_get(obj, "series"), "count"));
    if (!n)
        n = json_integer_value(json_object_get(obj, "count"));
    if (!n)
        n = json_integer_value(json_object_get(obj, "deprecatedCount"));
    snprintf(count, sizeof count, "%lld", (long long)n);
    ts = event_ts(obj);
    uid = sget(obj, "metadata.uid");
    /* the object itself, not a copy: the caller's, changed in place */
    if ((meta = json_object_get(obj, "metadata")))
        json_object_del(meta, "managedFields");
    return tell_event(x, json_incref(obj),
                      id_of((const char *const[]){"event", uid ? uid : "", count,
                                                  ts ? ts : "", NULL}),
                      ts, host, job, now, fn, arg, 1);
}

/* ---- derived Events ------------------------------------------------------ */

typedef struct ko_about {
    const char *kind, *ns, *name, *uid, *host, *job;
} ko_about;

static int derive(ko_index *x, const ko_about *a, const char *reason,
                  const char *message, const char *type, const char *ts,
                  uint64_t id, int64_t now, ko_emit_fn fn, void *arg)
{
    char name[600];
    json_t *ev;

    snprintf(name, sizeof name, "%s.%s.%016llx", a->name, reason,
             (unsigned long long)id);
    ev = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s}, s:s, s:s, s:s, "
                   "s:{s:s}, s:s}",
                   "apiVersion", "v1", "kind", "Event", "metadata", "name", name,
                   "involvedObject", "kind", a->kind, "name", a->name,
                   "reason", reason, "message", message, "type", type,
                   "source", "component", "cascade-k8s",
                   "reportingComponent", KO_DERIVED);
    if (!ev)
        return -1;
    if (a->ns) {
        json_object_set_new(json_object_get(ev, "metadata"), "namespace", json_string(a->ns));
        json_object_set_new(json_object_get(ev, "involvedObject"), "namespace", json_string(a->ns));
    }
    set_str(json_object_get(ev, "involvedObject"), "uid", a->uid);
    set_str(json_object_get(ev, "source"), "host", a->host);
    if (ts)
        json_object_set_new(ev, "eventTime", json_string(ts));
    return tell_event(x, ev, id, ts, a->host, a->job, now, fn, arg, 0);
}

/* ---- Pods ---------------------------------------------------------------- */

static const char *pod_job(json_t *obj)
{
    const char *job = label(obj, "batch.kubernetes.io/job-name");
    json_t *o, *owners = json_object_get(json_object_get(obj, "metadata"),
                                         "ownerReferences");
    size_t i;

    if (!job)
        job = label(obj, "job-name");
    json_array_foreach(owners, i, o) {
        const char *k = json_string_value(json_object_get(o, "kind"));
        if (!job && k && !strcmp(k, "Job"))
            job = json_string_value(json_object_get(o, "name"));
    }
    return job;
}

/* A container's termination worth telling: OOMKilled (the kernel's OOM
 * killer, in the container's cgroup). */
static int terminated(ko_index *x, const ko_about *a, json_t *cs, json_t *t,
                      int64_t now, ko_emit_fn fn, void *arg)
{
    const char *reason = sget(t, "reason"), *c = sget(cs, "name");
    const char *at = sget(t, "finishedAt");
    char msg[1024], code[24];

    if (!reason || strcmp(reason, "OOMKilled") || !c)
        return 0;
    snprintf(code, sizeof code, "%lld",
             (long long)json_integer_value(json_object_get(t, "exitCode")));
    snprintf(msg, sizeof msg, "Container %s in pod %s/%s was OOMKilled "
             "(exit code %s)", c, a->ns ? a->ns : "", a->name, code);
    return derive(x, a, "OOMKilled", msg, "Warning", at,
                  id_of((const char *const[]){"oom", a->uid ? a->uid : a->name,
                                              c, at ? at : "", NULL}),
                  now, fn, arg);
}

static int pod_containers(ko_index *x, const ko_about *a, json_t *obj,
                          int64_t now, ko_emit_fn fn, void *arg)
{
    static const char *const lists[] = {"initContainerStatuses",
                                        "containerStatuses"};
    json_t *status = json_object_get(obj, "status"), *cs;
    size_t i;

    for (size_t l = 0; l < 2; l++)
        json_array_foreach(json_object_get(status, lists[l]), i, cs) {
            json_t *now_t = json_object_get(json_object_get(cs, "state"), "terminated");
            json_t *last = json_object_get(json_object_get(cs, "lastState"), "terminated");
            if (terminated(x, a, cs, now_t, now, fn, arg) ||
                terminated(x, a, cs, last, now, fn, arg))
                return -1;
        }
    return 0;
}

/* The pod's own reason: Evicted (node pressure), Terminated (a node's
 * graceful shutdown), Preempting, ... */
static int pod_reason(ko_index *x, const ko_about *a, json_t *obj, int64_t now,
                      ko_emit_fn fn, void *arg)
{
    const char *reason = sget(obj, "status.reason");
    const char *msg = sget(obj, "status.message");
    json_t *dt = condition(obj, "DisruptionTarget", "True");
    const char *ts = dt ? sget(dt, "lastTransitionTime") : NULL;

    if (!reason || !*reason)
        return 0;
    if (!ts)
        ts = sget(obj, "metadata.deletionTimestamp");
    return derive(x, a, reason, msg ? msg : "", "Warning", ts,
                  id_of((const char *const[]){"podreason", a->uid ? a->uid : a->name,
                                              reason, NULL}),
                  now, fn, arg);
}

/* The index entry of ns/name made or updated. -1: out of memory. */
static int index_pod(ko_index *x, const char *type, const char *ns,
                     const char *name, const char *job, const char *node,
                     int64_t now)
{
    char key[512];
    ko_pod *p;

    snprintf(key, sizeof key, "%s/%s", ns, name);
    if (!(p = strmap_get(x->pods, key))) {
        if (!(p = calloc(1, sizeof *p)))
            return -1;
        strmap_put(x->pods, key, p);
    }
    str_copy(p->ns, sizeof p->ns, ns);
    str_copy(p->job, sizeof p->job, job ? job : "");
    if (node && *node)
        str_copy(p->node, sizeof p->node, node);
    p->deleted = !strcmp(type, "DELETED") ? now : 0;
    return 0;
}

int ko_pod_seen(ko_index *x, const char *type, const char *ns,
                const char *name, const char *job, const char *node,
                int64_t now)
{
    if (!ns || !name || !*name)
        return 0;
    x->st.objects++;
    return index_pod(x, type, ns, name, job, node, now);
}

static int apply_pod(ko_index *x, const char *type, json_t *obj, int64_t now,
                     ko_emit_fn fn, void *arg)
{
    const char *ns = sget(obj, "metadata.namespace");
    const char *name = sget(obj, "metadata.name");
    const char *node = sget(obj, "spec.nodeName"), *job = pod_job(obj);
    ko_about a = {"Pod", ns, name, sget(obj, "metadata.uid"), node, job};

    if (!ns || !name || !*name)
        return 0;
    if (index_pod(x, type, ns, name, job, node, now) ||
        pod_containers(x, &a, obj, now, fn, arg))
        return -1;
    return pod_reason(x, &a, obj, now, fn, arg);
}

/* ---- Jobs ---------------------------------------------------------------- */

/* The distinct nodes of ns's pods of job, sorted. */
static json_t *job_nodes(ko_index *x, const char *ns, const char *job)
{
    json_t *out = json_array(), *v;
    size_t pos = 0, i;
    const char *key;
    void *val;

    while (out && strmap_next(x->pods, &pos, &key, &val)) {
        ko_pod *p = val;
        int dup = 0;
        if (!p->node[0] || strcmp(p->job, job) || strcmp(p->ns, ns))
            continue;
        json_array_foreach(out, i, v)
            dup |= !strcmp(json_string_value(v), p->node);
        if (!dup)
            json_array_append_new(out, json_string(p->node));
    }
    /* insertion sort: a job has few nodes */
    for (i = 1; out && i < json_array_size(out); i++)
        for (size_t j = i; j > 0 && strcmp(json_string_value(json_array_get(out, j - 1)),
                                           json_string_value(json_array_get(out, j))) > 0; j--) {
            json_t *t = json_incref(json_array_get(out, j));
            json_array_set(out, j, json_array_get(out, j - 1));
            json_array_set_new(out, j - 1, t);
        }
    return out;
}

/* A count from a resource quantity ("8", or 8): a whole number from 0 to
 * KO_MAX_COUNT. Anything else (negative, "1k", a fraction, a number past
 * that) is unknown, 0: a node claiming "-1" or 2^63 GPUs made an
 * inventory signal cascade refuses (fuzz_k8s_watch). */
#define KO_MAX_COUNT 1000000
static json_int_t quantity(json_t *v)
{
    json_int_t n;
    const char *s;
    char *end;

    if (json_is_integer(v)) {
        n = json_integer_value(v);
    } else if (json_is_string(v)) {
        s = json_string_value(v);
        errno = 0;
        n = strtoll(s, &end, 10);
        if (end == s || *end || errno)
            return 0;
    } else {
        return 0;
    }
    return n >= 0 && n <= KO_MAX_COUNT ? n : 0;
}

/* The first container's command line and plain env, as a script for
 * jobconf's rules. */
static json_t *job_config(json_t *spec)
{
    json_t *c = json_array_get(json_object_get(spec, "containers"), 0), *v;
    char script[16384];
    size_t n = 0, i;
    static const char *const parts[] = {"command", "args"};

    if (!c)
        return NULL;
    for (size_t k = 0; k < 2; k++)
        json_array_foreach(json_object_get(c, parts[k]), i, v)
            if (json_is_string(v) && n < sizeof script)
                n += (size_t)snprintf(script + n, sizeof script - n, "%s ",
                                      json_string_value(v));
    if (n < sizeof script)
        n += (size_t)snprintf(script + n, sizeof script - n, "\n");
    json_array_foreach(json_object_get(c, "env"), i, v) {
        const char *name = sget(v, "name"), *val = sget(v, "value");
        if (name && val && n < sizeof script)
            n += (size_t)snprintf(script + n, sizeof script - n,
                                  "export %s=%s\n", name, val);
    }
    return jc_parse(script, n < sizeof script ? n : sizeof script - 1);
}

static json_t *job_signal(ko_index *x, json_t *obj, const char *state)
{
    const char *ns = sget(obj, "metadata.namespace");
    const char *name = sget(obj, "metadata.name");
    const char *jn = label(obj, x->o.job_name_label);
    const char *team = label(obj, x->o.team_label);
    json_t *tmpl = json_object_get(json_object_get(json_object_get(obj, "spec"),
                                                   "template"), "spec");
    const char *pc = sget(tmpl, "priorityClassName");
    json_t *sig, *c, *cfg;
    json_int_t gpus = 0, par;
    size_t i;

    sig = json_pack("{s:s, s:s, s:s, s:s, s:o, s:i}", "source", "job", "job",
                    name, "job_name", jn ? jn : name, "state", state, "nodes",
                    job_nodes(x, ns ? ns : "", name), "attempt", 1);
    if (!sig)
        return NULL;
    set_str(sig, "team", team);
    json_array_foreach(json_object_get(tmpl, "containers"), i, c)
        gpus += quantity(json_object_get(json_object_get(json_object_get(c, "resources"),
                                                         "limits"), KO_GPU));
    par = quantity(json_object_get(json_object_get(obj, "spec"), "parallelism"));
    if (gpus > 0)
        json_object_set_new(sig, "gpus", json_integer(gpus * (par > 0 ? par : 1)));
    if (pc && x->o.nreserved) {
        int reserved = 0;
        for (i = 0; i < x->o.nreserved; i++)
            reserved |= !strcmp(pc, x->o.reserved[i]);
        json_object_set_new(sig, "priority", json_string(reserved ? "reserved" : "elastic"));
    }
    if ((cfg = job_config(tmpl)) && json_object_size(cfg))
        json_object_set_new(sig, "config", cfg);
    else
        json_decref(cfg);
    return sig;
}

/* The Job's end, from its terminal condition (else the FailureTarget a
 * newer controller sets first): the state and when. */
static const char *job_end(json_t *obj, const char **ts)
{
    json_t *c;
    const char *reason;

    if ((c = condition(obj, "Complete", "True")) ||
        (c = condition(obj, "SuccessCriteriaMet", "True"))) {
        *ts = sget(c, "lastTransitionTime");
        return "COMPLETED";
    }
    if ((c = condition(obj, "Failed", "True")) ||
        (c = condition(obj, "FailureTarget", "True"))) {
        *ts = sget(c, "lastTransitionTime");
        reason = sget(c, "reason");
        return reason && !strcmp(reason, "DeadlineExceeded") ? "TIMEOUT" : "FAILED";
    }
    return NULL;
}

static int job_milestone(ko_index *x, json_t *obj, const char *state,
                         const char *ts, int64_t now, ko_emit_fn fn, void *arg)
{
    const char *uid = sget(obj, "metadata.uid");
    json_t *sig = job_signal(x, obj, state);

    if (!sig)
        return -1;
    return tell(x, sig, id_of((const char *const[]){"job", uid ? uid : "",
                                                    state, NULL}),
                ts, now, fn, arg);
}

static int apply_job(ko_index *x, const char *type, json_t *obj, int64_t now,
                     ko_emit_fn fn, void *arg)
{
    const char *start = sget(obj, "status.startTime"), *end_ts = NULL;
    const char *end = job_end(obj, &end_ts);
    const char *name = sget(obj, "metadata.name");

    if (!name || !*name)
        return 0;
    if (job_milestone(x, obj, "PENDING", sget(obj, "metadata.creationTimestamp"),
                      now, fn, arg))
        return -1;
    if (start && job_milestone(x, obj, "RUNNING", start, now, fn, arg))
        return -1;
    if (end)
        return job_milestone(x, obj, end, end_ts, now, fn, arg);
    if (!strcmp(type, "DELETED"))
        return job_milestone(x, obj, "CANCELLED",
                             sget(obj, "metadata.deletionTimestamp"), now, fn, arg);
    return 0;
}

/* ---- Nodes --------------------------------------------------------------- */

/* The node's status.addresses (InternalIP, Hostname, ExternalIP...), the
 * names other logs know it by (Ray's names nodes by IP): NULL when none
 * but its name. */
static json_t *node_addrs(json_t *obj, const char *name)
{
    json_t *list = json_object_get(json_object_get(obj, "status"), "addresses");
    json_t *a = json_array(), *e;
    size_t i;

    json_array_foreach(list, i, e) {
        const char *v = sget(e, "address");
        if (a && v && strcmp(v, name) && na_word(v) &&
            !na_loopback(v) && json_array_size(a) < NA_ADDRS_MAX)
            json_array_append_new(a, json_string(v));
    }
    if (a && !json_array_size(a)) {
        json_decref(a);
        a = NULL;
    }
    return a;
}

static int node_inventory(ko_index *x, json_t *obj, const char *name,
                          int64_t now, ko_emit_fn fn, void *arg)
{
    const char *rack = label(obj, x->o.rack_label);
    const char *canary = label(obj, x->o.canary_label);
    json_int_t gpus = quantity(json_object_get(json_object_get(json_object_get(obj, "status"),
                                                               "allocatable"), KO_GPU));
    char text[512];
    ko_node *n = strmap_get(x->nodes, name);
    json_t *sig;

    json_t *addrs = node_addrs(obj, name);
    char *atext = addrs ? json_dumps(addrs, JSON_COMPACT) : NULL;

    snprintf(text, sizeof text, "%s|%lld|%d|%s", rack ? rack : "",
             (long long)gpus, canary && !strcmp(canary, "true"),
             atext ? atext : "");
    free(atext);
    if (n && !strcmp(n->inventory, text)) {
        json_decref(addrs);
        return 0;
    }
    sig = json_pack("{s:s, s:s, s:I, s:b}", "source", "inventory", "host", name,
                    "gpus", gpus, "canary", canary && !strcmp(canary, "true"));
    if (!sig) {
        json_decref(addrs);
        return -1;
    }
    set_str(sig, "rack", rack);
    if (addrs)
        json_object_set_new(sig, "addrs", addrs);
    /* A node's inventory has no time of its own: now, with an id from
     * what it says, so telling it again changes nothing. */
    if (tell(x, sig, id_of((const char *const[]){"inventory", name, text, NULL}),
             NULL, now, fn, arg))
        return -1;
    if (!n && !(n = calloc(1, sizeof *n)))
        return -1;
    str_copy(n->inventory, sizeof n->inventory, text);
    strmap_put(x->nodes, name, n);
    return 0;
}

/* A Ready transition, in the node controller's words. */
static int node_ready(ko_index *x, json_t *obj, const char *name, int64_t now,
                      ko_emit_fn fn, void *arg)
{
    json_t *c = condition(obj, "Ready", NULL);
    const char *status = sget(c, "status"), *at = sget(c, "lastTransitionTime");
    const char *what = status && !strcmp(status, "True") ? "NodeReady" : "NodeNotReady";
    ko_about a = {"Node", NULL, name, sget(obj, "metadata.uid"), name, NULL};
    char msg[512];

    if (!c || !status || !at)
        return 0;
    snprintf(msg, sizeof msg, "Node %s status is now: %s", name, what);
    return derive(x, &a, what, msg, strcmp(what, "NodeReady") ? "Warning" : "Normal",
                  at, id_of((const char *const[]){"ready", a.uid ? a.uid : name,
                                                  status, at, NULL}),
                  now, fn, arg);
}

static int apply_node(ko_index *x, const char *type, json_t *obj, int64_t now,
                      ko_emit_fn fn, void *arg)
{
    const char *name = sget(obj, "metadata.name");

    if (!name || !*name)
        return 0;
    if (!strcmp(type, "DELETED")) {
        free(strmap_del(x->nodes, name));
        return 0;
    }
    if (node_inventory(x, obj, name, now, fn, arg))
        return -1;
    return node_ready(x, obj, name, now, fn, arg);
}

/* ---- Kueue Workloads ----------------------------------------------------- */

static int apply_workload(ko_index *x, const char *type, json_t *obj,
                          int64_t now, ko_emit_fn fn, void *arg)
{
    json_t *ev = condition(obj, "Evicted", "True"), *o, *sig;
    const char *reason = sget(ev, "reason"), *job = NULL, *uid;
    json_t *owners = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
    size_t i;

    (void)type;
    if (!ev || !reason || strcmp(reason, "Preempted"))
        return 0;
    json_array_foreach(owners, i, o)
        if (!job && sget(o, "kind") && !strcmp(sget(o, "kind"), "Job"))
            job = sget(o, "name");
    if (!job || !*job)
        return 0;
    uid = sget(obj, "metadata.uid");
    sig = json_pack("{s:s, s:s, s:s, s:s, s:i}", "source", "job", "job", job,
                    "job_name", job, "state", "PREEMPTED", "attempt", 1);
    if (!sig)
        return -1;
    return tell(x, sig, id_of((const char *const[]){"preempted", uid ? uid : job,
                                                    sget(ev, "lastTransitionTime")
                                                        ? sget(ev, "lastTransitionTime") : "",
                                                    NULL}),
                sget(ev, "lastTransitionTime"), now, fn, arg);
}

int ko_apply(ko_index *x, ko_kind k, const char *type, json_t *obj,
             int64_t now, ko_emit_fn fn, void *arg)
{
    if (!json_is_object(obj) || !type)
        return 0;
    x->st.objects++;
    switch (k) {
    case KO_EVENTS:
        return apply_event(x, type, obj, now, fn, arg);
    case KO_PODS:
        return apply_pod(x, type, obj, now, fn, arg);
    case KO_JOBS:
        return apply_job(x, type, obj, now, fn, arg);
    case KO_NODES:
        return apply_node(x, type, obj, now, fn, arg);
    case KO_WORKLOADS:
        return apply_workload(x, type, obj, now, fn, arg);
    default:
        return 0;
    }
}
