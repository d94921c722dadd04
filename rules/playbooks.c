#include "rules/playbooks.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/hash.h"
#include "core/signal.h"
#include "rules/fact.h"
#include "rules/prefilter.h"
#include "rules/rules_embedded.h"

typedef struct xid_map {
    int code;
    const char *scenario;
    char where[160]; /* FILE:LINE:COL, for the checks after loading */
} xid_map;

struct pb_catalog {
    pb_scenario *v;
    size_t n, cap;
    pb_signature *sigs;
    size_t nsigs, capsigs;
    xid_map *xids;
    size_t nxids;
    int tracked[16];
    int ntracked;
    char *same_gpu, *same_job;
    char tracked_where[160];
    pb_playbook *plays;
    size_t nplays, capplays;
    pb_correlation *corrs;
    size_t ncorrs, capcorrs;
    pfl *pf; /* the signatures' prefilter, built by pb_catalog_link */
};

/* One file being read: its document and where problems go. */
typedef struct reader {
    const char *name;
    yaml_document_t doc;
    pb_error_fn fn;
    void *arg;
    int errors;
} reader;

static void problem(reader *r, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void problem(reader *r, const yaml_node_t *n, const char *fmt, ...)
{
    char where[512], msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(where, sizeof where, "%s:%zu:%zu", r->name,
             n ? n->start_mark.line + 1 : 1, n ? n->start_mark.column + 1 : 1);
    r->errors++;
    if (r->fn)
        r->fn(r->arg, where, msg);
}

static void free_playbook(pb_playbook *p);

static void free_correlation(pb_correlation *k)
{
    free((char *)k->scenario);
    for (int i = 0; i < k->nevents; i++)
        free((char *)k->events[i]);
}

pb_catalog *pb_catalog_new(void)
{
    pb_catalog *c = calloc(1, sizeof *c);
    if (!c)
        abort();
    return c;
}

static void free_scenario(pb_scenario *s)
{
    for (int i = 0; i < s->nsteps; i++) {
        free((char *)s->steps[i].playbook);
        free((char *)s->steps[i].category);
        json_decref(s->steps[i].params);
    }
    free((pb_step *)s->steps);
    free((char *)s->id);
    free((char *)s->what);
    free((char *)s->todo);
}

static void free_signature(pb_signature *g)
{
    for (int i = 0; i < g->nexamples; i++) {
        free((char *)g->examples[i].text);
        free((char *)g->examples[i].scenario);
        free((char *)g->examples[i].fact);
        free((char *)g->examples[i].detail);
    }
    free(g->examples);
    pcre2_code_free(g->re);
    free((char *)g->id);
    free((char *)g->fact);
    free((char *)g->scenario);
    free((char *)g->match);
    free((char *)g->file);
}

void pb_catalog_free(pb_catalog *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        free_scenario(&c->v[i]);
    for (size_t i = 0; i < c->nsigs; i++)
        free_signature(&c->sigs[i]);
    for (size_t i = 0; i < c->nxids; i++)
        free((char *)c->xids[i].scenario);
    for (size_t i = 0; i < c->ncorrs; i++)
        free_correlation(&c->corrs[i]);
    free(c->corrs);
    pfl_free(c->pf);
    free(c->v);
    free(c->sigs);
    free(c->xids);
    free(c->same_gpu);
    free(c->same_job);
    for (size_t i = 0; i < c->nplays; i++)
        free_playbook(&c->plays[i]);
    free(c->plays);
    free(c);
}

int pb_xid_tracked(const pb_catalog *c, int code, const char **same_gpu,
                   const char **same_job)
{
    for (int i = 0; i < c->ntracked; i++)
        if (c->tracked[i] == code) {
            *same_gpu = c->same_gpu;
            *same_job = c->same_job;
            return 1;
        }
    return 0;
}

const pb_signature *pb_signatures(const pb_catalog *c, size_t *n)
{
    *n = c->nsigs;
    return c->sigs;
}

const pb_correlation *pb_correlations(const pb_catalog *c, size_t *n)
{
    *n = c->ncorrs;
    return c->corrs;
}

static const char *const corr_kinds[] = {"threshold", "sequence", "group"};
static const char *const corr_bys[] = {"host", "job"};

const char *pb_corr_kind_name(pb_corr_kind k)
{
    return (unsigned)k < 3 ? corr_kinds[k] : "?";
}

const pb_signature *pb_signature_find(const pb_catalog *c, const char *id)
{
    for (size_t i = 0; id && i < c->nsigs; i++)
        if (!strcmp(c->sigs[i].id, id))
            return &c->sigs[i];
    return NULL;
}

const char *pb_xid_scenario(const pb_catalog *c, int code)
{
    for (size_t i = 0; i < c->nxids; i++)
        if (c->xids[i].code == code)
            return pb_find(c, c->xids[i].scenario) ? c->xids[i].scenario : NULL;
    return NULL;
}

size_t pb_catalog_count(const pb_catalog *c)
{
    return c->n;
}

const pb_scenario *pb_find(const pb_catalog *c, const char *scenario)
{
    if (!scenario)
        return NULL;
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->v[i].id, scenario) == 0)
            return &c->v[i];
    return NULL;
}

const char *pb_approval_name(pb_approval a)
{
    return a == APPR_AUTO ? "auto" : a == APPR_HITL ? "hitl" : "canary";
}

/* ---- reading ---------------------------------------------------------- */

static yaml_node_t *node_or(yaml_node_t *a, yaml_node_t *b)
{
    return a ? a : b;
}

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
                                            : NULL;
}

static yaml_node_t *get(reader *r, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        const char *k = scalar(yaml_document_get_node(&r->doc, p->key));
        if (k && !strcmp(k, key))
            return yaml_document_get_node(&r->doc, p->value);
    }
    return NULL;
}

/* Reports keys of map not in allowed (NULL-terminated). */
static void only_keys(reader *r, yaml_node_t *map, const char *what,
                      const char *const *allowed)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&r->doc, p->key);
        const char *name = scalar(k);
        int ok = 0;
        for (int i = 0; name && allowed[i]; i++)
            ok |= !strcmp(name, allowed[i]);
        if (!ok)
            problem(r, k, "unknown key '%s' in %s", name ? name : "?", what);
    }
}

static int pick(const char *v, const char *const *names, int n)
{
    for (int i = 0; v && i < n; i++)
        if (!strcmp(v, names[i]))
            return i;
    return -1;
}

static const char *const approvals[] = {"auto", "hitl", "canary"};
static const char *const targets[] = {"node", "job", "each_job", "none",
                                     "each_affected", "rack", "team"};
static const char *const fixes[] = {
    "none",    "exclude_node", "batch",       "activation",
    "alloc_conf", "ticket",    "workers",     "shm",
    "tolerations", "socket_ifname", "worker_memory", "same_config",
    "input_bound", "checkpoint_memory", "gcs_ft", "peak_hours", "idle_cost", "pipeline"};
static const char *const whens[] = {"always", "reserved", "elastic",
                                    "repeated", "gcs_ft", "no_gcs_ft",
                                    "thermal", "not_thermal"};

/* Playbook ids: "family.name", or one word for the generic ones
 * (notify, recommend). */
static int playbook_id_ok(const char *v)
{
    if (!v || !*v || *v == '.')
        return 0;
    for (const char *p = v; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || *p == '_' || *p == '.' ||
              (*p >= '0' && *p <= '9')))
            return 0;
    return v[strlen(v) - 1] != '.';
}
#define N(a) ((int)(sizeof a / sizeof *a))

