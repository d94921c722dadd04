/* The classifier (rules/classify.h): a signal's text against the
 * catalog's signatures, the values a fact takes from it, and what a line
 * does to the multi-line assemblies (rules/assembly.h). */
#include "rules/classify.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/str.h"
#include "rules/alerthost.h"
#include "rules/assembly.h"
#include "rules/hostlist.h"
#include "rules/cudaerr.h"
#include "rules/lines.h"
#include "rules/playbooks.h"
#include "rules/prefilter.h"

/* The value extractors: numbers inside a message a signature already
 * recognised, and the rank prefix torchrun puts on every line. What a
 * message means lives in the rule files, not here. */
enum re_id {
    RE_TRIED,
    RE_CAP_NEW,
    RE_CAP_OLD,
    RE_FREE_NEW,
    RE_FREE_OLD,
    RE_RESV_NEW,
    RE_RESV_OLD,
    RE_ALLOC_OLD,
    RE_CACHED_OLD,
    RE__COUNT
};

#define SIZE "([0-9]+(?:\\.[0-9]+)?) ?([KMGT]i?B|bytes|B)"
static const char *const re_src[RE__COUNT] = {
    [RE_TRIED] = "Tried to allocate " SIZE,
    [RE_CAP_NEW] = "total capac(?:i)?ty of " SIZE,
    [RE_CAP_OLD] = SIZE " total capacity",
    [RE_FREE_NEW] = "of which " SIZE " is free",
    [RE_FREE_OLD] = SIZE " free",
    [RE_RESV_NEW] = "and " SIZE " is reserved\\s+by PyTorch but unallocated",
    [RE_RESV_OLD] = SIZE " reserved in total by PyTorch",
    [RE_ALLOC_OLD] = SIZE " already allocated",
    /* 1.0-1.3: the cached memory not allocated (CUDACachingAllocator) */
    [RE_CACHED_OLD] = SIZE " cached\\)",
};

/* The named groups a fact takes, in the pattern's name table order (the
 * order in which a later group of one name overwrites an earlier one). */
enum named_field {
    NF_HOST, NF_JOB, NF_GPU, NF_PCI, NF_XID, NF_RANK, NF_STEP, NF_PID,
    NF_DETAIL, NF_NODES, NF_NAMED
};

struct named {
    uint32_t grp;
    enum named_field field;
};

struct classifier {
    const pb_catalog *cat;
    pcre2_code *re[RE__COUNT];
    pcre2_match_data *md;
    pfl_ctx *pf;      /* NULL: the catalog has no prefilter */
    int no_prefilter; /* cls_prefilter(c, 0): every signature tried */
    assemblies *asb; /* the open multi-line assemblies */
    /* Signature i's named groups are named[i] .. named[i + 1]. */
    struct named **named;
    struct named *named_all;
    /* Per source, the signatures that read it, in catalog order. */
    size_t *by_src[SRC__COUNT];
    size_t nby_src[SRC__COUNT];
    /* Per signature, the lines PCRE2 gave up on (its match limit): they
     * count as no match, so they are counted and told. After the last
     * signature's, the total. */
    unsigned long *limit_hits;
    size_t nsigs;
};

unsigned long cls_limit_hits(const classifier *c)
{
    return c->limit_hits ? c->limit_hits[c->nsigs] : 0;
}

void cls_take_state(classifier *to, classifier *from)
{
    assemblies *a = to->asb;

    to->asb = from->asb;
    from->asb = a;
}

/* Fills by_src: the prefilter answers for all signatures, but a line is
 * tried only against its own source's, in catalog order, the fallbacks
 * after all the others. */
static int by_source(classifier *c)
{
    size_t n;
    const pb_signature *g = pb_signatures(c->cat, &n);

    c->limit_hits = xcalloc(n + 1, sizeof *c->limit_hits);
    c->nsigs = n;
    for (int s = 0; s < SRC__COUNT; s++) {
        if (!(c->by_src[s] = malloc((n ? n : 1) * sizeof *c->by_src[s])))
            return -1;
        for (int last = 0; last <= 1; last++)
            for (size_t i = 0; i < n; i++)
                if ((g[i].sources & (1u << s)) && !g[i].fallback == !last)
                    c->by_src[s][c->nby_src[s]++] = i;
    }
    return 0;
}

