/* Reading rule files: the YAML helpers every reader shares, with each
 * problem reported as FILE:LINE:COL (rules/catalog_priv.h). */
#include "rules/playbooks.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/catalog_priv.h"

void yr_problem(reader *r, const yaml_node_t *n, const char *fmt, ...)
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

yaml_node_t *yr_node_or(yaml_node_t *a, yaml_node_t *b)
{
    return a ? a : b;
}

const char *yr_scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
                                            : NULL;
}

yaml_node_t *yr_get(reader *r, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        const char *k = yr_scalar(yaml_document_get_node(&r->doc, p->key));
        if (k && !strcmp(k, key))
            return yaml_document_get_node(&r->doc, p->value);
    }
    return NULL;
}

/* Reports keys of map not in allowed (NULL-terminated). */
void yr_only_keys(reader *r, yaml_node_t *map, const char *what,
                      const char *const *allowed)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&r->doc, p->key);
        const char *name = yr_scalar(k);
        int ok = 0;
        for (int i = 0; name && allowed[i]; i++)
            ok |= !strcmp(name, allowed[i]);
        if (!ok)
            yr_problem(r, k, "unknown key '%s' in %s", name ? name : "?", what);
    }
}

int yr_pick(const char *v, const char *const *names, int n)
{
    for (int i = 0; v && i < n; i++)
        if (!strcmp(v, names[i]))
            return i;
    return -1;
}

/* Playbook ids: "family.name", or one word for the generic ones
 * (notify, recommend). */
int yr_playbook_id_ok(const char *v)
{
    if (!v || !*v || *v == '.')
        return 0;
    for (const char *p = v; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || *p == '_' || *p == '.' ||
              (*p >= '0' && *p <= '9')))
            return 0;
    return v[strlen(v) - 1] != '.';
}

/* A scalar as JSON: true/false and plain numbers as themselves, any
 * other text as a string. */
json_t *yr_json_scalar(const char *v)
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

size_t yr_seq_len(const yaml_node_t *n)
{
    return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

yaml_node_t *yr_seq_at(reader *r, const yaml_node_t *n, size_t i)
{
    return yaml_document_get_node(&r->doc, n->data.sequence.items.start[i]);
}

/* "30s", "10m", "1h" in ms; -1 when it is not a duration. */
int64_t yr_duration_ms(const char *v)
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
int yr_version_ok(const char *v)
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