/* A scalar as JSON: true/false and plain numbers as themselves, any
 * other text as a string. */
static json_t *json_scalar(const char *v)
{
    char *end;
    long long i;
    double d;

    if (!strcmp(v, "true") || !strcmp(v, "false"))
        return json_boolean(*v == 't');
    i = strtoll(v, &end, 10);
    if (*v && !*end)
        return json_integer(i);
    d = strtod(v, &end);
    if (*v && !*end && strspn(v, "0123456789.-+eE") == strlen(v))
        return json_real(d);
    return json_string(v);
}

/* `params:` of an action: a flat mapping of scalars. */
static json_t *read_params(reader *r, yaml_node_t *n)
{
    json_t *out;

    if (!n)
        return NULL;
    if (n->type != YAML_MAPPING_NODE) {
        problem(r, n, "params must be a mapping of names to plain values");
        return NULL;
    }
    out = json_object();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&r->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(&r->doc, p->value);
        const char *name = scalar(k), *text = scalar(v);
        if (!name || !text || !playbook_id_ok(name)) {
            problem(r, v ? v : k, "params: '%s' must be a lower-case name with "
                    "a plain value", name ? name : "?");
            continue;
        }
        json_object_set_new(out, name, json_scalar(text));
    }
    return out;
}

static int read_step(reader *r, yaml_node_t *n, pb_step *st)
{
    static const char *const keys[] = {"playbook", "approval", "target", "fix",
                                       "category", "when", "params", NULL};
    const char *pbk, *v;
    int a, t, f = PB_FIX_NONE, w = PB_WHEN_ALWAYS, before = r->errors;

    if (!n || n->type != YAML_MAPPING_NODE) {
        problem(r, n, "an action must be a mapping (playbook, approval, target)");
        return -1;
    }
    only_keys(r, n, "an action", keys);
    pbk = scalar(get(r, n, "playbook"));
    if (!playbook_id_ok(pbk))
        problem(r, node_or(get(r, n, "playbook"), n),
                "action: playbook missing or not 'family.name'");
    v = scalar(get(r, n, "approval"));
    if ((a = pick(v, approvals, N(approvals))) < 0)
        problem(r, node_or(get(r, n, "approval"), n),
                "approval '%s' is not auto, hitl or canary", v ? v : "");
    v = scalar(get(r, n, "target"));
    if ((t = pick(v, targets, N(targets))) < 0)
        problem(r, node_or(get(r, n, "target"), n),
                "target '%s' is not node, job, each_job, each_affected, "
                "rack or none", v ? v : "");
    if ((v = scalar(get(r, n, "fix"))) && (f = pick(v, fixes, N(fixes))) < 0)
        problem(r, get(r, n, "fix"), "fix '%s' is not one of none, "
                "exclude_node, batch, activation, alloc_conf, ticket, workers, "
                "shm, tolerations, socket_ifname, worker_memory, same_config, "
                "input_bound, checkpoint_memory, gcs_ft", v);
    if ((v = scalar(get(r, n, "when"))) && (w = pick(v, whens, N(whens))) < 0)
        problem(r, get(r, n, "when"), "when '%s' is not always, reserved, "
                "elastic, repeated, gcs_ft or no_gcs_ft", v);
    v = scalar(get(r, n, "category"));
    if (f == PB_FIX_TICKET && !v)
        problem(r, n, "fix: ticket needs a category");
    json_t *params = read_params(r, get(r, n, "params"));
    if (r->errors != before) {
        json_decref(params);
        return -1;
    }
    st->params = params;
    snprintf(st->where, sizeof st->where, "%s:%zu:%zu", r->name,
             n->start_mark.line + 1, n->start_mark.column + 1);
    st->playbook = strdup(pbk);
    st->approval = (pb_approval)a;
    st->target = (pb_target)t;
    st->fix = (pb_fix)f;
    st->category = v ? strdup(v) : NULL;
    st->when = (pb_when)w;
    return 0;
}

static void read_scenario(reader *r, pb_catalog *c, yaml_node_t *n)
{
    static const char *const keys[] = {"id", "node_level", "what", "todo",
                                       "root_actions", "actions", NULL};
    const char *id = scalar(get(r, n, "id"));
    yaml_node_t *acts = get(r, n, "actions");
    const char *nl = scalar(get(r, n, "node_level"));
    const char *ra = scalar(get(r, n, "root_actions"));
    pb_scenario s = {0};
    pb_step *steps;
    int before = r->errors;

    if (!n || n->type != YAML_MAPPING_NODE) {
        problem(r, n, "a scenario must be a mapping (id, what, todo, actions)");
        return;
    }
    only_keys(r, n, "a scenario", keys);
    if (!id || !strchr(id, '.'))
        problem(r, n, "scenario: id missing or not 'family.name'");
    else if (pb_find(c, id))
        problem(r, get(r, n, "id"), "scenario '%s' defined twice", id);
    if (!scalar(get(r, n, "what")) || !scalar(get(r, n, "todo")))
        problem(r, n, "scenario %s: 'what' and 'todo' (the summary) are "
                      "required", id ? id : "?");
    if (nl && strcmp(nl, "true") && strcmp(nl, "false"))
        problem(r, get(r, n, "node_level"), "node_level must be true or false");
    if (ra && strcmp(ra, "true") && strcmp(ra, "false"))
        problem(r, get(r, n, "root_actions"), "root_actions must be true or "
                "false");
    if (!acts || acts->type != YAML_SEQUENCE_NODE) {
        problem(r, node_or(acts, n), "scenario %s: actions must be a list", id ? id : "?");
        return;
    }
    steps = calloc((size_t)(acts->data.sequence.items.top -
                            acts->data.sequence.items.start) + 1, sizeof *steps);
    if (!steps)
        abort();
    for (yaml_node_item_t *i = acts->data.sequence.items.start;
         i < acts->data.sequence.items.top; i++)
        if (read_step(r, yaml_document_get_node(&r->doc, *i), &steps[s.nsteps]) == 0)
            s.nsteps++;
    s.steps = steps;
    if (r->errors != before) {
        free_scenario(&s);
        return;
    }
    s.id = strdup(id);
    s.what = strdup(scalar(get(r, n, "what")));
    s.todo = strdup(scalar(get(r, n, "todo")));
    s.node_level = nl && !strcmp(nl, "true");
    s.root_actions = ra && !strcmp(ra, "true");
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->v = realloc(c->v, c->cap * sizeof *c->v);
        if (!c->v)
            abort();
    }
    c->v[c->n++] = s;
}

/* Field names a signature may capture; the classifier fills the fact's
 * field of the same name. */
static const char *const field_names[] = {"host", "job",  "gpu",  "pci",
                                          "xid",  "rank", "nodes", "step",
                                          "pid",  "detail", NULL};

static int check_groups(reader *r, yaml_node_t *at, pcre2_code *re)
{
    uint32_t count = 0, size = 0;
    PCRE2_SPTR table;
    int bad = 0;

    pcre2_pattern_info(re, PCRE2_INFO_NAMECOUNT, &count);
    pcre2_pattern_info(re, PCRE2_INFO_NAMEENTRYSIZE, &size);
    pcre2_pattern_info(re, PCRE2_INFO_NAMETABLE, &table);
    for (uint32_t i = 0; i < count; i++) {
        const char *name = (const char *)(table + i * size + 2);
        int ok = 0;
        for (int k = 0; field_names[k]; k++)
            ok |= !strcmp(name, field_names[k]);
        if (!ok) {
            problem(r, at, "match: field (?<%s>...) is not one of host, job, "
                    "gpu, pci, xid, rank, nodes, step, pid, detail", name);
            bad = 1;
        }
    }
    return bad ? -1 : 0;
}