static int field_of(const char *name)
{
    static const char *const names[] = {"host", "job",  "gpu",    "pci",
                                        "xid",  "rank", "step",   "pid",
                                        "detail", "nodes",  "named"};

    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i]))
            return (int)i;
    return -1;
}

/* Reads every signature's name table once: a match then copies its
 * fields without asking PCRE2 for the table and comparing names. */
static int named_fields(classifier *c)
{
    size_t n, total = 0, at = 0;
    const pb_signature *g = pb_signatures(c->cat, &n);

    for (size_t i = 0; i < n; i++) {
        uint32_t count = 0;
        if (g[i].re)
            pcre2_pattern_info(g[i].re, PCRE2_INFO_NAMECOUNT, &count);
        total += count;
    }
    if (!(c->named = malloc((n + 1) * sizeof *c->named)) ||
        !(c->named_all = malloc((total ? total : 1) * sizeof *c->named_all)))
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint32_t count = 0, size = 0;
        PCRE2_SPTR table = NULL;

        c->named[i] = c->named_all + at;
        if (!g[i].re)
            continue;
        pcre2_pattern_info(g[i].re, PCRE2_INFO_NAMECOUNT, &count);
        pcre2_pattern_info(g[i].re, PCRE2_INFO_NAMEENTRYSIZE, &size);
        pcre2_pattern_info(g[i].re, PCRE2_INFO_NAMETABLE, &table);
        for (uint32_t k = 0; k < count; k++) {
            const unsigned char *e = table + k * size;
            int fld = field_of((const char *)(e + 2));
            if (fld >= 0)
                c->named_all[at++] =
                    (struct named){(uint32_t)((e[0] << 8) | e[1]),
                                   (enum named_field)fld};
        }
    }
    c->named[n] = c->named_all + at;
    return 0;
}

classifier *cls_new(const pb_catalog *cat, cs_err *err)
{
    classifier *c = calloc(1, sizeof *c);
    int ec;
    PCRE2_SIZE eo;

    if (!c) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    c->cat = cat;
    for (int i = 0; i < RE__COUNT; i++) {
        c->re[i] = pcre2_compile((PCRE2_SPTR)re_src[i], PCRE2_ZERO_TERMINATED,
                                 0, &ec, &eo, NULL);
        if (!c->re[i]) {
            PCRE2_UCHAR msg[128];
            pcre2_get_error_message(ec, msg, sizeof msg);
            cs_err_set(err, "extractor %d: %s at offset %zu", i, msg, eo);
            cls_free(c);
            return NULL;
        }
        pcre2_jit_compile(c->re[i], PCRE2_JIT_COMPLETE);
    }
    c->md = pcre2_match_data_create(32, NULL);
    if (pb_prefilter(cat) && !(c->pf = pfl_ctx_new(pb_prefilter(cat), err))) {
        cls_free(c);
        return NULL;
    }
    c->asb = asb_new();
    if (by_source(c) || named_fields(c)) {
        cs_err_set(err, "out of memory");
        cls_free(c);
        return NULL;
    }
    return c;
}

void cls_prefilter(classifier *c, int on)
{
    c->no_prefilter = !on;
}

void cls_free(classifier *c)
{
    if (!c)
        return;
    for (int i = 0; i < RE__COUNT; i++)
        pcre2_code_free(c->re[i]);
    pcre2_match_data_free(c->md);
    pfl_ctx_free(c->pf);
    asb_free(c->asb);
    free(c->named);
    free(c->named_all);
    for (int s = 0; s < SRC__COUNT; s++)
        free(c->by_src[s]);
    free(c->limit_hits);
    free(c);
}

/* Runs one extractor; copies capture groups 1..n into caps. */
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
    f->step = f->pid = -1;
    if (s) {
        str_copy(f->host, sizeof f->host, s->host);
        str_copy(f->job, sizeof f->job, s->job);
    }
}

/* Copies the named fields of the last match into the fact. nodes (a
 * hostlist) goes to nodes_out for the caller to expand. The groups were
 * looked up by name once (named_fields). */
