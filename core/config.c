#include "core/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/topics.h"
#include "core/log.h"
#include "core/str.h"

void cfg_defaults(cs_config *c)
{
    memset(c, 0, sizeof *c);
    str_copy(c->group, sizeof c->group, "cascade-correlate");
    /* Each batch waits for Redis, Kafka's delivery and the commit; under a
     * backlog, 1000 a batch spent half the drain waiting. A caught-up
     * consumer's batches are what has arrived, far fewer. */
    c->batch = 10000;
    c->linger_ms = KFK_DEFAULT_LINGER_MS;
    c->fetch_wait_ms = KFK_DEFAULT_FETCH_WAIT_MS;
    str_copy(c->listen, sizeof c->listen, "127.0.0.1");
    c->port = 9095;
    c->max_body = 1 << 20;
    c->max_headers = 16 << 10;
    c->max_connections = 256;
    c->timeout_s = 10;
    c->log_level = LOG_LVL_INFO;
}

enum kind { K_STR, K_INT, K_SIZE, K_LEVEL, K_FILE };

typedef struct key {
    const char *section, *name;
    enum kind kind;
    size_t off, len; /* field offset; buffer length for strings */
    long long min, max;
} key;

#define STR(s, n, f) {s, n, K_STR, offsetof(cs_config, f), sizeof(((cs_config *)0)->f), 0, 0}
#define INT(s, n, f, lo, hi) {s, n, K_INT, offsetof(cs_config, f), 0, lo, hi}
#define SIZE(s, n, f, lo, hi) {s, n, K_SIZE, offsetof(cs_config, f), 0, lo, hi}

static const key keys[] = {
    STR("kafka", "brokers", brokers),
    STR("kafka", "group", group),
    INT("kafka", "batch", batch, 1, 100000),
    INT("kafka", "linger_ms", linger_ms, 0, 1000),
    INT("kafka", "fetch_wait_ms", fetch_wait_ms, 0, 10000),
    STR("redis", "address", redis),
    STR("webhook", "listen", listen),
    INT("webhook", "port", port, 0, 65535),
    STR("webhook", "token", token),
    {"webhook", "token_file", K_FILE, offsetof(cs_config, token),
     sizeof(((cs_config *)0)->token), 0, 0},
    SIZE("webhook", "max_body", max_body, 1024, 1LL << 30),
    SIZE("webhook", "max_headers", max_headers, 1024, 1 << 20),
    INT("webhook", "max_connections", max_connections, 1, 65535),
    INT("webhook", "timeout_s", timeout_s, 1, 3600),
    {"log", "level", K_LEVEL, offsetof(cs_config, log_level), 0, 0, 0},
    STR("rules", "dir", rules_dir),
};

typedef struct loader {
    const char *path;
    yaml_document_t doc;
    cs_err *err;
} loader;

static int fail_at(loader *l, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_at(loader *l, const yaml_node_t *n, const char *fmt, ...)
{
    char msg[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cs_err_set(l->err, "%s:%zu:%zu: %s", l->path, n->start_mark.line + 1,
               n->start_mark.column + 1, msg);
    return -1;
}

static const char *scalar(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
                                       : NULL;
}

static void known_keys(const char *section, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        if (section && strcmp(keys[i].section, section))
            continue;
        const char *name = section ? keys[i].name : keys[i].section;
        if (!section && strstr(buf, name))
            continue;
        used += (size_t)snprintf(buf + used, used < len ? len - used : 0,
                                 "%s%s", used ? ", " : "", name);
    }
}

/* "1048576", "512KiB", "1MiB", "2GiB" */
static int parse_size(const char *s, long long *out)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0)
        return -1;
    if (!strcmp(end, "KiB"))
        v <<= 10;
    else if (!strcmp(end, "MiB"))
        v <<= 20;
    else if (!strcmp(end, "GiB"))
        v <<= 30;
    else if (*end)
        return -1;
    *out = v;
    return 0;
}

static int read_token_file(loader *l, const yaml_node_t *n, const char *path,
                           char *dst, size_t len)
{
    FILE *f = fopen(path, "r");
    char buf[512];
    size_t got;

    if (!f)
        return fail_at(l, n, "token_file '%s': %s", path, strerror(errno));
    got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    if (!buf[0] || strlen(buf) >= len)
        return fail_at(l, n, "token_file '%s': empty or longer than %zu bytes",
                       path, len - 1);
    str_copy(dst, len, buf);
    explicit_bzero(buf, sizeof buf);
    return 0;
}

static int set_value(loader *l, cs_config *c, const key *k,
                     const yaml_node_t *vn)
{
    const char *v = scalar(vn);
    char *dst = (char *)c + k->off;
    long long num;
    char *end;

    if (!v)
        return fail_at(l, vn, "%s.%s: expected a single value, got a %s",
                       k->section, k->name,
                       vn->type == YAML_MAPPING_NODE ? "mapping" : "list");
    switch (k->kind) {
    case K_STR:
        if (strlen(v) >= k->len)
            return fail_at(l, vn, "%s.%s: longer than %zu bytes", k->section,
                           k->name, k->len - 1);
        str_copy(dst, k->len, v);
        return 0;
    case K_FILE:
        return read_token_file(l, vn, v, dst, k->len);
    case K_LEVEL:
        if ((num = log_parse_level(v)) < 0)
            return fail_at(l, vn, "log.level: '%s' is not one of error, "
                                  "warn, info, debug", v);
        *(int *)(void *)dst = (int)num;
        return 0;
    case K_INT:
        errno = 0;
        num = strtoll(v, &end, 10);
        if (errno || end == v || *end || num < k->min || num > k->max)
            return fail_at(l, vn, "%s.%s: expected an integer from %lld to "
                                  "%lld, got '%s'", k->section, k->name,
                           k->min, k->max, v);
        *(int *)(void *)dst = (int)num;
        return 0;
    case K_SIZE:
        if (parse_size(v, &num) || num < k->min || num > k->max)
            return fail_at(l, vn, "%s.%s: expected a size from %lld to %lld "
                                  "bytes (\"64KiB\", \"1MiB\" allowed), got "
                                  "'%s'", k->section, k->name, k->min, k->max,
                           v);
        *(size_t *)(void *)dst = (size_t)num;
        return 0;
    }
    return -1;
}

