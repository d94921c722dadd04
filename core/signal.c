#include "core/signal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/jmp.h"
#include "core/mem.h"
#include "core/nodeaddr.h"
#include "core/str.h"
#include "core/ts.h"

static const char *const source_names[SRC__COUNT] = {
    "kernel", "app", "ray", "slurm", "k8s", "alertmanager", "metric", "job",
    "inventory"};

static const char *const job_states[] = {
    "PENDING",   "RUNNING",   "COMPLETED", "FAILED",
    "CANCELLED", "PREEMPTED", "NODE_FAIL", "TIMEOUT"};

const char *sig_source_name(sig_source s)
{
    return s < SRC__COUNT ? source_names[s] : "?";
}

int sig_source_parse(const char *name, sig_source *out)
{
    for (int i = 0; i < SRC__COUNT; i++) {
        if (strcmp(name, source_names[i]) == 0) {
            *out = (sig_source)i;
            return 0;
        }
    }
    return -1;
}

/* Optional string field: absent or null is fine, anything else must be a
 * non-empty string. */
static int opt_str(json_t *o, const char *key, const char **out, cs_err *err)
{
    json_t *v = json_object_get(o, key);

    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || json_string_length(v) == 0) {
        cs_err_set(err, "field '%s' must be a non-empty string", key);
        return -1;
    }
    *out = json_string_value(v);
    return 0;
}

static int req_str(json_t *o, const char *key, const char **out, cs_err *err)
{
    if (opt_str(o, key, out, err))
        return -1;
    if (!*out) {
        cs_err_set(err, "field '%s' is required", key);
        return -1;
    }
    return 0;
}

int sig_time(json_t *v, const char *field, int64_t *ts, cs_err *err)
{
    if (!v) {
        cs_err_set(err, "field '%s' is required", field);
        return -1;
    }
    if (json_is_string(v)) {
        if (ts_parse_rfc3339(json_string_value(v), ts) == 0)
            return 0;
        cs_err_set(err, "field '%s': \"%.40s\" is not an RFC 3339 time",
                   field, json_string_value(v));
        return -1;
    }
    if (json_is_number(v) && ts_from_epoch(json_number_value(v), ts) == 0)
        return 0;
    cs_err_set(err, "field '%s' must be an RFC 3339 string or epoch seconds",
               field);
    return -1;
}

static int parse_ts(json_t *o, int64_t *ts, cs_err *err)
{
    return sig_time(json_object_get(o, "ts"), "ts", ts, err);
}

/* Scheduler job ids are sometimes numbers in hand-written captures; the
 * normalised form always carries them as strings. */
static int norm_job(json_t *o, cs_err *err)
{
    json_t *v = json_object_get(o, "job");
    char buf[32];

    if (v && json_is_integer(v)) {
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        json_object_set_new(o, "job", json_string(buf));
    } else if (v && !json_is_null(v) && !json_is_string(v)) {
        cs_err_set(err, "field 'job' must be a string");
        return -1;
    }
    return 0;
}

static int check_str_array(json_t *a, const char *key, cs_err *err)
{
    size_t i;
    json_t *e;

    if (!json_is_array(a)) {
        cs_err_set(err, "field '%s' must be an array of strings", key);
        return -1;
    }
    json_array_foreach(a, i, e) {
        if (!json_is_string(e)) {
            cs_err_set(err, "field '%s'[%zu] must be a string", key, i);
            return -1;
        }
    }
    return 0;
}

static int body_line(sig *s, cs_err *err)
{
    if (req_str(s->obj, "line", &s->line, err))
        return -1;
    if (s->source == SRC_APP) {
        json_t *r = json_object_get(s->obj, "rank");
        if (r && !json_is_null(r)) {
            if (!json_is_integer(r) || json_integer_value(r) < 0 ||
                json_integer_value(r) > 1000000) {
                cs_err_set(err, "field 'rank' must be a rank number >= 0");
                return -1;
            }
            s->rank = (int)json_integer_value(r);
        }
    }
    return 0;
}

static int body_slurm(sig *s, cs_err *err)
{
    const char *rec;

    if (opt_str(s->obj, "line", &s->line, err) ||
        opt_str(s->obj, "record", &rec, err))
        return -1;
    if (!s->line && !rec) {
        cs_err_set(err, "a slurm signal needs 'line' or 'record'");
        return -1;
    }
    s->body = rec ? json_object_get(s->obj, "record") : NULL;
    return 0;
}

