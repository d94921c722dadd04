/* The executors' configuration file (actions/excfg.h): one keyword
 * table per section (core/ydoc.h). */
#include "actions/excfg.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions/seal.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/secret.h"
#include "core/str.h"
#include "core/ydoc.h"

/* What the tables fill: the configuration, and the rules its modes
 * name. */
typedef struct loading {
    ex_conf c;
    const pb_catalog *rules;
    const char *at; /* "act." in the one config, "" in an old file */
} loading;

/* The prefix of a nested block's problems: "act.http." */
static const char *nested(char *buf, size_t len, const void *obj,
                          const char *name)
{
    const loading *l = obj;

    snprintf(buf, len, "%s%s.", l->at ? l->at : "", name);
    return buf;
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

static int fail(yd_doc *d, const yaml_node_t *n, const char *what)
{
    yd_problem(d, n, "%s", what);
    return -1;
}

static int secret_to(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    cs_err e;

    if (secret_read(yd_scalar(v), (char *)obj + k->off, (size_t)k->max, &e))
        return fail(d, v, e.msg);
    return 0;
}

static int is_http(const char *url)
{
    return !strncmp(url, "https://", 8) || !strncmp(url, "http://", 7);
}

/* A key short enough to guess would make the seal worth nothing. */
static int key_to(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    char msg[96];

    if (secret_to(d, k, v, obj))
        return -1;
    if (strlen((char *)obj + k->off) >= SEAL_KEY_MIN)
        return 0;
    snprintf(msg, sizeof msg, "the key it names has fewer than %d bytes "
             "(openssl rand -hex 32)", SEAL_KEY_MIN);
    return fail(d, v, msg);
}

/* Slack's incoming webhook URL is itself the credential. */
static int secret_url_to(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    if (secret_to(d, k, v, obj))
        return -1;
    if (!is_http((char *)obj + k->off))
        return fail(d, v, "the secret it names is not an http(s) URL");
    return 0;
}

static int url_to(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    const char *url = yd_scalar(v);

    if (strlen(url) >= (size_t)k->max) {
        yd_bad(d, k, v, NULL);
        return -1;
    }
    if (!is_http(url)) {
        yd_problem(d, v, "'%.100s' is not an http:// or https:// URL", url);
        return -1;
    }
    str_copy((char *)obj + k->off, (size_t)k->max, url);
    return 0;
}

/* slurmrestd listens on TCP or on a unix socket. */
static int slurm_url_to(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    const char *url = yd_scalar(v);

    if (strncmp(url, "unix:/", 6) && !is_http(url)) {
        yd_problem(d, v, "'%.100s' is not http(s)://HOST:PORT or unix:/PATH",
                   url);
        return -1;
    }
    str_copy((char *)obj + k->off, (size_t)k->max, url);
    return 0;
}

static int timeout_to(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    (void)d;
    (void)k;
    ((loading *)obj)->c.timeout_ms = strtol(yd_scalar(v), NULL, 10) * 1000;
    return 0;
}

/* http.ca_file: the default for every section that names none. */
static int ca_default_to(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    ex_conf *c = &((loading *)obj)->c;
    ex_endpoint *all[] = {&c->slack, &c->jira, &c->pagerduty,
                          &c->webhook, &c->k8s, &c->slurmrestd};

    (void)d;
    (void)k;
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!all[i]->ca_file[0])
            str_copy(all[i]->ca_file, sizeof all[i]->ca_file, yd_scalar(v));
    return 0;
}

#define F(f) offsetof(loading, c.f)
#define SZ(f) (long long)sizeof(((loading *)0)->c.f)
#define BUF(n, f) {n, YD_BUF, 0, F(f), 0, SZ(f), 0, 0, 0, 0}
#define SET(n, f, fn) {n, YD_SCALAR, 0, F(f), 0, SZ(f), 0, 0, 0, fn}
#define TLS(e) BUF("ca_file", e.ca_file), \
               {"insecure", YD_BOOL, 0, F(e.insecure), 0, 0, 0, 0, 0, 0}

static const char *const auths[] = {"basic", "bearer"};

static const yd_key slack_keys[] = {
    SET("url", slack.url, secret_url_to),
    SET("approval_url", approval_url, url_to), TLS(slack)};
static const yd_key jira_keys[] = {
    SET("url", jira.url, url_to), BUF("project", jira_project),
    BUF("issue_type", jira_issue_type), BUF("user", jira.user),
    {"auth", YD_ENUM, 0, F(jira_bearer), 0, 0, auths, 2, 0, 0},
    SET("token", jira.token, secret_to), TLS(jira)};
