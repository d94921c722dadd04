#include "ingest/k8scol.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <jansson.h>

#include "core/httpc.h"
#include "core/log.h"
#include "core/signal.h"
#include "core/str.h"
#include "core/ts.h"
#include "ingest/fpos.h"
#include "ingest/k8sframe.h"
#include "ingest/jsonscan.h"
#include "ingest/logline.h"

#define KW_MAX_LIST (256u << 20) /* one LIST page's answer */
#define KW_MAX_ERROR 65536       /* the kept part of a non-200 answer */
#define KW_MAX_BACKOFF_MS 30000
#define KW_FORBIDDEN_MS (5 * 60 * 1000)
#define KW_TICK_MS 1000
#define KW_SAVE_EVERY 10 /* ticks */
#define KW_TOKEN_EVERY 60
#define KW_WINDOWS 64

typedef enum { KW_OFF, KW_WAITING, KW_LISTING, KW_WATCHING } kw_phase;
/* Why a watch was ended by its reader. */
typedef enum { KW_NONE, KW_GONE, KW_FULL, KW_BAD, KW_STATUS } kw_abort;

typedef struct kw_window {
    kfk_tracker *t;
    char rv[128];
} kw_window;

typedef struct kw_res {
    struct kw_collector *c;
    ko_kind kind;
    char path[256];      /* "/api/v1/pods", without the server */
    char group_v1beta1[256]; /* Kueue's older path, tried on a 404 */
    char select[256];    /* labelSelector, or "" */
    char item_kind[32], api_version[64]; /* filled into listed items */
    kw_phase phase;
    int started;         /* first LIST begun (the gate's) */
    int listed;          /* a LIST has ended once */
    char rv[128];        /* the last resourceVersion applied; "": LIST */
    char cont[4096];     /* the list's continue token */
    httpc_xfer *x;
    kf_framer *fr;
    char *body;
    size_t len, cap;
    struct event *timer;
    int failures;
    kw_abort abort;
    char abort_msg[600];
    int64_t watch_start;
    unsigned long docs;  /* documents this watch delivered */
    kfk_tracker *t;      /* every signal of this kind */
    /* Events: the resourceVersion whose signals (and all before) are
     * acknowledged moves through windows of a tick each. */
    kw_window win[KW_WINDOWS];
    size_t nwin;
    kw_window cur;
    char committed[128];
} kw_res;

struct kw_collector {
    struct event_base *base;
    kw_opts o;
    kc_conf auth;
    kfk_producer *p;
    httpc *http;
    ko_index *idx;
    kw_res res[KO_NKINDS];
    struct event *tick;
    unsigned long ticks;
    char saved[128];     /* the Events' rv last saved */
    int stopping;
    unsigned seed;
    kw_stats st;
};

static void start(kw_res *r);
static void gate_open(kw_collector *c);

static const char *cluster_of(const kw_collector *c)
{
    return c->o.cluster ? c->o.cluster : "default";
}

static const char *kname(const kw_res *r)
{
    return ko_kind_name(r->kind);
}

/* ---- publishing ---------------------------------------------------------- */

static void dead_letter(kw_collector *c, kw_res *r, const char *why,
                        const char *text, size_t len)
{
    char name[64];
    char *dl;
    cs_err err;

    snprintf(name, sizeof name, "k8s:%s", kname(r));
    if (!(dl = ll_dead_letter(name, 0, why, text, len < 4096 ? len : 4096)))
        return;
    if (kfk_produce_take(c->p, KFK_TOPIC_DEADLETTER, NULL, 0, dl, strlen(dl),
                         r->t, &err) == KFK_OK)
        c->st.dead_letters++;
    log_warn("k8s", "%s: %s: dead-lettered", kname(r), why);
}

/* ko_emit_fn: sig (taken) onto cascade.signals. */
static int emit(void *arg, json_t *o)
{
    kw_res *r = arg;
    kw_collector *c = r->c;
    kfk_tracker *t = r->kind == KO_EVENTS ? r->cur.t : r->t;
    sig s;
    char *buf, *text;
    size_t len;
    cs_err err;
    int rc;

    json_object_set_new(o, "cluster", json_string(cluster_of(c)));
    if (sig_adopt_json(&s, o, &err)) {
        text = json_dumps(o, JSON_COMPACT);
        dead_letter(c, r, err.msg, text ? text : "", text ? strlen(text) : 0);
        free(text);
        json_decref(o);
        return 0;
    }
    sig_to_msgpack(&s, &buf, &len);
    rc = kfk_produce_take(c->p, KFK_TOPIC_SIGNALS, s.cluster, strlen(s.cluster),
                          buf, len, t, &err);
    if (rc == KFK_TOO_BIG) {
        text = json_dumps(s.obj, JSON_COMPACT);
        dead_letter(c, r, err.msg, text ? text : "", text ? strlen(text) : 0);
        free(text);
        rc = KFK_OK;
    }
    sig_free(&s);
    if (rc != KFK_OK) {
        c->st.refused_full++;
        return -1;
    }
    c->st.published++;
    return 0;
}

