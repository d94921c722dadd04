/* Reading YAML files (core/ydoc.h). */
#include "core/ydoc.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/str.h"

struct yd_doc {
    char *name;
    yaml_document_t doc;
    yd_sink fn;
    void *arg;
    int errors;
};

static void tell(yd_sink fn, void *arg, const char *name, size_t line,
                 size_t col, const char *msg)
{
    char where[512];

    snprintf(where, sizeof where, "%s:%zu:%zu", name, line, col);
    if (fn)
        fn(arg, where, msg);
}

/* The parser's problem, as FILE:LINE:COL: YAML: what. */
static void tell_parser(yd_sink fn, void *arg, const char *name,
                        const yaml_parser_t *p)
{
    char msg[512];

    snprintf(msg, sizeof msg, "YAML: %s%s%s",
             p->problem ? p->problem : "unreadable", p->context ? " " : "",
             p->context ? p->context : "");
    tell(fn, arg, name, p->problem_mark.line + 1, p->problem_mark.column + 1,
         msg);
}

/* A pass over the events before the document is built: a file nested
 * thousands deep froze the loop for 21 s on a reload, and a second
 * document after "---" was silently not read. 0, or -1 reported. */
static int check_shape(const char *name, const char *text, size_t len,
                       yd_sink fn, void *arg)
{
    yaml_parser_t p;
    yaml_event_t ev;
    int depth = 0, docs = 0, rc = 0, done = 0;
    char msg[160];

    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    while (!done && rc == 0) {
        if (!yaml_parser_parse(&p, &ev)) {
            tell_parser(fn, arg, name, &p);
            rc = -1;
            break;
        }
        if (ev.type == YAML_SEQUENCE_START_EVENT ||
            ev.type == YAML_MAPPING_START_EVENT)
            depth++;
        else if (ev.type == YAML_SEQUENCE_END_EVENT ||
                 ev.type == YAML_MAPPING_END_EVENT)
            depth--;
        if (depth > YD_MAX_DEPTH || (ev.type == YAML_DOCUMENT_START_EVENT &&
                                     ++docs > 1)) {
            snprintf(msg, sizeof msg, depth > YD_MAX_DEPTH
                     ? "YAML: nested deeper than %d levels"
                     : "YAML: a second document (after '---'): a file holds "
                       "one", YD_MAX_DEPTH);
            tell(fn, arg, name, ev.start_mark.line + 1,
                 ev.start_mark.column + 1, msg);
            rc = -1;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return rc;
}

yd_doc *yd_parse(const char *name, const char *text, size_t len, yd_sink fn,
                 void *arg)
{
    yaml_parser_t p;
    yd_doc *d;

    if (check_shape(name, text, len, fn, arg))
        return NULL;
    d = xcalloc(1, sizeof *d);
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, &d->doc)) {
        tell_parser(fn, arg, name, &p);
        yaml_parser_delete(&p);
        free(d);
        return NULL;
    }
    yaml_parser_delete(&p);
    d->name = xstrdup(name);
    d->fn = fn;
    d->arg = arg;
    return d;
}

yd_doc *yd_parse_file(const char *path, yd_sink fn, void *arg)
{
    FILE *f = fopen(path, "rb"), *m;
    char *text = NULL, buf[8192];
    size_t len = 0, got;
    yd_doc *d;

    if (!f) {
        if (fn)
            fn(arg, path, strerror(errno));
        return NULL;
    }
    if (!(m = open_memstream(&text, &len)))
        abort();
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, got, m);
    fclose(m);
    fclose(f);
    d = yd_parse(path, text, len, fn, arg);
    free(text);
    return d;
}

void yd_free(yd_doc *d)
{
    if (!d)
        return;
    yaml_document_delete(&d->doc);
    free(d->name);
    free(d);
}

void yd_sink_first(void *arg, const char *where, const char *msg)
{
    cs_err *err = arg;

    if (!err->msg[0])
        cs_err_set(err, "%s: %s", where, msg);
}

yaml_node_t *yd_root(yd_doc *d)
{
    return yaml_document_get_root_node(&d->doc);
}

const char *yd_name(const yd_doc *d)
{
    return d->name;
}

int yd_errors(const yd_doc *d)
{
    return d->errors;
}

void yd_problem(yd_doc *d, const yaml_node_t *n, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    d->errors++;
    tell(d->fn, d->arg, d->name, n ? n->start_mark.line + 1 : 1,
         n ? n->start_mark.column + 1 : 1, msg);
}