/* An alert example's labels, as the JSON object the classifier reads. */
static char *labels_json(reader *r, yaml_node_t *map)
{
    json_t *o = json_object();
    char *out;

    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        const char *k = scalar(yaml_document_get_node(&r->doc, p->key));
        const char *v = scalar(yaml_document_get_node(&r->doc, p->value));
        if (k && v)
            json_object_set_new(o, k, json_string(v));
    }
    out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return out;
}

static int read_example(reader *r, yaml_node_t *n, int source,
                        unsigned sources, pb_example *ex)
{
    static const char *const keys[] = {"line", "alert", "scenario", "fact",
                                       "source", "detail", NULL};
    const char *esrc = scalar(get(r, n, "source"));
    sig_source es = (sig_source)source;
    yaml_node_t *alert = get(r, n, "alert");
    const char *line = scalar(get(r, n, "line"));
    const char *sc = scalar(get(r, n, "scenario"));
    const char *kind = scalar(get(r, n, "fact"));
    const char *detail = scalar(get(r, n, "detail"));
    int before = r->errors;

    if (!n || n->type != YAML_MAPPING_NODE) {
        problem(r, n, "an example is a mapping: line (or alert) and scenario");
        return -1;
    }
    only_keys(r, n, "an example", keys);
    if (source == SRC_ALERTMANAGER && (!alert || alert->type != YAML_MAPPING_NODE))
        problem(r, n, "an alert signature's example needs 'alert': its labels");
    else if (source != SRC_ALERTMANAGER && !line)
        problem(r, n, "an example needs 'line': the text it must recognise");
    if (!sc && !kind)
        problem(r, n, "an example needs 'scenario' (or 'fact'): what it must "
                      "produce ('none' for a line that must open nothing)");
    if (kind && fact_parse(kind) < 0)
        problem(r, get(r, n, "fact"), "fact '%s' is not a fact kind", kind);
    if (esrc && sources &&
        (sig_source_parse(esrc, &es) || !(sources & (1u << es))))
        problem(r, get(r, n, "source"), "example source '%s' is not one of "
                "its signature's sources", esrc);
    if (r->errors != before)
        return -1;
    ex->source = (int)es;
    ex->text = line ? strdup(line) : labels_json(r, alert);
    ex->scenario = sc ? strdup(sc) : NULL;
    ex->fact = kind ? strdup(kind) : NULL;
    ex->detail = detail ? strdup(detail) : NULL;
    ex->line = (int)n->start_mark.line + 1;
    return 0;
}

static void push_signature(pb_catalog *c, const pb_signature *g)
{
    if (c->nsigs == c->capsigs) {
        c->capsigs = c->capsigs ? c->capsigs * 2 : 32;
        c->sigs = realloc(c->sigs, c->capsigs * sizeof *c->sigs);
        if (!c->sigs)
            abort();
    }
    c->sigs[c->nsigs++] = *g;
}


/* One source name; 0 after reporting why it is not a text source. */
static unsigned one_source(reader *r, yaml_node_t *v, const char *id,
                           sig_source *out)
{
    const char *name = scalar(v);

    if (!name || sig_source_parse(name, out) || *out == SRC_METRIC ||
        *out == SRC_JOB || *out == SRC_INVENTORY) {
        problem(r, v, "signature %s: source '%s' is not kernel, app, ray, "
                "slurm, k8s or alertmanager", id ? id : "?", name ? name : "");
        return 0;
    }
    return 1u << *out;
}

/* `source: app` or `source: [ray, app]`: the same text reaches cascade
 * through more than one collector (Ray's OOM error printed in the
 * driver's stdout). Alert labels are not text: alertmanager stands alone.
 * *first gets the first source, the one examples arrive on by default. */
static unsigned read_sources(reader *r, yaml_node_t *n, const char *id,
                             sig_source *first)
{
    yaml_node_t *v = get(r, n, "source");
    unsigned mask = 0, m;
    sig_source s;

    if (!v || v->type != YAML_SEQUENCE_NODE ||
        v->data.sequence.items.top == v->data.sequence.items.start)
        return one_source(r, node_or(v, n), id, first);
    for (yaml_node_item_t *i = v->data.sequence.items.start;
         i < v->data.sequence.items.top; i++) {
        if (!(m = one_source(r, yaml_document_get_node(&r->doc, *i), id, &s)))
            return 0;
        if (!mask)
            *first = s;
        mask |= m;
    }
    if ((mask & (1u << SRC_ALERTMANAGER)) && mask != 1u << SRC_ALERTMANAGER) {
        problem(r, v, "signature %s: alertmanager reads alert labels, not "
                "text; it cannot share a signature with other sources",
                id ? id : "?");
        return 0;
    }
    return mask;
}

static void read_signature(reader *r, pb_catalog *c, yaml_node_t *n)
{
    static const char *const keys[] = {"id", "source", "fact", "scenario",
                                       "match", "report", "examples", NULL};
    const char *id = scalar(get(r, n, "id")), *kind, *sc, *pat, *rep;
    yaml_node_t *exs = get(r, n, "examples");
    pb_signature g = {0};
    sig_source source = SRC_APP;
    int before = r->errors, ec;
    unsigned sources;
    PCRE2_SIZE eo;

    if (!n || n->type != YAML_MAPPING_NODE) {
        problem(r, n, "a signature is a mapping (id, source, fact, match, "
                      "examples)");
        return;
    }
    only_keys(r, n, "a signature", keys);
    kind = scalar(get(r, n, "fact"));
    sc = scalar(get(r, n, "scenario"));
    pat = scalar(get(r, n, "match"));
    rep = scalar(get(r, n, "report"));
    if (!id || !*id)
        problem(r, n, "signature: 'id' is required");
    else if (pb_signature_find(c, id))
        problem(r, get(r, n, "id"), "signature '%s' defined twice", id);
    if (!(sources = read_sources(r, n, id, &source)))
        source = SRC_APP; /* examples are then checked as plain text */
    if (rep && strcmp(rep, "true") && strcmp(rep, "false"))
        problem(r, get(r, n, "report"), "signature %s: report is true or "
                "false, not '%s'", id ? id : "?", rep);
    else if (rep && !strcmp(rep, "true") && sources &&
             !(sources & (1u << SRC_APP)))
        problem(r, get(r, n, "report"), "signature %s: report: only app "
                "lines head reports (their indented lines follow per rank)",
                id ? id : "?");
    if (!kind || !fact_from_text(fact_parse(kind)))
        problem(r, node_or(get(r, n, "fact"), n), "signature %s: fact '%s' is "
                "not a fact kind a signature can make", id ? id : "?",
                kind ? kind : "");
    if (!pat) {
        problem(r, n, "signature %s: 'match' (a PCRE2 pattern) is required",
                id ? id : "?");
    } else if (!(g.re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
                                      0, &ec, &eo, NULL))) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        problem(r, get(r, n, "match"), "signature %s: match: %s at offset %zu",
                id ? id : "?", (char *)msg, (size_t)eo);
    } else if (check_groups(r, get(r, n, "match"), g.re) == 0) {
        pcre2_jit_compile(g.re, PCRE2_JIT_COMPLETE);
    }
    if (!exs || exs->type != YAML_SEQUENCE_NODE ||
        exs->data.sequence.items.top == exs->data.sequence.items.start) {
        problem(r, node_or(exs, n), "signature %s: 'examples' must list at "
                "least one line and what it produces", id ? id : "?");
    } else {
        g.examples = calloc((size_t)(exs->data.sequence.items.top -
                                     exs->data.sequence.items.start),
                            sizeof *g.examples);
        if (!g.examples)
            abort();
        for (yaml_node_item_t *i = exs->data.sequence.items.start;
             i < exs->data.sequence.items.top; i++)
            if (read_example(r, yaml_document_get_node(&r->doc, *i),
                             (int)source, sources,
                             &g.examples[g.nexamples]) == 0)
                g.nexamples++;
    }
    if (r->errors != before) {
        free_signature(&g);
        return;
    }
    g.id = strdup(id);
    g.source = (int)source;
    g.sources = sources;
    g.fact = strdup(kind);
    g.kind = fact_parse(kind);
    g.scenario = sc ? strdup(sc) : NULL;
    g.match = strdup(pat);
    g.report = rep && !strcmp(rep, "true");
    g.file = strdup(r->name);
    g.line = (int)n->start_mark.line + 1;
    push_signature(c, &g);
}

