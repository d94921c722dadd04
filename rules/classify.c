#include "rules/classify.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctype.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "core/strmap.h"
#include "core/ts.h"

/* A traceback older than this (event time) is abandoned: its exception line
 * was lost or the job printed something else. */
#define TB_MAX_AGE (60 * TS_SEC)

enum re_id {
    RE_XID,
    RE_OFFBUS,
    RE_RANK,
    RE_TRIED,
    RE_CAP_NEW,
    RE_CAP_OLD,
    RE_FREE_NEW,
    RE_FREE_OLD,
    RE_RESV_NEW,
    RE_RESV_OLD,
    RE_ALLOC_OLD,
    RE_NODE_NOTRESP,
    RE_NODE_FAILED,
    RE__COUNT
};

#define SIZE "([0-9]+(?:\\.[0-9]+)?) ?([KMGT]i?B|bytes|B)"
static const char *const re_src[RE__COUNT] = {
    [RE_XID] = "NVRM: Xid \\((?:PCI:)?([0-9A-Fa-f:.]+)\\):\\s*([0-9]+)",
    [RE_OFFBUS] = "NVRM: GPU (?:at PCI:)?([0-9A-Fa-f:.]+):\\s*GPU has fallen "
                  "off the bus",
    [RE_RANK] = "^\\[(?:rank|RANK) ?([0-9]+)\\]:? ?",
    [RE_TRIED] = "Tried to allocate " SIZE,
    [RE_CAP_NEW] = "total capac(?:i)?ty of " SIZE,
    [RE_CAP_OLD] = SIZE " total capacity",
    [RE_FREE_NEW] = "of which " SIZE " is free",
    [RE_FREE_OLD] = SIZE " free",
    [RE_RESV_NEW] = "and " SIZE " is reserved\\s+by PyTorch but unallocated",
    [RE_RESV_OLD] = SIZE " reserved in total by PyTorch",
    [RE_ALLOC_OLD] = SIZE " already allocated",
    [RE_NODE_NOTRESP] = "[Nn]odes? ([^ ,]+(?:,[^ ,]+)*) not responding",
    [RE_NODE_FAILED] = "on failed node ([^ ,]+)",
};

struct traceback {
    int64_t started;
    int forward, backward;
    int dirty;
};

struct classifier {
    pcre2_code *re[RE__COUNT];
    pcre2_match_data *md;
    strmap *tracebacks; /* "cluster|host|job|rank" -> struct traceback */
    strmap *tb_gone;    /* keys ended since the last cls_tb_changes */
};

classifier *cls_new(cs_err *err)
{
    classifier *c = calloc(1, sizeof *c);
    int ec;
    PCRE2_SIZE eo;

    if (!c) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    for (int i = 0; i < RE__COUNT; i++) {
        c->re[i] = pcre2_compile((PCRE2_SPTR)re_src[i], PCRE2_ZERO_TERMINATED,
                                 0, &ec, &eo, NULL);
        if (!c->re[i]) {
            PCRE2_UCHAR msg[128];
            pcre2_get_error_message(ec, msg, sizeof msg);
            cs_err_set(err, "signature %d: %s at offset %zu", i, msg, eo);
            cls_free(c);
            return NULL;
        }
        pcre2_jit_compile(c->re[i], PCRE2_JIT_COMPLETE);
    }
    c->md = pcre2_match_data_create(8, NULL);
    c->tracebacks = strmap_new();
    c->tb_gone = strmap_new();
    return c;
}

void cls_free(classifier *c)
{
    if (!c)
        return;
    for (int i = 0; i < RE__COUNT; i++)
        pcre2_code_free(c->re[i]);
    pcre2_match_data_free(c->md);
    strmap_free(c->tracebacks, free);
    strmap_free(c->tb_gone, NULL);
    free(c);
}

