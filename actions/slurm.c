#include "actions/slurm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/proc.h"
#include "core/mem.h"
#include "core/str.h"

typedef struct sreq sreq;

struct slurm {
    struct event_base *base;
    sreq *live; /* requests with a program running */
    char bindir[256];
    int timeout_ms;
};

/* One call or fact read in flight: a short chain of programs. */
struct sreq {
    slurm *s;
    sreq *next;
    proc *p;
    int kind;          /* SR_CALL, SR_RESUBMIT_*, SR_FACTS_* */
    char node[128], job[64];
    json_t *facts;     /* borrowed (facts) */
    json_t *params;    /* owned (resubmit) */
    json_t *jobinfo;   /* resubmit: the job's record */
    char *script;      /* resubmit: its batch script */
    char what[96];     /* for messages: "scontrol update" */
    slurm_done_fn fn;
    void *arg;
};

enum { SR_CALL, SR_RESUBMIT_SHOW, SR_RESUBMIT_SCRIPT, SR_RESUBMIT_SUBMIT,
       SR_FACTS_NODE, SR_FACTS_JOBS, SR_FACTS_JOB };

slurm *slurm_new(struct event_base *base, const char *bindir, int timeout_ms)
{
    slurm *s = xcalloc(1, sizeof *s);
    s->base = base;
    str_copy(s->bindir, sizeof s->bindir, bindir ? bindir : "");
    s->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
    return s;
}

static void sreq_free(sreq *r);

void slurm_free(slurm *s)
{
    if (!s)
        return;
    while (s->live) {
        sreq *r = s->live;
        s->live = r->next;
        proc_cancel(r->p);
        sreq_free(r);
    }
    free(s);
}

static void unlink_live(sreq *r)
{
    for (sreq **p = &r->s->live; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            return;
        }
}

static const char *const calls[] = {"slurm.drain", "slurm.resume",
    "slurm.reboot", "slurm.requeue", "slurm.cancel", "slurm.comment",
    "slurm.resubmit", NULL};

int slurm_knows(const char *op)
{
    for (int i = 0; calls[i]; i++)
        if (!strcmp(calls[i], op))
            return 1;
    return 0;
}

/* ---- parsers ---- */

typedef void (*kv_fn)(void *arg, const char *k, size_t klen, const char *v,
                      size_t vlen);

/* "Key=Value Key=Value ...": a word without '=' continues the value
 * before it (values with spaces). In a node record Reason comes last and
 * runs to the end of the line (free text that may hold '='); in a job
 * record it is one word. */
static int kv_scan(const char *t, size_t len, int reason_last, kv_fn fn,
                   void *arg)
{
    const char *end = t + len, *p = t;
    int keys = 0;

    while (p < end && *p != '\n') {
        const char *w, *eq, *v, *vend;
        while (p < end && *p == ' ')
            p++;
        if (p >= end || *p == '\n')
            break;
        w = p;
        eq = memchr(w, '=', (size_t)(end - w));
        const char *sp = w;
        while (sp < end && *sp != ' ' && *sp != '\n')
            sp++;
        if (!eq || eq > sp) { /* stray word: skip it */
            p = sp;
            continue;
        }
        v = eq + 1;
        if (reason_last && (size_t)(eq - w) == 6 && !memcmp(w, "Reason", 6)) {
            vend = memchr(v, '\n', (size_t)(end - v));
            if (!vend)
                vend = end;
        } else {
            vend = sp;
            /* continuation words: those with no '=' before their end */
            for (;;) {
                const char *q = vend, *qe;
                while (q < end && *q == ' ')
                    q++;
                if (q >= end || *q == '\n')
                    break;
                qe = q;
                while (qe < end && *qe != ' ' && *qe != '\n' && *qe != '=')
                    qe++;
                if (qe < end && *qe == '=')
                    break;
                while (qe < end && *qe != ' ' && *qe != '\n')
                    qe++;
                vend = qe;
            }
        }
        while (vend > v && vend[-1] == ' ')
            vend--;
        fn(arg, w, (size_t)(eq - w), v, (size_t)(vend - v));
        keys++;
        p = vend;
        while (p < end && *p != ' ' && *p != '\n')
            p++;
    }
    return keys;
}