/* One Xid code of a list, or 0 after reporting why it is not one. */
static long xid_code(reader *r, yaml_node_t *cn, const char *what)
{
    const char *v = scalar(cn);
    char *end;
    long code = v ? strtol(v, &end, 10) : 0;

    if (!v || *end || code <= 0 || code > 1000) {
        problem(r, cn, "%s: '%s' is not an Xid code", what, v ? v : "");
        return 0;
    }
    return code;
}

/* xid_codes: [{codes: [79], scenario: hw.gpu_off_bus}, ...] */
static void read_xids(reader *r, pb_catalog *c, yaml_node_t *list)
{
    if (list->type != YAML_SEQUENCE_NODE) {
        problem(r, list, "'xid_codes' must be a list of {codes, scenario}");
        return;
    }
    for (yaml_node_item_t *i = list->data.sequence.items.start;
         i < list->data.sequence.items.top; i++) {
        static const char *const keys[] = {"codes", "scenario", NULL};
        yaml_node_t *n = yaml_document_get_node(&r->doc, *i), *codes;
        const char *sc;
        if (!n || n->type != YAML_MAPPING_NODE) {
            problem(r, n, "an xid_codes entry is {codes: [..], scenario: id}");
            continue;
        }
        only_keys(r, n, "an xid_codes entry", keys);
        sc = scalar(get(r, n, "scenario"));
        codes = get(r, n, "codes");
        if (!sc) {
            problem(r, n, "xid_codes: 'scenario' is required");
            continue;
        }
        if (!codes || codes->type != YAML_SEQUENCE_NODE) {
            problem(r, node_or(codes, n), "xid_codes: 'codes' must be a list of "
                                          "numbers");
            continue;
        }
        for (yaml_node_item_t *k = codes->data.sequence.items.start;
             k < codes->data.sequence.items.top; k++) {
            yaml_node_t *cn = yaml_document_get_node(&r->doc, *k);
            long code = xid_code(r, cn, "xid_codes");
            if (!code)
                continue;
            for (size_t x = 0; x < c->nxids; x++)
                if (c->xids[x].code == code) {
                    problem(r, cn, "xid_codes: Xid %ld mapped twice", code);
                    code = 0;
                }
            if (!code)
                continue;
            c->xids = realloc(c->xids, (c->nxids + 1) * sizeof *c->xids);
            if (!c->xids)
                abort();
            snprintf(c->xids[c->nxids].where, sizeof c->xids[c->nxids].where,
                     "%s:%zu:%zu", r->name, cn->start_mark.line + 1,
                     cn->start_mark.column + 1);
            c->xids[c->nxids].code = (int)code;
            c->xids[c->nxids++].scenario = strdup(sc);
        }
    }
}

/* xid_tracked: {codes: [13, 31, 43], same_gpu: id, same_job: id} */
static void read_tracked(reader *r, pb_catalog *c, yaml_node_t *n)
{
    static const char *const keys[] = {"codes", "same_gpu", "same_job", NULL};
    yaml_node_t *codes = get(r, n, "codes");
    const char *g = scalar(get(r, n, "same_gpu")), *j = scalar(get(r, n, "same_job"));

    if (n->type != YAML_MAPPING_NODE) {
        problem(r, n, "'xid_tracked' is {codes: [..], same_gpu: id, same_job: id}");
        return;
    }
    only_keys(r, n, "xid_tracked", keys);
    if (!g || !j || !codes || codes->type != YAML_SEQUENCE_NODE) {
        problem(r, n, "xid_tracked needs codes (a list), same_gpu and same_job");
        return;
    }
    if (c->same_gpu) {
        problem(r, n, "xid_tracked given twice");
        return;
    }
    for (yaml_node_item_t *k = codes->data.sequence.items.start;
         k < codes->data.sequence.items.top; k++) {
        yaml_node_t *cn = yaml_document_get_node(&r->doc, *k);
        long code = xid_code(r, cn, "xid_tracked");
        if (!code)
            continue;
        if (c->ntracked == 16) {
            problem(r, cn, "xid_tracked: at most 16 codes");
            continue;
        }
        c->tracked[c->ntracked++] = (int)code;
    }
    c->same_gpu = strdup(g);
    c->same_job = strdup(j);
    snprintf(c->tracked_where, sizeof c->tracked_where, "%s:%zu:%zu", r->name,
             n->start_mark.line + 1, n->start_mark.column + 1);
}

/* ---- playbooks -------------------------------------------------------- */

static const char *const classes[] = {"read_only", "notify",   "job",
                                      "change",    "recovery", "destructive"};
static const char *const modes[] = {"shadow", "canary", "on"};
static const char *const backends[] = {"any", "slurm", "k8s"};
/* What preconditions and verifications may read about a node or a job. */
static const char *const check_fields[] = {
    "node.state", "node.jobs", "node.drained_by", "node.gpu_health",
    "job.state"};
/* The values "{name}" in a call's argument may take. */
static const char *const template_names[] = {
    "incident", "node", "job", "cluster", "rack", "scenario", "summary",
    "playbook", "version"};
/* Operations of the executors; slurm.* and k8s.* only in their
 * scheduler's steps. */
static const char *const ops[] = {
    "slurm.drain",      "slurm.resume",      "slurm.reboot",
    "slurm.requeue",    "slurm.resubmit",    "slurm.cancel",
    "slurm.comment",    "k8s.cordon",        "k8s.uncordon",
    "k8s.taint",        "k8s.annotate",      "k8s.delete_pod",
    "k8s.delete_job",   "k8s.recreate_job",  "node.gpu_reset",
    "node.gpu_power_limit", "node.driver_rebuild", "node.mig_apply",
    "node.health_probe", "node.diag_bundle", "jira.upsert",
    "slack.post",       "pagerduty.trigger", "webhook.post",
    "pagerduty.acknowledge", "pagerduty.resolve"};

const char *pb_class_name(pb_class k)
{
    return (unsigned)k < (unsigned)N(classes) ? classes[k] : "?";
}

const char *pb_mode_name(pb_mode m)
{
    return (unsigned)m < (unsigned)N(modes) ? modes[m] : "?";
}

void pb_action_id(const char *incident, const json_t *action, char *buf,
                  size_t len)
{
    char *txt = json_dumps(action, JSON_COMPACT | JSON_SORT_KEYS);
    uint64_t h = hash_fnv1a(HASH_FNV_SEED, incident, strlen(incident));

    h = hash_fnv1a(h, "\n", 1);
    if (txt)
        h = hash_fnv1a(h, txt, strlen(txt));
    free(txt);
    snprintf(buf, len, "act-%016llx", (unsigned long long)h);
}

