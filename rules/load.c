/* Reading a rule file: scenarios, signatures with their examples, Xid
 * maps (rules/catalog_priv.h); a whole folder, or the built-in set. */
#include "rules/playbooks.h"

#include <dirent.h>
#include <stddef.h>
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
#include "core/ydoc.h"

static const char *const targets[] = {"node", "job", "each_job", "none",
                                     "each_affected", "rack", "team"};
static const char *const fixes[] = {
    "none",    "exclude_node", "batch",       "activation",
    "alloc_conf", "ticket",    "workers",     "shm",
    "tolerations", "socket_ifname", "worker_memory", "same_config",
    "input_bound", "checkpoint_memory", "gcs_ft", "peak_hours", "idle_cost", "pipeline",
    "host_memory"};
static const char *const whens[] = {"always", "reserved", "elastic",
                                    "repeated", "gcs_ft", "no_gcs_ft",
                                    "thermal", "not_thermal"};
static const char *const field_names[] = {"host", "job",  "gpu",  "pci",
                                          "xid",  "rank", "nodes", "step",
                                          "pid",  "detail", "named"};

/* `params:` of an action: a flat mapping of scalars. */
static json_t *read_params(yd_doc *d, yaml_node_t *n)
{
    json_t *out;

    if (!n)
        return NULL;
    out = json_object();
    for (size_t i = 0; i < yd_len(n); i++) {
        yaml_node_t *k = yd_pair_key(d, n, i), *v = yd_pair_value(d, n, i);
        const char *name = yd_scalar(k), *text = yd_scalar(v);
        if (!name || !text || !cat_id_ok(name)) {
            yd_problem(d, v ? v : k, "params: '%s' must be a lower-case name "
                       "with a plain value", name ? name : "?");
            continue;
        }
        json_object_set_new(out, name, yd_json_scalar(text));
    }
    return out;
}

typedef struct step_in {
    const char *playbook, *category;
    int approval, target, fix, when;
    yaml_node_t *params;
} step_in;

#define AT(T, f) .off = offsetof(T, f)
#define ONE_OF(v) .names = v, .nnames = N(v)

static const yd_key step_keys[] = {
    {"playbook", YD_TEXT, YD_REQUIRED, AT(step_in, playbook)},
    {"approval", YD_ENUM, YD_REQUIRED, AT(step_in, approval),
     ONE_OF(cat_approvals), .bad = "approval '%s' is not auto, hitl or canary"},
    {"target", YD_ENUM, YD_REQUIRED, AT(step_in, target), ONE_OF(targets),
     .bad = "target '%s' is not node, job, each_job, each_affected, rack, "
            "team or none"},
    {"fix", YD_ENUM, 0, AT(step_in, fix), ONE_OF(fixes),
     .bad = "fix '%s' is not one of none, exclude_node, batch, activation, "
            "alloc_conf, ticket, workers, shm, tolerations, socket_ifname, "
            "worker_memory, same_config, input_bound, checkpoint_memory, "
            "gcs_ft, peak_hours, idle_cost, pipeline"},
    {"category", YD_TEXT, 0, AT(step_in, category)},
    {"when", YD_ENUM, 0, AT(step_in, when), ONE_OF(whens),
     .bad = "when '%s' is not always, reserved, elastic, repeated, gcs_ft, "
            "no_gcs_ft, thermal or not_thermal"},
    {"params", YD_MAP, 0, AT(step_in, params),
     .bad = "params must be a mapping of names to plain values"},
};
static const yd_table step_table = YD_TABLE("an action", step_keys);

