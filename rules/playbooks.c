#include "rules/playbooks.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "rules/rules_embedded.h"

struct pb_catalog {
    pb_scenario *v;
    size_t n, cap;
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
    }
    free((pb_step *)s->steps);
    free((char *)s->id);
    free((char *)s->what);
    free((char *)s->todo);
}

void pb_catalog_free(pb_catalog *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        free_scenario(&c->v[i]);
    free(c->v);
    free(c);
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
static const char *const targets[] = {"node", "job", "each_job", "none"};
static const char *const fixes[] = {"none", "exclude_node", "batch",
                                    "activation", "alloc_conf", "ticket"};
#define N(a) ((int)(sizeof a / sizeof *a))

static int read_step(reader *r, yaml_node_t *n, pb_step *st)
{
    static const char *const keys[] = {"playbook", "approval", "target", "fix",
                                       "category", NULL};
    const char *pbk, *v;
    int a, t, f = PB_FIX_NONE, before = r->errors;

    if (!n || n->type != YAML_MAPPING_NODE) {
        problem(r, n, "an action must be a mapping (playbook, approval, target)");
        return -1;
    }
    only_keys(r, n, "an action", keys);
    pbk = scalar(get(r, n, "playbook"));
    if (!pbk || !strchr(pbk, '.'))
        problem(r, n, "action: playbook missing or not 'family.name'");
    v = scalar(get(r, n, "approval"));
    if ((a = pick(v, approvals, N(approvals))) < 0)
        problem(r, node_or(get(r, n, "approval"), n),
                "approval '%s' is not auto, hitl or canary", v ? v : "");
    v = scalar(get(r, n, "target"));
    if ((t = pick(v, targets, N(targets))) < 0)
        problem(r, node_or(get(r, n, "target"), n),
                "target '%s' is not node, job, each_job or none", v ? v : "");
    if ((v = scalar(get(r, n, "fix"))) && (f = pick(v, fixes, N(fixes))) < 0)
        problem(r, get(r, n, "fix"), "fix '%s' is not one of none, "
                "exclude_node, batch, activation, alloc_conf, ticket", v);
    v = scalar(get(r, n, "category"));
    if (f == PB_FIX_TICKET && !v)
        problem(r, n, "fix: ticket needs a category");
    if (r->errors != before)
        return -1;
    st->playbook = strdup(pbk);
    st->approval = (pb_approval)a;
    st->target = (pb_target)t;
    st->fix = (pb_fix)f;
    st->category = v ? strdup(v) : NULL;
    return 0;
}

static void read_scenario(reader *r, pb_catalog *c, yaml_node_t *n)
{
    static const char *const keys[] = {"id", "node_level", "what", "todo",
                                       "actions", NULL};
    const char *id = scalar(get(r, n, "id"));
    yaml_node_t *acts = get(r, n, "actions");
    const char *nl = scalar(get(r, n, "node_level"));
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
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->v = realloc(c->v, c->cap * sizeof *c->v);
        if (!c->v)
            abort();
    }
    c->v[c->n++] = s;
}

static void read_doc(reader *r, pb_catalog *c)
{
    static const char *const keys[] = {"family", "scenarios", NULL};
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
    if (!list || list->type != YAML_SEQUENCE_NODE) {
        problem(r, node_or(list, root), "'scenarios' must be a list");
        return;
    }
    for (yaml_node_item_t *i = list->data.sequence.items.start;
         i < list->data.sequence.items.top; i++)
        read_scenario(r, c, yaml_document_get_node(&r->doc, *i));
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
    return errors;
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
    return c;
}