void yd_where(const yd_doc *d, const yaml_node_t *n, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%zu:%zu", d->name, n->start_mark.line + 1,
             n->start_mark.column + 1);
}

int yd_line(const yaml_node_t *n)
{
    return (int)n->start_mark.line + 1;
}

/* ---- nodes ---- */

const char *yd_scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
                                            : NULL;
}

yaml_node_t *yd_or(yaml_node_t *a, yaml_node_t *b)
{
    return a ? a : b;
}

size_t yd_len(const yaml_node_t *n)
{
    if (n && n->type == YAML_SEQUENCE_NODE)
        return (size_t)(n->data.sequence.items.top -
                        n->data.sequence.items.start);
    if (n && n->type == YAML_MAPPING_NODE)
        return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    return 0;
}

yaml_node_t *yd_item(yd_doc *d, const yaml_node_t *seq, size_t i)
{
    return yaml_document_get_node(&d->doc, seq->data.sequence.items.start[i]);
}

yaml_node_t *yd_pair_key(yd_doc *d, const yaml_node_t *map, size_t i)
{
    return yaml_document_get_node(&d->doc, map->data.mapping.pairs.start[i].key);
}

yaml_node_t *yd_pair_value(yd_doc *d, const yaml_node_t *map, size_t i)
{
    return yaml_document_get_node(&d->doc,
                                  map->data.mapping.pairs.start[i].value);
}

yaml_node_t *yd_get(yd_doc *d, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (size_t i = 0; i < yd_len(map); i++) {
        const char *k = yd_scalar(yd_pair_key(d, map, i));
        if (k && !strcmp(k, key))
            return yd_pair_value(d, map, i);
    }
    return NULL;
}

/* ---- values ---- */

int yd_pick(const char *v, const char *const *names, int n)
{
    for (int i = 0; v && i < n; i++)
        if (!strcmp(v, names[i]))
            return i;
    return -1;
}

int64_t yd_duration_ms(const char *v)
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

int yd_size(const char *v, long long *out)
{
    char *end;
    long long n;
    int shift;

    errno = 0;
    n = strtoll(v, &end, 10);
    if (errno || end == v || n < 0)
        return -1;
    shift = !strcmp(end, "KiB") ? 10 : !strcmp(end, "MiB") ? 20
          : !strcmp(end, "GiB") ? 30 : *end ? -1 : 0;
    /* 18014398509481985KiB wrapped to 1024 and was taken */
    if (shift < 0 || n > (LLONG_MAX >> shift))
        return -1;
    *out = n << shift;
    return 0;
}

json_t *yd_json_scalar(const char *v)
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

/* ---- blocks ---- */

static const char *node_kind(const yaml_node_t *v)
{
    return !v ? "nothing"
           : v->type == YAML_MAPPING_NODE  ? "mapping"
           : v->type == YAML_SEQUENCE_NODE ? "list"
                                           : "single value";
}

static void list_names(const char *const *names, int n, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                 i ? ", " : "", names[i]);
}

static void list_keys(const yd_table *t, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < t->n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                 i ? ", " : "", t->keys[i].name);
}

/* The words for a wrong value of a key without its own. */
static void generic_bad(const yd_key *k, const yaml_node_t *v, char *buf,
                        size_t len)
{
    const char *s = yd_scalar(v) ? yd_scalar(v) : "";
    char names[400];

    switch (k->type) {
    case YD_TEXT:
    case YD_SCALAR:
    case YD_NODE:
        snprintf(buf, len, "%s: expected a single value, got a %s", k->name,
                 node_kind(v));
        return;
    case YD_BUF:
        if (!yd_scalar(v))
            snprintf(buf, len, "%s: expected a single value, got a %s",
                     k->name, node_kind(v));
        else
            snprintf(buf, len, "%s: longer than %lld bytes", k->name,
                     k->max - 1);
        return;
    case YD_BOOL:
        snprintf(buf, len, "%s: expected true or false, got '%s'", k->name, s);
        return;
    case YD_INT:
        snprintf(buf, len, "%s: expected an integer from %lld to %lld, got "
                 "'%s'", k->name, k->min, k->max, s);
        return;
    case YD_SIZE:
        snprintf(buf, len, "%s: expected a size from %lld to %lld bytes "
                 "(\"64KiB\", \"1MiB\" allowed), got '%s'", k->name, k->min,
                 k->max, s);
        return;
    case YD_DURATION:
        snprintf(buf, len, "%s: expected a duration such as 30s, 10m or 1h, "
                 "got '%s'", k->name, s);
        return;
    case YD_ENUM:
        list_names(k->names, k->nnames, names, sizeof names);
        snprintf(buf, len, "%s: '%s' is not one of %s", k->name, s, names);
        return;
    case YD_LIST:
        snprintf(buf, len, "%s must be a list", k->name);
        return;
    case YD_MAP:
        snprintf(buf, len, "%s must be a mapping", k->name);
        return;
    }
}