static int read_step(yd_doc *d, yaml_node_t *n, pb_step *st)
{
    step_in in = {.fix = PB_FIX_NONE, .when = PB_WHEN_ALWAYS};
    int before = yd_errors(d);
    json_t *params;

    yd_read(d, n, &step_table, NULL, &in);
    if (in.playbook && !cat_id_ok(in.playbook))
        yd_problem(d, yd_get(d, n, "playbook"), "action: playbook '%s' is "
                   "not 'family.name'", in.playbook);
    if (in.fix == PB_FIX_TICKET && !in.category)
        yd_problem(d, n, "fix: ticket needs a category");
    params = read_params(d, in.params);
    if (yd_errors(d) != before) {
        json_decref(params);
        return -1;
    }
    st->params = params;
    yd_where(d, n, st->where, sizeof st->where);
    st->playbook = xstrdup(in.playbook);
    st->approval = (pb_approval)in.approval;
    st->target = (pb_target)in.target;
    st->fix = (pb_fix)in.fix;
    st->category = in.category ? xstrdup(in.category) : NULL;
    st->when = (pb_when)in.when;
    return 0;
}

typedef struct scenario_in {
    const char *id, *what, *todo;
    int node_level, root_actions;
    yaml_node_t *actions, *escalates;
} scenario_in;

static const yd_key scenario_keys[] = {
    {"id", YD_TEXT, YD_REQUIRED, AT(scenario_in, id)},
    {"node_level", YD_BOOL, 0, AT(scenario_in, node_level),
     .bad = "node_level must be true or false"},
    {"what", YD_TEXT, YD_REQUIRED, AT(scenario_in, what)},
    {"todo", YD_TEXT, YD_REQUIRED, AT(scenario_in, todo)},
    {"root_actions", YD_BOOL, 0, AT(scenario_in, root_actions),
     .bad = "root_actions must be true or false"},
    {"actions", YD_LIST, YD_REQUIRED, AT(scenario_in, actions),
     .bad = "actions must be a list"},
    {"escalates", YD_LIST, 0, AT(scenario_in, escalates),
     .bad = "escalates must be a list of scenario ids"},
};
static const yd_table scenario_table = YD_TABLE("a scenario", scenario_keys);

/* `escalates:` the ids; whether they name scenarios is checked once every
 * file is read (pb_catalog_link). */
static void read_escalates(yd_doc *d, yaml_node_t *list, pb_scenario *s)
{
    size_t n = yd_len(list);

    if (!n)
        return;
    s->escalates = xcalloc(n, sizeof *s->escalates);
    yd_where(d, list, s->escalates_where, sizeof s->escalates_where);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = yd_item(d, list, i);
        const char *id = yd_scalar(item);

        if (!id || !strchr(id, '.')) {
            yd_problem(d, item, "escalates: '%s' is not a scenario id",
                       id ? id : "");
            continue;
        }
        s->escalates[s->nescalates++] = xstrdup(id);
    }
}

static void read_scenario(yd_doc *d, pb_catalog *c, yaml_node_t *n)
{
    scenario_in in = {0};
    pb_scenario s = {0};
    pb_step *steps;
    char prefix[160];

    int before = yd_errors(d);

    cat_prefix(d, n, "scenario", "id", prefix, sizeof prefix);
    yd_read(d, n, &scenario_table, prefix, &in);
    if (in.id && !strchr(in.id, '.'))
        yd_problem(d, yd_get(d, n, "id"), "scenario: id '%s' is not "
                   "'family.name'", in.id);
    else if (in.id && pb_find(c, in.id))
        yd_problem(d, yd_get(d, n, "id"), "scenario '%s' defined twice", in.id);
    steps = xcalloc(yd_len(in.actions) + 1, sizeof *steps);
    for (size_t i = 0; i < yd_len(in.actions); i++)
        if (read_step(d, yd_item(d, in.actions, i), &steps[s.nsteps]) == 0)
            s.nsteps++;
    s.steps = steps;
    read_escalates(d, in.escalates, &s);
    if (yd_errors(d) != before) {
        cat_free_scenario(&s);
        return;
    }
    s.id = xstrdup(in.id);
    s.what = xstrdup(in.what);
    s.todo = xstrdup(in.todo);
    s.node_level = in.node_level;
    s.root_actions = in.root_actions;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->v = xrealloc(c->v, c->cap * sizeof *c->v);
    }
    c->v[c->n++] = s;
}

