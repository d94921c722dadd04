#include "ingest/slurmjson.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/nodeaddr.h"
#include "core/str.h"
#include "ingest/jsonscan.h"

static const char *const base_states[] = {
    "PENDING",   "RUNNING",   "SUSPENDED", "COMPLETED", "CANCELLED",
    "FAILED",    "TIMEOUT",   "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
    "DEADLINE",  "OUT_OF_MEMORY"};

static int is_base(const char *s)
{
    for (size_t i = 0; i < sizeof base_states / sizeof *base_states; i++)
        if (!strcmp(s, base_states[i]))
            return 1;
    return 0;
}

static void text(json_t *o, const char *key, char *dst, size_t cap)
{
    const char *v = json_string_value(json_object_get(o, key));

    str_copy(dst, cap, v ? v : "");
}

/* A number: plain, or {"set": true, "number": N} (v0.0.39 on); a null or
 * an unset one is 0. */
static int64_t num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);

    if (json_is_object(v)) {
        if (json_is_false(json_object_get(v, "set")))
            return 0;
        v = json_object_get(v, "number");
    }
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    if (json_is_real(v))
        return (int64_t)json_real_value(v);
    return 0;
}

/* The GPU count a "gpu[:TYPE]:N[(...)]" entry gives: N, or 0. */
static int gpu_entry(const char *s, size_t len)
{
    const char *colon;
    long n = 0;

    if (len < 3 || strncmp(s, "gpu", 3) || (len > 3 && s[3] != ':'))
        return 0;
    colon = NULL;
    for (size_t i = 0; i < len && s[i] != '('; i++)
        if (s[i] == ':')
            colon = s + i;
    if (!colon)
        return 1; /* "gpu" alone is one */
    for (const char *p = colon + 1; p < s + len && *p >= '0' && *p <= '9'; p++)
        if ((n = n * 10 + (*p - '0')) > 1000000)
            return 0;
    return (int)n;
}

/* The GPUs of a GRES list ("gpu:a100:8(S:0-1),nic:1"): entries
 * separated by ',' outside parentheses. */
static int gres_gpus(const char *s)
{
    int total = 0, depth = 0;
    const char *start = s;

    for (const char *p = s;; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')' && depth)
            depth--;
        if (*p == '\0' || (*p == ',' && !depth)) {
            total += gpu_entry(start, (size_t)(p - start));
            if (!*p)
                break;
            start = p + 1;
        }
    }
    return total;
}

/* "gres/gpu=8" or "gres/gpu:a100=8" in a TRES string. */
static int tres_gpus(const char *s)
{
    for (const char *p = s; (p = strstr(p, "gres/gpu")); p += 8) {
        const char *eq = strchr(p, '=');
        if (eq && (p[8] == '=' || p[8] == ':') &&
            !memchr(p, ',', (size_t)(eq - p)))
            return atoi(eq + 1); /* gres/gpu=N, gres/gpu:TYPE=N */
    }
    return 0;
}

/* exit_code: the raw wait status (v0.0.38), or {"status": ...,
 * "return_code": N or {"set", "number"}} (v0.0.39 on). */
static int exit_code(json_t *o)
{
    json_t *e = json_object_get(o, "exit_code");

    if (json_is_object(e) && json_object_get(e, "return_code"))
        return (int)num(e, "return_code");
    return (int)num(o, "exit_code");
}

/* Replaces each byte that is not part of valid UTF-8 with '?': a job
 * name of bad bytes must not make a whole answer unreadable (jansson
 * refuses such a document). */
static void utf8_scrub(char *s, size_t len)
{
    for (size_t i = 0, k; i < len; i += k ? k : 1) {
        k = str_utf8_seq((const unsigned char *)s + i, len - i);
        if (!k)
            s[i] = '?';
    }
}

static void job_state(json_t *o, sj_job *j)
{
    json_t *v = json_object_get(o, "job_state");
    size_t i;
    json_t *e;

    j->state[0] = j->flag[0] = '\0';
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        str_copy(is_base(s) ? j->state : j->flag, sizeof j->state, s);
        return;
    }
    json_array_foreach(v, i, e) {
        const char *s = json_string_value(e);
        if (!s)
            continue;
        if (is_base(s) && !j->state[0])
            str_copy(j->state, sizeof j->state, s);
        else if (!is_base(s) && !j->flag[0])
            str_copy(j->flag, sizeof j->flag, s);
    }
}