/* Runs one signature; copies capture groups 1..n into caps (each cap_len). */
static int match(const classifier *c, enum re_id id, const char *s,
                 char caps[][64], int n)
{
    PCRE2_SIZE *ov;

    if (pcre2_match(c->re[id], (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0, 0,
                    c->md, NULL) < 0)
        return 0;
    ov = pcre2_get_ovector_pointer(c->md);
    for (int i = 0; i < n; i++) {
        PCRE2_SIZE a = ov[2 * (i + 1)], b = ov[2 * (i + 1) + 1];
        size_t l = (a == PCRE2_UNSET) ? 0 : b - a;
        if (l > 63)
            l = 63;
        memcpy(caps[i], s + (a == PCRE2_UNSET ? 0 : a), l);
        caps[i][l] = '\0';
    }
    return 1;
}


static void fact_init(fact *f, fact_kind kind, const sig *s)
{
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->rank = s ? s->rank : -1;
    f->tried = f->free_b = f->capacity = f->reserved_unalloc = -1;
    if (s) {
        str_copy(f->host, sizeof f->host, s->host);
        str_copy(f->job, sizeof f->job, s->job);
    }
}

/* Xid code -> the scenario it signals on its own (SCENARIOS.md, Hardware).
 * 13/31/43 name no scenario here: hardware or application is decided by the
 * engine from how the fault moves across GPUs and jobs. */
static const char *xid_scenario(int xid)
{
    switch (xid) {
    case 79:
        return "hw.gpu_off_bus";
    case 48:
    case 63:
    case 64:
    case 94:
    case 95:
        return "hw.ecc_uncorrectable";
    case 74:
        return "hw.nvlink";
    default:
        return NULL;
    }
}

int cls_parse_xid(const classifier *c, const char *line, fact *f)
{
    char cap[2][64];

    if (!strstr(line, "NVRM"))
        return 0;
    fact_init(f, FACT_XID, NULL);
    if (match(c, RE_XID, line, cap, 2)) {
        str_copy(f->pci, sizeof f->pci, cap[0]);
        f->xid = atoi(cap[1]);
    } else if (match(c, RE_OFFBUS, line, cap, 1)) {
        /* Driver 570+ reports a lost GPU without the Xid token. */
        str_copy(f->pci, sizeof f->pci, cap[0]);
        f->xid = 79;
    } else {
        return 0;
    }
    f->scenario = xid_scenario(f->xid);
    str_copy(f->excerpt, sizeof f->excerpt, strstr(line, "NVRM"));
    return 1;
}

static double to_bytes(const char *num, const char *unit)
{
    double v = strtod(num, NULL);
    static const struct { const char *u; double m; } units[] = {
        {"B", 1},          {"bytes", 1},         {"KiB", 1024.0},
        {"KB", 1024.0},    {"MiB", 1048576.0},   {"MB", 1048576.0},
        {"GiB", 1073741824.0}, {"GB", 1073741824.0},
        {"TiB", 1099511627776.0}, {"TB", 1099511627776.0}};

    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strcmp(unit, units[i].u) == 0)
            return v * units[i].m;
    return -1;
}

static double size_of(const classifier *c, enum re_id id, const char *line)
{
    char cap[2][64];
    return match(c, id, line, cap, 2) ? to_bytes(cap[0], cap[1]) : -1;
}

int cls_parse_oom(const classifier *c, const char *line, fact *f)
{
    double resv, alloc;

    /* Every PyTorch generation keeps this phrase; the exception class and
     * "capacity" (misspelt in 2.1) do not stay fixed. */
    if (!strstr(line, "CUDA out of memory"))
        return 0;
    fact_init(f, FACT_CUDA_OOM, NULL);
    f->tried = size_of(c, RE_TRIED, line);
    f->capacity = size_of(c, RE_CAP_NEW, line);
    if (f->capacity < 0)
        f->capacity = size_of(c, RE_CAP_OLD, line);
    f->free_b = size_of(c, RE_FREE_NEW, line);
    if (f->free_b < 0)
        f->free_b = size_of(c, RE_FREE_OLD, line);
    f->reserved_unalloc = size_of(c, RE_RESV_NEW, line);
    if (f->reserved_unalloc < 0) {
        /* Before 2.1 the message gave reserved and allocated totals. */
        resv = size_of(c, RE_RESV_OLD, line);
        alloc = size_of(c, RE_ALLOC_OLD, line);
        if (resv >= 0 && alloc >= 0)
            f->reserved_unalloc = resv > alloc ? resv - alloc : 0;
    }
    str_copy(f->excerpt, sizeof f->excerpt, strstr(line, "CUDA out of memory"));
    return 1;
}