static int check_groups(yd_doc *d, yaml_node_t *at, pcre2_code *re)
{
    uint32_t count = 0, size = 0;
    PCRE2_SPTR table;
    int bad = 0;

    pcre2_pattern_info(re, PCRE2_INFO_NAMECOUNT, &count);
    pcre2_pattern_info(re, PCRE2_INFO_NAMEENTRYSIZE, &size);
    pcre2_pattern_info(re, PCRE2_INFO_NAMETABLE, &table);
    for (uint32_t i = 0; i < count; i++) {
        const char *name = (const char *)(table + i * size + 2);
        if (yd_pick(name, field_names, N(field_names)) < 0) {
            yd_problem(d, at, "match: field (?<%s>...) is not one of host, job, "
                       "gpu, pci, xid, rank, nodes, step, pid, detail, named", name);
            bad = 1;
        }
    }
    return bad ? -1 : 0;
}

/* An alert example's labels, as the JSON object the classifier reads. */
static char *labels_json(yd_doc *d, yaml_node_t *map)
{
    json_t *o = json_object();
    char *out;

    for (size_t i = 0; i < yd_len(map); i++) {
        const char *k = yd_scalar(yd_pair_key(d, map, i));
        const char *v = yd_scalar(yd_pair_value(d, map, i));
        if (k && v)
            json_object_set_new(o, k, json_string(v));
    }
    out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return out;
}

typedef struct example_in {
    const char *line, *scenario, *fact, *source, *detail;
    yaml_node_t *alert;
} example_in;

static const yd_key example_keys[] = {
    {"line", YD_TEXT, 0, AT(example_in, line)},
    {"alert", YD_MAP, 0, AT(example_in, alert),
     .bad = "alert: the labels of the alert, a mapping"},
    {"scenario", YD_TEXT, 0, AT(example_in, scenario)},
    {"fact", YD_TEXT, 0, AT(example_in, fact)},
    {"source", YD_TEXT, 0, AT(example_in, source)},
    {"detail", YD_TEXT, 0, AT(example_in, detail)},
};
static const yd_table example_table = YD_TABLE("an example", example_keys);

static int read_example(yd_doc *d, yaml_node_t *n, int source,
                        unsigned sources, pb_example *ex)
{
    example_in in = {0};
    sig_source es = (sig_source)source;
    int before = yd_errors(d);

    if (yd_read(d, n, &example_table, NULL, &in))
        return -1;
    if (source == SRC_ALERTMANAGER && !in.alert)
        yd_problem(d, n, "an alert signature's example needs 'alert': its "
                   "labels");
    else if (source != SRC_ALERTMANAGER && !in.line)
        yd_problem(d, n, "an example needs 'line': the text it must recognise");
    if (!in.scenario && !in.fact)
        yd_problem(d, n, "an example needs 'scenario' (or 'fact'): what it must "
                   "produce ('none' for a line that must open nothing)");
    if (in.fact && fact_parse(in.fact) < 0)
        yd_problem(d, yd_get(d, n, "fact"), "fact '%s' is not a fact kind",
                   in.fact);
    if (in.source && sources &&
        (sig_source_parse(in.source, &es) || !(sources & (1u << es))))
        yd_problem(d, yd_get(d, n, "source"), "example source '%s' is not one "
                   "of its signature's sources", in.source);
    if (yd_errors(d) != before)
        return -1;
    ex->source = (int)es;
    ex->text = in.line ? xstrdup(in.line) : labels_json(d, in.alert);
    ex->scenario = in.scenario ? xstrdup(in.scenario) : NULL;
    ex->fact = in.fact ? xstrdup(in.fact) : NULL;
    ex->detail = in.detail ? xstrdup(in.detail) : NULL;
    ex->line = yd_line(n);
    return 0;
}

