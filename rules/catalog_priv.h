/* The catalog's insides, shared by its files and private to rules/: the
 * catalog itself (catalog.c: queries, linking, freeing, the checks of
 * ids), reading a rule file (load.c: scenarios, signatures, Xid maps, a
 * folder, the built-in set) and its playbooks and correlations
 * (playbook.c). Each block of a rule file is read against its keyword
 * table (core/ydoc.h). The public face is rules/playbooks.h. */
#ifndef CS_CATALOG_PRIV_H
#define CS_CATALOG_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "core/ydoc.h"

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
/* Playbook ids and argument names: "family.name", or one lower-case
 * word for the generic ones (notify, recommend). */
int cat_id_ok(const char *v);
/* "MAJOR.MINOR.PATCH", numbers only. */
int cat_version_ok(const char *v);
/* "what ID: ", ID the block's value of key: before its problems. */
void cat_prefix(yd_doc *d, yaml_node_t *n, const char *what, const char *key,
                char *buf, size_t len);

/* ---- playbook.c ---- */
void cat_read_playbook(yd_doc *d, pb_catalog *c, yaml_node_t *n);
void cat_read_correlation(yd_doc *d, pb_catalog *c, yaml_node_t *n);

#endif