typedef struct node_scan {
    char name[128], state[128], reason[512];
    int has_name, has_state;
} node_scan;

/* Controller text goes into JSON facts and audit records: anything but
 * printable ASCII becomes '?', so a stray byte never drops a fact. */
static void copy_val(char *dst, size_t cap, const char *v, size_t vlen)
{
    if (vlen >= cap)
        vlen = cap - 1;
    for (size_t i = 0; i < vlen; i++)
        dst[i] = v[i] >= 0x20 && v[i] < 0x7f ? v[i] : '?';
    dst[vlen] = 0;
}

static int key_is(const char *k, size_t klen, const char *want)
{
    return strlen(want) == klen && !memcmp(k, want, klen);
}

static void on_node_kv(void *arg, const char *k, size_t klen, const char *v,
                       size_t vlen)
{
    node_scan *n = arg;

    if (key_is(k, klen, "NodeName")) {
        copy_val(n->name, sizeof n->name, v, vlen);
        n->has_name = 1;
    } else if (key_is(k, klen, "State")) {
        copy_val(n->state, sizeof n->state, v, vlen);
        n->has_state = 1;
    } else if (key_is(k, klen, "Reason")) {
        copy_val(n->reason, sizeof n->reason, v, vlen);
    }
}

static int has_flag(const char *state, const char *flag)
{
    size_t fl = strlen(flag);
    for (const char *p = state; (p = strstr(p, flag)); p += fl)
        if ((p == state || p[-1] == '+') && (p[fl] == 0 || p[fl] == '+' ||
                                             p[fl] == '*'))
            return 1;
    return 0;
}

/* The state guardrails compare: DRAINING (drain set, jobs still on it),
 * DRAINED, REBOOT_REQUESTED / REBOOT_ISSUED, else SLURM's base state. */
static void node_state(const char *raw, char *out, size_t cap)
{
    size_t n = strcspn(raw, "+*");
    int busy = has_flag(raw, "ALLOCATED") || has_flag(raw, "MIXED") ||
               has_flag(raw, "COMPLETING");

    if (has_flag(raw, "REBOOT_ISSUED"))
        str_copy(out, cap, "REBOOT_ISSUED");
    else if (has_flag(raw, "REBOOT_REQUESTED"))
        str_copy(out, cap, "REBOOT_REQUESTED");
    else if (has_flag(raw, "DRAIN"))
        str_copy(out, cap, busy ? "DRAINING" : "DRAINED");
    else
        copy_val(out, cap, raw, n);
}

int slurm_parse_node(const char *text, size_t len, json_t *facts, cs_err *err)
{
    node_scan n = {0};
    char state[64], *at;

    kv_scan(text, len, 1, on_node_kv, &n);
    if (!n.has_name || !n.has_state || !n.state[0]) {
        cs_err_set(err, "not a node record (no NodeName= and State=)");
        return -1;
    }
    node_state(n.state, state, sizeof state);
    json_object_set_new(facts, "node.state", json_string(state));
    json_object_set_new(facts, "node.state_raw", json_string(n.state));
    /* SLURM appends " [user@time]" to the reason it stores */
    if ((at = strrchr(n.reason, '[')) && at > n.reason && at[-1] == ' ') {
        char *amp = strchr(at, '@');
        if (amp)
            json_object_set_new(facts, "node.reason_by",
                                json_stringn(at + 1, (size_t)(amp - at - 1)));
        at[-1] = 0;
    }
    json_object_set_new(facts, "node.reason", json_string(n.reason));
    /* Whose drain it is: the reason every cascade drain carries names
     * cascade and the incident; any other reason is a human's. */
    int held = has_flag(n.state, "DRAIN") || !strncmp(n.state, "DOWN", 4);
    json_object_set_new(facts, "node.drained_by",
                        json_string(!held || !n.reason[0] ? "none"
                                    : !strncmp(n.reason, "cascade ", 8)
                                    ? "cascade" : "human"));
    return 0;
}