/* ---- requests ------------------------------------------------------------ */

static void append(kw_res *r, const char *p, size_t n, size_t max)
{
    if (r->len + n > max)
        n = max > r->len ? max - r->len : 0;
    if (!n)
        return;
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 65536;
        char *nb;
        while (cap < r->len + n + 1)
            cap *= 2;
        if (!(nb = realloc(r->body, cap)))
            return;
        r->body = nb;
        r->cap = cap;
    }
    memcpy(r->body + r->len, p, n);
    r->len += n;
    r->body[r->len] = 0;
}

static void set_rv(char *dst, json_t *obj)
{
    const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"),
                                                       "resourceVersion"));
    if (rv && *rv)
        str_copy(dst, 128, rv);
}

/* One watch document. -1 ends the watch (r->abort says why). */
static int watch_doc(kw_res *r, json_t *doc)
{
    kw_collector *c = r->c;
    const char *type = json_string_value(json_object_get(doc, "type"));
    json_t *obj = json_object_get(doc, "object");

    if (!type || !json_is_object(obj)) {
        r->abort = KW_BAD;
        snprintf(r->abort_msg, sizeof r->abort_msg,
                 "a watch event without type or object");
        return -1;
    }
    if (!strcmp(type, "BOOKMARK")) {
        c->st.bookmarks++;
        set_rv(r->rv, obj);
        if (r->kind == KO_EVENTS)
            set_rv(r->cur.rv, obj);
        return 0;
    }
    if (!strcmp(type, "ERROR")) {
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        const char *msg = json_string_value(json_object_get(obj, "message"));
        r->abort = code == 410 ? KW_GONE : KW_STATUS;
        snprintf(r->abort_msg, sizeof r->abort_msg, "%lld %s", (long long)code,
                 msg ? msg : "");
        return -1;
    }
    c->st.watch_events++;
    r->docs++;
    if (ko_apply(c->idx, r->kind, type, obj, ts_now() / 1000000, emit, r)) {
        r->abort = KW_FULL;
        return -1;
    }
    set_rv(r->rv, obj);
    if (r->kind == KO_EVENTS)
        set_rv(r->cur.rv, obj);
    return 0;
}

/* A string field unescaped into out; 0 when it is not one. */
static int str_of(const jsc_val *f, char *out, size_t cap)
{
    return f->kind == 1 && jsc_unescape(f->v, f->len, out, cap) == 0;
}

/* An object field's fields, in one pass; 0 when it is not an object. */
static int fields_of(const jsc_val *f, const char *const *keys, size_t n,
                     jsc_val *out)
{
    return f->kind == 2 && f->v[0] == '{' && jsc_fields(f->v, f->len, keys, n, out) == 0;
}

/* A watch document's type (as text) and object; 0 when not read so. */
static int scan_doc(const char *doc, size_t len, char *type, size_t cap,
                    jsc_val *obj)
{
    static const char *const top[] = {"type", "object"};
    jsc_val f[2];

    if (jsc_fields(doc, len, top, 2, f) || !str_of(&f[0], type, cap) ||
        f[1].kind != 2 || f[1].v[0] != '{')
        return 0;
    *obj = f[1];
    return 1;
}

/* An Event the edge filter drops, told from its bytes (most are: Normal
 * events no rule reads), without building it: its resourceVersion
 * taken. 0: build it (kept, or not read that way). */
