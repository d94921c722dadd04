#include "ingest/slurmjson.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/str.h"

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
    n->reason_at = num(o, "reason_changed_at");
    n->boot = num(o, "boot_time");
    n->gpus = gres_gpus(n->gres);
    return 0;
}

/* The document, checked: an object with no errors and the list. */
static json_t *open_doc(const char *text_, size_t len, const char *list,
                        cs_err *err)
{
    json_error_t je;
    json_t *doc = NULL, *errors, *e;
    char *copy;

    if (!str_utf8_valid(text_, len) && (copy = malloc(len ? len : 1))) {
        memcpy(copy, text_, len);
        utf8_scrub(copy, len);
        doc = json_loadb(copy, len, 0, &je);
        free(copy);
    } else {
        doc = json_loadb(text_, len, 0, &je);
    }
    if (!doc) {
        cs_err_set(err, "not JSON: line %d column %d: %s", je.line,
                   je.column, je.text);
        return NULL;
    }
    errors = json_object_get(doc, "errors");
    if (json_array_size(errors)) {
        e = json_array_get(errors, 0);
        const char *what = json_string_value(json_object_get(e, "description"));
        const char *why = json_string_value(json_object_get(e, "error"));
        cs_err_set(err, "the controller answered with an error: %s%s%s",
                   what ? what : "", what && why ? ": " : "", why ? why : "");
        json_decref(doc);
        return NULL;
    }
    if (!json_is_array(json_object_get(doc, list))) {
        cs_err_set(err, "no \"%s\" list in the answer", list);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* Each object of the document's list read into an array of elem-byte
 * items; one that cannot be read is left out. */
static int parse_list(const char *text_, size_t len, const char *list_name,
                      size_t elem, int (*read)(json_t *, void *, cs_err *),
                      void **out, size_t *n, cs_err *err)
{
    json_t *doc = open_doc(text_, len, list_name, err), *list, *o;
    char *v = NULL;
    size_t i;
    cs_err why;

    *out = NULL;
    *n = 0;
    if (!doc)
        return -1;
    list = json_object_get(doc, list_name);
    if (json_array_size(list) && !(v = calloc(json_array_size(list), elem))) {
        cs_err_set(err, "out of memory");
        json_decref(doc);
        return -1;
    }
    json_array_foreach(list, i, o) {
        if (read(o, v + *n * elem, &why) == 0)
            (*n)++;
    }
    json_decref(doc);
    *out = v;
    return 0;
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
    int rc = parse_list(text_, len, "jobs", sizeof **jobs, read_job_v, &v, n,
                        err);

    *jobs = v;
    return rc;
}

int sj_parse_nodes(const char *text_, size_t len, sj_node **nodes, size_t *n,
                   cs_err *err)
{
    void *v;
    int rc = parse_list(text_, len, "nodes", sizeof **nodes, read_node_v, &v,
                        n, err);

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