/* Fragmentation is decided from numbers, not from the advice text that
 * every 2.x message carries: reserved-but-unallocated memory that would
 * have covered the request means the memory exists but is fragmented. */
static const char *oom_scenario(const fact *f)
{
    if (f->tried > 0 && f->reserved_unalloc >= f->tried)
        return "oom.fragmentation";
    if (f->pass == OOM_PASS_BACKWARD)
        return "oom.activation";
    return "oom.batch_size";
}

/* One bound of a hostlist range: 1..9 digits, nothing else (no sign, so
 * "[-002-05...]" cannot overflow). Returns its width or -1. */
static int range_bound(const char *q, const char **end, long *v)
{
    int w = 0;

    *v = 0;
    while (isdigit((unsigned char)q[w]) && w < 10)
        *v = *v * 10 + (q[w++] - '0');
    *end = q + w;
    return w == 0 || w > 9 ? -1 : w;
}

int cls_expand_hostlist(const char *list, char names[][128], int max)
{
    int n = 0;
    const char *p = list;

    while (*p) {
        const char *lb = NULL, *end = p;
        int depth = 0;
        while (*end && (depth || *end != ',')) {
            if (*end == '[') {
                if (depth++ || lb)
                    return -1;
                lb = end;
            } else if (*end == ']') {
                if (!depth--)
                    return -1;
            }
            end++;
        }
        if (depth)
            return -1;
        if (!lb) {
            if (end - p >= 128 || end == p)
                return -1;
            if (n < max) {
                memcpy(names[n], p, (size_t)(end - p));
                names[n][end - p] = '\0';
                n++;
            }
        } else {
            const char *rb = strchr(lb, ']'), *q = lb + 1;
            int plen = (int)(lb - p);
            if (plen >= 100)
                return -1;
            while (q < rb) {
                const char *e;
                long a, b;
                int width = range_bound(q, &e, &a);
                if (width < 0)
                    return -1;
                b = a;
                if (*e == '-' && range_bound(e + 1, &e, &b) < 0)
                    return -1;
                if (b < a || b - a > 4096)
                    return -1;
                int slen = (int)(end - rb - 1);
                if (slen > 20)
                    return -1;
                for (long v = a; v <= b && n < max; v++, n++)
                    snprintf(names[n], 128, "%.*s%0*ld%.*s", plen, p, width, v,
                             slen, rb + 1);
                q = e;
                if (*q == ',')
                    q++;
                else if (q != rb)
                    return -1;
            }
        }
        p = *end ? end + 1 : end;
    }
    return n;
}

static int classify_slurm(classifier *c, const sig *s, fact *out)
{
    char cap[1][64], names[CLS_MAX_FACTS][128];
    int n = 0, k;

    if (!s->line)
        return 0;
    if (match(c, RE_NODE_NOTRESP, s->line, cap, 1) ||
        match(c, RE_NODE_FAILED, s->line, cap, 1)) {
        k = cls_expand_hostlist(cap[0], names, CLS_MAX_FACTS);
        for (int i = 0; i < k; i++, n++) {
            fact_init(&out[n], FACT_NODE_DOWN, s);
            str_copy(out[n].host, sizeof out[n].host, names[i]);
            out[n].scenario = "node.down";
            str_copy(out[n].excerpt, sizeof out[n].excerpt, s->line);
        }
    }
    return n;
}

