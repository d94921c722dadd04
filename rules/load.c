/* Reading a rule file: scenarios, signatures with their examples, Xid
 * maps (rules/catalog_priv.h); a whole folder, or the built-in set. */
#include "rules/playbooks.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "rules/catalog_priv.h"
#include "rules/fact.h"
#include "rules/rules_embedded.h"
#include "core/mem.h"

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
static const char *const field_names[] = {"host", "job",  "gpu",  "pci",
                                          "xid",  "rank", "nodes", "step",
                                          "pid",  "detail", NULL};

/* `params:` of an action: a flat mapping of scalars. */
static json_t *read_params(reader *r, yaml_node_t *n)
{
    json_t *out;

    if (!n)
        return NULL;
    if (n->type != YAML_MAPPING_NODE) {
        yr_problem(r, n, "params must be a mapping of names to plain values");
        return NULL;
    }
    out = json_object();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&r->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(&r->doc, p->value);
        const char *name = yr_scalar(k), *text = yr_scalar(v);
        if (!name || !text || !yr_playbook_id_ok(name)) {
            yr_problem(r, v ? v : k, "params: '%s' must be a lower-case name with "
                    "a plain value", name ? name : "?");
            continue;
        }
        json_object_set_new(out, name, yr_json_scalar(text));
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
        yr_problem(r, n, "an action must be a mapping (playbook, approval, target)");
        return -1;
    }
    yr_only_keys(r, n, "an action", keys);
    pbk = yr_scalar(yr_get(r, n, "playbook"));
    if (!yr_playbook_id_ok(pbk))
        yr_problem(r, yr_node_or(yr_get(r, n, "playbook"), n),
                "action: playbook missing or not 'family.name'");
    v = yr_scalar(yr_get(r, n, "approval"));
    if ((a = yr_pick(v, cat_approvals, N(cat_approvals))) < 0)
        yr_problem(r, yr_node_or(yr_get(r, n, "approval"), n),
                "approval '%s' is not auto, hitl or canary", v ? v : "");
    v = yr_scalar(yr_get(r, n, "target"));
    if ((t = yr_pick(v, targets, N(targets))) < 0)
        yr_problem(r, yr_node_or(yr_get(r, n, "target"), n),
                "target '%s' is not node, job, each_job, each_affected, "
                "rack or none", v ? v : "");
    if ((v = yr_scalar(yr_get(r, n, "fix"))) && (f = yr_pick(v, fixes, N(fixes))) < 0)
        yr_problem(r, yr_get(r, n, "fix"), "fix '%s' is not one of none, "
                "exclude_node, batch, activation, alloc_conf, ticket, workers, "
                "shm, tolerations, socket_ifname, worker_memory, same_config, "
                "input_bound, checkpoint_memory, gcs_ft", v);
    if ((v = yr_scalar(yr_get(r, n, "when"))) && (w = yr_pick(v, whens, N(whens))) < 0)
        yr_problem(r, yr_get(r, n, "when"), "when '%s' is not always, reserved, "
                "elastic, repeated, gcs_ft or no_gcs_ft", v);
    v = yr_scalar(yr_get(r, n, "category"));
    if (f == PB_FIX_TICKET && !v)
        yr_problem(r, n, "fix: ticket needs a category");
    json_t *params = read_params(r, yr_get(r, n, "params"));
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
    const char *id = yr_scalar(yr_get(r, n, "id"));
    yaml_node_t *acts = yr_get(r, n, "actions");
    const char *nl = yr_scalar(yr_get(r, n, "node_level"));
    const char *ra = yr_scalar(yr_get(r, n, "root_actions"));
    pb_scenario s = {0};
    pb_step *steps;
    int before = r->errors;

    if (!n || n->type != YAML_MAPPING_NODE) {
        yr_problem(r, n, "a scenario must be a mapping (id, what, todo, actions)");
        return;
    }
    yr_only_keys(r, n, "a scenario", keys);
    if (!id || !strchr(id, '.'))
        yr_problem(r, n, "scenario: id missing or not 'family.name'");
    else if (pb_find(c, id))
        yr_problem(r, yr_get(r, n, "id"), "scenario '%s' defined twice", id);
    if (!yr_scalar(yr_get(r, n, "what")) || !yr_scalar(yr_get(r, n, "todo")))
        yr_problem(r, n, "scenario %s: 'what' and 'todo' (the summary) are "
                      "required", id ? id : "?");
    if (nl && strcmp(nl, "true") && strcmp(nl, "false"))
        yr_problem(r, yr_get(r, n, "node_level"), "node_level must be true or false");
    if (ra && strcmp(ra, "true") && strcmp(ra, "false"))
        yr_problem(r, yr_get(r, n, "root_actions"), "root_actions must be true or "
                "false");
    if (!acts || acts->type != YAML_SEQUENCE_NODE) {
        yr_problem(r, yr_node_or(acts, n), "scenario %s: actions must be a list", id ? id : "?");
        return;
    }
    steps = xcalloc((size_t)(acts->data.sequence.items.top -
                            acts->data.sequence.items.start) + 1, sizeof *steps);
    for (yaml_node_item_t *i = acts->data.sequence.items.start;
         i < acts->data.sequence.items.top; i++)
        if (read_step(r, yaml_document_get_node(&r->doc, *i), &steps[s.nsteps]) == 0)
            s.nsteps++;
    s.steps = steps;
    if (r->errors != before) {
        cat_free_scenario(&s);
        return;
    }
    s.id = strdup(id);
    s.what = strdup(yr_scalar(yr_get(r, n, "what")));
    s.todo = strdup(yr_scalar(yr_get(r, n, "todo")));
    s.node_level = nl && !strcmp(nl, "true");
    s.root_actions = ra && !strcmp(ra, "true");
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->v = xrealloc(c->v, c->cap * sizeof *c->v);
    }
    c->v[c->n++] = s;
}

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
            yr_problem(r, at, "match: field (?<%s>...) is not one of host, job, "
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
        const char *k = yr_scalar(yaml_document_get_node(&r->doc, p->key));
        const char *v = yr_scalar(yaml_document_get_node(&r->doc, p->value));
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
    const char *esrc = yr_scalar(yr_get(r, n, "source"));
    sig_source es = (sig_source)source;
    yaml_node_t *alert = yr_get(r, n, "alert");
    const char *line = yr_scalar(yr_get(r, n, "line"));
    const char *sc = yr_scalar(yr_get(r, n, "scenario"));
    const char *kind = yr_scalar(yr_get(r, n, "fact"));
    const char *detail = yr_scalar(yr_get(r, n, "detail"));
    int before = r->errors;

    if (!n || n->type != YAML_MAPPING_NODE) {
        yr_problem(r, n, "an example is a mapping: line (or alert) and scenario");
        return -1;
    }
    yr_only_keys(r, n, "an example", keys);
    if (source == SRC_ALERTMANAGER && (!alert || alert->type != YAML_MAPPING_NODE))
        yr_problem(r, n, "an alert signature's example needs 'alert': its labels");
    else if (source != SRC_ALERTMANAGER && !line)
        yr_problem(r, n, "an example needs 'line': the text it must recognise");
    if (!sc && !kind)
        yr_problem(r, n, "an example needs 'scenario' (or 'fact'): what it must "
                      "produce ('none' for a line that must open nothing)");
    if (kind && fact_parse(kind) < 0)
        yr_problem(r, yr_get(r, n, "fact"), "fact '%s' is not a fact kind", kind);
    if (esrc && sources &&
        (sig_source_parse(esrc, &es) || !(sources & (1u << es))))
        yr_problem(r, yr_get(r, n, "source"), "example source '%s' is not one of "
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

/* One source name; 0 after reporting why it is not a text source. */
static unsigned one_source(reader *r, yaml_node_t *v, const char *id,
                           sig_source *out)
{
    const char *name = yr_scalar(v);

    if (!name || sig_source_parse(name, out) || *out == SRC_METRIC ||
        *out == SRC_JOB || *out == SRC_INVENTORY) {
        yr_problem(r, v, "signature %s: source '%s' is not kernel, app, ray, "
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
    yaml_node_t *v = yr_get(r, n, "source");
    unsigned mask = 0, m;
    sig_source s;

    if (!v || v->type != YAML_SEQUENCE_NODE ||
        v->data.sequence.items.top == v->data.sequence.items.start)
        return one_source(r, yr_node_or(v, n), id, first);
    for (yaml_node_item_t *i = v->data.sequence.items.start;
         i < v->data.sequence.items.top; i++) {
        if (!(m = one_source(r, yaml_document_get_node(&r->doc, *i), id, &s)))
            return 0;
        if (!mask)
            *first = s;
        mask |= m;
    }
    if ((mask & (1u << SRC_ALERTMANAGER)) && mask != 1u << SRC_ALERTMANAGER) {
        yr_problem(r, v, "signature %s: alertmanager reads alert labels, not "
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
    const char *id = yr_scalar(yr_get(r, n, "id")), *kind, *sc, *pat, *rep;
    yaml_node_t *exs = yr_get(r, n, "examples");
    pb_signature g = {0};
    sig_source source = SRC_APP;
    int before = r->errors, ec;
    unsigned sources;
    PCRE2_SIZE eo;

    if (!n || n->type != YAML_MAPPING_NODE) {
        yr_problem(r, n, "a signature is a mapping (id, source, fact, match, "
                      "examples)");
        return;
    }
    yr_only_keys(r, n, "a signature", keys);
    kind = yr_scalar(yr_get(r, n, "fact"));
    sc = yr_scalar(yr_get(r, n, "scenario"));
    pat = yr_scalar(yr_get(r, n, "match"));
    rep = yr_scalar(yr_get(r, n, "report"));
    if (!id || !*id)
        yr_problem(r, n, "signature: 'id' is required");
    else if (pb_signature_find(c, id))
        yr_problem(r, yr_get(r, n, "id"), "signature '%s' defined twice", id);
    if (!(sources = read_sources(r, n, id, &source)))
        source = SRC_APP; /* examples are then checked as plain text */
    if (rep && strcmp(rep, "true") && strcmp(rep, "false"))
        yr_problem(r, yr_get(r, n, "report"), "signature %s: report is true or "
                "false, not '%s'", id ? id : "?", rep);
    else if (rep && !strcmp(rep, "true") && sources &&
             !(sources & (1u << SRC_APP)))
        yr_problem(r, yr_get(r, n, "report"), "signature %s: report: only app "
                "lines head reports (their indented lines follow per rank)",
                id ? id : "?");
    if (!kind || !fact_from_text(fact_parse(kind)))
        yr_problem(r, yr_node_or(yr_get(r, n, "fact"), n), "signature %s: fact '%s' is "
                "not a fact kind a signature can make", id ? id : "?",
                kind ? kind : "");
    if (!pat) {
        yr_problem(r, n, "signature %s: 'match' (a PCRE2 pattern) is required",
                id ? id : "?");
    } else if (!(g.re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
                                      0, &ec, &eo, NULL))) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        yr_problem(r, yr_get(r, n, "match"), "signature %s: match: %s at offset %zu",
                id ? id : "?", (char *)msg, (size_t)eo);
    } else if (check_groups(r, yr_get(r, n, "match"), g.re) == 0) {
        pcre2_jit_compile(g.re, PCRE2_JIT_COMPLETE);
    }
    if (!exs || exs->type != YAML_SEQUENCE_NODE ||
        exs->data.sequence.items.top == exs->data.sequence.items.start) {
        yr_problem(r, yr_node_or(exs, n), "signature %s: 'examples' must list at "
                "least one line and what it produces", id ? id : "?");
    } else {
        g.examples = xcalloc((size_t)(exs->data.sequence.items.top -
                                     exs->data.sequence.items.start),
                            sizeof *g.examples);
        for (yaml_node_item_t *i = exs->data.sequence.items.start;
             i < exs->data.sequence.items.top; i++)
            if (read_example(r, yaml_document_get_node(&r->doc, *i),
                             (int)source, sources,
                             &g.examples[g.nexamples]) == 0)
                g.nexamples++;
    }
    if (r->errors != before) {
        cat_free_signature(&g);
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
    cat_push_signature(c, &g);
}

/* One Xid code of a list, or 0 after reporting why it is not one. */
static long xid_code(reader *r, yaml_node_t *cn, const char *what)
{
    const char *v = yr_scalar(cn);
    char *end;
    long code = v ? strtol(v, &end, 10) : 0;

    if (!v || *end || code <= 0 || code > 1000) {
        yr_problem(r, cn, "%s: '%s' is not an Xid code", what, v ? v : "");
        return 0;
    }
    return code;
}

/* xid_codes: [{codes: [79], scenario: hw.gpu_off_bus}, ...] */
static void read_xids(reader *r, pb_catalog *c, yaml_node_t *list)
{
    if (list->type != YAML_SEQUENCE_NODE) {
        yr_problem(r, list, "'xid_codes' must be a list of {codes, scenario}");
        return;
    }
    for (yaml_node_item_t *i = list->data.sequence.items.start;
         i < list->data.sequence.items.top; i++) {
        static const char *const keys[] = {"codes", "scenario", NULL};
        yaml_node_t *n = yaml_document_get_node(&r->doc, *i), *codes;
        const char *sc;
        if (!n || n->type != YAML_MAPPING_NODE) {
            yr_problem(r, n, "an xid_codes entry is {codes: [..], scenario: id}");
            continue;
        }
        yr_only_keys(r, n, "an xid_codes entry", keys);
        sc = yr_scalar(yr_get(r, n, "scenario"));
        codes = yr_get(r, n, "codes");
        if (!sc) {
            yr_problem(r, n, "xid_codes: 'scenario' is required");
            continue;
        }
        if (!codes || codes->type != YAML_SEQUENCE_NODE) {
            yr_problem(r, yr_node_or(codes, n), "xid_codes: 'codes' must be a list of "
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
                    yr_problem(r, cn, "xid_codes: Xid %ld mapped twice", code);
                    code = 0;
                }
            if (!code)
                continue;
            c->xids = xrealloc(c->xids, (c->nxids + 1) * sizeof *c->xids);
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
    yaml_node_t *codes = yr_get(r, n, "codes");
    const char *g = yr_scalar(yr_get(r, n, "same_gpu")), *j = yr_scalar(yr_get(r, n, "same_job"));

    if (n->type != YAML_MAPPING_NODE) {
        yr_problem(r, n, "'xid_tracked' is {codes: [..], same_gpu: id, same_job: id}");
        return;
    }
    yr_only_keys(r, n, "xid_tracked", keys);
    if (!g || !j || !codes || codes->type != YAML_SEQUENCE_NODE) {
        yr_problem(r, n, "xid_tracked needs codes (a list), same_gpu and same_job");
        return;
    }
    if (c->same_gpu) {
        yr_problem(r, n, "xid_tracked given twice");
        return;
    }
    for (yaml_node_item_t *k = codes->data.sequence.items.start;
         k < codes->data.sequence.items.top; k++) {
        yaml_node_t *cn = yaml_document_get_node(&r->doc, *k);
        long code = xid_code(r, cn, "xid_tracked");
        if (!code)
            continue;
        if (c->ntracked == 16) {
            yr_problem(r, cn, "xid_tracked: at most 16 codes");
            continue;
        }
        c->tracked[c->ntracked++] = (int)code;
    }
    c->same_gpu = strdup(g);
    c->same_job = strdup(j);
    snprintf(c->tracked_where, sizeof c->tracked_where, "%s:%zu:%zu", r->name,
             n->start_mark.line + 1, n->start_mark.column + 1);
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
        yr_problem(r, root, "a rule file is a mapping with 'family' and "
                         "'scenarios'");
        return;
    }
    yr_only_keys(r, root, "a rule file", keys);
    if (!yr_scalar(yr_get(r, root, "family")))
        yr_problem(r, root, "'family' is required");
    list = yr_get(r, root, "scenarios");
    if (list && list->type != YAML_SEQUENCE_NODE)
        yr_problem(r, list, "'scenarios' must be a list");
    else if (list)
        for (yaml_node_item_t *i = list->data.sequence.items.start;
             i < list->data.sequence.items.top; i++)
            read_scenario(r, c, yaml_document_get_node(&r->doc, *i));
    if ((list = yr_get(r, root, "xid_codes")))
        read_xids(r, c, list);
    if ((list = yr_get(r, root, "xid_tracked")))
        read_tracked(r, c, list);
    list = yr_get(r, root, "playbooks");
    if (list && list->type != YAML_SEQUENCE_NODE)
        yr_problem(r, list, "'playbooks' must be a list");
    else if (list)
        for (size_t i = 0; i < yr_seq_len(list); i++)
            cat_read_playbook(r, c, yr_seq_at(r, list, i));
    list = yr_get(r, root, "signatures");
    if (list && list->type != YAML_SEQUENCE_NODE)
        yr_problem(r, list, "'signatures' must be a list");
    else if (list)
        for (yaml_node_item_t *i = list->data.sequence.items.start;
             i < list->data.sequence.items.top; i++)
            read_signature(r, c, yaml_document_get_node(&r->doc, *i));
    list = yr_get(r, root, "correlations");
    if (list && list->type != YAML_SEQUENCE_NODE)
        yr_problem(r, list, "'correlations' must be a list");
    else if (list)
        for (size_t i = 0; i < yr_seq_len(list); i++)
            cat_read_correlation(r, c, yr_seq_at(r, list, i));
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