static int dropped_unbuilt(kw_res *r, const char *doc, size_t len)
{
    static const char *const keys[] = {"reason", "message", "note", "metadata"};
    static const char *const rv[] = {"resourceVersion"};
    char t[16], why[256], msg[2048], ver[128];
    jsc_val obj, f[4], m;

    if (r->kind != KO_EVENTS || !r->c->o.obj.keep ||
        !scan_doc(doc, len, t, sizeof t, &obj) ||
        (strcmp(t, "ADDED") && strcmp(t, "MODIFIED")) ||
        jsc_fields(obj.v, obj.len, keys, 4, f) || !str_of(&f[0], why, sizeof why) ||
        !fields_of(&f[3], rv, 1, &m) || !str_of(&m, ver, sizeof ver) || !ver[0])
        return 0;
    if (!str_of(&f[1], msg, sizeof msg) && !str_of(&f[2], msg, sizeof msg))
        msg[0] = 0;
    if (ko_keep_event(r->c->idx, why, msg))
        return 0;
    r->c->st.watch_events++;
    r->docs++;
    str_copy(r->rv, sizeof r->rv, ver);
    str_copy(r->cur.rv, sizeof r->cur.rv, ver);
    return 1;
}

/* A Pod version that only says where it runs, told from its bytes: no
 * container OOMKilled, no reason of its own, its Job in a label. 0:
 * build it. */
static int pod_unbuilt(kw_res *r, const char *doc, size_t len)
{
    static const char *const okeys[] = {"metadata", "spec", "status"};
    static const char *const mkeys[] = {"namespace", "name", "resourceVersion", "labels"};
    static const char *const lkeys[] = {"batch.kubernetes.io/job-name", "job-name"};
    static const char *const nkey[] = {"nodeName"};
    static const char *const rkey[] = {"reason"};
    char t[16], n[254], p[254], j[254], h[254], ver[128];
    jsc_val obj, o[3], m[4], l[2], sp, st;

    if (r->kind != KO_PODS || memmem(doc, len, "OOMKilled", 9) ||
        !scan_doc(doc, len, t, sizeof t, &obj) ||
        (strcmp(t, "ADDED") && strcmp(t, "MODIFIED") && strcmp(t, "DELETED")) ||
        jsc_fields(obj.v, obj.len, okeys, 3, o) || !fields_of(&o[0], mkeys, 4, m) ||
        !str_of(&m[0], n, sizeof n) || !str_of(&m[1], p, sizeof p) ||
        !str_of(&m[2], ver, sizeof ver) || !ver[0] || !fields_of(&m[3], lkeys, 2, l) ||
        (!str_of(&l[0], j, sizeof j) && !str_of(&l[1], j, sizeof j)))
        return 0;
    /* a reason of its own (Evicted, Terminated): build it */
    if (o[2].kind && (!fields_of(&o[2], rkey, 1, &st) || st.kind))
        return 0;
    if (!fields_of(&o[1], nkey, 1, &sp) || !str_of(&sp, h, sizeof h))
        h[0] = 0;
    if (ko_pod_seen(r->c->idx, t, n, p, j, h, ts_now() / 1000000))
        return 0;
    r->c->st.watch_events++;
    r->docs++;
    str_copy(r->rv, sizeof r->rv, ver);
    return 1;
}

static int on_data(void *arg, long status, const char *p, size_t n)
{
    kw_res *r = arg;
    json_error_t je;
    const char *raw;
    size_t len;
    json_t *doc;
    cs_err err;
    int rc;

    if (r->phase != KW_WATCHING || status != 200) {
        if (status == 200 && r->len + n > KW_MAX_LIST) {
            r->abort = KW_BAD;
            snprintf(r->abort_msg, sizeof r->abort_msg,
                     "a LIST page over %u bytes: use a smaller --list-limit",
                     KW_MAX_LIST);
            return -1;
        }
        append(r, p, n, status == 200 ? KW_MAX_LIST : KW_MAX_ERROR);
        return 0;
    }
    if (kf_feed(r->fr, p, n, &err))
        goto bad;
    while ((rc = kf_next_raw(r->fr, &raw, &len, &err)) == 1) {
        if (dropped_unbuilt(r, raw, len) || pod_unbuilt(r, raw, len))
            continue;
        if (!(doc = json_loadb(raw, len, 0, &je))) {
            cs_err_set(&err, "a watch event that is not JSON: %s", je.text);
            p = raw;
            n = len;
            goto bad;
        }
        rc = watch_doc(r, doc);
        json_decref(doc);
        if (rc)
            return -1;
    }
    if (rc == 0)
        return 0;
bad:
    r->abort = KW_BAD;
    snprintf(r->abort_msg, sizeof r->abort_msg, "%s", err.msg);
    dead_letter(r->c, r, err.msg, p, n); /* the chunk at hand */
    return -1;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    start(arg);
}

static void later(kw_res *r, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    r->phase = KW_WAITING;
    evtimer_add(r->timer, &tv);
}