static void take_fields(const classifier *c, const pb_signature *g,
                        const char *text, fact *f, char *nodes_out,
                        size_t nodes_len)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
    size_t n, i = (size_t)(g - pb_signatures(c->cat, &n));

    for (const struct named *e = c->named[i]; e < c->named[i + 1]; e++) {
        PCRE2_SIZE a = ov[2 * e->grp], b = ov[2 * e->grp + 1];
        char v[256];
        size_t l;

        if (a == PCRE2_UNSET)
            continue;
        l = b - a < sizeof v - 1 ? b - a : sizeof v - 1;
        memcpy(v, text + a, l);
        v[l] = '\0';
        switch (e->field) {
        case NF_HOST:
            str_copy(f->host, sizeof f->host, v);
            break;
        case NF_JOB:
            str_copy(f->job, sizeof f->job, v);
            break;
        case NF_GPU:
            str_copy(f->gpu, sizeof f->gpu, v);
            break;
        case NF_PCI:
            str_copy(f->pci, sizeof f->pci, v);
            break;
        case NF_XID:
            f->xid = atoi(v);
            break;
        case NF_RANK:
            f->rank = atoi(v);
            break;
        case NF_STEP:
            f->step = atol(v);
            break;
        case NF_PID:
            f->pid = atol(v);
            break;
        case NF_DETAIL:
            str_copy(f->detail, sizeof f->detail, v);
            break;
        case NF_NAMED:
            str_copy(f->named, sizeof f->named, v);
            break;
        case NF_NODES:
            if (nodes_out)
                str_copy(nodes_out, nodes_len, v);
            break;
        }
    }
}

/* The first signature of this source that matches text; NULL when none.
 * only >= 0 restricts the search to one fact kind. */

/* PCRE2 gave up on text (a pattern that backtracks catastrophically, a
 * huge line): told at the 1st, 2nd, 4th, 8th... time for the signature. */
static void limit_hit(const classifier *c, size_t i, int rc, size_t len)
{
    size_t nsigs;
    const pb_signature *g = &pb_signatures(c->cat, &nsigs)[i];
    unsigned long n = ++c->limit_hits[i];
    PCRE2_UCHAR why[120];

    c->limit_hits[c->nsigs]++;
    if (n & (n - 1))
        return;
    pcre2_get_error_message(rc, why, sizeof why);
    log_warn("classify", "signature %s (%s:%d): PCRE2 gave up on a %zu-byte "
             "line (%s); it counts as no match (%lu time%s so far)", g->id,
             g->file, g->line, len, (char *)why, n, n == 1 ? "" : "s");
}

static int gave_up(int rc)
{
    return rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
           rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT;
}

/* The prefilter's answer for a line of a source: which signatures may
 * match (NULL: try them all). */
static const unsigned char *scan(const classifier *c, int source,
                                 const char *text, size_t len)
{
    return c->pf && !c->no_prefilter ? pfl_scan(c->pf, source, text, len)
                                     : NULL;
}

static int try_one(const classifier *c, const pb_signature *g, size_t i,
                   const char *text, size_t len)
{
    int rc = pcre2_match(g[i].re, (PCRE2_SPTR)text, len, 0, 0, c->md, NULL);

    if (gave_up(rc))
        limit_hit(c, i, rc, len);
    return rc >= 0;
}

/* The first signature of list's source that matches text, among those
 * the prefilter's answer `may` leaves (NULL: all). */
static const pb_signature *try_list(const classifier *c, int list,
                                    const unsigned char *may,
                                    const char *text, size_t len, int only)
{
    size_t n, nh;
    const pb_signature *g = pb_signatures(c->cat, &n);
    const unsigned *hits = may ? pfl_hits(c->pf, &nh) : NULL;

    /* The scan's few candidates, in by_src's order: a line most patterns
     * cannot match costs them, not the catalog's size. */
    for (int last = 0; hits && last <= 1; last++)
        for (size_t k = 0; k < nh; k++) {
            size_t i = hits[k];
            if (!g[i].fallback != !last || !(g[i].sources & (1u << list)) ||
                (only >= 0 && g[i].kind != only))
                continue;
            if (try_one(c, g, i, text, len))
                return &g[i];
        }
    for (size_t k = 0; !hits && k < c->nby_src[list]; k++) {
        size_t i = c->by_src[list][k];
        if ((may && !may[i]) || (only >= 0 && g[i].kind != only))
            continue;
        if (try_one(c, g, i, text, len))
            return &g[i];
    }
    return NULL;
}

static const pb_signature *first_match(const classifier *c, int source,
                                       const char *text, int only)
{
    size_t len = strlen(text);

    if (source < 0 || source >= SRC__COUNT)
        return NULL;
    return try_list(c, source, scan(c, source, text, len), text, len, only);
}