static void on_job_kv(void *arg, const char *k, size_t klen, const char *v,
                      size_t vlen)
{
    static const char *const keys[][2] = {
        {"JobId", "job.id"}, {"JobState", "job.state"},
        {"JobName", "job.name"}, {"Partition", "job.partition"},
        {"WorkDir", "job.workdir"}, {"NumNodes", "job.nodes"},
        {"ExcNodeList", "job.exclude"}, {"UserId", "job.user"},
        {"TimeLimit", "job.time_limit"}};
    json_t *facts = arg;
    char val[512];

    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (key_is(k, klen, keys[i][0])) {
            copy_val(val, sizeof val, v, vlen);
            json_object_set_new(facts, keys[i][1], json_string(val));
        }
}

int slurm_parse_job(const char *text, size_t len, json_t *facts, cs_err *err)
{
    json_t *f = json_object();

    kv_scan(text, len, 0, on_job_kv, f);
    if (!json_object_get(f, "job.id") || !json_object_get(f, "job.state")) {
        json_decref(f);
        cs_err_set(err, "not a job record (no JobId= and JobState=)");
        return -1;
    }
    json_object_update(facts, f);
    json_decref(f);
    return 0;
}

/* ---- running the tools ---- */

static void sreq_free(sreq *r)
{
    json_decref(r->params);
    json_decref(r->jobinfo);
    free(r->script);
    free(r);
}

static void finish(sreq *r, exec_outcome oc, const char *detail,
                   json_t *out)
{
    r->fn(r->arg, oc, detail, out);
    json_decref(out);
    sreq_free(r);
}

static void tool(const slurm *s, const char *name, char *buf, size_t cap)
{
    if (s->bindir[0])
        snprintf(buf, cap, "%s/%s", s->bindir, name);
    else
        str_copy(buf, cap, name);
}

static void on_proc(void *arg, const proc_result *res);

static int track(sreq *r, proc *p)
{
    if (!p)
        return -1;
    r->p = p;
    r->next = r->s->live;
    r->s->live = r;
    return 0;
}

static int start(sreq *r, char **argv, const char *input, size_t inlen,
                 cs_err *err)
{
    char path[320];

    tool(r->s, argv[0], path, sizeof path);
    snprintf(r->what, sizeof r->what, "%s %s", argv[0], argv[1] ? argv[1] : "");
    argv[0] = path;
    return track(r, proc_run(r->s->base, argv, input, inlen, r->s->timeout_ms,
                             on_proc, r, err));
}

/* The first line of what the tool said, for the audit record. */
static void said(const proc_result *res, char *buf, size_t cap)
{
    const char *t = res->errlen ? res->err : res->out;
    size_t n = strcspn(t, "\n");
    char line[304];

    copy_val(line, sizeof line, t, n > 300 ? 300 : n);
    if (res->timed_out)
        snprintf(buf, cap, "timed out");
    else
        snprintf(buf, cap, "exit %d%s%s", res->status, n ? ": " : "", line);
}

static const char *arg_str(const json_t *args, const char *k, const char *dflt)
{
    const char *v = json_string_value(json_object_get(args, k));
    return v ? v : dflt;
}

static int next_program(sreq *r, cs_err *err);