const pb_playbook *pb_playbook_find(const pb_catalog *c, const char *id)
{
    for (size_t i = 0; id && i < c->nplays; i++)
        if (!strcmp(c->plays[i].id, id))
            return &c->plays[i];
    return NULL;
}

const pb_playbook *pb_playbooks(const pb_catalog *c, size_t *n)
{
    *n = c->nplays;
    return c->plays;
}

const pb_calls *pb_calls_for(const pb_calls set[PB_ON__COUNT], pb_backend b)
{
    if ((unsigned)b < PB_ON__COUNT && set[b].n)
        return &set[b];
    return set[PB_ON_ANY].n ? &set[PB_ON_ANY] : NULL;
}

static void free_calls(pb_calls *cs)
{
    for (int i = 0; i < cs->n; i++) {
        free((char *)cs->v[i].op);
        json_decref(cs->v[i].args);
    }
    free(cs->v);
}

static void free_checks(pb_check *v, int n)
{
    for (int i = 0; i < n; i++) {
        free((char *)v[i].field);
        json_decref(v[i].value);
    }
    free(v);
}

static void free_playbook(pb_playbook *p)
{
    for (int b = 0; b < PB_ON__COUNT; b++) {
        free_calls(&p->steps[b]);
        free_calls(&p->rollback[b]);
    }
    free_checks(p->pre, p->npre);
    free_checks(p->verify, p->nverify);
    free(p->budgets);
    free((char *)p->id);
    free((char *)p->version);
    free((char *)p->what);
    free((char *)p->file);
}

static size_t seq_len(const yaml_node_t *n)
{
    return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static yaml_node_t *seq_at(reader *r, const yaml_node_t *n, size_t i)
{
    return yaml_document_get_node(&r->doc, n->data.sequence.items.start[i]);
}

/* "30s", "10m", "1h" in ms; -1 when it is not a duration. */
static int64_t duration_ms(const char *v)
{
    char *end;
    long long n;

    if (!v || !*v || *v == '-')
        return -1;
    n = strtoll(v, &end, 10);
    if (end == v || n <= 0 || n > 1000000)
        return -1;
    if (!strcmp(end, "s"))
        return n * 1000;
    if (!strcmp(end, "m"))
        return n * 60000;
    if (!strcmp(end, "h"))
        return n * 3600000;
    return -1;
}

/* "MAJOR.MINOR.PATCH", numbers only. */
static int version_ok(const char *v)
{
    int dots = 0, digits = 0;

    for (const char *p = v; p && *p; p++) {
        if (*p == '.') {
            if (!digits)
                return 0;
            dots++;
            digits = 0;
        } else if (*p >= '0' && *p <= '9') {
            digits++;
        } else {
            return 0;
        }
    }
    return v && dots == 2 && digits;
}

/* Every "{name}" in an argument names a value the action has. */
static void check_template(reader *r, yaml_node_t *at, const char *v)
{
    for (const char *p = strchr(v, '{'); p; p = strchr(p + 1, '{')) {
        const char *close = strchr(p, '}');
        char name[32];
        if (!close || close - p - 1 <= 0 || close - p - 1 >= (long)sizeof name) {
            problem(r, at, "argument '%s': '{' without a name and '}'", v);
            return;
        }
        snprintf(name, sizeof name, "%.*s", (int)(close - p - 1), p + 1);
        if (pick(name, template_names, N(template_names)) < 0)
            problem(r, at, "argument '%s': {%s} is not one of incident, node, "
                    "job, cluster, rack, scenario, summary, playbook, version",
                    v, name);
    }
}

static int read_call(reader *r, yaml_node_t *n, pb_backend b, pb_call *out)
{
    const char *op = scalar(get(r, n, "call"));
    int before = r->errors;
    json_t *args;

    if (!n || n->type != YAML_MAPPING_NODE) {
        problem(r, n, "a step is a mapping: {call: executor.operation, "
                      "arguments...}");
        return -1;
    }
    if (pick(op, ops, N(ops)) < 0)
        problem(r, node_or(get(r, n, "call"), n), "call '%s' is not an "
                "operation of an executor (slurm.*, k8s.*, node.*, "
                "jira.upsert, slack.post, pagerduty.trigger|acknowledge|"
                "resolve, webhook.post)",
                op ? op : "");
    else if ((b == PB_ON_SLURM && strncmp(op, "slurm.", 6)) ||
             (b == PB_ON_K8S && strncmp(op, "k8s.", 4)) ||
             (b == PB_ON_ANY && (!strncmp(op, "slurm.", 6) ||
                                 !strncmp(op, "k8s.", 4))))
        problem(r, get(r, n, "call"), "call '%s' does not belong under '%s'",
                op, backends[b]);
    args = json_object();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&r->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(&r->doc, p->value);
        const char *name = scalar(k), *text = scalar(v);
        if (name && !strcmp(name, "call"))
            continue;
        if (!name || !text || !playbook_id_ok(name)) {
            problem(r, v ? v : k, "argument '%s' must be a lower-case name "
                    "with a plain value", name ? name : "?");
            continue;
        }
        check_template(r, v, text);
        json_object_set_new(args, name, json_scalar(text));
    }
    if (r->errors != before) {
        json_decref(args);
        return -1;
    }
    out->op = strdup(op);
    out->args = args;
    return 0;
}

/* steps/rollback: a mapping of any, slurm, k8s to lists of calls. */
static void read_calls(reader *r, yaml_node_t *n, const char *what,
                       pb_calls set[PB_ON__COUNT])
{
    if (!n)
        return;
    if (n->type != YAML_MAPPING_NODE) {
        problem(r, n, "%s: a mapping of any, slurm or k8s to lists of calls",
                what);
        return;
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&r->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(&r->doc, p->value);
        int b = pick(scalar(k), backends, N(backends));
        if (b < 0) {
            problem(r, k, "%s: '%s' is not any, slurm or k8s", what,
                    scalar(k) ? scalar(k) : "?");
            continue;
        }
        if (set[b].v) {
            problem(r, k, "%s: '%s' given twice", what, backends[b]);
            continue;
        }
        if (!v || v->type != YAML_SEQUENCE_NODE || !seq_len(v)) {
            problem(r, node_or(v, k), "%s.%s: a list of calls", what,
                    backends[b]);
            continue;
        }
        set[b].v = calloc(seq_len(v), sizeof *set[b].v);
        if (!set[b].v)
            abort();
        for (size_t i = 0; i < seq_len(v); i++)
            if (read_call(r, seq_at(r, v, i), (pb_backend)b,
                          &set[b].v[set[b].n]) == 0)
                set[b].n++;
    }
}