/* Ray's and SLURM's lines carry a job's own text too (a worker's
 * traceback, srun's stderr): what their own signatures do not take is
 * read as an app line (SCENARIOS.md, "Reading the catalog"). */
static int reads_app(int source)
{
    return source == SRC_RAY || source == SRC_SLURM;
}

/* A line of a text source through its signatures: its own on the whole
 * line, then, for Ray's and SLURM's, app's on `text` (the line without
 * its launcher tags). One prefilter scan answers for both while no tag
 * was cut off: the source's database holds the app patterns too
 * (catalog.c). *matched gets the text the signature matched. */
static const pb_signature *match_line(const classifier *c, int source,
                                      const char *line, const char *text,
                                      const char **matched)
{
    const unsigned char *may;
    const pb_signature *g;
    size_t len;

    *matched = text;
    if (!reads_app(source))
        return first_match(c, source, text, -1);
    len = strlen(line);
    may = scan(c, source, line, len);
    if ((g = try_list(c, source, may, line, len, -1))) {
        *matched = line;
        return g;
    }
    return text == line ? try_list(c, SRC_APP, may, text, len, -1)
                        : first_match(c, SRC_APP, text, -1);
}

int cls_edge_keep(const classifier *c, int source, const char *line)
{
    const char *t = line, *matched;
    int rank;

    if (source == SRC_APP || reads_app(source))
        t += ln_launcher_prefix(t, &rank);
    if (match_line(c, source, line, reads_app(source) ? t : line, &matched))
        return 1;
    if (source == SRC_KERNEL)
        return ln_kmsg_part(line) != NULL;
    if (source != SRC_APP && !reads_app(source))
        return 0;
    ce_error ce;
    return ln_is_frame(t) || ln_trace_head(t) || ln_kube_text(t, NULL, 0) ||
           ce_find(t, &ce);
}

const char *cls_text(const sig *s, char *buf, size_t len)
{
    if (s->source == SRC_K8S) {
        json_t *ev = s->body;
        const char *reason = json_string_value(json_object_get(ev, "reason"));
        const char *msg = json_string_value(json_object_get(ev, "message"));

        if (!msg) /* events.k8s.io/v1 names the text "note" */
            msg = json_string_value(json_object_get(ev, "note"));
        snprintf(buf, len, "%s: %s", reason ? reason : "", msg ? msg : "");
        return buf;
    }
    return s->line;
}

/* A fact from a signature that matched: kind, scenario, fields. */
static void from_signature(const classifier *c, const pb_signature *g,
                           const sig *s, const char *text, fact *f,
                           char *nodes, size_t nodes_len)
{
    fact_init(f, (fact_kind)g->kind, s);
    take_fields(c, g, text, f, nodes, nodes_len);
    f->sig_id = g->id;
    f->scenario = g->scenario;
    if (f->kind == FACT_XID && !f->scenario)
        f->scenario = pb_xid_scenario(c->cat, f->xid);
    str_copy(f->excerpt, sizeof f->excerpt, text);
}

int cls_parse_xid(classifier *c, const char *line, fact *f)
{
    const pb_signature *g = first_match(c, SRC_KERNEL, line, FACT_XID);

    if (!g)
        return 0;
    from_signature(c, g, NULL, line, f, NULL, 0);
    return 1;
}

static double size_of(const classifier *c, enum re_id id, const char *line)
{
    char cap[2][64];
    return match(c, id, line, cap, 2) ? ln_to_bytes(cap[0], cap[1]) : -1;
}

/* The sizes a CUDA OOM message gives, across PyTorch generations. */
static void oom_sizes(const classifier *c, const char *line, fact *f)
{
    double resv, alloc;

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
        else
            f->reserved_unalloc = size_of(c, RE_CACHED_OLD, line);
    }
}

int cls_parse_oom(const classifier *c, const char *line, fact *f)
{
    /* Every PyTorch generation keeps this phrase; the exception class and
     * "capacity" (misspelt in 2.1) do not stay fixed. */
    if (!strstr(line, "CUDA out of memory"))
        return 0;
    fact_init(f, FACT_CUDA_OOM, NULL);
    oom_sizes(c, line, f);
    str_copy(f->excerpt, sizeof f->excerpt, strstr(line, "CUDA out of memory"));
    return 1;
}