static void on_proc(void *arg, const proc_result *res)
{
    sreq *r = arg;
    char msg[400];
    cs_err err;

    unlink_live(r); /* its program is done: proc frees itself */
    r->p = NULL;
    said(res, msg, sizeof msg);
    if (res->status != 0 || res->timed_out) {
        char why[512];
        snprintf(why, sizeof why, "%s: %s", r->what, msg);
        finish(r, EXEC_FAIL, why, NULL);
        return;
    }
    switch (r->kind) {
    case SR_CALL:
        snprintf(msg, sizeof msg, "%s: ok", r->what);
        finish(r, EXEC_OK, msg, NULL);
        return;
    case SR_RESUBMIT_SHOW:
        r->jobinfo = json_object();
        if (slurm_parse_job(res->out, res->outlen, r->jobinfo, &err)) {
            snprintf(msg, sizeof msg, "job %s: %.200s", r->job, err.msg);
            finish(r, EXEC_FAIL, msg, NULL);
            return;
        }
        r->kind = SR_RESUBMIT_SCRIPT;
        break;
    case SR_RESUBMIT_SCRIPT:
        r->script = xstrndup(res->out, res->outlen);
        r->kind = SR_RESUBMIT_SUBMIT;
        break;
    case SR_RESUBMIT_SUBMIT: {
        size_t n = strcspn(res->out, ";\n");
        json_t *out = json_pack("{s:s%}", "job", res->out, n);
        snprintf(msg, sizeof msg, "sbatch: job %s resubmitted as %.*s", r->job,
                 (int)n, res->out);
        finish(r, EXEC_OK, msg, out);
        return;
    }
    case SR_FACTS_NODE:
        if (slurm_parse_node(res->out, res->outlen, r->facts, &err)) {
            snprintf(msg, sizeof msg, "node %s: %.200s", r->node, err.msg);
            finish(r, EXEC_FAIL, msg, NULL);
            return;
        }
        r->kind = SR_FACTS_JOBS;
        break;
    case SR_FACTS_JOBS: {
        long n = 0;
        for (size_t i = 0; i < res->outlen; i++)
            n += res->out[i] == '\n';
        json_object_set_new(r->facts, "node.jobs", json_integer(n));
        r->kind = r->job[0] ? SR_FACTS_JOB : -1;
        if (r->kind < 0) {
            finish(r, EXEC_OK, "facts read", NULL);
            return;
        }
        break;
    }
    case SR_FACTS_JOB:
        if (slurm_parse_job(res->out, res->outlen, r->facts, &err)) {
            snprintf(msg, sizeof msg, "job %s: %.200s", r->job, err.msg);
            finish(r, EXEC_FAIL, msg, NULL);
            return;
        }
        finish(r, EXEC_OK, "facts read", NULL);
        return;
    }
    if (next_program(r, &err))
        finish(r, EXEC_FAIL, err.msg, NULL);
}

/* sbatch's options from the job's record and the incident's patch: the
 * nodes to avoid (its own list and the incident's), the environment to
 * set, and every other patched setting as CASCADE_PATCH_<NAME> for the
 * launch script to read. */
static void resubmit_argv(sreq *r, char **argv, char bufs[][512], int *n)
{
    const json_t *ex = json_object_get(r->params, "exclude_nodes");
    const char *own = json_string_value(json_object_get(r->jobinfo, "job.exclude"));
    char *b;
    size_t i;
    json_t *v;

    argv[(*n)++] = "sbatch";
    argv[(*n)++] = "--parsable";
    argv[(*n)++] = "--export=ALL";
#define OPT(fmt, ...) (b = bufs[*n], snprintf(b, 512, fmt, __VA_ARGS__), argv[(*n)++] = b)
    OPT("--job-name=%s", arg_str(r->jobinfo, "job.name", "resubmit"));
    if (json_object_get(r->jobinfo, "job.partition"))
        OPT("--partition=%s", arg_str(r->jobinfo, "job.partition", ""));
    if (json_object_get(r->jobinfo, "job.workdir"))
        OPT("--chdir=%s", arg_str(r->jobinfo, "job.workdir", "/"));
    if (json_object_get(r->jobinfo, "job.nodes"))
        OPT("--nodes=%s", arg_str(r->jobinfo, "job.nodes", "1"));
    OPT("--comment=cascade resubmission of %s", r->job);
    b = bufs[*n];
    b[0] = 0;
    if (own && strcmp(own, "(null)"))
        str_copy(b, 512, own);
    json_array_foreach(ex, i, v) {
        size_t l = strlen(b);
        if (json_is_string(v))
            snprintf(b + l, 512 - l, "%s%s", l ? "," : "", json_string_value(v));
    }
    if (b[0]) {
        char tmp[512];
        snprintf(tmp, sizeof tmp, "--exclude=%s", b);
        memcpy(b, tmp, sizeof tmp);
        argv[(*n)++] = b;
    }
#undef OPT
    argv[*n] = NULL;
}