static int read_check(reader *r, yaml_node_t *n, pb_check *out)
{
    static const char *const keys[] = {"field", "in", "not_in", "at_most", NULL};
    const char *field = scalar(get(r, n, "field"));
    yaml_node_t *in = get(r, n, "in"), *not_in = get(r, n, "not_in");
    yaml_node_t *most = get(r, n, "at_most"), *list = in ? in : not_in;
    int before = r->errors;
    json_t *value = NULL;

    if (!n || n->type != YAML_MAPPING_NODE) {
        problem(r, n, "a check is a mapping: {field, in | not_in | at_most}");
        return -1;
    }
    only_keys(r, n, "a check", keys);
    if (pick(field, check_fields, N(check_fields)) < 0)
        problem(r, node_or(get(r, n, "field"), n), "field '%s' is not one of "
                "node.state, node.jobs, node.drained_by, node.gpu_health, "
                "job.state", field ? field : "");
    if (!!in + !!not_in + !!most != 1)
        problem(r, n, "a check has exactly one of in, not_in, at_most");
    else if (most) {
        char *end;
        const char *v = scalar(most);
        long long m = v ? strtoll(v, &end, 10) : -1;
        if (!v || *end || m < 0)
            problem(r, most, "at_most must be a whole number, 0 or more");
        else
            value = json_integer(m);
    } else if (list->type != YAML_SEQUENCE_NODE || !seq_len(list)) {
        problem(r, list, "in / not_in must be a list of values");
    } else {
        value = json_array();
        for (size_t i = 0; i < seq_len(list); i++) {
            const char *v = scalar(seq_at(r, list, i));
            if (!v)
                problem(r, seq_at(r, list, i), "in / not_in: plain values only");
            else
                json_array_append_new(value, json_string(v));
        }
    }
    if (r->errors != before) {
        json_decref(value);
        return -1;
    }
    out->field = strdup(field);
    out->op = most ? PB_CHECK_AT_MOST : in ? PB_CHECK_IN : PB_CHECK_NOT_IN;
    out->value = value;
    return 0;
}

static pb_check *read_checks(reader *r, yaml_node_t *n, const char *what,
                             int *count)
{
    pb_check *v;

    *count = 0;
    if (!n)
        return NULL;
    if (n->type != YAML_SEQUENCE_NODE) {
        problem(r, n, "%s must be a list of checks", what);
        return NULL;
    }
    v = calloc(seq_len(n) + 1, sizeof *v);
    if (!v)
        abort();
    for (size_t i = 0; i < seq_len(n); i++)
        if (read_check(r, seq_at(r, n, i), &v[*count]) == 0)
            (*count)++;
    return v;
}

static void read_budgets(reader *r, yaml_node_t *n, pb_playbook *p)
{
    static const char *const keys[] = {"per", "max", "window", NULL};

    if (!n)
        return;
    if (n->type != YAML_SEQUENCE_NODE) {
        problem(r, n, "budgets must be a list of {per, max, window}");
        return;
    }
    p->budgets = calloc(seq_len(n) + 1, sizeof *p->budgets);
    if (!p->budgets)
        abort();
    for (size_t i = 0; i < seq_len(n); i++) {
        yaml_node_t *b = seq_at(r, n, i);
        const char *per = scalar(get(r, b, "per")), *max = scalar(get(r, b, "max"));
        int64_t window = duration_ms(scalar(get(r, b, "window")));
        char *end = NULL;
        long m = max ? strtol(max, &end, 10) : 0;
        if (!b || b->type != YAML_MAPPING_NODE) {
            problem(r, b, "a budget is a mapping {per, max, window}");
            continue;
        }
        only_keys(r, b, "a budget", keys);
        if (!per || (strcmp(per, "rack") && strcmp(per, "cluster")))
            problem(r, node_or(get(r, b, "per"), b), "budget: per is rack or "
                    "cluster");
        else if (!max || *end || m < 1 || m > 100000)
            problem(r, node_or(get(r, b, "max"), b), "budget: max is a whole "
                    "number from 1");
        else if (window < 0)
            problem(r, node_or(get(r, b, "window"), b), "budget: window is a "
                    "duration such as 30m or 1h");
        else
            p->budgets[p->nbudgets++] =
                (pb_budget){!strcmp(per, "rack"), (int)m, window};
    }
}

static void read_verify(reader *r, yaml_node_t *n, pb_playbook *p)
{
    static const char *const keys[] = {"timeout", "checks", NULL};
    const char *t;

    if (!n)
        return;
    if (n->type != YAML_MAPPING_NODE) {
        problem(r, n, "verify is a mapping {timeout, checks}");
        return;
    }
    only_keys(r, n, "verify", keys);
    t = scalar(get(r, n, "timeout"));
    if ((p->verify_timeout = duration_ms(t)) < 0)
        problem(r, node_or(get(r, n, "timeout"), n), "verify: timeout is a "
                "duration such as 60s or 5m");
    p->verify = read_checks(r, get(r, n, "checks"), "verify.checks",
                            &p->nverify);
    if (!p->nverify)
        problem(r, n, "verify: checks must name at least one check");
}

/* The guardrails a playbook's own data must keep (docs/ACTIONS.md). */
static void check_guardrails(reader *r, yaml_node_t *n, const char *id,
                             const pb_playbook *p)
{
    if (p->cls == PB_CLASS_CHANGE && p->approval == APPR_AUTO)
        problem(r, n, "playbook %s: a change needs approval canary or hitl, "
                "not auto", id);
    if (p->cls == PB_CLASS_DESTRUCTIVE && p->approval != APPR_HITL)
        problem(r, n, "playbook %s: a destructive playbook always needs "
                "approval hitl", id);
    if (p->cls == PB_CLASS_JOB && !p->nbudgets)
        problem(r, n, "playbook %s: class job needs a budget", id);
    if (p->cls == PB_CLASS_RECOVERY && p->nbudgets)
        problem(r, n, "playbook %s: recovery is never held back by a budget",
                id);
    if (!pb_calls_for(p->steps, PB_ON_SLURM) &&
        !pb_calls_for(p->steps, PB_ON_K8S))
        problem(r, n, "playbook %s: steps name no call", id);
}

static void push_playbook(pb_catalog *c, const pb_playbook *p)
{
    if (c->nplays == c->capplays) {
        c->capplays = c->capplays ? c->capplays * 2 : 16;
        c->plays = realloc(c->plays, c->capplays * sizeof *c->plays);
        if (!c->plays)
            abort();
    }
    c->plays[c->nplays++] = *p;
}

static void read_playbook(reader *r, pb_catalog *c, yaml_node_t *n)
{
    static const char *const keys[] = {
        "id", "version", "class", "approval", "mode", "what", "budgets",
        "preconditions", "steps", "verify", "rollback", NULL};
    const char *id, *ver, *v;
    int before = r->errors, k;
    pb_playbook p = {0};

    if (!n || n->type != YAML_MAPPING_NODE) {
        problem(r, n, "a playbook must be a mapping (id, version, class, "
                      "approval, mode, steps)");
        return;
    }
    only_keys(r, n, "a playbook", keys);
    id = scalar(get(r, n, "id"));
    ver = scalar(get(r, n, "version"));
    if (!playbook_id_ok(id))
        problem(r, node_or(get(r, n, "id"), n), "playbook: id missing or not "
                "'family.name'");
    else if (pb_playbook_find(c, id))
        problem(r, get(r, n, "id"), "playbook '%s' defined twice", id);
    if (!version_ok(ver))
        problem(r, node_or(get(r, n, "version"), n), "playbook %s: version "
                "'%s' is not MAJOR.MINOR.PATCH", id ? id : "?", ver ? ver : "");
    if (!scalar(get(r, n, "what")))
        problem(r, n, "playbook %s: 'what' (what it does) is required",
                id ? id : "?");
    v = scalar(get(r, n, "class"));
    if ((k = pick(v, classes, N(classes))) < 0)
        problem(r, node_or(get(r, n, "class"), n), "class '%s' is not "
                "read_only, notify, job, change, recovery or destructive",
                v ? v : "");
    p.cls = (pb_class)k;
    v = scalar(get(r, n, "approval"));
    if ((k = pick(v, approvals, N(approvals))) < 0)
        problem(r, node_or(get(r, n, "approval"), n), "approval '%s' is not "
                "auto, hitl or canary", v ? v : "");
    p.approval = (pb_approval)k;
    v = scalar(get(r, n, "mode"));
    if ((k = pick(v, modes, N(modes))) < 0)
        problem(r, node_or(get(r, n, "mode"), n), "mode '%s' is not shadow, "
                "canary or on", v ? v : "");
    p.mode = (pb_mode)k;
    read_budgets(r, get(r, n, "budgets"), &p);
    p.pre = read_checks(r, get(r, n, "preconditions"), "preconditions", &p.npre);
    read_calls(r, get(r, n, "steps"), "steps", p.steps);
    read_verify(r, get(r, n, "verify"), &p);
    read_calls(r, get(r, n, "rollback"), "rollback", p.rollback);
    if (r->errors == before)
        check_guardrails(r, n, id, &p);
    if (r->errors != before) {
        free_playbook(&p);
        return;
    }
    p.id = strdup(id);
    p.version = strdup(ver);
    p.what = strdup(scalar(get(r, n, "what")));
    p.file = strdup(r->name);
    p.line = (int)n->start_mark.line + 1;
    push_playbook(c, &p);
}