static int job_gpus(json_t *o)
{
    json_t *d = json_object_get(o, "gres_detail"), *e;
    char buf[256];
    size_t i;
    int n = 0;

    json_array_foreach(d, i, e) {
        if (json_is_string(e))
            n += gres_gpus(json_string_value(e));
    }
    if (n)
        return n;
    text(o, "tres_alloc_str", buf, sizeof buf);
    if ((n = tres_gpus(buf)))
        return n;
    text(o, "tres_req_str", buf, sizeof buf);
    return tres_gpus(buf);
}

static int read_job(json_t *o, sj_job *j, cs_err *err)
{
    json_t *id = json_object_get(o, "job_id");

    memset(j, 0, sizeof *j);
    if (json_is_integer(id))
        snprintf(j->id, sizeof j->id, "%lld", (long long)json_integer_value(id));
    else if (json_is_object(id) && num(o, "job_id") > 0)
        snprintf(j->id, sizeof j->id, "%lld", (long long)num(o, "job_id"));
    if (!j->id[0]) {
        cs_err_set(err, "a job without a job_id");
        return -1;
    }
    text(o, "name", j->name, sizeof j->name);
    text(o, "account", j->account, sizeof j->account);
    text(o, "partition", j->partition, sizeof j->partition);
    text(o, "qos", j->qos, sizeof j->qos);
    text(o, "cluster", j->cluster, sizeof j->cluster);
    text(o, "state_reason", j->reason, sizeof j->reason);
    if (!strcmp(j->reason, "None"))
        j->reason[0] = '\0';
    /* a big job's hostlist is long: kept whole, not cut mid-bracket */
    {
        const char *nl = json_string_value(json_object_get(o, "nodes"));
        if (!(j->nodes = strdup(nl ? nl : ""))) {
            cs_err_set(err, "out of memory");
            return -1;
        }
    }
    text(o, "dependency", j->dependency, sizeof j->dependency);
    text(o, "command", j->command, sizeof j->command);
    text(o, "current_working_directory", j->workdir, sizeof j->workdir);
    job_state(o, j);
    j->restart_cnt = (int)num(o, "restart_cnt");
    j->batch = json_is_true(json_object_get(o, "batch_flag"));
    j->exit_code = exit_code(o);
    j->gpus = job_gpus(o);
    j->submit = num(o, "submit_time");
    j->start = num(o, "start_time");
    j->end = num(o, "end_time");
    j->preempt = num(o, "preempt_time");
    return 0;
}

static void read_flags(json_t *o, sj_node *n)
{
    json_t *f = json_object_get(o, "state_flags"), *e;
    size_t i, w = 0;

    json_array_foreach(f, i, e) {
        const char *s = json_string_value(e);
        if (!s)
            continue;
        w += (size_t)snprintf(n->flags + w, w < sizeof n->flags
                                                ? sizeof n->flags - w : 0,
                              "%s%s", w ? "+" : "", s);
        if (w >= sizeof n->flags)
            break;
    }
}

static int read_node(json_t *o, sj_node *n, cs_err *err)
{
    json_t *st = json_object_get(o, "state");

    memset(n, 0, sizeof *n);
    text(o, "name", n->name, sizeof n->name);
    if (!n->name[0]) {
        cs_err_set(err, "a node without a name");
        return -1;
    }
    if (json_is_string(st)) {
        str_copy(n->state, sizeof n->state, json_string_value(st));
        read_flags(o, n);
    } else if (json_is_array(st)) { /* v0.0.40: ["IDLE", "DRAIN"] */
        json_t *e;
        size_t i, w = 0;
        json_array_foreach(st, i, e) {
            const char *s = json_string_value(e);
            if (!s)
                continue;
            if (!i) {
                str_copy(n->state, sizeof n->state, s);
                for (char *p = n->state; *p; p++)
                    *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
            } else if (w < sizeof n->flags) {
                w += (size_t)snprintf(n->flags + w, sizeof n->flags - w,
                                      "%s%s", w ? "+" : "", s);
            }
        }
    }
    text(o, "reason", n->reason, sizeof n->reason);
    text(o, "reason_set_by_user", n->reason_by, sizeof n->reason_by);
    text(o, "gres", n->gres, sizeof n->gres);
    text(o, "features", n->features, sizeof n->features);
    text(o, "address", n->address, sizeof n->address);
    text(o, "hostname", n->hostname, sizeof n->hostname);
    if (!strcmp(n->address, n->name))
        n->address[0] = '\0';
    if (!strcmp(n->hostname, n->name))
        n->hostname[0] = '\0';
    n->reason_at = num(o, "reason_changed_at");
    n->boot = num(o, "boot_time");
    n->gpus = gres_gpus(n->gres);
    return 0;
}