/* sbatch's environment: the incident's variables and patch, PATH and
 * SLURM_CONF, and nothing else of the executor's (its secrets). */
static char **resubmit_env(const sreq *r)
{
    const json_t *env = json_object_get(r->params, "env");
    size_t cap = 8 + json_object_size(env) + json_object_size(r->params);
    char **envp = xcalloc(cap + 1, sizeof *envp);
    size_t n = 0;
    const char *k;
    json_t *v;

    for (const char *const *keep = (const char *const[]){"PATH", "SLURM_CONF",
                                                         "HOME", NULL}; *keep; keep++)
        if (getenv(*keep) && asprintf(&envp[n], "%s=%s", *keep, getenv(*keep)) > 0)
            n++;
    json_object_foreach((json_t *)env, k, v)
        if (json_is_string(v) && asprintf(&envp[n], "%s=%s", k, json_string_value(v)) > 0)
            n++;
    json_object_foreach((json_t *)r->params, k, v) {
        char *val = json_is_string(v) ? strdup(json_string_value(v))
                                      : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        char name[96];
        if (!strcmp(k, "env") || !strcmp(k, "exclude_nodes") || !val) {
            free(val);
            continue;
        }
        snprintf(name, sizeof name, "CASCADE_PATCH_%s", k);
        for (char *c = name; *c; c++)
            *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
        if (asprintf(&envp[n], "%s=%s", name, val) > 0)
            n++;
        free(val);
    }
    return envp;
}

static int next_program(sreq *r, cs_err *err)
{
    char *argv[24];
    char bufs[24][512];
    int n = 0, rc;

    switch (r->kind) {
    case SR_RESUBMIT_SCRIPT:
        return start(r, (char *[]){"scontrol", "write", "batch_script", r->job,
                                   "-", NULL}, NULL, 0, err);
    case SR_RESUBMIT_SUBMIT: {
        char path[320];
        char **envp = resubmit_env(r);
        resubmit_argv(r, argv, bufs, &n);
        tool(r->s, "sbatch", path, sizeof path);
        argv[0] = path;
        snprintf(r->what, sizeof r->what, "sbatch");
        rc = track(r, proc_run_env(r->s->base, argv, envp, r->script,
                                   strlen(r->script), r->s->timeout_ms,
                                   on_proc, r, err));
        for (char **e = envp; *e; e++)
            free(*e);
        free(envp);
        return rc;
    }
    case SR_FACTS_JOBS:
        return start(r, (char *[]){"squeue", "-h", "-w", r->node, "-t",
                                   "RUNNING,COMPLETING", "-o", "%i", NULL},
                     NULL, 0, err);
    case SR_FACTS_JOB:
        return start(r, (char *[]){"scontrol", "show", "job", "-o", r->job,
                                   NULL}, NULL, 0, err);
    }
    cs_err_set(err, "internal: no step %d", r->kind);
    return -1;
}

static sreq *sreq_new(slurm *s, const json_t *target, slurm_done_fn fn,
                      void *arg)
{
    sreq *r = xcalloc(1, sizeof *r);
    r->s = s;
    r->fn = fn;
    r->arg = arg;
    str_copy(r->node, sizeof r->node, arg_str(target, "node", ""));
    str_copy(r->job, sizeof r->job, arg_str(target, "job", ""));
    return r;
}

static int need(const sreq *r, int node, const char *op, cs_err *err)
{
    if (node ? r->node[0] : r->job[0])
        return 0;
    cs_err_set(err, "%s needs a %s in the action's target", op,
               node ? "node" : "job");
    return -1;
}