/* 1, 2, 4 .. 30 s, with up to a quarter more at random. */
static void backoff(kw_res *r)
{
    int ms = 1000;

    for (int i = 1; i < r->failures && ms < KW_MAX_BACKOFF_MS; i++)
        ms *= 2;
    if (ms > KW_MAX_BACKOFF_MS)
        ms = KW_MAX_BACKOFF_MS;
    ms += (int)(rand_r(&r->c->seed) % (unsigned)(ms / 4 + 1));
    r->failures++;
    later(r, ms);
}

/* The message of a Status answer, or the start of the body. */
static void status_text(kw_res *r, char *out, size_t cap)
{
    json_t *st = r->len ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    const char *m = json_string_value(json_object_get(st, "message"));

    snprintf(out, cap, "%.300s", m ? m : r->len ? r->body : "(no body)");
    json_decref(st);
}

static void relist(kw_res *r)
{
    r->rv[0] = 0;
    r->cont[0] = 0;
}

/* A non-200 answer (or none: status 0). */
static void answered(kw_res *r, long status, const char *error)
{
    kw_collector *c = r->c;
    char why[400];
    cs_err err;

    if (r->kind == KO_PODS)
        gate_open(c); /* the others need not wait for a failing list */
    if (!status) {
        c->st.net_errors++;
        log_warn("k8s", "%s: %s%s: %s", kname(r), c->auth.server, r->path,
                 error ? error : "no answer");
        backoff(r);
        return;
    }
    c->st.http_errors++;
    status_text(r, why, sizeof why);
    if (status == 410) {
        c->st.relists_410++;
        log_info("k8s", "%s: 410 Gone (%s): listing again", kname(r), why);
        relist(r);
        later(r, 0);
    } else if (status == 401) {
        int changed = kc_reload(&c->auth, &err);
        c->st.token_reloads++;
        log_warn("k8s", "%s: 401 Unauthorized (%s): %s", kname(r), why,
                 changed < 0 ? err.msg
                 : changed ? "the token file changed: trying the new token"
                           : "the token did not change");
        backoff(r);
    } else if (status == 404 && r->kind == KO_WORKLOADS && r->group_v1beta1[0]) {
        str_copy(r->path, sizeof r->path, r->group_v1beta1);
        r->group_v1beta1[0] = 0;
        later(r, 0);
    } else if (status == 404 && r->kind == KO_WORKLOADS) {
        log_info("k8s", "workloads: Kueue is not installed (404): not watched");
        r->phase = KW_OFF;
    } else if (status == 403 || status == 404) {
        log_error("k8s", "%s: %ld %s: the collector's account needs get, list "
                  "and watch on %s (a ClusterRole; docs/COLLECTORS.md); "
                  "trying again in 5 minutes", kname(r), status, why, kname(r));
        r->failures++;
        later(r, KW_FORBIDDEN_MS);
    } else {
        log_warn("k8s", "%s: HTTP %ld: %s", kname(r), status, why);
        backoff(r);
    }
}

/* A listed item lacks kind and apiVersion (typed lists leave them out):
 * an Event object carries them as the API would. */
static void fill_kind(kw_res *r, json_t *item)
{
    if (!json_object_get(item, "kind"))
        json_object_set_new(item, "kind", json_string(r->item_kind));
    if (!json_object_get(item, "apiVersion"))
        json_object_set_new(item, "apiVersion", json_string(r->api_version));
}

static void listed(kw_res *r);

static void list_done(kw_res *r)
{
    kw_collector *c = r->c;
    json_error_t je;
    json_t *list = json_loadb(r->body ? r->body : "", r->len, 0, &je), *item;
    const char *cont, *rv;
    size_t i;

    c->st.pages++;
    if (!json_is_array(json_object_get(list, "items"))) {
        log_error("k8s", "%s: the LIST answer is not a list (%s): listing "
                  "again", kname(r), list ? "no items" : je.text);
        dead_letter(c, r, "a LIST answer that is not a list", r->body ? r->body : "",
                    r->len);
        json_decref(list);
        relist(r);
        backoff(r);
        return;
    }
    json_array_foreach(json_object_get(list, "items"), i, item) {
        fill_kind(r, item);
        if (ko_apply(c->idx, r->kind, "ADDED", item, ts_now() / 1000000, emit, r)) {
            json_decref(list);
            log_warn("k8s", "%s: Kafka's queue is full: listing again in 1 s",
                     kname(r));
            relist(r);
            later(r, 1000);
            return;
        }
    }
    cont = json_string_value(json_object_get(json_object_get(list, "metadata"), "continue"));
    rv = json_string_value(json_object_get(json_object_get(list, "metadata"), "resourceVersion"));
    if (cont && *cont) {
        str_copy(r->cont, sizeof r->cont, cont);
    } else {
        r->cont[0] = 0;
        str_copy(r->rv, sizeof r->rv, rv ? rv : "");
        if (r->kind == KO_EVENTS)
            str_copy(r->cur.rv, sizeof r->cur.rv, r->rv);
        r->failures = 0;
        listed(r);
    }
    json_decref(list);
    later(r, 0);
}