/* A CUDA error code is the most specific thing a job's line can say: when
 * the line reports one (in any of its forms, rules/cudaerr.h) and a
 * signature reads that code, it decides, before the signatures that read
 * the line's wrapper (XLA's INTERNAL, a framework's generic failure). */
static const pb_signature *cuda_error(const classifier *c, const sig *s,
                                      const char *text, char *buf, size_t len)
{
    if (s->source != SRC_APP && !reads_app(s->source))
        return NULL;
    if (!ce_canon(text, buf, len))
        return NULL;
    return first_match(c, SRC_APP, buf, -1);
}

/* node-problem-detector's kernel monitor reports kernel lines as events
 * (Ext4Error, KernelOops, TaskHung: "Reason: <the kernel's line>"): the
 * message of an event no k8s signature took, read as the node's kernel
 * log. */
static const pb_signature *kernel_in_event(const classifier *c,
                                           const char *ev, const char **text)
{
    const char *m = strstr(ev, ": ");
    const pb_signature *g = m ? first_match(c, SRC_KERNEL, m + 2, -1) : NULL;

    if (g)
        *text = m + 2;
    return g;
}

/* One signal's text through its source's signatures; *gp gets the one
 * that matched. A (?<nodes>) hostlist makes one fact per node. A Ray or
 * SLURM line its own source's signatures do not take is tried as the
 * job's text: app's signatures on `text`, its launcher tags stripped; an
 * event kubectl printed in a job's log, the k8s signatures. */
static int classify_sig(classifier *c, const sig *s, const char *text,
                        fact *out, const pb_signature **gp)
{
    char nodes[512] = "", names[CLS_MAX_FACTS][128], ev[1024];
    const char *line = text, *kube = NULL;
    const pb_signature *g = cuda_error(c, s, text, ev, sizeof ev);
    int k, canon = g != NULL;

    if (canon)
        text = ev;
    else
        g = match_line(c, s->source, s->line, text, &text);
    if (!g && s->source == SRC_K8S) {
        kube = text;
    } else if (!g && ln_kube_text(text, ev, sizeof ev)) {
        if ((g = first_match(c, SRC_K8S, ev, -1)))
            text = ev;
        else
            kube = ev;
    }
    if (!g && kube)
        g = kernel_in_event(c, kube, &text);
    if (!(*gp = g))
        return 0;
    from_signature(c, g, s, text, out, nodes, sizeof nodes);
    if (canon) /* the line as printed, not the form it was read in */
        str_copy(out->excerpt, sizeof out->excerpt, line);
    if (out->kind == FACT_CUDA_OOM)
        oom_sizes(c, line, out);
    if (!nodes[0])
        return 1;
    k = hostlist_expand(nodes, names, CLS_MAX_FACTS);
    for (int i = 1; i < k; i++)
        out[i] = out[0];
    for (int i = 0; i < k; i++)
        str_copy(out[i].host, sizeof out[i].host, names[i]);
    return k > 0 ? k : 0;
}

static int classify_text(classifier *c, const sig *s, const char *text,
                         fact *out)
{
    const pb_signature *g;

    return classify_sig(c, s, text, out, &g);
}

/* Facts about a job alone, which an alert may give without a host:
 * kube-state-metrics' Job alerts name the Job (`job_name`), not a node. */
static int job_level(fact_kind k)
{
    return k == FACT_APP_ERROR || k == FACT_EVENT || k == FACT_JOB_FAULT;
}

/* One alert's labels: the alertname picks the signature, the labels give
 * the fields (dcgm-exporter: Hostname, gpu, UUID, err_code, modelName). */