static const key *find_key(const char *section, const char *name)
{
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (!strcmp(keys[i].section, section) && !strcmp(keys[i].name, name))
            return &keys[i];
    return NULL;
}

static int section_known(const char *section)
{
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (!strcmp(keys[i].section, section))
            return 1;
    return 0;
}

static int load_section(loader *l, cs_config *c, const char *section,
                        yaml_node_t *map)
{
    char known[256];
    int token_set = 0;

    if (map->type != YAML_MAPPING_NODE)
        return fail_at(l, map, "section '%s' must be a mapping of keys", section);
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(&l->doc, p->key);
        yaml_node_t *vn = yaml_document_get_node(&l->doc, p->value);
        const char *name = scalar(kn);
        const key *k = name ? find_key(section, name) : NULL;

        if (!k) {
            known_keys(section, known, sizeof known);
            return fail_at(l, kn, "unknown key '%s' in '%s' (known: %s)",
                           name ? name : "?", section, known);
        }
        for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++)
            if (!strcmp(scalar(yaml_document_get_node(&l->doc, q->key)), name))
                return fail_at(l, kn, "%s.%s given twice", section, name);
        if (k->off == offsetof(cs_config, token) && token_set++)
            return fail_at(l, kn, "webhook: give token or token_file, not both");
        if (set_value(l, c, k, vn))
            return -1;
    }
    return 0;
}

static int load_doc(loader *l, cs_config *c)
{
    yaml_node_t *root = yaml_document_get_root_node(&l->doc);
    char known[256];

    if (!root)
        return 0; /* an empty file: the defaults */
    if (root->type != YAML_MAPPING_NODE)
        return fail_at(l, root, "the top level must be a mapping of sections");
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(&l->doc, p->key);
        const char *name = scalar(kn);
        if (!name || !section_known(name)) {
            known_keys(NULL, known, sizeof known);
            return fail_at(l, kn, "unknown section '%s' (known: %s)",
                           name ? name : "?", known);
        }
        for (yaml_node_pair_t *q = root->data.mapping.pairs.start; q < p; q++)
            if (!strcmp(scalar(yaml_document_get_node(&l->doc, q->key)), name))
                return fail_at(l, kn, "section '%s' given twice", name);
        if (load_section(l, c, name, yaml_document_get_node(&l->doc, p->value)))
            return -1;
    }
    return 0;
}

int cfg_load(cs_config *c, const char *path, cs_err *err)
{
    FILE *f = fopen(path, "rb");
    yaml_parser_t parser;
    loader l = {.path = path, .err = err};
    cs_config next = *c;
    int rc = -1;

    if (!f) {
        cs_err_set(err, "%s: %s", path, strerror(errno));
        return -1;
    }
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &l.doc)) {
        cs_err_set(err, "%s:%zu:%zu: YAML: %s%s%s", path,
                   parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                   parser.problem ? parser.problem : "unreadable",
                   parser.context ? " " : "", parser.context ? parser.context : "");
        goto out;
    }
    rc = load_doc(&l, &next);
    yaml_document_delete(&l.doc);
    if (rc == 0)
        *c = next;
    explicit_bzero(next.token, sizeof next.token);
out:
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
}

void cfg_print(const cs_config *c, void *stdio_file)
{
    static const char *const lvl[] = {"error", "warn", "info", "debug"};
    FILE *f = stdio_file;

    fprintf(f, "kafka:\n  brokers: \"%s\"%s\n  group: %s\n  batch: %d\n"
               "  linger_ms: %d\n  fetch_wait_ms: %d\n",
            c->brokers, c->brokers[0] ? "" : "   # embedded broker", c->group,
            c->batch, c->linger_ms, c->fetch_wait_ms);
    fprintf(f, "redis:\n  address: \"%s\"%s\n", c->redis,
            c->redis[0] ? "" : "   # private redis-server");
    fprintf(f, "webhook:\n  listen: %s\n  port: %d\n  token: %s\n"
               "  max_body: %zu\n  max_headers: %zu\n  max_connections: %d\n"
               "  timeout_s: %d\n",
            c->listen, c->port, c->token[0] ? "\"<set>\"" : "\"\"", c->max_body,
            c->max_headers, c->max_connections, c->timeout_s);
    fprintf(f, "log:\n  level: %s\n",
            c->log_level >= 0 && c->log_level <= 3 ? lvl[c->log_level] : "?");
    fprintf(f, "rules:\n  dir: \"%s\"%s\n", c->rules_dir,
            c->rules_dir[0] ? "" : "   # built-in rule set");
}