/* dcgm-exporter conventions first (Hostname, gpu, err_code), then the
 * labels other exporters use. */
static const char *alert_host(json_t *labels, char *buf, size_t len)
{
    static const char *const keys[] = {"Hostname", "hostname", "node",
                                       "nodename", "host", "instance"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const char *v = json_string_value(json_object_get(labels, keys[i]));
        if (v && *v) {
            snprintf(buf, len, "%s", v);
            buf[strcspn(buf, ":")] = '\0'; /* instance is host:port */
            return buf;
        }
    }
    return NULL;
}

static int classify_alerts(const sig *s, fact *out)
{
    json_t *alerts = json_object_get(s->body, "alerts"), *a;
    size_t i;
    int n = 0;

    json_array_foreach(alerts, i, a) {
        json_t *labels = json_object_get(a, "labels");
        const char *status = json_string_value(json_object_get(a, "status"));
        const char *code = json_string_value(json_object_get(labels, "err_code"));
        const char *name = json_string_value(json_object_get(labels, "alertname"));
        char host[128];

        if (n == CLS_MAX_FACTS || (status && strcmp(status, "firing")))
            continue;
        if (!code)
            code = json_string_value(json_object_get(labels, "xid"));
        if (!code || !name || !strcasestr(name, "xid"))
            continue;
        fact_init(&out[n], FACT_XID, s);
        out[n].xid = atoi(code);
        if (out[n].xid <= 0 || !alert_host(labels, host, sizeof host))
            continue;
        str_copy(out[n].host, sizeof out[n].host, host);
        str_copy(out[n].gpu, sizeof out[n].gpu,
             json_string_value(json_object_get(labels, "gpu")));
        out[n].scenario = xid_scenario(out[n].xid);
        snprintf(out[n].excerpt, sizeof out[n].excerpt, "alert %s Xid %d", name,
                 out[n].xid);
        n++;
    }
    return n;
}

static int is_frame_line(const char *l)
{
    return l[0] == ' ' || l[0] == '\t';
}

/* Frames name the pass that was running: autograd's engine or a
 * .backward() call means backward; module __call__/forward means forward. */
static void frame_pass(struct traceback *tb, const char *l)
{
    if (strstr(l, "backward(") || strstr(l, "torch/autograd/") ||
        strstr(l, "_engine_run_backward") || strstr(l, "in backward"))
        tb->backward = 1;
    else if (strstr(l, "in forward") || strstr(l, "_call_impl") ||
             strstr(l, "model(") || strstr(l, "forward("))
        tb->forward = 1;
}

/* Forgets an assembly and remembers to delete its stored copy. */
static void tb_end(classifier *c, const char *key)
{
    free(strmap_del(c->tracebacks, key));
    strmap_put(c->tb_gone, key, (void *)1);
}