static void on_done(void *arg, long status, const char *error)
{
    kw_res *r = arg;
    kw_collector *c = r->c;
    kw_abort why = r->abort;

    r->x = NULL;
    r->abort = KW_NONE;
    if (c->stopping)
        return;
    if (why == KW_FULL) {
        log_warn("k8s", "%s: Kafka's queue is full: starting again in 1 s "
                 "from before what it refused", kname(r));
        if (r->kind == KO_EVENTS)
            str_copy(r->rv, sizeof r->rv, r->committed);
        else
            relist(r);
        later(r, 1000);
    } else if (why == KW_GONE) {
        c->st.relists_410++;
        log_info("k8s", "%s: the watch's resourceVersion is gone (%s): "
                 "listing again", kname(r), r->abort_msg);
        relist(r);
        later(r, 0);
    } else if (why == KW_BAD || why == KW_STATUS) {
        log_error("k8s", "%s: %s: listing again", kname(r), r->abort_msg);
        relist(r);
        backoff(r);
    } else if (status != 200 || error) {
        answered(r, error ? 0 : status, error);
    } else if (r->phase == KW_LISTING) {
        list_done(r);
    } else if (!r->docs && ts_mono() - r->watch_start < 1000000) {
        /* ended at once, empty: do not spin on a server that does that */
        backoff(r);
    } else {
        r->failures = 0;
        later(r, 0);
    }
}

/* -1 when the URL would not fit: a cut query is another request. */
static int add_query(char *url, size_t cap, const char *name, const char *v)
{
    char esc[4096 * 3 + 1];
    size_t n = strlen(url);
    int w;

    httpc_escape(v, esc, sizeof esc);
    w = snprintf(url + n, cap - n, "%s%s=%s", strchr(url, '?') ? "&" : "?",
                 name, esc);
    return w >= 0 && (size_t)w < cap - n ? 0 : -1;
}

static void start(kw_res *r)
{
    kw_collector *c = r->c;
    char url[8192], num[32];
    int watch = r->rv[0] != 0, secs = 0, cut = 0;
    httpc_req q = {0};
    cs_err err;

    if (c->stopping || r->phase == KW_OFF)
        return;
    snprintf(url, sizeof url, "%s%s", c->auth.server, r->path);
    if (r->select[0])
        cut |= add_query(url, sizeof url, "labelSelector", r->select);
    if (watch) {
        int span = c->o.watch_max_s - c->o.watch_min_s;
        secs = c->o.watch_min_s + (span > 0 ? (int)(rand_r(&c->seed) % (unsigned)(span + 1)) : 0);
        cut |= add_query(url, sizeof url, "watch", "1");
        cut |= add_query(url, sizeof url, "allowWatchBookmarks", "true");
        cut |= add_query(url, sizeof url, "resourceVersion", r->rv);
        snprintf(num, sizeof num, "%d", secs);
        cut |= add_query(url, sizeof url, "timeoutSeconds", num);
    } else {
        snprintf(num, sizeof num, "%d", c->o.list_limit);
        cut |= add_query(url, sizeof url, "limit", num);
        if (r->cont[0])
            cut |= add_query(url, sizeof url, "continue", r->cont);
        else
            c->st.lists++;
    }
    if (cut) {
        log_error("k8s", "%s: the request to %s%s is longer than %zu bytes "
                  "(a label selector or continue token that long); not sent",
                  kname(r), c->auth.server, r->path, sizeof url);
        backoff(r);
        return;
    }
    q.method = "GET";
    q.url = url;
    q.bearer = c->auth.token[0] ? c->auth.token : NULL;
    q.ca_file = c->auth.ca_file[0] ? c->auth.ca_file : NULL;
    q.ca_pem = c->auth.ca_pem;
    q.cert_file = c->auth.cert_file[0] ? c->auth.cert_file : NULL;
    q.key_file = c->auth.key_file[0] ? c->auth.key_file : NULL;
    q.cert_pem = c->auth.cert_pem;
    q.key_pem = c->auth.key_pem;
    q.insecure = c->auth.insecure;
    q.user_agent = "cascade-k8s/1";
    q.timeout_ms = watch ? (long)(secs + 30) * 1000 : 60000;
    r->len = 0;
    r->abort = KW_NONE;
    kf_reset(r->fr);
    r->phase = watch ? KW_WATCHING : KW_LISTING;
    r->watch_start = ts_mono();
    r->docs = 0;
    r->started = 1;
    if (watch)
        c->st.watches++;
    if (!(r->x = httpc_stream(c->http, &q, on_data, on_done, r, &err))) {
        log_error("k8s", "%s: %s", kname(r), err.msg);
        backoff(r);
    }
}

