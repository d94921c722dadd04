#include "ingest/colcfg.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/secret.h"
#include "core/str.h"
#include "core/ydoc.h"
#include "ingest/pathpat.h"
#include "ingest/slurmtopo.h"

void ccf_defaults(ccf_conf *c)
{
    memset(c, 0, sizeof *c);
    c->journal.kernel = -1;
    c->remote_write.port = -1;
    c->k8s.events_api_v1 = -1;
    c->k8s.workloads = -1;
}

void ccf_free(ccf_conf *c)
{
    free(c->log.files);
    c->log.files = NULL;
    c->log.nfiles = 0;
}

#define OFF(f) offsetof(ccf_conf, f)
#define FOFF(f) offsetof(ccf_file, f)

static const char *const formats[] = {"syslog", "plain"};
static const char *const sources[] = {"app", "kernel", "ray", "slurm"};
static const sig_source source_of[] = {SRC_APP, SRC_KERNEL, SRC_RAY, SRC_SLURM};

/* A followed file's path: a pattern that compiles. */
static int read_path(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    ccf_file *f = obj;
    const char *s = yd_scalar(v);
    cs_err why;
    pp_pattern *p;

    (void)k;
    if (!s || strlen(s) >= sizeof f->path) {
        yd_problem(d, v, "collect.log.files: path is a pattern of at most "
                   "%zu bytes", sizeof f->path - 1);
        return -1;
    }
    if (!(p = pp_compile(s, &why))) {
        const char *rest = strchr(why.msg, ':');
        if (!strncmp(why.msg, "column ", 7) && rest)
            yd_problem(d, v, "collect.log.files: path '%s', %.*s of the "
                       "pattern%s", s, (int)(rest - why.msg), why.msg, rest);
        else
            yd_problem(d, v, "collect.log.files: path '%s': %s", s, why.msg);
        return -1;
    }
    pp_free(p);
    str_copy(f->path, sizeof f->path, s);
    return 0;
}

typedef struct file_raw {
    ccf_file f;
    int format, source;
} file_raw;

static const yd_key file_keys[] = {
    {"path", YD_SCALAR, YD_REQUIRED, 0, 0, 0, 0, 0, 0, read_path},
    {"format", YD_ENUM, 0, offsetof(file_raw, format), 0, 0, formats, 2, 0, 0},
    {"source", YD_ENUM, 0, offsetof(file_raw, source), 0, 0, sources, 4, 0, 0},
    {"host", YD_BUF, 0, offsetof(file_raw, f) + FOFF(host), 0,
     sizeof(((ccf_file *)0)->host), 0, 0, 0, 0},
};
static const yd_table file_table = YD_TABLE("a followed file", file_keys);