int sj_node_features(const sj_node *n, const char *canary_f, char *rack,
                     size_t len)
{
    char feats[sizeof n->features], *save = NULL;
    int canary = 0;

    rack[0] = '\0';
    str_copy(feats, sizeof feats, n->features);
    for (char *f = strtok_r(feats, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
        if (!strcmp(f, canary_f))
            canary = 1;
        else if (!rack[0] && !strncmp(f, "rack", 4))
            str_copy(rack, len, f[4] == '=' || f[4] == ':' ? f + 5 : f);
    }
    return canary;
}

json_t *sj_node_addrs(const sj_node *n)
{
    const char *cand[] = {n->address, n->hostname};
    json_t *a = NULL;

    for (size_t i = 0; i < sizeof cand / sizeof *cand; i++) {
        if (!na_word(cand[i]) || na_loopback(cand[i]))
            continue;
        if (!a && !(a = json_array()))
            return NULL;
        json_array_append_new(a, json_string(cand[i]));
    }
    return a;
}

/* The fields read of a job and of a node: the rest of each record (some
 * eighty fields of a job) is skipped, not built. */
static const char *const job_keys[] = {
    "job_id", "name", "account", "partition", "qos", "cluster",
    "state_reason", "nodes", "dependency", "command",
    "current_working_directory", "job_state", "restart_cnt", "batch_flag",
    "exit_code", "gres_detail", "tres_alloc_str", "tres_req_str",
    "submit_time", "start_time", "end_time", "preempt_time"};
static const char *const node_keys[] = {
    "name", "state", "state_flags", "reason", "reason_set_by_user", "gres",
    "features", "reason_changed_at", "boot_time", "address", "hostname"};
#define SJ_MAX_KEYS (sizeof job_keys / sizeof *job_keys)
_Static_assert(sizeof node_keys / sizeof *node_keys <= SJ_MAX_KEYS,
               "record() holds at most SJ_MAX_KEYS values");

/* One scanned value as jansson's: a string unescaped, another value
 * parsed (it is small: a number, a flag list, {"set", "number"}). */
static json_t *value_of(const jsc_val *v)
{
    json_t *j;
    char *buf;

    if (v->kind != 1)
        return json_loadb(v->v, v->len, JSON_DECODE_ANY, NULL);
    if (!(buf = malloc(v->len + 1)))
        return NULL;
    j = jsc_unescape(v->v, v->len, buf, v->len + 1) < 0 ? NULL
                                                       : json_string(buf);
    free(buf);
    return j;
}

/* The record at p (len bytes) as an object of the keys' values only.
 * NULL when its bytes are not JSON. */
static json_t *record(const char *p, size_t len, const char *const *keys,
                      size_t nkeys)
{
    jsc_val v[SJ_MAX_KEYS];
    json_t *o;

    if (jsc_fields(p, len, keys, nkeys, v) || !(o = json_object()))
        return NULL;
    for (size_t i = 0; i < nkeys; i++) {
        json_t *j;
        if (!v[i].kind)
            continue;
        if (!(j = value_of(&v[i])) || json_object_set_new(o, keys[i], j)) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static size_t skip_ws(const char *p, size_t i, size_t n)
{
    while (i < n && (p[i] == ' ' || p[i] == '\n' || p[i] == '\t' ||
                     p[i] == '\r'))
        i++;
    return i;
}

/* The controller's "errors": a failed answer, said in its words. */
static int answer_error(const jsc_val *e, cs_err *err)
{
    json_t *errors = e->kind == 2 ? value_of(e) : NULL, *first;
    const char *what, *why;

    if (!json_array_size(errors)) {
        json_decref(errors);
        return 0;
    }
    first = json_array_get(errors, 0);
    what = json_string_value(json_object_get(first, "description"));
    why = json_string_value(json_object_get(first, "error"));
    cs_err_set(err, "the controller answered with an error: %s%s%s",
               what ? what : "", what && why ? ": " : "", why ? why : "");
    json_decref(errors);
    return -1;
}

/* Each object of the document's list read into an array of elem-byte
 * items (one that cannot be read is left out); the document an object
 * with no errors and the list. Read from the bytes: the list's records
 * are found by where they end and only their keys' values are built. */
static int scan_list(const char *text_, size_t len, const char *list_name,
                     const char *const *keys, size_t nkeys, size_t elem,
                     int (*read)(json_t *, void *, cs_err *), void **out,
                     size_t *n, cs_err *err)
{
    const char *const top[] = {"errors", list_name};
    jsc_val tv[2];
    size_t i, cap = 0, bad = 0;
    char *v = NULL;
    cs_err why;

    *out = NULL;
    *n = 0;
    i = skip_ws(text_, 0, len);
    long whole = i < len && text_[i] == '{'
                     ? jsc_object_end(text_ + i, len - i, &bad) : -1;
    if (whole == 0) {
        cs_err_set(err, "not JSON: the answer ends inside its object, after "
                   "%zu bytes", len);
        return -1;
    }
    if (whole < 0) {
        cs_err_set(err, "not JSON: no object at byte %zu", i);
        return -1;
    }
    if (jsc_fields(text_ + i, (size_t)whole, top, 2, tv)) {
        cs_err_set(err, "not JSON: its object's keys and values do not read");
        return -1;
    }
    if (answer_error(&tv[0], err))
        return -1;
    if (tv[1].kind != 2 || tv[1].v[0] != '[') {
        cs_err_set(err, "no \"%s\" list in the answer", list_name);
        return -1;
    }
    const char *p = tv[1].v;
    size_t plen = tv[1].len;
    for (i = skip_ws(p, 1, plen); i < plen && p[i] != ']';) {
        long end = p[i] == '{' ? jsc_object_end(p + i, plen - i, &bad) : -1;
        json_t *o = end > 0 ? record(p + i, (size_t)end, keys, nkeys) : NULL;
        if (!o) {
            cs_err_set(err, "not JSON: record %zu of \"%s\"", *n + 1,
                       list_name);
            goto fail;
        }
        if (*n == cap) {
            char *w = realloc(v, (cap = cap ? 2 * cap : 64) * elem);
            if (!w) {
                json_decref(o);
                cs_err_set(err, "out of memory");
                goto fail;
            }
            v = w;
        }
        if (read(o, v + *n * elem, &why) == 0)
            (*n)++;
        json_decref(o);
        i = skip_ws(p, i + (size_t)end, plen);
        if (i < plen && p[i] == ',')
            i = skip_ws(p, i + 1, plen);
    }
    *out = v;
    return 0;
fail:
    *out = v; /* the caller frees what was read */
    return -1;
}

static int parse_list(const char *text_, size_t len, const char *list_name,
                      const char *const *keys, size_t nkeys, size_t elem,
                      int (*read)(json_t *, void *, cs_err *), void **out,
                      size_t *n, cs_err *err)
{
    char *copy;
    int rc;

    if (str_utf8_valid(text_, len))
        return scan_list(text_, len, list_name, keys, nkeys, elem, read, out,
                         n, err);
    if (!(copy = malloc(len ? len : 1))) {
        cs_err_set(err, "out of memory");
        return -1;
    }
    memcpy(copy, text_, len);
    utf8_scrub(copy, len);
    rc = scan_list(copy, len, list_name, keys, nkeys, elem, read, out, n, err);
    free(copy);
    return rc;
}

static int read_job_v(json_t *o, void *dst, cs_err *err)
{
    return read_job(o, dst, err);
}

static int read_node_v(json_t *o, void *dst, cs_err *err)
{
    return read_node(o, dst, err);
}

int sj_parse_jobs(const char *text_, size_t len, sj_job **jobs, size_t *n,
                  cs_err *err)
{
    void *v;
    int rc = parse_list(text_, len, "jobs", job_keys,
                        sizeof job_keys / sizeof *job_keys, sizeof **jobs,
                        read_job_v, &v, n, err);

    if (rc) { /* nothing of a failed answer is kept */
        sj_free_jobs(v, *n);
        v = NULL;
        *n = 0;
    }
    *jobs = v;
    return rc;
}

int sj_parse_nodes(const char *text_, size_t len, sj_node **nodes, size_t *n,
                   cs_err *err)
{
    void *v;
    int rc = parse_list(text_, len, "nodes", node_keys,
                        sizeof node_keys / sizeof *node_keys, sizeof **nodes,
                        read_node_v, &v, n, err);

    if (rc) {
        free(v);
        v = NULL;
        *n = 0;
    }
    *nodes = v;
    return rc;
}

void sj_free_jobs(sj_job *jobs, size_t n)
{
    for (size_t i = 0; jobs && i < n; i++)
        free(jobs[i].nodes);
    free(jobs);
}

int sj_node_down(const sj_node *n)
{
    return !strcmp(n->state, "down") || strstr(n->flags, "NOT_RESPONDING");
}