/* correlations: [{scenario, kind, by, events: [sig ids], count, window}].
 * Names are checked against the whole catalog in pb_catalog_link. */
static void read_correlation(reader *r, pb_catalog *c, yaml_node_t *n)
{
    static const char *const keys[] = {"scenario", "kind", "by", "events",
                                       "count", "window", NULL};
    pb_correlation k = {0};
    yaml_node_t *evs = get(r, n, "events"), *cn = get(r, n, "count");
    const char *sc = scalar(get(r, n, "scenario"));
    int before = r->errors, kind, by;
    size_t nev;

    if (!n || n->type != YAML_MAPPING_NODE) {
        problem(r, n, "a correlation is a mapping (scenario, kind, by, "
                      "events, window)");
        return;
    }
    only_keys(r, n, "a correlation", keys);
    if (!sc || !*sc)
        problem(r, n, "correlation: 'scenario' (what it opens) is required");
    kind = pick(scalar(get(r, n, "kind")), corr_kinds, 3);
    if (kind < 0)
        problem(r, node_or(get(r, n, "kind"), n), "correlation %s: kind must "
                "be threshold, sequence or group", sc ? sc : "?");
    by = pick(scalar(get(r, n, "by")), corr_bys, 2);
    if (by < 0)
        problem(r, node_or(get(r, n, "by"), n), "correlation %s: by must be "
                "host or job", sc ? sc : "?");
    k.window = duration_ms(scalar(get(r, n, "window")));
    if (k.window < 0)
        problem(r, node_or(get(r, n, "window"), n), "correlation %s: window "
                "must be a duration such as 60s or 5m", sc ? sc : "?");
    nev = evs && evs->type == YAML_SEQUENCE_NODE ? seq_len(evs) : 0;
    if (nev == 0 || nev > PB_CORR_MAX_EVENTS) {
        problem(r, node_or(evs, n), "correlation %s: events must list 1 to "
                "%d signature ids", sc ? sc : "?", PB_CORR_MAX_EVENTS);
        nev = 0;
    }
    for (size_t i = 0; i < nev; i++) {
        yaml_node_t *ev = seq_at(r, evs, i);
        const char *id = scalar(ev);
        if (!id || !*id) {
            problem(r, ev, "correlation %s: an event is a signature id",
                    sc ? sc : "?");
            continue;
        }
        for (int j = 0; j < k.nevents; j++)
            if (!strcmp(k.events[j], id))
                problem(r, ev, "correlation %s: event %s listed twice",
                        sc ? sc : "?", id);
        k.events[k.nevents++] = strdup(id);
    }
    if (kind == PB_CORR_THRESHOLD) {
        const char *v = scalar(cn);
        char *end = NULL;
        long cnt = v ? strtol(v, &end, 10) : 0;
        if (!v || *end || cnt < 2 || cnt > 100000)
            problem(r, node_or(cn, n), "correlation %s: a threshold needs "
                    "count: 2 or more", sc ? sc : "?");
        if (nev > 1)
            problem(r, evs, "correlation %s: a threshold counts one event "
                    "(list the others in a group)", sc ? sc : "?");
        k.count = (int)cnt;
    } else if (kind >= 0) {
        if (cn)
            problem(r, cn, "correlation %s: count is for a threshold only",
                    sc ? sc : "?");
        if (nev == 1)
            problem(r, evs, "correlation %s: a %s needs two events or more",
                    sc ? sc : "?", corr_kinds[kind]);
    }
    if (r->errors != before) {
        free_correlation(&k);
        return;
    }
    k.scenario = strdup(sc);
    k.kind = (pb_corr_kind)kind;
    k.by = (pb_corr_by)by;
    snprintf(k.where, sizeof k.where, "%s:%zu:%zu", r->name,
             n->start_mark.line + 1, n->start_mark.column + 1);
    if (c->ncorrs == c->capcorrs) {
        c->capcorrs = c->capcorrs ? c->capcorrs * 2 : 8;
        c->corrs = realloc(c->corrs, c->capcorrs * sizeof *c->corrs);
        if (!c->corrs)
            abort();
    }
    c->corrs[c->ncorrs++] = k;
}

static void read_doc(reader *r, pb_catalog *c)
{
    static const char *const keys[] = {"family",    "scenarios",
                                       "signatures", "xid_codes",
                                       "xid_tracked", "playbooks",
                                       "correlations", NULL};
    yaml_node_t *root = yaml_document_get_root_node(&r->doc);
    yaml_node_t *list;

    if (!root || root->type != YAML_MAPPING_NODE) {
        problem(r, root, "a rule file is a mapping with 'family' and "
                         "'scenarios'");
        return;
    }
    only_keys(r, root, "a rule file", keys);
    if (!scalar(get(r, root, "family")))
        problem(r, root, "'family' is required");
    list = get(r, root, "scenarios");
    if (list && list->type != YAML_SEQUENCE_NODE)
        problem(r, list, "'scenarios' must be a list");
    else if (list)
        for (yaml_node_item_t *i = list->data.sequence.items.start;
             i < list->data.sequence.items.top; i++)
            read_scenario(r, c, yaml_document_get_node(&r->doc, *i));
    if ((list = get(r, root, "xid_codes")))
        read_xids(r, c, list);
    if ((list = get(r, root, "xid_tracked")))
        read_tracked(r, c, list);
    list = get(r, root, "playbooks");
    if (list && list->type != YAML_SEQUENCE_NODE)
        problem(r, list, "'playbooks' must be a list");
    else if (list)
        for (size_t i = 0; i < seq_len(list); i++)
            read_playbook(r, c, seq_at(r, list, i));
    list = get(r, root, "signatures");
    if (list && list->type != YAML_SEQUENCE_NODE)
        problem(r, list, "'signatures' must be a list");
    else if (list)
        for (yaml_node_item_t *i = list->data.sequence.items.start;
             i < list->data.sequence.items.top; i++)
            read_signature(r, c, yaml_document_get_node(&r->doc, *i));
    list = get(r, root, "correlations");
    if (list && list->type != YAML_SEQUENCE_NODE)
        problem(r, list, "'correlations' must be a list");
    else if (list)
        for (size_t i = 0; i < seq_len(list); i++)
            read_correlation(r, c, seq_at(r, list, i));
}