static int classify_alert(classifier *c, const sig *s, json_t *labels,
                          fact *f)
{
    const char *name = json_string_value(json_object_get(labels, "alertname"));
    const char *code = json_string_value(json_object_get(labels, "err_code"));
    const char *workload;
    const pb_signature *g;
    char host[128];

    if (!name || !(g = first_match(c, SRC_ALERTMANAGER, name, -1)))
        return 0;
    if (!code)
        code = json_string_value(json_object_get(labels, "xid"));
    from_signature(c, g, s, name, f, NULL, 0);
    /* `job_name` (kube-state-metrics) is the workload; `job` is the
     * Prometheus scrape job, never the workload. */
    if ((workload = json_string_value(json_object_get(labels, "job_name"))))
        str_copy(f->job, sizeof f->job, workload);
    str_copy(f->host, sizeof f->host,
             al_host(labels, host, sizeof host) ? host : "");
    if (!f->host[0] && (!f->job[0] || !job_level(f->kind)))
        return 0;
    str_copy(f->gpu, sizeof f->gpu,
             json_string_value(json_object_get(labels, "gpu")));
    if (f->kind == FACT_XID) {
        f->xid = code ? atoi(code) : 0;
        if (f->xid <= 0)
            return 0;
        if (!g->scenario)
            f->scenario = pb_xid_scenario(c->cat, f->xid);
        snprintf(f->excerpt, sizeof f->excerpt, "alert %.*s Xid %d",
                 str_utf8_max(name, sizeof f->excerpt - 32), name, f->xid);
    } else {
        snprintf(f->excerpt, sizeof f->excerpt, "alert %s", name);
        str_utf8_trim(f->excerpt);
    }
    return 1;
}

static int classify_alerts(classifier *c, const sig *s, fact *out)
{
    json_t *alerts = json_object_get(s->body, "alerts"), *a;
    size_t i;
    int n = 0;

    json_array_foreach(alerts, i, a) {
        const char *status = json_string_value(json_object_get(a, "status"));
        int resolved = status && !strcmp(status, "resolved");
        if (n == CLS_MAX_FACTS || (status && strcmp(status, "firing") && !resolved))
            continue;
        if (!classify_alert(c, s, json_object_get(a, "labels"), &out[n]))
            continue;
        /* An Xid alert resolves when its counter stops rising, not when
         * the GPU is fixed: that is no recovery. */
        if (resolved && out[n].kind == FACT_XID)
            continue;
        if (resolved) {
            /* the fault it named ended: the same fact, as a recovery */
            size_t len = strlen(out[n].excerpt);
            out[n].kind = FACT_RECOVERY;
            snprintf(out[n].excerpt + len, sizeof out[n].excerpt - len,
                     " resolved");
            str_utf8_trim(out[n].excerpt);
        }
        n++;
    }
    return n;
}

int cls_classify_labels(classifier *c, const char *labels_json, fact *out)
{
    json_t *labels = json_loads(labels_json, 0, NULL);
    int n = labels ? classify_alert(c, NULL, labels, out) : 0;

    json_decref(labels);
    return n;
}

/* An app line without its launchers' tags ("[rank3]: ...", "(pid=9) ..."); *rank
 * gets the prefix's rank, else the signal's. */
static const char *app_line(const sig *s, int *rank)
{
    *rank = s->rank;
    return s->line + ln_launcher_prefix(s->line, rank);
}

/* app_line, and the line's assembly key. */
static const char *app_key(const sig *s, char *key, size_t len, int *rank)
{
    const char *line = app_line(s, rank);

    asb_key_app(s->cluster, s->host, s->job, *rank, key, len);
    return line;
}

/* A report's head opens an assembly instead of giving its fact now. */
static void report_open(classifier *c, const char *key, const sig *s,
                        const fact *f)
{
    struct traceback *tb = asb_open(c->asb, key, s->host, s->ts);

    /* an OOM's pass, from the traceback it ended, until its report ends */
    tb->backward = f->kind == FACT_CUDA_OOM && f->pass == OOM_PASS_BACKWARD;
    tb->forward = f->kind == FACT_CUDA_OOM && f->pass == OOM_PASS_FORWARD;
    tb->kind = TB_REPORT;
    tb->last = s->ts;
    /* a signal read without one gets its object; out of memory is not
     * recoverable here, as everywhere in the engine */
    if (!(tb->head = sig_json(s)))
        abort();
    asb_set_reports(c->asb, asb_reports(c->asb) + 1);
}

