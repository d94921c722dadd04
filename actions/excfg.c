#include "actions/excfg.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/secret.h"
#include "core/str.h"

typedef struct loader {
    const char *path;
    yaml_document_t doc;
    ex_conf *c;
    const pb_catalog *rules;
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

void ex_conf_init(ex_conf *c)
{
    memset(c, 0, sizeof *c);
    str_copy(c->jira_issue_type, sizeof c->jira_issue_type, "Task");
    str_copy(c->k8s_namespace, sizeof c->k8s_namespace, "default");
    str_copy(c->pagerduty.url, sizeof c->pagerduty.url,
             "https://events.pagerduty.com/v2/enqueue");
    c->timeout_ms = 10000;
}

void ex_conf_clear(ex_conf *c)
{
    free(c->modes);
    explicit_bzero(c, sizeof *c);
}

pb_mode ex_mode_for(const ex_conf *c, const pb_playbook *pb, pb_mode dflt)
{
    for (int i = 0; c && i < c->nmodes; i++)
        if (c->modes[i].pb == pb)
            return c->modes[i].mode;
    return dflt;
}

static int copy_to(loader *l, const yaml_node_t *n, char *dst, size_t cap)
{
    const char *v = scalar(n);

    if (!v)
        return fail_at(l, n, "expected a string");
    if (strlen(v) >= cap)
        return fail_at(l, n, "longer than %zu characters", cap - 1);
    str_copy(dst, cap, v);
    return 0;
}

static int secret_to(loader *l, const yaml_node_t *n, char *dst, size_t cap)
{
    const char *v = scalar(n);
    cs_err e;

    if (!v)
        return fail_at(l, n, "expected file:PATH or env:NAME");
    if (secret_read(v, dst, cap, &e))
        return fail_at(l, n, "%s", e.msg);
    return 0;
}

static int url_to(loader *l, const yaml_node_t *n, char *dst, size_t cap)
{
    if (copy_to(l, n, dst, cap))
        return -1;
    if (strncmp(dst, "https://", 8) && strncmp(dst, "http://", 7))
        return fail_at(l, n, "'%.100s' is not an http:// or https:// URL", dst);
    return 0;
}

static int bool_to(loader *l, const yaml_node_t *n, int *dst)
{
    const char *v = scalar(n);

    if (v && !strcmp(v, "true"))
        *dst = 1;
    else if (v && !strcmp(v, "false"))
        *dst = 0;
    else
        return fail_at(l, n, "expected true or false");
    return 0;
}

/* Every section has url/ca_file/insecure; the rest is per vendor. */
static int endpoint_key(loader *l, const char *sec, const char *k,
                        yaml_node_t *v, ex_endpoint *e)
{
    ex_conf *c = l->c;

    if (!strcmp(k, "ca_file"))
        return copy_to(l, v, e->ca_file, sizeof e->ca_file);
    if (!strcmp(k, "insecure"))
        return bool_to(l, v, &e->insecure);
    if (!strcmp(sec, "slack")) {
        if (!strcmp(k, "url")) {
            /* the incoming webhook's URL is the credential */
            if (secret_to(l, v, e->url, sizeof e->url))
                return -1;
            if (strncmp(e->url, "https://", 8) && strncmp(e->url, "http://", 7))
                return fail_at(l, v, "the secret it names is not an http(s) URL");
            return 0;
        }
        if (!strcmp(k, "approval_url"))
            return url_to(l, v, c->approval_url, sizeof c->approval_url);
        return fail_at(l, v, "slack has no key '%s' (url, approval_url, "
                       "ca_file, insecure)", k);
    }
    if (!strcmp(sec, "slurmrestd") && !strcmp(k, "url")) {
        if (copy_to(l, v, e->url, sizeof e->url))
            return -1;
        if (strncmp(e->url, "unix:/", 6) && strncmp(e->url, "https://", 8) &&
            strncmp(e->url, "http://", 7))
            return fail_at(l, v, "'%.100s' is not http(s)://HOST:PORT or "
                           "unix:/PATH", e->url);
        return 0;
    }
    if (!strcmp(k, "url") && strcmp(sec, "kubernetes"))
        return url_to(l, v, e->url, sizeof e->url);
    if (!strcmp(sec, "kubernetes") && !strcmp(k, "api"))
        return url_to(l, v, e->url, sizeof e->url);
    if (!strcmp(k, "token") && strcmp(sec, "pagerduty"))
        return secret_to(l, v, e->token, sizeof e->token);
    if (!strcmp(sec, "pagerduty") && !strcmp(k, "routing_key"))
        return secret_to(l, v, e->token, sizeof e->token);
    if (!strcmp(sec, "jira")) {
        if (!strcmp(k, "project"))
            return copy_to(l, v, c->jira_project, sizeof c->jira_project);
        if (!strcmp(k, "issue_type"))
            return copy_to(l, v, c->jira_issue_type, sizeof c->jira_issue_type);
        if (!strcmp(k, "user"))
            return copy_to(l, v, e->user, sizeof e->user);
        if (!strcmp(k, "auth")) {
            const char *s = scalar(v);
            if (s && (!strcmp(s, "basic") || !strcmp(s, "bearer"))) {
                c->jira_bearer = !strcmp(s, "bearer");
                return 0;
            }
            return fail_at(l, v, "auth is basic or bearer");
        }
    }
    if (!strcmp(sec, "slurmrestd") && !strcmp(k, "user"))
        return copy_to(l, v, e->user, sizeof e->user);
    if (!strcmp(sec, "kubernetes") && !strcmp(k, "namespace"))
        return copy_to(l, v, c->k8s_namespace, sizeof c->k8s_namespace);
    return fail_at(l, v, "%s has no key '%s'", sec, k);
}

static ex_endpoint *endpoint_of(ex_conf *c, const char *sec)
{
    if (!strcmp(sec, "slack"))
        return &c->slack;
    if (!strcmp(sec, "jira"))
        return &c->jira;
    if (!strcmp(sec, "pagerduty"))
        return &c->pagerduty;
    if (!strcmp(sec, "webhook"))
        return &c->webhook;
    if (!strcmp(sec, "kubernetes"))
        return &c->k8s;
    if (!strcmp(sec, "slurmrestd"))
        return &c->slurmrestd;
    return NULL;
}

/* What each section cannot work without. */
static int endpoint_complete(loader *l, const yaml_node_t *n, const char *sec,
                             const ex_endpoint *e)
{
    if (!e->url[0])
        return fail_at(l, n, "%s needs %s", sec,
                       !strcmp(sec, "kubernetes") ? "api" : "url");
    if (!strcmp(sec, "pagerduty") && !e->token[0])
        return fail_at(l, n, "pagerduty needs routing_key");
    if (!strcmp(sec, "kubernetes") && !e->token[0])
        return fail_at(l, n, "kubernetes needs token");
    if (!strcmp(sec, "slurmrestd") && e->token[0] && !e->user[0])
        return fail_at(l, n, "slurmrestd with a token (JWT) needs user");
    if (!strcmp(sec, "jira")) {
        if (!l->c->jira_project[0])
            return fail_at(l, n, "jira needs project");
        if (!e->token[0])
            return fail_at(l, n, "jira needs token");
        if (!l->c->jira_bearer && !e->user[0])
            return fail_at(l, n, "jira with basic auth needs user");
    }
    return 0;
}

static int load_endpoint(loader *l, const char *sec, yaml_node_t *map)
{
    ex_endpoint *e = endpoint_of(l->c, sec);

    if (map->type != YAML_MAPPING_NODE)
        return fail_at(l, map, "%s must be a mapping", sec);
    e->set = 1;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&l->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(&l->doc, p->value);
        if (!scalar(k))
            return fail_at(l, k, "expected a key");
        if (endpoint_key(l, sec, scalar(k), v, e))
            return -1;
    }
    return endpoint_complete(l, map, sec, e);
}