/* The Pods are the index the Jobs' and Events' signals read their nodes
 * and jobs from: those start once the Pods are listed (or the listing
 * failed once). */
static void listed(kw_res *r)
{
    kw_collector *c = r->c;

    if (r->listed++)
        return;
    log_info("k8s", "%s: listed (resourceVersion %s): watching", kname(r), r->rv);
    if (r->kind == KO_PODS)
        gate_open(c);
}

static void gate_open(kw_collector *c)
{
    for (int k = 0; k < KO_NKINDS; k++)
        if (!c->res[k].started && c->res[k].phase != KW_OFF && k != KO_PODS &&
            k != KO_NODES)
            later(&c->res[k], 0);
}

/* ---- delivery and the state file ----------------------------------------- */

static int write_state(FILE *f, void *arg)
{
    kw_collector *c = arg;
    json_t *o = json_pack("{s:s, s:s}", "events_api", c->o.events_api_v1
                                                         ? "events.k8s.io/v1" : "v1",
                          "events_rv", c->res[KO_EVENTS].committed);
    int rc = o ? json_dumpf(o, f, JSON_COMPACT) : -1;

    json_decref(o);
    fputc('\n', f);
    return rc;
}

static void save_state(kw_collector *c)
{
    cs_err err;

    if (!c->o.state || !strcmp(c->saved, c->res[KO_EVENTS].committed))
        return;
    if (fpos_replace(c->o.state, "k8s state", write_state, c, &err)) {
        log_error("k8s", "%s", err.msg);
        return;
    }
    str_copy(c->saved, sizeof c->saved, c->res[KO_EVENTS].committed);
}

/* Reads the Events' resourceVersion of the last run (same Event API). */
static int load_state(kw_collector *c, cs_err *err)
{
    json_error_t je;
    json_t *o;
    const char *api, *rv;
    FILE *f;

    if (!c->o.state)
        return 0;
    if (!(f = fopen(c->o.state, "re"))) {
        if (errno == ENOENT)
            return 0;
        cs_err_set(err, "k8s state %s: %s", c->o.state, strerror(errno));
        return -1;
    }
    o = json_loadf(f, 0, &je);
    fclose(f);
    if (!o) {
        cs_err_set(err, "k8s state %s:%d: %s", c->o.state, je.line, je.text);
        return -1;
    }
    api = json_string_value(json_object_get(o, "events_api"));
    rv = json_string_value(json_object_get(o, "events_rv"));
    if (rv && *rv && api &&
        !strcmp(api, c->o.events_api_v1 ? "events.k8s.io/v1" : "v1")) {
        kw_res *r = &c->res[KO_EVENTS];
        str_copy(r->rv, sizeof r->rv, rv);
        str_copy(r->committed, sizeof r->committed, rv);
        str_copy(r->cur.rv, sizeof r->cur.rv, rv);
        str_copy(c->saved, sizeof c->saved, rv);
        r->listed = 1; /* no list needed: the watch goes on from rv */
        log_info("k8s", "events: going on from resourceVersion %s (%s)", rv,
                 c->o.state);
    }
    json_decref(o);
    return 0;
}

/* Starts r again from where nothing is lost (after a failed delivery). */
static void restart(kw_res *r)
{
    if (r->x) {
        httpc_cancel(r->x);
        r->x = NULL;
    }
    evtimer_del(r->timer);
    if (r->kind == KO_EVENTS && r->committed[0]) {
        str_copy(r->rv, sizeof r->rv, r->committed);
        str_copy(r->cur.rv, sizeof r->cur.rv, r->committed);
    } else {
        relist(r);
    }
    ko_forget(r->c->idx);
    later(r, 1000);
}

/* Moves the Events' committed resourceVersion over the windows whose
 * signals all arrived. */