static int body_k8s(sig *s, cs_err *err)
{
    json_t *ev = json_object_get(s->obj, "event");
    const char *reason;

    if (!json_is_object(ev)) {
        cs_err_set(err, "field 'event' must be a Kubernetes Event object");
        return -1;
    }
    if (opt_str(ev, "reason", &reason, err)) {
        cs_err_prefix(err, "event: ");
        return -1;
    }
    if (!reason) {
        cs_err_set(err, "event: field 'reason' is required");
        return -1;
    }
    s->body = ev;
    return 0;
}

static int body_alertmanager(sig *s, cs_err *err)
{
    json_t *p = json_object_get(s->obj, "payload"), *alerts, *a;
    const char *ver, *st;
    size_t i;

    if (!json_is_object(p)) {
        cs_err_set(err, "field 'payload' must be an Alertmanager webhook body");
        return -1;
    }
    if (opt_str(p, "version", &ver, err) || (ver && strcmp(ver, "4") != 0)) {
        cs_err_set(err, "payload: webhook version must be \"4\"");
        return -1;
    }
    alerts = json_object_get(p, "alerts");
    if (!json_is_array(alerts)) {
        cs_err_set(err, "payload: field 'alerts' must be an array");
        return -1;
    }
    json_array_foreach(alerts, i, a) {
        if (!json_is_object(a) || !json_is_object(json_object_get(a, "labels"))) {
            cs_err_set(err, "payload: alerts[%zu] needs a 'labels' object", i);
            return -1;
        }
        if (opt_str(a, "status", &st, err) ||
            (st && strcmp(st, "firing") && strcmp(st, "resolved"))) {
            cs_err_set(err, "payload: alerts[%zu].status must be firing or "
                            "resolved", i);
            return -1;
        }
    }
    s->body = p;
    return 0;
}

static int body_metric(sig *s, cs_err *err)
{
    json_t *v = json_object_get(s->obj, "value");

    if (req_str(s->obj, "name", &s->name, err))
        return -1;
    if (!json_is_number(v)) {
        cs_err_set(err, "field 'value' must be a number");
        return -1;
    }
    s->value = json_number_value(v);
    s->labels = json_object_get(s->obj, "labels");
    if (s->labels && !json_is_object(s->labels)) {
        cs_err_set(err, "field 'labels' must be an object");
        return -1;
    }
    return 0;
}

static int body_job(sig *s, cs_err *err)
{
    json_t *v;
    size_t i;

    if (!s->job) {
        cs_err_set(err, "field 'job' is required for a job signal");
        return -1;
    }
    if (req_str(s->obj, "state", &s->state, err))
        return -1;
    for (i = 0; i < sizeof job_states / sizeof *job_states; i++)
        if (strcmp(s->state, job_states[i]) == 0)
            break;
    if (i == sizeof job_states / sizeof *job_states) {
        cs_err_set(err, "field 'state': unknown job state \"%.32s\"", s->state);
        return -1;
    }
    s->nodes = json_object_get(s->obj, "nodes");
    if (s->nodes && check_str_array(s->nodes, "nodes", err))
        return -1;
    v = json_object_get(s->obj, "depends_on");
    if (v && !json_is_string(v) && check_str_array(v, "depends_on", err))
        return -1;
    s->config = json_object_get(s->obj, "config");
    if (s->config && !json_is_object(s->config)) {
        cs_err_set(err, "field 'config' must be an object");
        return -1;
    }
    v = json_object_get(s->obj, "priority");
    if (v && (!json_is_string(v) || (strcmp(json_string_value(v), "reserved") &&
                                     strcmp(json_string_value(v), "elastic")))) {
        cs_err_set(err, "field 'priority' must be reserved or elastic");
        return -1;
    }
    return 0;
}

/* A planned-maintenance window of the node (docs/FORMATS.md): an object
 * with start and end (end after start), an optional id and reason; null
 * clears it. */