static int classify_app(classifier *c, const sig *s, fact *out)
{
    const char *line = s->line;
    char key[400], cap[1][64];
    int rank = s->rank;
    struct traceback *tb;

    /* torchrun prefixes each line with its rank: "[rank3]: ..." */
    if (line[0] == '[' && match(c, RE_RANK, line, cap, 1)) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
        rank = atoi(cap[0]);
        line += ov[1];
    }
    snprintf(key, sizeof key, "%s|%s|%s|%d", s->cluster,
             s->host ? s->host : "", s->job ? s->job : "", rank);
    tb = strmap_get(c->tracebacks, key);
    if (tb && s->ts - tb->started > TB_MAX_AGE) {
        tb_end(c, key);
        tb = NULL;
    }
    if (strncmp(line, "Traceback (most recent call last)", 33) == 0) {
        if (!tb) {
            tb = calloc(1, sizeof *tb);
            if (!tb)
                abort();
            strmap_put(c->tracebacks, key, tb);
        }
        memset(tb, 0, sizeof *tb);
        tb->started = s->ts;
        tb->dirty = 1;
        strmap_del(c->tb_gone, key);
        return 0;
    }
    if (tb && is_frame_line(line)) {
        int f = tb->forward, b = tb->backward;
        frame_pass(tb, line);
        if (f != tb->forward || b != tb->backward)
            tb->dirty = 1;
        return 0;
    }
    if (cls_parse_oom(c, line, out)) {
        str_copy(out->host, sizeof out->host, s->host);
        str_copy(out->job, sizeof out->job, s->job);
        out->rank = rank;
        if (tb)
            out->pass = tb->backward ? OOM_PASS_BACKWARD
                        : tb->forward ? OOM_PASS_FORWARD
                                      : OOM_PASS_UNKNOWN;
        out->scenario = oom_scenario(out);
    } else if (strstr(line, "CUDA error: ") || strstr(line, "NCCL error") ||
               strstr(line, "DistBackendError")) {
        fact_init(out, FACT_APP_ERROR, s);
        out->rank = rank;
        str_copy(out->excerpt, sizeof out->excerpt, line);
    } else if (strcasestr(line, "saving") && strcasestr(line, "checkpoint")) {
        fact_init(out, FACT_CHECKPOINT, s);
        str_copy(out->excerpt, sizeof out->excerpt, line);
    } else {
        out = NULL;
    }
    if (tb)
        tb_end(c, key); /* the exception line ends it */
    return out ? 1 : 0;
}

void cls_tb_changes(classifier *c, int64_t now, cls_tb_fn fn, void *arg)
{
    size_t pos = 0, nold = 0;
    const char *k;
    void *v;
    char **old = NULL;

    while (strmap_next(c->tracebacks, &pos, &k, &v)) {
        struct traceback *tb = v;
        if (now - tb->started > TB_MAX_AGE) {
            old = realloc(old, (nold + 1) * sizeof *old);
            if (!old || !(old[nold++] = strdup(k)))
                abort();
        } else if (tb->dirty) {
            char val[64];
            snprintf(val, sizeof val, "%lld %d %d", (long long)tb->started,
                     tb->forward, tb->backward);
            tb->dirty = 0;
            fn(arg, k, val);
        }
    }
    for (size_t i = 0; i < nold; i++) {
        tb_end(c, old[i]);
        free(old[i]);
    }
    free(old);
    pos = 0;
    while (strmap_next(c->tb_gone, &pos, &k, &v))
        fn(arg, k, NULL);
    strmap_free(c->tb_gone, NULL);
    c->tb_gone = strmap_new();
}

int cls_tb_restore(classifier *c, const char *key, const char *value)
{
    long long started;
    int f, b;
    struct traceback *tb;

    if (sscanf(value, "%lld %d %d", &started, &f, &b) != 3 || !strchr(key, '|'))
        return -1;
    tb = calloc(1, sizeof *tb);
    if (!tb)
        abort();
    tb->started = started;
    tb->forward = f != 0;
    tb->backward = b != 0;
    free(strmap_put(c->tracebacks, key, tb));
    return 0;
}

int cls_classify(classifier *c, const sig *s, fact *out)
{
    switch (s->source) {
    case SRC_KERNEL:
        if (!cls_parse_xid(c, s->line, out))
            return 0;
        str_copy(out->host, sizeof out->host, s->host);
        return out->host[0] ? 1 : 0;
    case SRC_APP:
        return classify_app(c, s, out);
    case SRC_SLURM:
        return classify_slurm(c, s, out);
    case SRC_ALERTMANAGER:
        return classify_alerts(s, out);
    case SRC_JOB:
        fact_init(out, FACT_JOB_STATE, s);
        return 1;
    case SRC_INVENTORY:
        fact_init(out, FACT_INVENTORY, s);
        return 1;
    default:
        /* ray, k8s and metric signals are parsed and validated; their
         * signatures arrive with the scenario catalog. */
        return 0;
    }
}