static int load_modes(loader *l, yaml_node_t *map)
{
    size_t n;

    if (map->type != YAML_MAPPING_NODE)
        return fail_at(l, map, "modes must map playbook ids to shadow, "
                       "canary or on");
    n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    free(l->c->modes);
    l->c->modes = calloc(n ? n : 1, sizeof *l->c->modes);
    l->c->nmodes = 0;
    if (!l->c->modes)
        return fail_at(l, map, "out of memory");
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&l->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(&l->doc, p->value);
        const pb_playbook *pb = scalar(k) ? pb_playbook_find(l->rules, scalar(k))
                                          : NULL;
        ex_mode *m = &l->c->modes[l->c->nmodes];
        int i;
        if (!pb)
            return fail_at(l, k, "no playbook '%.80s' in the rules",
                           scalar(k) ? scalar(k) : "");
        for (i = 0; i <= PB_MODE_ON; i++)
            if (scalar(v) && !strcmp(scalar(v), pb_mode_name((pb_mode)i)))
                break;
        if (i > PB_MODE_ON)
            return fail_at(l, v, "mode is shadow, canary or on");
        m->pb = pb;
        m->mode = (pb_mode)i;
        l->c->nmodes++;
    }
    return 0;
}

static int load_http(loader *l, yaml_node_t *map)
{
    if (map->type != YAML_MAPPING_NODE)
        return fail_at(l, map, "http must be a mapping");
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&l->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(&l->doc, p->value);
        const char *key = scalar(k) ? scalar(k) : "";
        if (!strcmp(key, "timeout_s")) {
            char *end;
            long s = scalar(v) ? strtol(scalar(v), &end, 10) : 0;
            if (!scalar(v) || *end || s < 1 || s > 600)
                return fail_at(l, v, "timeout_s is 1 to 600");
            l->c->timeout_ms = s * 1000;
        } else if (!strcmp(key, "ca_file")) {
            char ca[512];
            if (copy_to(l, v, ca, sizeof ca))
                return -1;
            /* the default for every section that names none */
            ex_endpoint *all[] = {&l->c->slack, &l->c->jira, &l->c->pagerduty,
                                  &l->c->webhook, &l->c->k8s, &l->c->slurmrestd};
            for (size_t i = 0; i < sizeof all / sizeof *all; i++)
                if (!all[i]->ca_file[0])
                    str_copy(all[i]->ca_file, sizeof all[i]->ca_file, ca);
        } else {
            return fail_at(l, k, "http has no key '%s' (timeout_s, ca_file)",
                           key);
        }
    }
    return 0;
}