static int body_maintenance(json_t *m, cs_err *err)
{
    int64_t start, end;
    json_t *v;

    if (!m || json_is_null(m))
        return 0;
    if (!json_is_object(m)) {
        cs_err_set(err, "field 'maintenance' must be an object or null");
        return -1;
    }
    if (sig_time(json_object_get(m, "start"), "maintenance.start", &start,
                 err) ||
        sig_time(json_object_get(m, "end"), "maintenance.end", &end, err))
        return -1;
    if (end <= start) {
        cs_err_set(err, "field 'maintenance.end' must be after its start");
        return -1;
    }
    if (((v = json_object_get(m, "id")) && !json_is_string(v)) ||
        ((v = json_object_get(m, "reason")) && !json_is_string(v))) {
        cs_err_set(err, "fields 'maintenance.id' and 'maintenance.reason' "
                        "must be strings");
        return -1;
    }
    return 0;
}

/* The other names a node is known by (its addresses): each one word, as
 * the engine keeps them (NA_ADDRS_MAX of them, NA_ADDR_MAX bytes). */
static int body_addrs(json_t *v, cs_err *err)
{
    json_t *a;
    size_t i;

    if (!v)
        return 0;
    if (!json_is_array(v) || json_array_size(v) > NA_ADDRS_MAX) {
        cs_err_set(err, "field 'addrs' must be an array of at most %d "
                        "addresses", NA_ADDRS_MAX);
        return -1;
    }
    json_array_foreach(v, i, a) {
        const char *s = json_string_value(a);

        if (!s || !na_word(s)) {
            cs_err_set(err, "field 'addrs[%zu]' must be an address: one "
                            "word under %d bytes", i, NA_ADDR_MAX);
            return -1;
        }
    }
    return 0;
}

static int body_inventory(sig *s, cs_err *err)
{
    json_t *v;

    if (!s->host) {
        cs_err_set(err, "field 'host' is required for an inventory signal");
        return -1;
    }
    v = json_object_get(s->obj, "canary");
    if (v && !json_is_boolean(v)) {
        cs_err_set(err, "field 'canary' must be true or false");
        return -1;
    }
    v = json_object_get(s->obj, "gpus");
    if (v && (!json_is_integer(v) || json_integer_value(v) < 0)) {
        cs_err_set(err, "field 'gpus' must be a count");
        return -1;
    }
    v = json_object_get(s->obj, "nvlink_domain");
    if (v && !json_is_string(v)) {
        cs_err_set(err, "field 'nvlink_domain' must be a string");
        return -1;
    }
    if (body_addrs(json_object_get(s->obj, "addrs"), err))
        return -1;
    return body_maintenance(json_object_get(s->obj, "maintenance"), err);
}

static int parse_body(sig *s, cs_err *err)
{
    switch (s->source) {
    case SRC_KERNEL:
    case SRC_APP:
    case SRC_RAY:
        return body_line(s, err);
    case SRC_SLURM:
        return body_slurm(s, err);
    case SRC_K8S:
        return body_k8s(s, err);
    case SRC_ALERTMANAGER:
        return body_alertmanager(s, err);
    case SRC_METRIC:
        return body_metric(s, err);
    case SRC_JOB:
        return body_job(s, err);
    case SRC_INVENTORY:
        return body_inventory(s, err);
    default:
        cs_err_set(err, "unhandled source");
        return -1;
    }
}

static uint64_t content_id(json_t *o)
{
    char *dump = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    uint64_t h = HASH_FNV_SEED;

    if (dump) {
        h = hash_fnv1a(h, dump, strlen(dump));
        free(dump);
    }
    return h;
}