static int classify_app(classifier *c, const sig *s, fact *out)
{
    char key[TB_KEY_LEN];
    int rank;
    const char *line = app_line(s, &rank);
    const pb_signature *g;
    /* told: a report just given, whose traceback this line may end */
    struct traceback *tb = NULL, *told = NULL;
    int n;

    /* Most lines arrive with no assembly open anywhere: no key to build. */
    if (asb_may_be_open(c->asb, s->host) || ln_trace_head(line) ||
        ln_loose_frame(line)) {
        asb_key_app(s->cluster, s->host, s->job, rank, key, sizeof key);
        tb = asb_get(c->asb, key);
    } else {
        key[0] = '\0';
    }

    if (tb && tb->kind == TB_REPORT && asb_report_continues(tb, line, s->ts)) {
        /* the head itself again (a redelivery) adds nothing */
        const char *head = json_string_value(json_object_get(tb->head, "line"));
        if (!head || strcmp(s->line, head))
            asb_report_add(tb, line, s->ts);
        return 0;
    }
    if (tb && tb->kind == TB_REPORTED) {
        if (ln_is_frame(line) && *ln_report_piece(line) &&
            strstr(tb->text, ln_report_piece(line)))
            return 0; /* a line of a report already given */
        told = s->ts - tb->last <= REPORT_QUIET ? tb : NULL;
        tb = NULL; /* not an assembly that lines continue */
    }
    if (tb && tb->kind != TB_TRACE)
        tb = NULL;
    if (tb && s->ts - tb->started > TB_MAX_AGE) {
        asb_end(c->asb, key);
        tb = NULL;
    }
    if (ln_trace_head(line)) {
        asb_open(c->asb, key, s->host, s->ts);
        return 0;
    }
    if (!tb && ln_loose_frame(line))
        tb = asb_open(c->asb, key, s->host, s->ts);
    if (tb && ln_is_frame(line) && !ln_exception_line(line)) {
        int f = tb->forward, b = tb->backward;
        char raised[512];
        asb_frame_pass(tb, line);
        if (f != tb->forward || b != tb->backward)
            tb->dirty = 1;
        /* the raise statement stands for the exception line it prints,
         * which a paste or a crash may have lost (the same fact twice is
         * one incident) */
        if (ln_raise_text(line, raised, sizeof raised))
            return classify_text(c, s, raised, out);
        return 0;
    }
    if ((n = classify_sig(c, s, line, out, &g)) > 0) {
        for (int i = 0; i < n; i++) /* a hostlist gives a fact a node */
            out[i].rank = rank;
        if (out->kind == FACT_CUDA_OOM) {
            const struct traceback *p = tb ? tb : told;
            if (p)
                out->pass = p->backward ? OOM_PASS_BACKWARD
                            : p->forward ? OOM_PASS_FORWARD
                                         : OOM_PASS_UNKNOWN;
            if (ln_backward_op(line)) /* TensorFlow's op on the line */
                out->pass = OOM_PASS_BACKWARD;
            if (!out->scenario)
                out->scenario = fact_oom_scenario(out);
        }
        if (g->report) {
            if (!key[0])
                asb_key_app(s->cluster, s->host, s->job, rank, key, sizeof key);
            report_open(c, key, s, out);
            return 0;
        }
    }
    if (tb)
        asb_end(c->asb, key); /* the exception line ends it */
    return n > 0 ? n : 0;
}

/* The fact a finished report gives: its head's, with the lines it read as
 * the detail. Leaves what it read behind (TB_REPORTED). */
static int report_fact(classifier *c, struct traceback *tb, sig *head,
                       fact *out)
{
    cs_err err;
    char key[TB_KEY_LEN];
    int rank, n = 0;
    const char *line;

    if (sig_from_json(head, tb->head, &err) == 0) {
        if (head->line) {
            line = app_key(head, key, sizeof key, &rank);
            if ((n = classify_text(c, head, line, out)) > 0) {
                out->rank = rank;
                if (tb->text[0])
                    str_copy(out->detail, sizeof out->detail, tb->text);
                if (out->kind == FACT_CUDA_OOM) { /* TensorFlow's op names */
                    out->pass = tb->backward || ln_backward_op(tb->text)
                                    ? OOM_PASS_BACKWARD
                                : tb->forward ? OOM_PASS_FORWARD
                                              : OOM_PASS_UNKNOWN;
                    if (!out->scenario)
                        out->scenario = fact_oom_scenario(out);
                }
                n = 1;
            }
        }
        if (n <= 0)
            sig_free(head);
    }
    json_decref(tb->head);
    tb->head = NULL;
    tb->kind = TB_REPORTED;
    tb->started = tb->last;
    tb->dirty = 1;
    return n > 0;
}

/* Assembly keys start with "CLUSTER|". */
static int same_cluster(const char *key, const char *cluster)
{
    size_t n = strlen(cluster);
    return strncmp(key, cluster, n) == 0 && key[n] == '|';
}