void yd_bad(yd_doc *d, const yd_key *k, const yaml_node_t *v,
            const char *prefix)
{
    char msg[512];

    if (k->bad) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        snprintf(msg, sizeof msg, k->bad, yd_scalar(v) ? yd_scalar(v) : "");
#pragma GCC diagnostic pop
    } else {
        generic_bad(k, v, msg, sizeof msg);
    }
    yd_problem(d, v, "%s%s", prefix ? prefix : "", msg);
}

/* Checks v against k's type; stores the value at field unless k has a
 * setter. 0, or -1 when the value is wrong (not yet reported). */
static int take(const yd_key *k, yaml_node_t *v, char *field)
{
    const char *s = yd_scalar(v);
    long long n;
    char *end;

    if (k->type == YD_NODE) {
        if (!k->set)
            *(yaml_node_t **)(void *)field = v;
        return 0;
    }
    if (k->type == YD_LIST || k->type == YD_MAP) {
        if (v->type != (k->type == YD_LIST ? YAML_SEQUENCE_NODE
                                           : YAML_MAPPING_NODE))
            return -1;
        if (!k->set)
            *(yaml_node_t **)(void *)field = v;
        return 0;
    }
    if (!s)
        return -1;
    switch (k->type) {
    case YD_TEXT:
        if (!k->set)
            *(const char **)(void *)field = s;
        return 0;
    case YD_SCALAR:
        return 0;
    case YD_BUF:
        if (strlen(s) >= (size_t)k->max)
            return -1;
        if (!k->set)
            str_copy(field, (size_t)k->max, s);
        return 0;
    case YD_BOOL:
        if (strcmp(s, "true") && strcmp(s, "false"))
            return -1;
        if (!k->set)
            *(int *)(void *)field = *s == 't';
        return 0;
    case YD_INT:
        errno = 0;
        n = strtoll(s, &end, 10);
        if (errno || end == s || *end || n < k->min || n > k->max)
            return -1;
        if (!k->set)
            *(int *)(void *)field = (int)n;
        return 0;
    case YD_SIZE:
        if (yd_size(s, &n) || n < k->min || n > k->max)
            return -1;
        if (!k->set)
            *(size_t *)(void *)field = (size_t)n;
        return 0;
    case YD_DURATION:
        if ((n = yd_duration_ms(s)) < 0)
            return -1;
        if (!k->set)
            *(int64_t *)(void *)field = n;
        return 0;
    case YD_ENUM:
        if ((n = yd_pick(s, k->names, k->nnames)) < 0)
            return -1;
        if (!k->set)
            *(int *)(void *)field = (int)n;
        return 0;
    default:
        return -1;
    }
}

static const yd_key *find(const yd_table *t, const char *name)
{
    for (size_t i = 0; name && i < t->n; i++)
        if (!strcmp(t->keys[i].name, name))
            return &t->keys[i];
    return NULL;
}

/* One pair of the block: a known key, once, with a value of its type. */
static void read_pair(yd_doc *d, yaml_node_t *map, size_t i, const yd_table *t,
                      const char *prefix, void *obj)
{
    yaml_node_t *kn = yd_pair_key(d, map, i), *v = yd_pair_value(d, map, i);
    const char *name = yd_scalar(kn);
    const yd_key *k = find(t, name);
    char known[400];

    if (!k) {
        list_keys(t, known, sizeof known);
        yd_problem(d, kn, "unknown key '%s' in %s (known: %s)",
                   name ? name : "?", t->kind, known);
        return;
    }
    for (size_t j = 0; j < i; j++)
        if (yd_scalar(yd_pair_key(d, map, j)) &&
            !strcmp(yd_scalar(yd_pair_key(d, map, j)), name)) {
            yd_problem(d, kn, "'%s' given twice in %s", name, t->kind);
            return;
        }
    if (take(k, v, (char *)obj + k->off)) {
        yd_bad(d, k, v, prefix);
        return;
    }
    if (k->set)
        k->set(d, k, v, obj);
}