static void events_commit(kw_collector *c)
{
    kw_res *r = &c->res[KO_EVENTS];
    size_t done = 0;

    /* The tick's window: what was applied (and sent) since the last */
    if (r->cur.t && r->cur.rv[0] && r->nwin < KW_WINDOWS) {
        kfk_tracker *t = kfk_tracker_new();
        if (t) {
            r->win[r->nwin++] = r->cur;
            r->cur.t = t;
        }
    }
    while (done < r->nwin && r->win[done].t &&
           !kfk_tracker_pending(r->win[done].t)) {
        if (kfk_tracker_take_failed(r->win[done].t)) {
            c->st.failed_delivery++;
            log_warn("k8s", "events: Kafka did not take some signals: "
                     "watching again from %s", r->committed[0] ? r->committed : "a LIST");
            for (size_t i = 0; i < r->nwin; i++)
                kfk_tracker_release(r->win[i].t);
            r->nwin = 0;
            restart(r);
            return;
        }
        if (r->win[done].rv[0])
            str_copy(r->committed, sizeof r->committed, r->win[done].rv);
        kfk_tracker_release(r->win[done].t);
        done++;
    }
    memmove(r->win, r->win + done, (r->nwin - done) * sizeof *r->win);
    r->nwin -= done;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    kw_collector *c = arg;
    cs_err err;

    (void)fd;
    (void)what;
    c->ticks++;
    for (int k = 0; k < KO_NKINDS; k++)
        if (k != KO_EVENTS && kfk_tracker_take_failed(c->res[k].t)) {
            c->st.failed_delivery++;
            log_warn("k8s", "%s: Kafka did not take some signals: listing again",
                     kname(&c->res[k]));
            restart(&c->res[k]);
        }
    events_commit(c);
    if (c->ticks % KW_SAVE_EVERY == 0)
        save_state(c);
    if (c->ticks % KW_TOKEN_EVERY == 0) {
        if (kc_reload(&c->auth, &err) < 0)
            log_warn("k8s", "cannot read the token again: %s", err.msg);
        ko_expire(c->idx, ts_now() / 1000000);
    }
}

/* ---- life ---------------------------------------------------------------- */

static void res_init(kw_collector *c, ko_kind k, const char *group,
                     const char *resource, const char *item_kind,
                     const char *api_version)
{
    kw_res *r = &c->res[k];
    char ns[300] = "";

    r->c = c;
    r->kind = k;
    if (c->o.ns && k != KO_NODES)
        snprintf(ns, sizeof ns, "/namespaces/%s", c->o.ns);
    snprintf(r->path, sizeof r->path, "%s%s/%s", group, ns, resource);
    str_copy(r->item_kind, sizeof r->item_kind, item_kind);
    str_copy(r->api_version, sizeof r->api_version, api_version);
    r->phase = KW_WAITING;
}

static int res_alloc(kw_res *r, struct event_base *base)
{
    r->fr = kf_new();
    r->t = kfk_tracker_new();
    r->timer = evtimer_new(base, on_timer, r);
    if (r->kind == KO_EVENTS)
        r->cur.t = kfk_tracker_new();
    return r->fr && r->t && r->timer && (r->kind != KO_EVENTS || r->cur.t) ? 0 : -1;
}

static void setup(kw_collector *c)
{
    char ns[300] = "";

    res_init(c, KO_NODES, "/api/v1", "nodes", "Node", "v1");
    res_init(c, KO_PODS, "/api/v1", "pods", "Pod", "v1");
    res_init(c, KO_JOBS, "/apis/batch/v1", "jobs", "Job", "batch/v1");
    if (c->o.events_api_v1)
        res_init(c, KO_EVENTS, "/apis/events.k8s.io/v1", "events", "Event",
                 "events.k8s.io/v1");
    else
        res_init(c, KO_EVENTS, "/api/v1", "events", "Event", "v1");
    res_init(c, KO_WORKLOADS, "/apis/kueue.x-k8s.io/v1beta2", "workloads",
             "Workload", "kueue.x-k8s.io/v1beta2");
    if (c->o.ns)
        snprintf(ns, sizeof ns, "/namespaces/%s", c->o.ns);
    snprintf(c->res[KO_WORKLOADS].group_v1beta1,
             sizeof c->res[KO_WORKLOADS].group_v1beta1,
             "/apis/kueue.x-k8s.io/v1beta1%s/workloads", ns);
    str_copy(c->res[KO_PODS].select, sizeof c->res[KO_PODS].select,
             c->o.pod_selector ? c->o.pod_selector : "batch.kubernetes.io/job-name");
    if (c->o.no_workloads)
        c->res[KO_WORKLOADS].phase = KW_OFF;
}

