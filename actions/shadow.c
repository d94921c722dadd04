#include "actions/shadow.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/str.h"
#include "core/ts.h"

typedef struct item {
    char playbook[64], node[128], job[128], incident[64], by[64];
    int64_t from, to; /* proposal: the incident's span; operator: ts, ts */
    int matched;      /* index + 1 of what it matched, 0 none */
} item;

typedef struct vec {
    item *v;
    size_t n, cap;
} vec;

struct shadow {
    int64_t window;
    vec prop, ops;
};

static item *push(vec *v)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        item *nv = xrealloc(v->v, cap * sizeof *nv);
        v->v = nv;
        v->cap = cap;
    }
    memset(&v->v[v->n], 0, sizeof v->v[0]);
    return &v->v[v->n++];
}

shadow *shadow_new(int64_t window_us)
{
    shadow *s = xcalloc(1, sizeof *s);
    s->window = window_us;
    return s;
}

void shadow_free(shadow *s)
{
    if (!s)
        return;
    free(s->prop.v);
    free(s->ops.v);
    free(s);
}

static const char *str(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

static int when(const json_t *v, int64_t *out)
{
    if (json_is_string(v))
        return ts_parse_rfc3339(json_string_value(v), out);
    if (json_is_number(v))
        return ts_from_epoch(json_number_value(v), out);
    return -1;
}

int shadow_add_incident(shadow *s, const char *line, size_t len, cs_err *err)
{
    json_error_t je;
    json_t *inc = json_loadb(line, len, 0, &je), *a;
    int64_t opened, updated;
    size_t i;

    if (!json_is_object(inc) || !json_is_array(json_object_get(inc, "actions")) ||
        when(json_object_get(inc, "opened"), &opened)) {
        cs_err_set(err, "not an incident (id, opened, actions): %.200s",
                   inc ? "fields missing" : je.text);
        json_decref(inc);
        return -1;
    }
    if (when(json_object_get(inc, "updated"), &updated) || updated < opened)
        updated = opened;
    json_array_foreach(json_object_get(inc, "actions"), i, a) {
        const json_t *t = json_object_get(a, "target");
        item *p = push(&s->prop);
        str_copy(p->playbook, sizeof p->playbook, str(a, "playbook"));
        str_copy(p->node, sizeof p->node, str(t, "node"));
        str_copy(p->job, sizeof p->job, str(t, "job"));
        str_copy(p->incident, sizeof p->incident, str(inc, "id"));
        p->from = opened;
        p->to = updated;
    }
    json_decref(inc);
    return 0;
}

int shadow_add_operator(shadow *s, const char *line, size_t len, cs_err *err)
{
    json_error_t je;
    json_t *o;
    item *op;
    int64_t ts;
    size_t skip = strspn(line, " \t\r\n");

    if (skip >= len || line[skip] == '#')
        return 0;
    if (!(o = json_loadb(line, len, 0, &je)) || !json_is_object(o)) {
        cs_err_set(err, "not a JSON object: %.200s", o ? "" : je.text);
        json_decref(o);
        return -1;
    }
    if (!*str(o, "playbook")) {
        cs_err_set(err, "no \"playbook\" (the action taken, e.g. node.drain)");
    } else if (when(json_object_get(o, "ts"), &ts)) {
        cs_err_set(err, "\"ts\" is missing or not RFC 3339 / epoch seconds");
    } else {
        op = push(&s->ops);
        str_copy(op->playbook, sizeof op->playbook, str(o, "playbook"));
        str_copy(op->node, sizeof op->node, str(o, "node"));
        str_copy(op->job, sizeof op->job, str(o, "job"));
        str_copy(op->by, sizeof op->by, str(o, "by"));
        op->from = op->to = ts;
        json_decref(o);
        return 0;
    }
    json_decref(o);
    return -1;
}

static int same(const char *a, const char *b)
{
    return !*a || !*b || !strcmp(a, b);
}

static int matches(const shadow *s, const item *p, const item *op)
{
    return !strcmp(p->playbook, op->playbook) && same(p->node, op->node) &&
           same(p->job, op->job) && op->from >= p->from - s->window &&
           op->from <= p->to + s->window;
}

static int by_time(const void *a, const void *b)
{
    const item *x = a, *y = b;
    return (x->from > y->from) - (x->from < y->from);
}

void shadow_run(shadow *s, shadow_score *out)
{
    qsort(s->ops.v, s->ops.n, sizeof *s->ops.v, by_time);
    qsort(s->prop.v, s->prop.n, sizeof *s->prop.v, by_time);
    for (size_t i = 0; i < s->prop.n; i++)
        s->prop.v[i].matched = 0;
    for (size_t j = 0; j < s->ops.n; j++)
        s->ops.v[j].matched = 0;
    memset(out, 0, sizeof *out);
    /* operators' actions in time order, each to the earliest open
     * proposal it fits: a greedy one-to-one pairing */
    for (size_t j = 0; j < s->ops.n; j++)
        for (size_t i = 0; i < s->prop.n; i++)
            if (!s->prop.v[i].matched && matches(s, &s->prop.v[i], &s->ops.v[j])) {
                s->prop.v[i].matched = (int)j + 1;
                s->ops.v[j].matched = (int)i + 1;
                out->matched++;
                break;
            }
    out->proposals = s->prop.n;
    out->operator_actions = s->ops.n;
    out->match_rate = s->prop.n ? (double)out->matched / (double)s->prop.n : 0;
    out->coverage = s->ops.n ? (double)out->matched / (double)s->ops.n : 0;
}

static void target(const item *it, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s%s", *it->node ? "node " : "", it->node,
             *it->job ? (*it->node ? ", job " : "job ") : "", it->job);
}