/* One source name; 0 after reporting why it is not a text source. */
static unsigned one_source(yd_doc *d, yaml_node_t *v, const char *id,
                           sig_source *out)
{
    const char *name = yd_scalar(v);

    if (!name || sig_source_parse(name, out) || *out == SRC_METRIC ||
        *out == SRC_JOB || *out == SRC_INVENTORY) {
        yd_problem(d, v, "signature %s: source '%s' is not kernel, app, ray, "
                   "slurm, k8s or alertmanager", id, name ? name : "");
        return 0;
    }
    return 1u << *out;
}

/* `source: app` or `source: [ray, app]`: the same text reaches cascade
 * through more than one collector (Ray's OOM error printed in the
 * driver's stdout). Alert labels are not text: alertmanager stands alone.
 * *first gets the first source, the one examples arrive on by default. */
static unsigned read_sources(yd_doc *d, yaml_node_t *v, const char *id,
                             sig_source *first)
{
    unsigned mask = 0, m;
    sig_source s;

    if (v->type != YAML_SEQUENCE_NODE || !yd_len(v))
        return one_source(d, v, id, first);
    for (size_t i = 0; i < yd_len(v); i++) {
        if (!(m = one_source(d, yd_item(d, v, i), id, &s)))
            return 0;
        if (!mask)
            *first = s;
        mask |= m;
    }
    if ((mask & (1u << SRC_ALERTMANAGER)) && mask != 1u << SRC_ALERTMANAGER) {
        yd_problem(d, v, "signature %s: alertmanager reads alert labels, not "
                   "text; it cannot share a signature with other sources", id);
        return 0;
    }
    return mask;
}

typedef struct signature_in {
    const char *id, *fact, *scenario, *match;
    int report, fallback;
    yaml_node_t *source, *examples;
} signature_in;

static const yd_key signature_keys[] = {
    {"id", YD_TEXT, YD_REQUIRED, AT(signature_in, id)},
    {"source", YD_NODE, YD_REQUIRED, AT(signature_in, source)},
    {"fact", YD_TEXT, YD_REQUIRED, AT(signature_in, fact)},
    {"scenario", YD_TEXT, 0, AT(signature_in, scenario)},
    {"match", YD_TEXT, YD_REQUIRED, AT(signature_in, match)},
    {"report", YD_BOOL, 0, AT(signature_in, report),
     .bad = "report is true or false, not '%s'"},
    {"fallback", YD_BOOL, 0, AT(signature_in, fallback),
     .bad = "fallback is true or false, not '%s'"},
    {"examples", YD_LIST, YD_REQUIRED, AT(signature_in, examples),
     .bad = "'examples' must list at least one line and what it produces"},
};
static const yd_table signature_table = YD_TABLE("a signature",
                                                 signature_keys);

/* The pattern, compiled; NULL after reporting why it cannot be. */
static pcre2_code *compile_match(yd_doc *d, yaml_node_t *at, const char *id,
                                 const char *pat)
{
    PCRE2_UCHAR msg[160];
    PCRE2_SIZE eo;
    pcre2_code *re;
    int ec;

    if (!(re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, 0, &ec,
                             &eo, NULL))) {
        pcre2_get_error_message(ec, msg, sizeof msg);
        yd_problem(d, at, "signature %s: match: %s at offset %zu", id,
                   (char *)msg, (size_t)eo);
        return NULL;
    }
    if (check_groups(d, at, re) == 0)
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    return re;
}

/* What the signature's fields mean together; its examples. */
static void check_signature(yd_doc *d, const pb_catalog *c, yaml_node_t *n,
                            const signature_in *in, pb_signature *g)
{
    sig_source source = SRC_APP;

    if (pb_signature_find(c, in->id))
        yd_problem(d, yd_get(d, n, "id"), "signature '%s' defined twice", in->id);
    if (!(g->sources = read_sources(d, in->source, in->id, &source)))
        source = SRC_APP; /* examples are then checked as plain text */
    if (in->report && g->sources && !(g->sources & (1u << SRC_APP)))
        yd_problem(d, yd_get(d, n, "report"), "signature %s: report: only app "
                   "lines head reports (their indented lines follow per rank)",
                   in->id);
    if (!fact_from_text(fact_parse(in->fact)))
        yd_problem(d, yd_get(d, n, "fact"), "signature %s: fact '%s' is not a "
                   "fact kind a signature can make", in->id, in->fact);
    g->re = compile_match(d, yd_get(d, n, "match"), in->id, in->match);
    if (!yd_len(in->examples))
        yd_problem(d, in->examples, "signature %s: 'examples' must list at "
                   "least one line and what it produces", in->id);
    g->examples = xcalloc(yd_len(in->examples) + 1, sizeof *g->examples);
    for (size_t i = 0; i < yd_len(in->examples); i++)
        if (read_example(d, yd_item(d, in->examples, i), (int)source,
                         g->sources, &g->examples[g->nexamples]) == 0)
            g->nexamples++;
    g->source = (int)source;
}