static int read_files(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    ccf_conf *c = obj;
    size_t n = yd_len(v);
    ccf_file *files;

    (void)k;
    if (n > CCF_MAX_FILES) {
        yd_problem(d, v, "collect.log.files: %zu files, at most %d", n,
                   CCF_MAX_FILES);
        return -1;
    }
    if (!(files = calloc(n ? n : 1, sizeof *files))) {
        yd_problem(d, v, "collect.log.files: out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = yd_item(d, v, i);
        file_raw raw = {.format = 0, .source = 0};
        if (!item || item->type != YAML_MAPPING_NODE) {
            yd_problem(d, item ? item : v, "collect.log.files: each file is "
                       "a mapping {path, format, source, host}");
            free(files);
            return -1;
        }
        if (yd_read(d, item, &file_table, "collect.log.files: ", &raw)) {
            free(files);
            return -1;
        }
        /* read_path wrote into raw.f, which is raw's first member */
        files[i] = raw.f;
        files[i].format = raw.format ? LL_PLAIN : LL_SYSLOG;
        files[i].source = source_of[raw.source];
    }
    free(c->log.files);
    c->log.files = files;
    c->log.nfiles = n;
    return 0;
}

static int read_poll(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    int64_t ms = yd_duration_ms(yd_scalar(v));

    (void)k;
    if (ms < 1000 || ms > 3600000) {
        yd_problem(d, v, "collect.slurm.poll: a duration from 1s to 1h "
                   "(\"10s\"), not '%s'", yd_scalar(v) ? yd_scalar(v) : "");
        return -1;
    }
    ((ccf_conf *)obj)->slurm.poll_ms = (int)ms;
    return 0;
}

/* collect.slurm.canary_nodes: a SLURM hostlist, checked here so that a
 * typo is a FILE:LINE error, not a collector that starts and marks no
 * canary. */
static int read_canary_nodes(yd_doc *d, const yd_key *k, yaml_node_t *v,
                             void *obj)
{
    ccf_conf *c = obj;
    const char *s = yd_scalar(v);
    cs_err why;
    strmap *set = s ? stopo_set(s, &why) : NULL;

    (void)k;
    strmap_free(set, NULL);
    if (!set || strlen(s) >= sizeof c->slurm.canary_nodes) {
        yd_problem(d, v, "collect.slurm.canary_nodes: a SLURM hostlist "
                   "(\"gpu-[001-004],gpu-010\"), not '%s'", s ? s : "");
        return -1;
    }
    str_copy(c->slurm.canary_nodes, sizeof c->slurm.canary_nodes, s);
    return 0;
}

static int read_units(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    ccf_conf *c = obj;
    size_t n = yd_len(v);

    (void)k;
    if (n > CCF_MAX_UNITS) {
        yd_problem(d, v, "collect.journal.units: %zu units, at most %d", n,
                   CCF_MAX_UNITS);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *u = yd_item(d, v, i);
        const char *s = yd_scalar(u);
        if (!s || !*s || strlen(s) >= sizeof c->journal.units[0] ||
            strpbrk(s, "= \t")) {
            yd_problem(d, u ? u : v, "collect.journal.units: a unit's name "
                       "(slurmd, nvidia-fabricmanager.service)");
            return -1;
        }
        str_copy(c->journal.units[i], sizeof c->journal.units[0], s);
    }
    c->journal.nunits = n;
    return 0;
}

/* A metric or label name as Prometheus allows it: [a-zA-Z_:][a-zA-Z0-9_:]*
 * (labels without the colon; the one rule is enough to catch a typo). */
static int prom_name(const char *s)
{
    if (!s || !*s || strlen(s) >= CCF_NAME_MAX || (*s >= '0' && *s <= '9'))
        return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_:") == strlen(s);
}

/* A list of names into dst[max][CCF_NAME_MAX]. */
static int read_names(yd_doc *d, yaml_node_t *v, const char *what,
                      char (*dst)[CCF_NAME_MAX], size_t max, size_t *n)
{
    size_t len = yd_len(v);

    if (len > max) {
        yd_problem(d, v, "%s: %zu names, at most %zu", what, len, max);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        yaml_node_t *it = yd_item(d, v, i);
        if (!prom_name(yd_scalar(it))) {
            yd_problem(d, it ? it : v, "%s: a Prometheus name "
                       "([a-zA-Z_:][a-zA-Z0-9_:]*, under %d bytes), not "
                       "'%.60s'", what, CCF_NAME_MAX,
                       yd_scalar(it) ? yd_scalar(it) : "");
            return -1;
        }
        str_copy(dst[i], CCF_NAME_MAX, yd_scalar(it));
    }
    *n = len;
    return 0;
}

static int read_allow(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    ccf_conf *c = obj;

    (void)k;
    return read_names(d, v, "collect.remote_write.allow",
                      c->remote_write.allow, CCF_MAX_NAMES,
                      &c->remote_write.nallow);
}

static int read_job_labels(yd_doc *d, const yd_key *k, yaml_node_t *v,
                           void *obj)
{
    ccf_conf *c = obj;

    (void)k;
    return read_names(d, v, "collect.remote_write.job_labels",
                      c->remote_write.job_labels, CCF_MAX_JOB_LABELS,
                      &c->remote_write.njob_labels);
}

static int read_rename(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    ccf_conf *c = obj;
    size_t n = yd_len(v);

    (void)k;
    if (n > CCF_MAX_RENAME) {
        yd_problem(d, v, "collect.remote_write.rename: %zu names, at most "
                   "%d", n, CCF_MAX_RENAME);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *from = yd_pair_key(d, v, i), *to = yd_pair_value(d, v, i);
        if (!prom_name(yd_scalar(from)) || !prom_name(yd_scalar(to))) {
            yd_problem(d, prom_name(yd_scalar(from)) ? to : from,
                       "collect.remote_write.rename: FROM: TO, each a "
                       "Prometheus metric name");
            return -1;
        }
        str_copy(c->remote_write.rename[i][0], CCF_NAME_MAX, yd_scalar(from));
        str_copy(c->remote_write.rename[i][1], CCF_NAME_MAX, yd_scalar(to));
    }
    c->remote_write.nrename = n;
    return 0;
}

/* The bearer token Prometheus sends (authorization.credentials_file):
 * a reference, read now, so a missing file is told with its line. */
static int read_rw_token(yd_doc *d, const yd_key *k, yaml_node_t *v,
                         void *obj)
{
    ccf_conf *c = obj;
    cs_err why;

    (void)k;
    if (secret_read(yd_scalar(v), c->remote_write.token,
                    sizeof c->remote_write.token, &why)) {
        yd_problem(d, v, "collect.remote_write.token: %s", why.msg);
        return -1;
    }
    return 0;
}

#define BUF(n, f) {n, YD_BUF, 0, OFF(f), 0, sizeof(((ccf_conf *)0)->f), 0, 0, 0, 0}

static const yd_key log_keys[] = {
    BUF("checkpoint", log.checkpoint),
    {"from_start", YD_BOOL, 0, OFF(log.from_start), 0, 0, 0, 0, 0, 0},
    {"sweep_ms", YD_INT, 0, OFF(log.sweep_ms), 10, 3600000, 0, 0, 0, 0},
    {"files", YD_LIST, 0, 0, 0, 0, 0, 0, "collect.log.files is a list of "
     "{path, format, source, host}", read_files},
};
static const yd_key slurm_keys[] = {
    {"poll", YD_SCALAR, 0, 0, 0, 0, 0, 0, 0, read_poll},
    BUF("state", slurm.state),
    BUF("bin", slurm.bindir),
    BUF("canary_feature", slurm.canary_feature),
    {"canary_nodes", YD_SCALAR, 0, 0, 0, 0, 0, 0, 0, read_canary_nodes},
};
static const yd_key rw_keys[] = {
    BUF("listen", remote_write.listen),
    {"port", YD_INT, 0, OFF(remote_write.port), 0, 65535, 0, 0, 0, 0},
    {"token", YD_SCALAR, 0, 0, 0, 0, 0, 0, 0, read_rw_token},
    {"max_body", YD_SIZE, 0, OFF(remote_write.max_body), 1024, 64 << 20, 0, 0,
     0, 0},
    {"max_decompressed", YD_SIZE, 0, OFF(remote_write.max_decompressed), 1024,
     1LL << 30, 0, 0, 0, 0},
    {"max_samples", YD_SIZE, 0, OFF(remote_write.max_samples), 1, 10000000, 0,
     0, 0, 0},
    {"ack_timeout_s", YD_INT, 0, OFF(remote_write.ack_timeout_s), 1, 25, 0, 0,
     0, 0},
    {"all", YD_BOOL, 0, OFF(remote_write.all), 0, 0, 0, 0, 0, 0},
    {"allow", YD_LIST, 0, 0, 0, 0, 0, 0, "collect.remote_write.allow is a "
     "list of metric names", read_allow},
    {"rename", YD_MAP, 0, 0, 0, 0, 0, 0, "collect.remote_write.rename is a "
     "mapping FROM: TO", read_rename},
    {"job_labels", YD_LIST, 0, 0, 0, 0, 0, 0, "collect.remote_write."
     "job_labels is a list of label names", read_job_labels},
};
static const yd_table rw_table = YD_TABLE("'collect.remote_write'", rw_keys);
static const yd_key journal_keys[] = {
    BUF("checkpoint", journal.checkpoint),
    BUF("directory", journal.directory),
    {"kernel", YD_BOOL, 0, OFF(journal.kernel), 0, 0, 0, 0, 0, 0},
    {"from_start", YD_BOOL, 0, OFF(journal.from_start), 0, 0, 0, 0, 0, 0},
    {"units", YD_LIST, 0, 0, 0, 0, 0, 0, "collect.journal.units is a list "
     "of unit names", read_units},
};
static const yd_table journal_table = YD_TABLE("'collect.journal'",
                                               journal_keys);
static const yd_table log_table = YD_TABLE("'collect.log'", log_keys);
static const yd_table slurm_table = YD_TABLE("'collect.slurm'", slurm_keys);

static int read_log(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    (void)k;
    return yd_read(d, v, &log_table, "collect.log.", obj) ? -1 : 0;
}

static int read_journal(yd_doc *d, const yd_key *k, yaml_node_t *v,
                        void *obj)
{
    (void)k;
    return yd_read(d, v, &journal_table, "collect.journal.", obj) ? -1 : 0;
}

static int read_slurm(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    (void)k;
    return yd_read(d, v, &slurm_table, "collect.slurm.", obj) ? -1 : 0;
}

static int read_rw(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    (void)k;
    return yd_read(d, v, &rw_table, "collect.remote_write.", obj) ? -1 : 0;
}

static int read_events_api(yd_doc *d, const yd_key *k, yaml_node_t *v,
                           void *obj)
{
    static const char *const apis[] = {"core", "events"};
    int i = yd_pick(yd_scalar(v), apis, 2);

    (void)k;
    if (i < 0) {
        yd_problem(d, v, "collect.k8s.events_api: core (/api/v1) or events "
                   "(events.k8s.io/v1), not '%s'", yd_scalar(v) ? yd_scalar(v) : "");
        return -1;
    }
    ((ccf_conf *)obj)->k8s.events_api_v1 = i;
    return 0;
}

static int read_max_age(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    int64_t ms = yd_duration_ms(yd_scalar(v));

    (void)k;
    if (ms < 60000 || ms > 7 * 86400000LL) {
        yd_problem(d, v, "collect.k8s.max_age: a duration from 1m to 7d "
                   "(\"2h\"), not '%s'", yd_scalar(v) ? yd_scalar(v) : "");
        return -1;
    }
    ((ccf_conf *)obj)->k8s.max_age_s = (int)(ms / 1000);
    return 0;
}

static int read_classes(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    ccf_conf *c = obj;
    size_t n = yd_len(v);

    (void)k;
    if (n > CCF_MAX_CLASSES) {
        yd_problem(d, v, "collect.k8s.reserved_classes: %zu, at most %d", n,
                   CCF_MAX_CLASSES);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *u = yd_item(d, v, i);
        const char *s = yd_scalar(u);
        if (!s || !*s || strlen(s) >= sizeof c->k8s.reserved[0]) {
            yd_problem(d, u ? u : v, "collect.k8s.reserved_classes: a "
                       "PriorityClass name");
            return -1;
        }
        str_copy(c->k8s.reserved[i], sizeof c->k8s.reserved[0], s);
    }
    c->k8s.nreserved = n;
    return 0;
}

static const yd_key k8s_keys[] = {
    BUF("kubeconfig", k8s.kubeconfig),
    BUF("context", k8s.context),
    BUF("namespace", k8s.ns),
    {"events_api", YD_SCALAR, 0, 0, 0, 0, 0, 0, 0, read_events_api},
    BUF("state", k8s.state),
    BUF("pod_selector", k8s.pod_selector),
    {"workloads", YD_BOOL, 0, OFF(k8s.workloads), 0, 0, 0, 0, 0, 0},
    BUF("team_label", k8s.team_label),
    BUF("job_name_label", k8s.job_name_label),
    BUF("rack_label", k8s.rack_label),
    BUF("canary_label", k8s.canary_label),
    {"reserved_classes", YD_LIST, 0, 0, 0, 0, 0, 0, "collect.k8s."
     "reserved_classes is a list of PriorityClass names", read_classes},
    {"max_age", YD_SCALAR, 0, 0, 0, 0, 0, 0, 0, read_max_age},
};
static const yd_table k8s_table = YD_TABLE("'collect.k8s'", k8s_keys);

static int read_k8s(yd_doc *d, const yd_key *k, yaml_node_t *v, void *obj)
{
    (void)k;
    return yd_read(d, v, &k8s_table, "collect.k8s.", obj) ? -1 : 0;
}

static const yd_key collect_keys[] = {
    BUF("cluster", cluster),
    {"log", YD_MAP, 0, 0, 0, 0, 0, 0, "collect.log must be a mapping",
     read_log},
    {"journal", YD_MAP, 0, 0, 0, 0, 0, 0, "collect.journal must be a mapping",
     read_journal},
    {"slurm", YD_MAP, 0, 0, 0, 0, 0, 0, "collect.slurm must be a mapping",
     read_slurm},
    {"remote_write", YD_MAP, 0, 0, 0, 0, 0, 0, "collect.remote_write must be "
     "a mapping", read_rw},
    {"k8s", YD_MAP, 0, 0, 0, 0, 0, 0, "collect.k8s must be a mapping",
     read_k8s},
};
static const yd_table collect_table = YD_TABLE("'collect'", collect_keys);

int ccf_load(ccf_conf *c, const char *path, cs_err *err)
{
    ccf_conf next = *c;
    yaml_node_t *root, *sec;
    yd_doc *d;
    int rc = 0;

    err->msg[0] = '\0';
    next.log.files = NULL; /* a files list read replaces c's */
    if (!(d = yd_parse_file(path, yd_sink_first, err)))
        return -1;
    root = yd_root(d);
    sec = root && root->type == YAML_MAPPING_NODE ? yd_get(d, root, "collect")
                                                  : NULL;
    if (sec && sec->type != YAML_MAPPING_NODE) {
        yd_problem(d, sec, "section 'collect' must be a mapping of keys");
        rc = -1;
    } else if (sec) {
        rc = yd_read(d, sec, &collect_table, "collect.", &next) ? -1 : 0;
    }
    yd_free(d);
    if (rc) {
        explicit_bzero(next.remote_write.token, sizeof next.remote_write.token);
        free(next.log.files);
        return -1;
    }
    if (next.log.files) {
        free(c->log.files);
    } else {
        next.log.files = c->log.files;
        next.log.nfiles = c->log.nfiles;
    }
    *c = next;
    return 0;
}

void ccf_reference(void *stdio_file)
{
    ccf_conf c;

    ccf_defaults(&c);
    yd_reference(stdio_file, &collect_table, "`collect`", &c);
    yd_reference(stdio_file, &log_table, "`collect.log`", &c);
    yd_reference(stdio_file, &file_table, "`collect.log.files[]` (each file)",
                 NULL);
    yd_reference(stdio_file, &journal_table, "`collect.journal`", &c);
    yd_reference(stdio_file, &slurm_table, "`collect.slurm`", &c);
    yd_reference(stdio_file, &rw_table, "`collect.remote_write`", &c);
    yd_reference(stdio_file, &k8s_table, "`collect.k8s`", &c);
    ccf_free(&c);
}