static int load_doc(loader *l)
{
    yaml_node_t *root = yaml_document_get_root_node(&l->doc);

    if (!root)
        return 0;
    if (root->type != YAML_MAPPING_NODE)
        return fail_at(l, root, "expected a mapping of sections");
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&l->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(&l->doc, p->value);
        const char *sec = scalar(k) ? scalar(k) : "";
        int rc;
        if (!strcmp(sec, "modes"))
            rc = load_modes(l, v);
        else if (!strcmp(sec, "http"))
            rc = load_http(l, v);
        else if (endpoint_of(l->c, sec))
            rc = load_endpoint(l, sec, v);
        else
            rc = fail_at(l, k, "unknown section '%.60s' (modes, http, slack, "
                         "jira, pagerduty, webhook, kubernetes, slurmrestd)", sec);
        if (rc)
            return -1;
    }
    return 0;
}

int ex_conf_load(ex_conf *c, const char *path, const pb_catalog *rules,
                 cs_err *err)
{
    FILE *f = fopen(path, "rb");
    yaml_parser_t parser;
    loader l = {.path = path, .rules = rules, .err = err};
    ex_conf tmp = *c;
    int rc = -1;

    if (!f) {
        cs_err_set(err, "%s: %s", path, strerror(errno));
        return -1;
    }
    tmp.modes = NULL;
    tmp.nmodes = 0;
    l.c = &tmp;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &l.doc)) {
        cs_err_set(err, "%s:%zu:%zu: %s", path, parser.problem_mark.line + 1,
                   parser.problem_mark.column + 1,
                   parser.problem ? parser.problem : "not YAML");
        goto out;
    }
    rc = load_doc(&l);
    yaml_document_delete(&l.doc);
out:
    yaml_parser_delete(&parser);
    fclose(f);
    if (rc) {
        free(tmp.modes);
        explicit_bzero(&tmp, sizeof tmp);
        return -1;
    }
    free(c->modes);
    *c = tmp;
    return 0;
}
