/* The catalog's insides, shared by its files and private to rules/: the
 * catalog itself (catalog.c: queries, linking, freeing), the YAML helpers
 * every reader uses (yamlread.c: each problem as FILE:LINE:COL), reading
 * a rule file (load.c: scenarios, signatures, Xid maps, a folder, the
 * built-in set) and its playbooks and correlations (playbook.c). The
 * public face is rules/playbooks.h. */
#ifndef CS_CATALOG_PRIV_H
#define CS_CATALOG_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "rules/playbooks.h"
#include "rules/prefilter.h"

#define N(a) ((int)(sizeof a / sizeof *a))

typedef struct xid_map {
    int code;
    const char *scenario;
    char where[160]; /* FILE:LINE:COL, for the checks after loading */
} xid_map;

struct pb_catalog {
    pb_scenario *v;
    size_t n, cap;
    pb_signature *sigs;
    size_t nsigs, capsigs;
    xid_map *xids;
    size_t nxids;
    int tracked[16];
    int ntracked;
    char *same_gpu, *same_job;
    char tracked_where[160];
    pb_playbook *plays;
    size_t nplays, capplays;
    pb_correlation *corrs;
    size_t ncorrs, capcorrs;
    pfl *pf; /* the signatures' prefilter, built by pb_catalog_link */
};

/* One file being read: its document and where problems go. */
typedef struct reader {
    const char *name;
    yaml_document_t doc;
    pb_error_fn fn;
    void *arg;
    int errors;
} reader;

/* ---- yamlread.c ---- */
void yr_problem(reader *r, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* a if set, else b */
yaml_node_t *yr_node_or(yaml_node_t *a, yaml_node_t *b);
/* A scalar's text, or NULL. */
const char *yr_scalar(const yaml_node_t *n);
/* The value of key in a mapping, or NULL. */
yaml_node_t *yr_get(reader *r, yaml_node_t *map, const char *key);
/* A problem for each key of map not in keys (NULL-terminated). */
void yr_only_keys(reader *r, yaml_node_t *map, const char *what,
                  const char *const *keys);
/* v's index in names[0..n), or -1. */
int yr_pick(const char *v, const char *const *names, int n);
int yr_playbook_id_ok(const char *v);
json_t *yr_json_scalar(const char *v);
size_t yr_seq_len(const yaml_node_t *n);
yaml_node_t *yr_seq_at(reader *r, const yaml_node_t *n, size_t i);
/* "30s", "10m", "1h" in ms; -1 when it is not a duration. */
int64_t yr_duration_ms(const char *v);
int yr_version_ok(const char *v);

/* ---- catalog.c ---- */
extern const char *const cat_approvals[3];
extern const char *const cat_classes[6];
extern const char *const cat_modes[3];
extern const char *const cat_corr_kinds[3];
extern const char *const cat_corr_bys[2];
void cat_push_signature(pb_catalog *c, const pb_signature *g);
void cat_push_playbook(pb_catalog *c, const pb_playbook *p);
void cat_free_scenario(pb_scenario *s);
void cat_free_signature(pb_signature *g);
void cat_free_playbook(pb_playbook *p);
void cat_free_correlation(pb_correlation *k);

/* ---- playbook.c ---- */
void cat_read_playbook(reader *r, pb_catalog *c, yaml_node_t *n);
void cat_read_correlation(reader *r, pb_catalog *c, yaml_node_t *n);

#endif