static void read_signature(yd_doc *d, pb_catalog *c, yaml_node_t *n)
{
    signature_in in = {0};
    pb_signature g = {0};
    char prefix[160];
    int before = yd_errors(d);

    cat_prefix(d, n, "signature", "id", prefix, sizeof prefix);
    if (yd_read(d, n, &signature_table, prefix, &in) == 0)
        check_signature(d, c, n, &in, &g);
    if (yd_errors(d) != before) {
        cat_free_signature(&g);
        return;
    }
    g.id = xstrdup(in.id);
    g.fact = xstrdup(in.fact);
    g.kind = fact_parse(in.fact);
    g.scenario = in.scenario ? xstrdup(in.scenario) : NULL;
    g.match = xstrdup(in.match);
    g.report = in.report;
    g.fallback = in.fallback;
    g.file = xstrdup(yd_name(d));
    g.line = yd_line(n);
    cat_push_signature(c, &g);
}

/* One Xid code of a list, or 0 after reporting why it is not one. */
static long xid_code(yd_doc *d, yaml_node_t *cn, const char *what)
{
    const char *v = yd_scalar(cn);
    char *end;
    long code = v ? strtol(v, &end, 10) : 0;

    if (!v || *end || code <= 0 || code > 1000) {
        yd_problem(d, cn, "%s: '%s' is not an Xid code", what, v ? v : "");
        return 0;
    }
    return code;
}

typedef struct xids_in {
    yaml_node_t *codes;
    const char *scenario, *same_gpu, *same_job;
} xids_in;

static const yd_key xid_keys[] = {
    {"codes", YD_LIST, YD_REQUIRED, AT(xids_in, codes),
     .bad = "xid_codes: 'codes' must be a list of numbers"},
    {"scenario", YD_TEXT, YD_REQUIRED, AT(xids_in, scenario)},
};
static const yd_table xid_table = YD_TABLE("an xid_codes entry", xid_keys);

static int xid_mapped(yd_doc *d, const pb_catalog *c, yaml_node_t *cn,
                      long code)
{
    for (size_t x = 0; x < c->nxids; x++)
        if (c->xids[x].code == code) {
            yd_problem(d, cn, "xid_codes: Xid %ld mapped twice", code);
            return 1;
        }
    return 0;
}

/* xid_codes: [{codes: [79], scenario: hw.gpu_off_bus}, ...] */
static void read_xids(yd_doc *d, pb_catalog *c, yaml_node_t *list)
{
    for (size_t i = 0; i < yd_len(list); i++) {
        xids_in in = {0};
        if (yd_read(d, yd_item(d, list, i), &xid_table, NULL, &in))
            continue;
        for (size_t k = 0; k < yd_len(in.codes); k++) {
            yaml_node_t *cn = yd_item(d, in.codes, k);
            long code = xid_code(d, cn, "xid_codes");
            if (!code || xid_mapped(d, c, cn, code))
                continue;
            c->xids = xrealloc(c->xids, (c->nxids + 1) * sizeof *c->xids);
            yd_where(d, cn, c->xids[c->nxids].where,
                     sizeof c->xids[c->nxids].where);
            c->xids[c->nxids].code = (int)code;
            c->xids[c->nxids++].scenario = xstrdup(in.scenario);
        }
    }
}