int pb_catalog_add(pb_catalog *c, const char *name, const char *text,
                   size_t len, pb_error_fn fn, void *arg)
{
    yaml_parser_t p;
    reader r = {.name = name, .fn = fn, .arg = arg};

    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, &r.doc)) {
        char where[512], msg[512];
        snprintf(where, sizeof where, "%s:%zu:%zu", name,
                 p.problem_mark.line + 1, p.problem_mark.column + 1);
        snprintf(msg, sizeof msg, "YAML: %s", p.problem ? p.problem : "unreadable");
        if (fn)
            fn(arg, where, msg);
        yaml_parser_delete(&p);
        return 1;
    }
    read_doc(&r, c);
    yaml_document_delete(&r.doc);
    yaml_parser_delete(&p);
    return r.errors;
}

/* How strong an approval is: auto < canary < hitl. */
static int approval_rank(pb_approval a)
{
    return a == APPR_AUTO ? 0 : a == APPR_CANARY ? 1 : 2;
}

/* Every playbook a scenario proposes is defined, and the scenario asks
 * for no less approval than the playbook's least. */
static int link_playbooks(pb_catalog *c, pb_error_fn fn, void *arg)
{
    int errors = 0;
    char msg[300];

    for (size_t i = 0; i < c->n; i++) {
        const pb_scenario *s = &c->v[i];
        for (int k = 0; k < s->nsteps; k++) {
            const pb_step *st = &s->steps[k];
            const pb_playbook *p = pb_playbook_find(c, st->playbook);
            if (p && approval_rank(st->approval) >= approval_rank(p->approval))
                continue;
            if (p)
                snprintf(msg, sizeof msg, "scenario %s: %s asks for approval "
                         "%s; playbook %s %s (%s) needs at least %s", s->id,
                         st->playbook, pb_approval_name(st->approval), p->id,
                         p->version, pb_class_name(p->cls),
                         pb_approval_name(p->approval));
            else
                snprintf(msg, sizeof msg, "scenario %s: playbook '%s' is not "
                         "in the catalog (rules/playbooks.yaml)", s->id,
                         st->playbook);
            errors++;
            if (fn)
                fn(arg, st->where, msg);
        }
    }
    return errors;
}

/* A correlation's scenario and events exist once every file is read. */
static int link_correlations(pb_catalog *c, pb_error_fn fn, void *arg)
{
    int errors = 0;
    char msg[300];

    for (size_t i = 0; i < c->ncorrs; i++) {
        const pb_correlation *k = &c->corrs[i];
        if (!pb_find(c, k->scenario)) {
            snprintf(msg, sizeof msg, "correlation: scenario '%s' is not in "
                     "the catalog", k->scenario);
            errors++;
            if (fn)
                fn(arg, k->where, msg);
        }
        for (int j = 0; j < k->nevents; j++) {
            if (pb_signature_find(c, k->events[j]))
                continue;
            snprintf(msg, sizeof msg, "correlation %s: event '%s' is not a "
                     "signature of the catalog", k->scenario, k->events[j]);
            errors++;
            if (fn)
                fn(arg, k->where, msg);
        }
    }
    return errors;
}

/* Checks what crosses files: every scenario a signature, an example or an
 * Xid code names must exist once all files are read. */
/* The signatures' Hyperscan prefilter (rules/prefilter.h): taken from
 * the build's precompiled databases where the patterns are the built-in
 * ones, compiled otherwise. */
static int link_prefilter(pb_catalog *c)
{
    const char **pats = calloc(c->nsigs + 1, sizeof *pats);
    unsigned *sources = calloc(c->nsigs + 1, sizeof *sources);
    cs_err err;
    int rc = -1;

    if (!pats || !sources)
        goto out;
    for (size_t i = 0; i < c->nsigs; i++) {
        pats[i] = c->sigs[i].match;
        sources[i] = c->sigs[i].sources;
    }
    pfl_free(c->pf);
    c->pf = pfl_new(pats, sources, c->nsigs, pfl_embedded(), &err);
    rc = c->pf ? 0 : -1;
out:
    free(pats);
    free(sources);
    return rc;
}

const pfl *pb_prefilter(const pb_catalog *c)
{
    return c->pf;
}

int pb_catalog_link(pb_catalog *c, pb_error_fn fn, void *arg)
{
    int errors = 0;
    char where[600], msg[300];

    for (size_t i = 0; i < c->nsigs; i++) {
        const pb_signature *g = &c->sigs[i];
        if (g->scenario && !pb_find(c, g->scenario)) {
            snprintf(where, sizeof where, "%s:%d:1", g->file, g->line);
            snprintf(msg, sizeof msg, "signature %s: scenario '%s' is not in "
                     "the catalog", g->id, g->scenario);
            errors++;
            if (fn)
                fn(arg, where, msg);
        }
        for (int k = 0; k < g->nexamples; k++) {
            const char *sc = g->examples[k].scenario;
            if (sc && strcmp(sc, "none") && !pb_find(c, sc)) {
                snprintf(where, sizeof where, "%s:%d:1", g->file,
                         g->examples[k].line);
                snprintf(msg, sizeof msg, "example of %s: scenario '%s' is not "
                         "in the catalog", g->id, sc);
                errors++;
                if (fn)
                    fn(arg, where, msg);
            }
        }
    }
    errors += link_playbooks(c, fn, arg);
    errors += link_correlations(c, fn, arg);
    if (c->same_gpu && (!pb_find(c, c->same_gpu) || !pb_find(c, c->same_job))) {
        snprintf(msg, sizeof msg, "xid_tracked: scenario '%s' or '%s' is not "
                 "in the catalog", c->same_gpu, c->same_job);
        errors++;
        if (fn)
            fn(arg, c->tracked_where, msg);
    }
    for (size_t i = 0; i < c->nxids; i++)
        if (!pb_find(c, c->xids[i].scenario)) {
            snprintf(msg, sizeof msg, "xid_codes: scenario '%s' is not in the "
                     "catalog", c->xids[i].scenario);
            errors++;
            if (fn)
                fn(arg, c->xids[i].where, msg);
        }
    if (!errors && link_prefilter(c)) {
        errors++;
        if (fn)
            fn(arg, "rules", "out of memory building the prefilter");
    }
    return errors;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int yaml_file(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 5 && d->d_name[0] != '.' && !strcmp(d->d_name + n - 5, ".yaml");
}

int pb_catalog_load_dir(pb_catalog *c, const char *dir, pb_error_fn fn,
                        void *arg)
{
    struct dirent **names;
    int n = scandir(dir, &names, yaml_file, by_name), errors = 0;

    if (n < 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "cannot read the folder: %s", strerror(errno));
        if (fn)
            fn(arg, dir, msg);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char path[4096];
        FILE *f;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        free(names[i]);
        if (!(f = fopen(path, "rb"))) {
            if (fn)
                fn(arg, path, strerror(errno));
            errors++;
            continue;
        }
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        char buf[8192];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, f)) > 0)
            fwrite(buf, 1, got, m);
        fclose(m);
        fclose(f);
        errors += pb_catalog_add(c, path, text, len, fn, arg);
        free(text);
    }
    free(names);
    return errors + pb_catalog_link(c, fn, arg);
}

static void embedded_error(void *arg, const char *where, const char *msg)
{
    (void)arg;
    fprintf(stderr, "cascade: built-in rules: %s: %s\n", where, msg);
}

pb_catalog *pb_catalog_embedded(void)
{
    pb_catalog *c = pb_catalog_new();

    for (size_t i = 0; i < rules_embedded_count; i++)
        if (pb_catalog_add(c, rules_embedded[i].name, rules_embedded[i].text,
                           rules_embedded[i].len, embedded_error, NULL))
            abort(); /* unit.rules guards this at build time */
    if (pb_catalog_link(c, embedded_error, NULL))
        abort();
    return c;
}
