#include "actions/slurmrest.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions/slurm.h"
#include "core/str.h"

#define API "/slurm/v0.0.38"

typedef struct sop sop;
typedef void (*sop_next)(sop *o, const json_t *answer);

struct sop {
    exec_link link; /* first: the executor's list of calls */
    srest *s;
    exec_done_fn fn;
    void *arg;
    json_t *facts; /* borrowed: the caller's */
    sop_next then;
    char what[160], node[128], job[64];
};

struct srest {
    httpc *h;
    const ex_conf *c;
    char base[1024], sock[512];
    exec_link *list; /* calls in flight */
};

srest *srest_new(httpc *h, const ex_conf *c)
{
    srest *s = calloc(1, sizeof *s);
    const char *url = c->slurmrestd.url;

    if (!s)
        return NULL;
    s->h = h;
    s->c = c;
    if (!strncmp(url, "unix:", 5)) {
        str_copy(s->sock, sizeof s->sock, url + 5);
        str_copy(s->base, sizeof s->base, "http://localhost");
    } else {
        str_copy(s->base, sizeof s->base, url);
    }
    return s;
}

static void sop_free(sop *o)
{
    exec_link_del(&o->s->list, &o->link);
    free(o);
}

void srest_free(srest *s)
{
    if (!s)
        return;
    while (s->list)
        sop_free((sop *)s->list);
    free(s);
}

static void sop_end(sop *o, exec_outcome oc, const char *detail)
{
    exec_done_fn fn = o->fn;
    void *arg = o->arg;

    sop_free(o);
    fn(arg, oc, detail, NULL);
}

/* slurmrestd answers {"errors": [{"error": ..., "description": ...}]}:
 * a non-empty list is a failure whatever the status. */
static void on_http(void *arg, long status, const char *body, size_t len,
                    const char *error)
{
    sop *o = arg;
    json_t *js = status ? json_loadb(body, len, 0, NULL) : NULL;
    const json_t *e = json_array_get(json_object_get(js, "errors"), 0);
    char detail[512];

    if (!status) {
        snprintf(detail, sizeof detail, "%s: %s", o->what, error);
        sop_end(o, EXEC_RETRY, detail);
    } else if (e || status < 200 || status > 299 || !js) {
        const char *why = json_string_value(json_object_get(e, "description"));
        if (!why)
            why = json_string_value(json_object_get(e, "error"));
        snprintf(detail, sizeof detail, "%s: HTTP %ld: %.200s", o->what, status,
                 why ? why : js ? "error" : "the answer is not JSON");
        sop_end(o, e || status < 300 ? EXEC_FAIL : exec_http_outcome(status),
                detail);
    } else {
        o->then(o, js);
    }
    json_decref(js);
}

static int send(sop *o, const char *method, const char *path, sop_next then,
                cs_err *err)
{
    const ex_endpoint *e = &o->s->c->slurmrestd;
    char url[2048], user[200], token[1100];
    const char *hdr[] = {user, token, NULL};
    httpc_req r = {.method = method, .url = url,
                   .unix_socket = o->s->sock[0] ? o->s->sock : NULL,
                   .ca_file = e->ca_file[0] ? e->ca_file : NULL,
                   .insecure = e->insecure, .timeout_ms = o->s->c->timeout_ms,
                   .headers = e->token[0] ? hdr : NULL};
    int rc;

    snprintf(url, sizeof url, "%s%s", o->s->base, path);
    snprintf(user, sizeof user, "X-SLURM-USER-NAME: %s", e->user);
    snprintf(token, sizeof token, "X-SLURM-USER-TOKEN: %s", e->token);
    snprintf(o->what, sizeof o->what, "slurmrestd: %s %.120s", method, path);
    o->then = then;
    rc = httpc_send(o->s->h, &r, on_http, o, err);
    explicit_bzero(token, sizeof token);
    return rc;
}