static const yd_key tracked_keys[] = {
    {"codes", YD_LIST, YD_REQUIRED, AT(xids_in, codes),
     .bad = "xid_tracked: 'codes' must be a list of numbers"},
    {"same_gpu", YD_TEXT, YD_REQUIRED, AT(xids_in, same_gpu)},
    {"same_job", YD_TEXT, YD_REQUIRED, AT(xids_in, same_job)},
};
static const yd_table tracked_table = YD_TABLE("xid_tracked", tracked_keys);

/* xid_tracked: {codes: [13, 31, 43], same_gpu: id, same_job: id} */
static void read_tracked(yd_doc *d, pb_catalog *c, yaml_node_t *n)
{
    xids_in in = {0};

    if (yd_read(d, n, &tracked_table, NULL, &in))
        return;
    if (c->same_gpu) {
        yd_problem(d, n, "xid_tracked given twice");
        return;
    }
    for (size_t k = 0; k < yd_len(in.codes); k++) {
        yaml_node_t *cn = yd_item(d, in.codes, k);
        long code = xid_code(d, cn, "xid_tracked");
        if (!code)
            continue;
        if (c->ntracked == 16) {
            yd_problem(d, cn, "xid_tracked: at most 16 codes");
            continue;
        }
        c->tracked[c->ntracked++] = (int)code;
    }
    c->same_gpu = xstrdup(in.same_gpu);
    c->same_job = xstrdup(in.same_job);
    yd_where(d, n, c->tracked_where, sizeof c->tracked_where);
}

typedef struct doc_in {
    const char *family;
    yaml_node_t *scenarios, *signatures, *xids, *tracked, *playbooks,
        *correlations;
} doc_in;

static const yd_key doc_keys[] = {
    {"family", YD_TEXT, YD_REQUIRED, AT(doc_in, family)},
    {"scenarios", YD_LIST, 0, AT(doc_in, scenarios),
     .bad = "'scenarios' must be a list"},
    {"signatures", YD_LIST, 0, AT(doc_in, signatures),
     .bad = "'signatures' must be a list"},
    {"xid_codes", YD_LIST, 0, AT(doc_in, xids),
     .bad = "'xid_codes' must be a list of {codes, scenario}"},
    {"xid_tracked", YD_MAP, 0, AT(doc_in, tracked),
     .bad = "'xid_tracked' is {codes: [..], same_gpu: id, same_job: id}"},
    {"playbooks", YD_LIST, 0, AT(doc_in, playbooks),
     .bad = "'playbooks' must be a list"},
    {"correlations", YD_LIST, 0, AT(doc_in, correlations),
     .bad = "'correlations' must be a list"},
};
static const yd_table doc_table = YD_TABLE("a rule file", doc_keys);

static void read_doc(yd_doc *d, pb_catalog *c)
{
    doc_in in = {0};

    yd_read(d, yd_root(d), &doc_table, NULL, &in);
    for (size_t i = 0; i < yd_len(in.scenarios); i++)
        read_scenario(d, c, yd_item(d, in.scenarios, i));
    if (in.xids)
        read_xids(d, c, in.xids);
    if (in.tracked)
        read_tracked(d, c, in.tracked);
    for (size_t i = 0; i < yd_len(in.playbooks); i++)
        cat_read_playbook(d, c, yd_item(d, in.playbooks, i));
    for (size_t i = 0; i < yd_len(in.signatures); i++)
        read_signature(d, c, yd_item(d, in.signatures, i));
    for (size_t i = 0; i < yd_len(in.correlations); i++)
        cat_read_correlation(d, c, yd_item(d, in.correlations, i));
}

int pb_catalog_add(pb_catalog *c, const char *name, const char *text,
                   size_t len, pb_error_fn fn, void *arg)
{
    yd_doc *d = yd_parse(name, text, len, fn, arg);
    int errors;

    if (!d)
        return 1;
    read_doc(d, c);
    errors = yd_errors(d);
    yd_free(d);
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