static int hex_id(const char *t, uint64_t *id)
{
    *id = 0;
    for (int i = 0; i < 16; i++) {
        char c = t[i];
        if (c >= '0' && c <= '9')
            *id = *id << 4 | (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            *id = *id << 4 | (uint64_t)(c - 'a' + 10);
        else
            return -1;
    }
    return 0;
}

/* A collector may name the signal itself ("id": 16 hex digits, from what
 * it read), which spares hashing the whole object; else the object's hash
 * is its identity. Either way a redelivered signal has the id it had. */
static int given_id(sig *s, cs_err *err)
{
    json_t *v = json_object_get(s->obj, "id");
    const char *t = json_string_value(v);
    uint64_t id = 0;

    if (!v) {
        s->id = content_id(s->obj);
        return 0;
    }
    if (t && json_string_length(v) == 16 && hex_id(t, &id) == 0) {
        s->id = id;
        return 0;
    }
    cs_err_set(err, "field 'id' must be 16 lowercase hex digits");
    return -1;
}

int sig_adopt_json(sig *s, json_t *obj, cs_err *err)
{
    const char *src;

    memset(s, 0, sizeof *s);
    s->rank = -1;
    if (!json_is_object(obj)) {
        cs_err_set(err, "a signal must be a JSON object");
        json_decref(obj);
        return -1;
    }
    s->obj = obj;
    if (parse_ts(s->obj, &s->ts, err) || req_str(s->obj, "source", &src, err))
        goto fail;
    if (sig_source_parse(src, &s->source)) {
        cs_err_set(err, "field 'source': unknown source \"%.32s\"", src);
        goto fail;
    }
    if (opt_str(s->obj, "cluster", &s->cluster, err) || norm_job(s->obj, err) ||
        opt_str(s->obj, "host", &s->host, err) ||
        opt_str(s->obj, "job", &s->job, err) ||
        opt_str(s->obj, "job_name", &s->job_name, err))
        goto fail;
    if (!s->cluster) {
        json_object_set_new(s->obj, "cluster", json_string("default"));
        s->cluster = json_string_value(json_object_get(s->obj, "cluster"));
    }
    if (parse_body(s, err) || given_id(s, err))
        goto fail;
    return 0;
fail:
    json_decref(s->obj);
    s->obj = NULL;
    return -1;
}

int sig_from_json(sig *s, json_t *in, cs_err *err)
{
    json_t *copy;

    if (!json_is_object(in))
        return sig_adopt_json(s, json_incref(in), err);
    /* Shallow copy: normalising (cluster, job) must not edit the caller's. */
    if (!(copy = json_copy(in))) {
        memset(s, 0, sizeof *s);
        cs_err_set(err, "out of memory");
        return -1;
    }
    return sig_adopt_json(s, copy, err);
}

int sig_parse_json(sig *s, const char *text, size_t len, cs_err *err)
{
    json_error_t jerr;
    json_t *o;

    memset(s, 0, sizeof *s);
    if (len > SIG_MAX_BYTES) {
        cs_err_set(err, "signal is %zu bytes, over the %d byte limit", len,
                   SIG_MAX_BYTES);
        return -1;
    }
    o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o) {
        cs_err_set(err, "invalid JSON at column %d: %s", jerr.column, jerr.text);
        return -1;
    }
    return sig_adopt_json(s, o, err); /* the object is ours alone */
}

/* ---- plain line signals ---------------------------------------------- */

/* Nearly every signal on the wire is a log line with its collector's id:
 * a flat map of a few ASCII strings. Building a JSON object for it (a
 * hash table, a copy of every key and value) and freeing it again was
 * almost half of the correlator's instructions per signal on the dense
 * log, for fields that are only read. Such a signal is decoded in place
 * into one buffer instead. Anything else, or anything in doubt (another
 * field, a null, a number where a string goes, a field given twice, a
 * value the general path would refuse), goes the general way, which
 * also words every error; tests/fuzz/fuzz_signal_msgpack.c holds the two
 * paths to the same result. */
enum { F_TS, F_SOURCE, F_CLUSTER, F_HOST, F_JOB, F_JOB_NAME, F_ID, F_LINE,
       F_RANK, F__COUNT };
#define FLAT(name) {name, sizeof name - 1}
static const struct {
    const char *name;
    size_t len;
} flat_names[F__COUNT] = {FLAT("ts"),  FLAT("source"),   FLAT("cluster"),
                          FLAT("host"), FLAT("job"),     FLAT("job_name"),
                          FLAT("id"),   FLAT("line"),    FLAT("rank")};
#undef FLAT

static int flat_field(const jmp_kv *kv)
{
    for (int i = 0; i < F__COUNT; i++)
        if (flat_names[i].len == kv->klen &&
            !memcmp(flat_names[i].name, kv->key, kv->klen))
            return i;
    return -1;
}