static sop *sop_new(srest *s, const char *node, const char *job,
                    exec_done_fn fn, void *arg)
{
    sop *o = calloc(1, sizeof *o);

    if (!o)
        return NULL;
    o->s = s;
    o->fn = fn;
    o->arg = arg;
    str_copy(o->node, sizeof o->node, node ? node : "");
    str_copy(o->job, sizeof o->job, job ? job : "");
    exec_link_add(&s->list, &o->link);
    return o;
}

/* ---- calls ---- */

int srest_knows(const char *op)
{
    return !strcmp(op, "slurm.cancel");
}

static void cancelled(sop *o, const json_t *answer)
{
    char detail[200];

    (void)answer;
    snprintf(detail, sizeof detail, "%s: cancelled", o->what);
    sop_end(o, EXEC_OK, detail);
}

int srest_call(srest *s, const char *op, const json_t *target,
               exec_done_fn fn, void *arg, cs_err *err)
{
    const char *job = json_string_value(json_object_get(target, "job"));
    char path[256], id[96];
    sop *o;

    if (!srest_knows(op)) {
        cs_err_set(err, "%s is not a call of slurmrestd v0.0.38", op);
        return -1;
    }
    if (!job || !*job) {
        cs_err_set(err, "%s: the action names no job", op);
        return -1;
    }
    if (!(o = sop_new(s, NULL, job, fn, arg))) {
        cs_err_set(err, "%s: out of memory", op);
        return -1;
    }
    httpc_escape(job, id, sizeof id);
    snprintf(path, sizeof path, API "/job/%s", id);
    if (send(o, "DELETE", path, cancelled, err)) {
        sop_free(o);
        return -1;
    }
    return 0;
}

/* ---- facts ---- */

int srest_node_facts(const json_t *node, json_t *facts, cs_err *err)
{
    const char *name = json_string_value(json_object_get(node, "name"));
    const char *state = json_string_value(json_object_get(node, "state"));
    const char *reason = json_string_value(json_object_get(node, "reason"));
    const char *by = json_string_value(json_object_get(node, "reason_set_by_user"));
    const json_t *flag;
    char rec[1400];
    size_t i, n;

    if (!name || !state || !*state) {
        cs_err_set(err, "not a node object (no name and state)");
        return -1;
    }
    /* as scontrol prints it ("IDLE+DRAIN"), so one set of rules decides */
    n = (size_t)snprintf(rec, sizeof rec, "NodeName=%.128s State=", name);
    for (const char *p = state; *p && n + 2 < sizeof rec; p++)
        rec[n++] = (char)toupper((unsigned char)*p);
    json_array_foreach(json_object_get(node, "state_flags"), i, flag)
        if (json_string_value(flag) && n + 66 < sizeof rec)
            n += (size_t)snprintf(rec + n, sizeof rec - n, "+%.64s",
                                  json_string_value(flag));
    snprintf(rec + n, sizeof rec - n, " Reason=%.1000s", reason ? reason : "");
    if (slurm_parse_node(rec, strlen(rec), facts, err))
        return -1;
    if (by && *by)
        json_object_set_new(facts, "node.reason_by", json_string(by));
    return 0;
}

/* "001-003,7" (up to end) holds the number num ("002")? A zero-padded
 * range holds numbers of its own width only. */
static int in_ranges(const char *r, const char *end, const char *num)
{
    char *tail;
    long v = strtol(num, &tail, 10);
    int digits = (int)(tail - num);

    if (*tail)
        return 0;
    while (r < end) {
        char *e1, *e2;
        long lo = strtol(r, &e1, 10), hi = lo;
        int width = (int)(e1 - r), padded = width > 1 && *r == '0';
        if (e1 == r)
            return 0;
        e2 = e1;
        if (*e1 == '-')
            hi = strtol(e1 + 1, &e2, 10);
        if (v >= lo && v <= hi &&
            (padded ? digits == width : (*num != '0' || digits == 1)))
            return 1;
        if (*e2 != ',')
            return 0;
        r = e2 + 1;
    }
    return 0;
}

/* "gpu-[001-003,007],cpu-1" names node? Prefix, then ranges of equal
 * width, as SLURM prints them. */