int slurm_call(slurm *s, const char *op, const json_t *args,
               const json_t *target, const json_t *params, slurm_done_fn fn,
               void *arg, cs_err *err)
{
    sreq *r = sreq_new(s, target, fn, arg);
    char b1[600], b2[600], b3[600];
    int rc = -1, node = strcmp(op, "slurm.requeue") && strcmp(op, "slurm.cancel")
                        && strcmp(op, "slurm.resubmit");

    if (!slurm_knows(op)) {
        cs_err_set(err, "the SLURM executor has no call %s", op);
        goto out;
    }
    if (need(r, node, op, err))
        goto out;
    snprintf(b1, sizeof b1, "NodeName=%s", r->node);
    if (!strcmp(op, "slurm.drain")) {
        snprintf(b2, sizeof b2, "Reason=%s", arg_str(args, "reason", "cascade"));
        rc = start(r, (char *[]){"scontrol", "update", b1, "State=DRAIN", b2,
                                 NULL}, NULL, 0, err);
    } else if (!strcmp(op, "slurm.resume")) {
        rc = start(r, (char *[]){"scontrol", "update", b1, "State=RESUME",
                                 NULL}, NULL, 0, err);
    } else if (!strcmp(op, "slurm.reboot")) {
        snprintf(b2, sizeof b2, "reason=%s", arg_str(args, "reason", "cascade"));
        rc = start(r, (char *[]){"scontrol", "reboot", "ASAP",
                                 "nextstate=RESUME", b2, r->node, NULL},
                   NULL, 0, err);
    } else if (!strcmp(op, "slurm.comment")) {
        snprintf(b3, sizeof b3, "Comment=%s", arg_str(args, "comment", "cascade"));
        rc = start(r, (char *[]){"scontrol", "update", b1, b3, NULL}, NULL, 0,
                   err);
    } else if (!strcmp(op, "slurm.requeue")) {
        rc = start(r, (char *[]){"scontrol", "requeue", r->job, NULL}, NULL, 0,
                   err);
    } else if (!strcmp(op, "slurm.cancel")) {
        rc = start(r, (char *[]){"scancel", r->job, NULL}, NULL, 0, err);
    } else { /* slurm.resubmit: read the job, its script, then sbatch */
        r->params = json_deep_copy(params ? params : json_object());
        if (!r->params)
            r->params = json_object();
        r->kind = SR_RESUBMIT_SHOW;
        rc = start(r, (char *[]){"scontrol", "show", "job", "-o", r->job, NULL},
                   NULL, 0, err);
    }
out:
    if (rc)
        sreq_free(r);
    return rc;
}

int slurm_facts(slurm *s, const char *node, const char *job, json_t *facts,
                slurm_done_fn fn, void *arg, cs_err *err)
{
    json_t *t = json_pack("{s:s, s:s}", "node", node ? node : "", "job",
                          job ? job : "");
    sreq *r = sreq_new(s, t, fn, arg);
    int rc;

    json_decref(t);
    r->facts = facts;
    if (r->node[0]) {
        r->kind = SR_FACTS_NODE;
        rc = start(r, (char *[]){"scontrol", "show", "node", "-o", r->node,
                                 NULL}, NULL, 0, err);
    } else if (r->job[0]) {
        r->kind = SR_FACTS_JOB;
        rc = next_program(r, err);
    } else {
        cs_err_set(err, "no node and no job to read facts of");
        rc = -1;
    }
    if (rc)
        sreq_free(r);
    return rc;
}

/* ---- the executor contract (actions/exec.h) ---- */

static int ex_knows(const void *self, const char *op)
{
    (void)self;
    return slurm_knows(op);
}

static int ex_call(void *self, const exec_call *c, cs_err *err)
{
    return slurm_call(self, c->op, c->args, c->target, c->params, c->done,
                      c->arg, err);
}

static int ex_facts(void *self, const exec_query *q, cs_err *err)
{
    return slurm_facts(self, q->node, q->job, q->out, q->done, q->arg, err);
}

static void ex_free(void *self)
{
    slurm_free(self);
}

executor slurm_executor(slurm *s, int reads)
{
    return (executor){.name = "slurm", .self = s, .knows = ex_knows,
                      .call = ex_call, .facts = reads ? ex_facts : NULL,
                      .free = ex_free};
}