/* The fields of a plain line signal by kind, or -1 when it is not one. */
static int flat_fields(const jmp_kv *kv, int n, const jmp_kv **f,
                       size_t *text)
{
    *text = 0;
    for (int i = 0; i < n; i++) {
        int k = flat_field(&kv[i]);
        if (k < 0 || f[k] || (k == F_RANK) != !kv[i].str ||
            (kv[i].str && !kv[i].slen))
            return -1;
        f[k] = &kv[i];
        *text += kv[i].slen + 1;
    }
    if (!f[F_TS] || !f[F_SOURCE] || !f[F_ID] || !f[F_LINE] ||
        f[F_ID]->slen != 16)
        return -1;
    return 0;
}

static const char *flat_copy(char **p, const jmp_kv *kv)
{
    char *at = *p;

    if (!kv)
        return NULL;
    memcpy(at, kv->str, kv->slen);
    at[kv->slen] = '\0';
    *p += kv->slen + 1;
    return at;
}

/* 0: s is the signal; 1: not a plain line signal, s untouched. */
static int parse_flat(sig *s, const char *data, size_t len)
{
    jmp_kv kv[F__COUNT];
    const jmp_kv *f[F__COUNT] = {0};
    int n = jmp_flat(data, len, kv, F__COUNT);
    sig_source src;
    size_t text;
    char name[16], *p;
    const char *ts;

    if (n < 0 || flat_fields(kv, n, f, &text) ||
        f[F_SOURCE]->slen >= sizeof name)
        return 1;
    memcpy(name, f[F_SOURCE]->str, f[F_SOURCE]->slen);
    name[f[F_SOURCE]->slen] = '\0';
    if (sig_source_parse(name, &src) ||
        (src != SRC_KERNEL && src != SRC_APP && src != SRC_RAY) ||
        (f[F_RANK] && (src != SRC_APP || f[F_RANK]->u > 1000000)))
        return 1;
    if (!(s->raw = malloc(len + text)))
        return 1;
    memcpy(s->raw, data, len);
    s->raw_len = len;
    p = s->raw + len;
    ts = flat_copy(&p, f[F_TS]);
    if (ts_parse_rfc3339(ts, &s->ts) || hex_id(f[F_ID]->str, &s->id)) {
        free(s->raw);
        s->raw = NULL;
        return 1;
    }
    s->source = src;
    s->cluster = f[F_CLUSTER] ? flat_copy(&p, f[F_CLUSTER]) : "default";
    s->host = flat_copy(&p, f[F_HOST]);
    s->job = flat_copy(&p, f[F_JOB]);
    s->job_name = flat_copy(&p, f[F_JOB_NAME]);
    s->line = flat_copy(&p, f[F_LINE]);
    s->rank = f[F_RANK] ? (int)f[F_RANK]->u : -1;
    return 0;
}

json_t *sig_json(const sig *s)
{
    cs_err err;
    json_t *o;

    if (s->obj || !s->raw)
        return json_incref(s->obj);
    /* the bytes decoded before: only memory can fail here */
    o = jmp_unpack(s->raw, s->raw_len, &err);
    if (o && !json_object_get(o, "cluster"))
        json_object_set_new(o, "cluster", json_string("default"));
    return o;
}

int sig_parse_msgpack(sig *s, const char *data, size_t len, cs_err *err)
{
    json_t *o;

    memset(s, 0, sizeof *s);
    if (len > SIG_MAX_BYTES) {
        cs_err_set(err, "signal is %zu bytes, over the %d byte limit", len,
                   SIG_MAX_BYTES);
        return -1;
    }
    if (parse_flat(s, data, len) == 0)
        return 0;
    o = jmp_unpack(data, len, err);
    if (!o)
        return -1;
    return sig_adopt_json(s, o, err);
}

int sig_to_msgpack(const sig *s, char **out, size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;

    json_t *o = sig_json(s);

    if (!o)
        return -1;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    jmp_pack(&pk, o);
    json_decref(o);
    *out = sb.data; /* ownership moves to the caller */
    *len = sb.size;
    return 0;
}

static void pack_kv(msgpack_packer *pk, const char *k, const char *v)
{
    size_t kl = strlen(k), vl = strlen(v);

    msgpack_pack_str(pk, kl);
    msgpack_pack_str_body(pk, k, kl);
    msgpack_pack_str(pk, vl);
    msgpack_pack_str_body(pk, v, vl);
}