int srest_hostlist_has(const char *list, const char *node)
{
    const char *p = list;

    while (p && *p) {
        const char *br = strpbrk(p, "[,");
        if (!br || *br == ',') {
            size_t len = br ? (size_t)(br - p) : strlen(p);
            if (len == strlen(node) && !strncmp(p, node, len))
                return 1;
            p = br ? br + 1 : NULL;
            continue;
        }
        size_t plen = (size_t)(br - p);
        const char *end = strchr(br, ']');
        if (!end)
            return 0;
        if (!strncmp(node, p, plen) && isdigit((unsigned char)node[plen]))
            if (in_ranges(br + 1, end, node + plen))
                return 1;
        p = end[1] == ',' ? end + 2 : end + 1;
    }
    return 0;
}

static void facts_job_read(sop *o, const json_t *answer)
{
    const json_t *j = json_array_get(json_object_get(answer, "jobs"), 0);
    const char *st = json_string_value(json_object_get(j, "job_state"));

    json_object_set_new(o->facts, "job.state", json_string(st ? st : "UNKNOWN"));
    sop_end(o, EXEC_OK, "facts read");
}

static void facts_job(sop *o)
{
    char path[256], id[96];
    cs_err err;

    if (!o->job[0]) {
        sop_end(o, EXEC_OK, "facts read");
        return;
    }
    httpc_escape(o->job, id, sizeof id);
    snprintf(path, sizeof path, API "/job/%s", id);
    if (send(o, "GET", path, facts_job_read, &err))
        sop_end(o, EXEC_FAIL, err.msg);
}

static void facts_jobs_read(sop *o, const json_t *answer)
{
    const json_t *j;
    size_t i;
    long n = 0;

    json_array_foreach(json_object_get(answer, "jobs"), i, j) {
        const char *st = json_string_value(json_object_get(j, "job_state"));
        const char *nodes = json_string_value(json_object_get(j, "nodes"));
        if (st && nodes && (!strcmp(st, "RUNNING") || !strcmp(st, "COMPLETING")) &&
            srest_hostlist_has(nodes, o->node))
            n++;
    }
    json_object_set_new(o->facts, "node.jobs", json_integer(n));
    facts_job(o);
}

static void facts_node_read(sop *o, const json_t *answer)
{
    const json_t *node = json_array_get(json_object_get(answer, "nodes"), 0);
    cs_err err;

    if (srest_node_facts(node, o->facts, &err)) {
        char detail[700];
        snprintf(detail, sizeof detail, "%s: %s", o->what, err.msg);
        sop_end(o, EXEC_FAIL, detail);
        return;
    }
    if (send(o, "GET", API "/jobs", facts_jobs_read, &err))
        sop_end(o, EXEC_FAIL, err.msg);
}

int srest_facts(srest *s, const char *node, const char *job, json_t *facts,
                exec_done_fn fn, void *arg, cs_err *err)
{
    sop *o = sop_new(s, node, job, fn, arg);
    char path[400], n[300];

    if (!o) {
        cs_err_set(err, "slurmrestd facts: out of memory");
        return -1;
    }
    o->facts = facts;
    if (!o->node[0]) {
        facts_job(o);
        return 0;
    }
    httpc_escape(o->node, n, sizeof n);
    snprintf(path, sizeof path, API "/node/%s", n);
    if (send(o, "GET", path, facts_node_read, err)) {
        sop_free(o);
        return -1;
    }
    return 0;
}

/* ---- the executor contract (actions/exec.h) ---- */

static int ex_knows(const void *self, const char *op)
{
    (void)self;
    return srest_knows(op);
}

static int ex_call(void *self, const exec_call *c, cs_err *err)
{
    return srest_call(self, c->op, c->target, c->done, c->arg, err);
}

static int ex_facts(void *self, const exec_query *q, cs_err *err)
{
    return srest_facts(self, q->node, q->job, q->out, q->done, q->arg, err);
}

static void ex_free(void *self)
{
    srest_free(self);
}

executor srest_executor(srest *s)
{
    return (executor){.name = "slurmrestd", .self = s, .http = 1,
                      .knows = ex_knows, .call = ex_call, .facts = ex_facts,
                      .free = ex_free};
}