kw_collector *kw_start(struct event_base *base, const kw_opts *o,
                       kc_conf *auth, kfk_producer *p, cs_err *err)
{
    kw_collector *c = calloc(1, sizeof *c);
    struct timeval tick = {KW_TICK_MS / 1000, 0};

    if (!c) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    c->base = base;
    c->o = *o;
    c->auth = *auth;
    auth->ca_pem = auth->cert_pem = auth->key_pem = NULL;
    c->p = p;
    c->seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)c;
    if (c->o.list_limit <= 0)
        c->o.list_limit = 500;
    if (c->o.watch_min_s <= 0)
        c->o.watch_min_s = 300;
    if (c->o.watch_max_s < c->o.watch_min_s)
        c->o.watch_max_s = c->o.watch_min_s == 300 ? 600 : c->o.watch_min_s;
    setup(c);
    if (!(c->http = httpc_new(base, err)))
        goto fail;
    if (!(c->idx = ko_new(&c->o.obj)) ||
        !(c->tick = event_new(base, -1, EV_PERSIST, on_tick, c))) {
        cs_err_set(err, "out of memory");
        goto fail;
    }
    for (int k = 0; k < KO_NKINDS; k++)
        if (res_alloc(&c->res[k], base)) {
            cs_err_set(err, "out of memory");
            goto fail;
        }
    if (load_state(c, err))
        goto fail;
    event_add(c->tick, &tick);
    /* Nodes and Pods first: the others wait for the Pods' index. */
    later(&c->res[KO_NODES], 0);
    later(&c->res[KO_PODS], 0);
    return c;
fail:
    kw_free(c);
    return NULL;
}

void kw_get_stats(const kw_collector *c, kw_stats *st)
{
    *st = c->st;
    ko_get_stats(c->idx, &st->obj);
}

void kw_describe(const kw_collector *c, char *buf, size_t len)
{
    static const char *const phases[] = {"off", "waiting", "listing", "watching"};
    size_t n = 0;

    buf[0] = 0;
    for (int k = 0; k < KO_NKINDS && n < len; k++) {
        const kw_res *r = &c->res[k];
        n += (size_t)snprintf(buf + n, len - n, "%s%s %s%s%s", k ? ", " : "",
                              kname(r), phases[r->phase],
                              r->phase == KW_WATCHING ? " from " : "",
                              r->phase == KW_WATCHING ? r->rv : "");
    }
}

int kw_stop(kw_collector *c, int timeout_ms, cs_err *err)
{
    int64_t until = ts_mono() + (int64_t)timeout_ms * 1000;
    unsigned long left = 0;

    c->stopping = 1;
    for (int k = 0; k < KO_NKINDS; k++) {
        httpc_cancel(c->res[k].x);
        c->res[k].x = NULL;
        evtimer_del(c->res[k].timer);
    }
    do {
        kfk_producer_wait(c->p, 100);
        left = kfk_tracker_pending(c->res[KO_EVENTS].cur.t);
        for (int k = 0; k < KO_NKINDS; k++)
            left += kfk_tracker_pending(c->res[k].t);
        for (size_t i = 0; i < c->res[KO_EVENTS].nwin; i++)
            left += kfk_tracker_pending(c->res[KO_EVENTS].win[i].t);
    } while (left && ts_mono() < until);
    events_commit(c);
    events_commit(c); /* the current window, moved in by the first */
    if (left) {
        cs_err_set(err, "%lu signals not acknowledged by Kafka at exit: the "
                   "next start tells them again", left);
        save_state(c);
        return -1;
    }
    save_state(c);
    return 0;
}

void kw_free(kw_collector *c)
{
    if (!c)
        return;
    for (int k = 0; k < KO_NKINDS; k++) {
        kw_res *r = &c->res[k];
        httpc_cancel(r->x);
        if (r->timer)
            event_free(r->timer);
        kf_free(r->fr);
        free(r->body);
        if (r->t)
            kfk_tracker_release(r->t);
        if (r->cur.t)
            kfk_tracker_release(r->cur.t);
        for (size_t i = 0; i < r->nwin; i++)
            kfk_tracker_release(r->win[i].t);
    }
    if (c->tick)
        event_free(c->tick);
    httpc_free(c->http);
    ko_free(c->idx);
    kc_free(&c->auth);
    free(c);
}