static const yd_key pagerduty_keys[] = {
    SET("url", pagerduty.url, url_to),
    SET("routing_key", pagerduty.token, secret_to), TLS(pagerduty)};
static const yd_key webhook_keys[] = {
    SET("url", webhook.url, url_to), SET("token", webhook.token, secret_to),
    TLS(webhook)};
static const yd_key k8s_keys[] = {
    SET("api", k8s.url, url_to), SET("token", k8s.token, secret_to),
    BUF("namespace", k8s_namespace), TLS(k8s)};
static const yd_key slurmrestd_keys[] = {
    SET("url", slurmrestd.url, slurm_url_to), BUF("user", slurmrestd.user),
    SET("token", slurmrestd.token, secret_to), TLS(slurmrestd)};
static const yd_key journal_keys[] = {
    {"key", YD_SCALAR, YD_REQUIRED, F(journal_key), 0, SZ(journal_key), 0, 0, 0,
     key_to}};
static const yd_key http_keys[] = {
    {"timeout_s", YD_INT, 0, 0, 1, 600, 0, 0, 0, timeout_to},
    {"ca_file", YD_BUF, 0, 0, 0, 512, 0, 0, 0, ca_default_to}};

static int read_modes(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj);
static int read_endpoint(yd_doc *d, const yd_key *k, yaml_node_t *v,
                         void *obj);
static int read_http(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj);
static int read_journal(yd_doc *d, const yd_key *k, yaml_node_t *v,
                        void *obj);

#define SECTION(n, e) {n, YD_MAP, 0, F(e), 0, 0, 0, 0, 0, read_endpoint}
/* The endpoint sections in the order of endpoint_tables[]. */
static const yd_key root_keys[] = {
    SECTION("slack", slack), SECTION("jira", jira),
    SECTION("pagerduty", pagerduty), SECTION("webhook", webhook),
    SECTION("kubernetes", k8s), SECTION("slurmrestd", slurmrestd),
    {"modes", YD_MAP, 0, 0, 0, 0, 0, 0,
     "modes must map playbook ids to shadow, canary or on", read_modes},
    {"http", YD_MAP, 0, 0, 0, 0, 0, 0, 0, read_http},
    {"journal", YD_MAP, 0, 0, 0, 0, 0, 0, 0, read_journal},
    /* after the sections: endpoint_tables is indexed by their place */
    SET("console_url", console_url, url_to)};
static const yd_table endpoint_tables[] = {
    YD_TABLE("'slack'", slack_keys), YD_TABLE("'jira'", jira_keys),
    YD_TABLE("'pagerduty'", pagerduty_keys),
    YD_TABLE("'webhook'", webhook_keys),
    YD_TABLE("'kubernetes'", k8s_keys),
    YD_TABLE("'slurmrestd'", slurmrestd_keys)};
static const yd_table http_table = YD_TABLE("'http'", http_keys);
static const yd_table journal_table = YD_TABLE("'journal'", journal_keys);
static const yd_table root = YD_TABLE("the top level", root_keys);

static int read_http(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    char at[48];

    (void)k;
    return yd_read(d, v, &http_table, nested(at, sizeof at, obj, "http"),
                   obj) ? -1 : 0;
}

static int read_journal(yd_doc *d, const yd_key *k, yaml_node_t *v,
                        void *obj)
{
    char at[48];

    (void)k;
    return yd_read(d, v, &journal_table,
                   nested(at, sizeof at, obj, "journal"), obj) ? -1 : 0;
}

/* What each section cannot work without. */
static int endpoint_complete(yd_doc *d, const yaml_node_t *n, const char *sec,
                             const ex_conf *c, const ex_endpoint *e)
{
    if (!e->url[0]) {
        yd_problem(d, n, "%s needs %s", sec,
                   e == &c->k8s ? "api" : "url");
        return -1;
    }
    if (e == &c->pagerduty && !e->token[0])
        return fail(d, n, "pagerduty needs routing_key");
    if (e == &c->k8s && !e->token[0])
        return fail(d, n, "kubernetes needs token");
    if (e == &c->slurmrestd && e->token[0] && !e->user[0])
        return fail(d, n, "slurmrestd with a token (JWT) needs user");
    if (e != &c->jira)
        return 0;
    if (!c->jira_project[0])
        return fail(d, n, "jira needs project");
    if (!e->token[0])
        return fail(d, n, "jira needs token");
    if (!c->jira_bearer && !e->user[0])
        return fail(d, n, "jira with basic auth needs user");
    return 0;
}