static json_t *item_json(const item *it, int proposal)
{
    char t[40];

    ts_format(it->from, t, sizeof t);
    return json_pack("{s:s, s:s?, s:s?, s:s, s:s?}", "playbook", it->playbook,
                     "node", *it->node ? it->node : NULL, "job",
                     *it->job ? it->job : NULL, proposal ? "opened" : "ts", t,
                     proposal ? "incident" : "by",
                     proposal ? it->incident : (*it->by ? it->by : NULL));
}

void shadow_print(const shadow *s, const shadow_score *sc, int json, FILE *f)
{
    char t[40], tg[300];

    if (json) {
        json_t *un = json_array(), *miss = json_array();
        for (size_t i = 0; i < s->prop.n; i++)
            if (!s->prop.v[i].matched)
                json_array_append_new(un, item_json(&s->prop.v[i], 1));
        for (size_t j = 0; j < s->ops.n; j++)
            if (!s->ops.v[j].matched)
                json_array_append_new(miss, item_json(&s->ops.v[j], 0));
        json_t *o = json_pack("{s:I, s:I, s:I, s:f, s:f, s:o, s:o}", "proposals",
                              (json_int_t)sc->proposals, "operator_actions",
                              (json_int_t)sc->operator_actions, "matched",
                              (json_int_t)sc->matched, "match_rate", sc->match_rate,
                              "coverage", sc->coverage, "unmatched_proposals", un,
                              "missed_operator_actions", miss);
        json_dumpf(o, f, JSON_COMPACT);
        fputc('\n', f);
        json_decref(o);
        return;
    }
    fprintf(f, "proposals %zu, operator actions %zu, matched %zu\n"
               "match rate %.1f%% (proposals an operator also took)\n"
               "coverage   %.1f%% (operator actions cascade proposed)\n",
            sc->proposals, sc->operator_actions, sc->matched,
            100 * sc->match_rate, 100 * sc->coverage);
    for (size_t i = 0; i < s->prop.n; i++)
        if (!s->prop.v[i].matched) {
            ts_format(s->prop.v[i].from, t, sizeof t);
            target(&s->prop.v[i], tg, sizeof tg);
            fprintf(f, "proposed, not taken: %s %s (%s, %s)\n",
                    s->prop.v[i].playbook, tg, s->prop.v[i].incident, t);
        }
    for (size_t j = 0; j < s->ops.n; j++)
        if (!s->ops.v[j].matched) {
            ts_format(s->ops.v[j].from, t, sizeof t);
            target(&s->ops.v[j], tg, sizeof tg);
            fprintf(f, "taken, not proposed: %s %s (%s%s%s)\n",
                    s->ops.v[j].playbook, tg, t, *s->ops.v[j].by ? " by " : "",
                    s->ops.v[j].by);
        }
}