int yd_read(yd_doc *d, yaml_node_t *map, const yd_table *t,
            const char *prefix, void *obj)
{
    int before = d->errors;
    char known[400];

    if (!map || map->type != YAML_MAPPING_NODE) {
        list_keys(t, known, sizeof known);
        yd_problem(d, map, "%s must be a mapping (%s)", t->kind, known);
        return d->errors - before;
    }
    for (size_t i = 0; i < yd_len(map); i++)
        read_pair(d, map, i, t, prefix, obj);
    for (size_t i = 0; i < t->n; i++) {
        if (!(t->keys[i].flags & YD_REQUIRED) || yd_get(d, map, t->keys[i].name))
            continue;
        if (prefix && *prefix)
            yd_problem(d, map, "%s'%s' is required", prefix, t->keys[i].name);
        else
            yd_problem(d, map, "'%s' is required in %s", t->keys[i].name,
                       t->kind);
    }
    return d->errors - before;
}

static const char *type_word(const yd_key *k)
{
    switch (k->type) {
    case YD_TEXT:
    case YD_BUF:
    case YD_SCALAR:
        return k->set ? "text (read by its own check)" : "text";
    case YD_BOOL:
        return "true or false";
    case YD_INT:
        return "integer";
    case YD_SIZE:
        return "size (\"64KiB\", \"1MiB\")";
    case YD_DURATION:
        return "duration (\"30s\", \"10m\")";
    case YD_ENUM:
        return "one of";
    case YD_LIST:
        return "list";
    case YD_MAP:
        return "mapping";
    default:
        return "any";
    }
}

/* The key's value in defaults, as the table shows it ("" when none). */
static void default_of(const yd_key *k, const void *defaults, char *buf,
                       size_t len)
{
    const char *p = (const char *)defaults + k->off;

    buf[0] = '\0';
    if (!defaults || (k->set && k->type != YD_BUF && k->type != YD_INT))
        return;
    switch (k->type) {
    case YD_BUF:
        snprintf(buf, len, "\"%s\"", p);
        break;
    case YD_BOOL:
        snprintf(buf, len, "%s", *(const int *)(const void *)p ? "true" : "false");
        break;
    case YD_INT: {
        int v = *(const int *)(const void *)p;
        /* below what a file may give: the program picks (its doc says) */
        if (v < k->min)
            snprintf(buf, len, "unset");
        else
            snprintf(buf, len, "%d", v);
        break;
    }
    case YD_SIZE:
        snprintf(buf, len, "%zu", *(const size_t *)(const void *)p);
        break;
    case YD_DURATION:
        snprintf(buf, len, "%lld ms", (long long)*(const int64_t *)(const void *)p);
        break;
    case YD_ENUM: {
        int i = *(const int *)(const void *)p;
        snprintf(buf, len, "%s", i >= 0 && i < k->nnames ? k->names[i] : "");
        break;
    }
    default:
        break;
    }
}

void yd_reference(void *stdio_file, const yd_table *t, const char *title,
                  const void *defaults)
{
    FILE *f = stdio_file;
    char def[600], allowed[400];

    fprintf(f, "### %s\n\n| key | type | default | allowed |\n"
               "|---|---|---|---|\n", title);
    for (size_t i = 0; i < t->n; i++) {
        const yd_key *k = &t->keys[i];
        size_t o = 0;

        allowed[0] = '\0';
        if (k->type == YD_INT || k->type == YD_SIZE)
            snprintf(allowed, sizeof allowed, "%lld to %lld", k->min, k->max);
        else if (k->type == YD_BUF && !k->set)
            snprintf(allowed, sizeof allowed, "up to %lld bytes", k->max - 1);
        else if (k->type == YD_ENUM)
            for (int n = 0; n < k->nnames && o < sizeof allowed - 40; n++)
                o += (size_t)snprintf(allowed + o, sizeof allowed - o, "%s%s",
                                      n ? ", " : "", k->names[n]);
        default_of(k, defaults, def, sizeof def);
        fprintf(f, "| `%s`%s | %s | %s | %s |\n", k->name,
                k->flags & YD_REQUIRED ? " (required)" : "", type_word(k),
                def[0] ? def : "", allowed);
    }
    fputc('\n', f);
}