int sig_log_msgpack(const char *ts, sig_source source, const char *line,
                    const char *host, const char *job, const char *cluster,
                    const char *id, char **out, size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    int has_host = host && host[0], has_job = job && job[0],
        has_cluster = cluster != NULL;

    if (!line[0] || (has_cluster && !cluster[0]) ||
        !str_utf8_valid(line, strlen(line)) ||
        (has_host && !str_utf8_valid(host, strlen(host))) ||
        (has_job && !str_utf8_valid(job, strlen(job))) ||
        (has_cluster && !str_utf8_valid(cluster, strlen(cluster))))
        return -1;
    /* its size, up front: the buffer's own first step (8 KiB) malloc'd
     * and faulted in a page a line, and a follower holds one a line
     * until Kafka acknowledges it */
    msgpack_sbuffer_init(&sb);
    sb.alloc = 128 + strlen(ts) + strlen(line) + strlen(id) +
               (has_host ? strlen(host) + 10 : 0) +
               (has_job ? strlen(job) + 10 : 0) +
               (has_cluster ? strlen(cluster) : 7);
    sb.data = xmalloc(sb.alloc);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, (size_t)(5 + has_host + has_job));
    pack_kv(&pk, "ts", ts);
    pack_kv(&pk, "source", sig_source_name(source));
    pack_kv(&pk, "line", line);
    if (has_host)
        pack_kv(&pk, "host", host);
    if (has_job)
        pack_kv(&pk, "job", job);
    if (has_cluster)
        pack_kv(&pk, "cluster", cluster);
    pack_kv(&pk, "id", id);
    if (!has_cluster)
        pack_kv(&pk, "cluster", "default");
    *out = sb.data; /* ownership moves to the caller */
    *len = sb.size;
    return 0;
}

static int utf8_ok(const char *t)
{
    return str_utf8_valid(t, strlen(t));
}

/* Where the pair i's name first came in lk[0..i], or i. */
static size_t first_of(const char *const *lk, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (!strcmp(lk[j], lk[i]))
            return j;
    return i;
}

/* The value a name ends with: that of its last pair. */
static const char *last_value(const char *const *lk, const char *const *lv,
                              size_t n, size_t i)
{
    const char *v = lv[i];

    for (size_t j = i + 1; j < n; j++)
        if (!strcmp(lk[j], lk[i]))
            v = lv[j];
    return v;
}

static void pack_labels(msgpack_packer *pk, const char *const *lk,
                        const char *const *lv, size_t n)
{
    size_t distinct = 0;

    for (size_t i = 0; i < n; i++)
        distinct += first_of(lk, i) == i;
    msgpack_pack_map(pk, distinct);
    for (size_t i = 0; i < n; i++)
        if (first_of(lk, i) == i)
            pack_kv(pk, lk[i], last_value(lk, lv, n, i));
}

int sig_metric_msgpack(const char *ts, const char *id, const char *cluster,
                       const char *host, const char *name, double value,
                       const char *const *lk, const char *const *lv,
                       size_t n, const char *job, char **out, size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;

    if (!cluster[0] || !host[0] || !name[0] || !isfinite(value) ||
        !utf8_ok(cluster) || !utf8_ok(host) || !utf8_ok(name) ||
        (job && !utf8_ok(job)))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!utf8_ok(lk[i]) || !utf8_ok(lv[i]))
            return -1;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, (size_t)(8 + (job != NULL)));
    pack_kv(&pk, "ts", ts);
    pack_kv(&pk, "id", id);
    pack_kv(&pk, "source", "metric");
    pack_kv(&pk, "cluster", cluster);
    pack_kv(&pk, "host", host);
    pack_kv(&pk, "name", name);
    msgpack_pack_str(&pk, 5);
    msgpack_pack_str_body(&pk, "value", 5);
    msgpack_pack_double(&pk, value);
    msgpack_pack_str(&pk, 6);
    msgpack_pack_str_body(&pk, "labels", 6);
    pack_labels(&pk, lk, lv, n);
    if (job)
        pack_kv(&pk, "job", job);
    *out = sb.data; /* ownership moves to the caller */
    *len = sb.size;
    return 0;
}

void sig_free(sig *s)
{
    if (!s)
        return;
    json_decref(s->obj);
    s->obj = NULL;
    free(s->raw);
    s->raw = NULL;
}