static int read_endpoint(yd_doc *d, const yd_key *k, yaml_node_t *v,
                         void *obj)
{
    loading *l = obj;
    ex_endpoint *e = (ex_endpoint *)(void *)((char *)obj + k->off);
    char prefix[48];

    e->set = 1;
    if (yd_read(d, v, &endpoint_tables[k - root_keys],
                nested(prefix, sizeof prefix, obj, k->name), obj))
        return -1;
    return endpoint_complete(d, v, k->name, &l->c, e);
}

static int read_modes(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    loading *l = obj;
    size_t n = yd_len(v);

    (void)k;
    free(l->c.modes);
    l->c.modes = xcalloc(n ? n : 1, sizeof *l->c.modes);
    l->c.nmodes = 0;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *kn = yd_pair_key(d, v, i), *vn = yd_pair_value(d, v, i);
        const char *id = yd_scalar(kn), *mode = yd_scalar(vn);
        const pb_playbook *pb = id ? pb_playbook_find(l->rules, id) : NULL;
        int m = 0;
        if (!pb) {
            yd_problem(d, kn, "no playbook '%.80s' in the rules", id ? id : "");
            return -1;
        }
        while (m <= PB_MODE_ON && !(mode && !strcmp(mode, pb_mode_name((pb_mode)m))))
            m++;
        if (m > PB_MODE_ON)
            return fail(d, vn, "mode is shadow, canary or on");
        l->c.modes[l->c.nmodes++] = (ex_mode){pb, (pb_mode)m};
    }
    return 0;
}

/* The keys of cascade's own config (core/config.h): a file with one of
 * them is the one configuration, and the executor's part is its 'act'
 * section. */
static int is_process_config(yd_doc *d, yaml_node_t *top)
{
    /* not "webhook": the old executor file has one of its own (an
     * outgoing webhook), the one config's is the Alertmanager receiver */
    static const char *const process[] = {"kafka", "redis", "log", "rules",
                                          "correlate", "collect", "metrics",
                                          "act"};

    for (size_t i = 0; i < sizeof process / sizeof *process; i++)
        if (yd_get(d, top, process[i]))
            return 1;
    return 0;
}

/* The one configuration's 'act' section (absent: nothing configured), or
 * an executor file of the old form, read with a warning that says how to
 * convert it. */
static int read_root(yd_doc *d, const char *path, loading *l)
{
    yaml_node_t *top = yd_root(d), *act;

    if (top->type != YAML_MAPPING_NODE || !is_process_config(d, top)) {
        log_warn("act", "%s: an executor file of its own is deprecated: put "
                 "its sections under 'act:' in the one config file (the one "
                 "--config every process reads; docs/CONFIG.md)", path);
        return yd_read(d, top, &root, NULL, l) ? -1 : 0;
    }
    if (!(act = yd_get(d, top, "act")))
        return 0;
    if (act->type != YAML_MAPPING_NODE)
        return fail(d, act, "section 'act' must be a mapping of keys");
    l->at = "act.";
    return yd_read(d, act, &root, "act.", l) ? -1 : 0;
}

int ex_conf_load(ex_conf *c, const char *path, const pb_catalog *rules,
                 cs_err *err)
{
    loading l = {.c = *c, .rules = rules};
    yd_doc *d;
    int rc = 0;

    err->msg[0] = '\0';
    l.c.modes = NULL;
    l.c.nmodes = 0;
    if (!(d = yd_parse_file(path, yd_sink_first, err)))
        rc = -1;
    else if (yd_root(d))
        rc = read_root(d, path, &l);
    yd_free(d);
    if (rc) {
        free(l.c.modes);
        explicit_bzero(&l, sizeof l);
        return -1;
    }
    free(c->modes);
    *c = l.c;
    explicit_bzero(&l, sizeof l);
    return 0;
}

void ex_conf_reference(void *stdio_file)
{
    loading l = {0};
    char title[64];

    ex_conf_init(&l.c);
    yd_reference(stdio_file, &root, "`act`", &l);
    for (size_t i = 0; i < sizeof endpoint_tables / sizeof *endpoint_tables;
         i++) {
        snprintf(title, sizeof title, "`act.%s`", root_keys[i].name);
        yd_reference(stdio_file, &endpoint_tables[i], title, &l);
    }
    yd_reference(stdio_file, &http_table, "`act.http`", &l);
    yd_reference(stdio_file, &journal_table, "`act.journal`", &l);
}