int cls_report_next(classifier *c, const sig *s, const char *cluster,
                    int64_t now, sig *head, fact *out)
{
    const char *only = s ? s->cluster : cluster;
    char key[TB_KEY_LEN] = "";
    const char *line = NULL, *k;
    size_t pos = 0;
    struct traceback *tb;
    int rank, open = 0;

    if (!asb_reports(c->asb))
        return 0;
    if (s && (s->source == SRC_APP || reads_app(s->source)) && s->line)
        line = app_key(s, key, sizeof key, &rank);
    while (asb_next(c->asb, &pos, &k, &tb)) {
        if (tb->kind != TB_REPORT)
            continue;
        /* Clusters keep their own event time: another cluster's signal
         * says nothing about how quiet this report has been. */
        if (only && !same_cluster(k, only)) {
            open++;
            continue;
        }
        /* A line older than the report (redelivered after a restart)
         * neither continues nor ends it. */
        if (now - tb->last <= REPORT_QUIET &&
            (!line || strcmp(k, key) || now < tb->started ||
             asb_report_continues(tb, line, now))) {
            open++;
            continue;
        }
        if (report_fact(c, tb, head, out))
            return 1;
    }
    asb_set_reports(c->asb, open);
    return 0;
}

/* A kernel line alone first; when it says nothing, it may continue (or
 * begin) a driver message the kernel wrapped over several lines. */
static int classify_kernel(classifier *c, const sig *s, fact *out)
{
    const char *nv = ln_kmsg_part(s->line);
    /* an Xid report no signature takes leaves an open message alone */
    int aside = !nv && strstr(s->line, "NVRM: Xid (") != NULL;
    struct traceback *tb = NULL;
    char key[TB_KEY_LEN];
    int n, open;

    if (!s->host) /* no fact without a host: nothing to assemble for */
        return classify_text(c, s, s->line, out);
    /* the key is needed only where the host may have a message open, or
     * when this line opens one */
    open = asb_may_be_open(c->asb, s->host);
    if (open || nv)
        asb_key_kernel(s->cluster, s->host, key, sizeof key);
    if (open)
        tb = asb_get(c->asb, key);
    if (tb && (s->ts - tb->started > KMSG_MAX_AGE || s->ts < tb->started)) {
        asb_end(c->asb, key);
        tb = NULL;
    }
    if ((n = classify_text(c, s, s->line, out)) || !nv) {
        if (tb && (n || !aside))
            asb_end(c->asb, key);
        return n;
    }
    if (tb) {
        size_t len = strlen(tb->text);
        snprintf(tb->text + len, sizeof tb->text - len, " %s", nv);
        tb->lines++;
        tb->dirty = 1;
        n = classify_text(c, s, tb->text, out);
        if (n || ln_ends_sentence(nv) || tb->lines >= KMSG_MAX_LINES)
            asb_end(c->asb, key);
        return n;
    }
    if (ln_ends_sentence(nv))
        return 0;
    tb = asb_open(c->asb, key, s->host, s->ts);
    tb->kind = TB_KMSG;
    tb->lines = 1;
    snprintf(tb->text, sizeof tb->text, "NVRM: %s", nv);
    return 0;
}

int cls_classify(classifier *c, const sig *s, fact *out)
{
    char buf[2048];
    int n;

    switch (s->source) {
    case SRC_KERNEL:
        n = classify_kernel(c, s, out);
        return n == 1 && !out->host[0] ? 0 : n; /* a kernel fact needs a host */
    case SRC_APP:
        return classify_app(c, s, out);
    case SRC_RAY:
    case SRC_SLURM:
        return s->line ? classify_app(c, s, out) : 0;
    case SRC_K8S:
        return classify_text(c, s, cls_text(s, buf, sizeof buf), out);
    case SRC_ALERTMANAGER:
        return classify_alerts(c, s, out);
    case SRC_JOB:
        fact_init(out, FACT_JOB_STATE, s);
        return 1;
    case SRC_INVENTORY:
        fact_init(out, FACT_INVENTORY, s);
        return 1;
    default:
        /* metrics are read as rates over windows by the engine */
        return 0;
    }
}

void cls_tb_changes(classifier *c, cls_clock_fn now_of, cls_tb_fn fn,
                    void *arg)
{
    asb_changes(c->asb, now_of, fn, arg);
}

int cls_tb_restore(classifier *c, const char *key, const char *value)
{
    return asb_restore(c->asb, key, value);
}
