/* Responses per scenario (SCENARIOS.md, last column): which playbooks an
 * incident proposes, the approval each needs, and what it targets. The ids
 * are public vocabulary and never change meaning.
 *
 * The catalog is data: rules/<family>.yaml, one file per family, compiled
 * into the binary as the default and loadable from a folder. */
#ifndef CS_PLAYBOOKS_H
#define CS_PLAYBOOKS_H

#include <stddef.h>

typedef enum { APPR_AUTO, APPR_HITL, APPR_CANARY } pb_approval;

typedef enum {
    PB_TARGET_NODE,     /* the incident's node */
    PB_TARGET_JOB,      /* the incident's job */
    PB_TARGET_EACH_JOB, /* every job the incident explains */
    PB_TARGET_NONE,
} pb_target;

typedef enum {
    PB_FIX_NONE,
    PB_FIX_EXCLUDE_NODE,  /* params.exclude_nodes = [node] */
    PB_FIX_BATCH,         /* smaller batch_size + gradient_checkpointing */
    PB_FIX_ACTIVATION,    /* gradient_checkpointing + fp16 */
    PB_FIX_ALLOC_CONF,    /* env PYTORCH_CUDA_ALLOC_CONF */
    PB_FIX_TICKET,        /* params.category */
} pb_fix;

typedef struct pb_step {
    const char *playbook;
    pb_approval approval;
    pb_target target;
    pb_fix fix;
    const char *category; /* PB_FIX_TICKET */
} pb_step;

typedef struct pb_scenario {
    const char *id;
    int node_level; /* a fault of the node, not of one job */
    const char *what; /* diagnosis, for the summary */
    const char *todo; /* what to do, for the summary */
    const pb_step *steps;
    int nsteps;
} pb_scenario;

typedef struct pb_catalog pb_catalog;

/* Called for every problem found, with "FILE:LINE:COL" and the reason. */
typedef void (*pb_error_fn)(void *arg, const char *where, const char *msg);

pb_catalog *pb_catalog_new(void);
void pb_catalog_free(pb_catalog *c);
/* Adds the scenarios of one rule file's text; returns the number of
 * problems reported (0: all of it was taken). */
int pb_catalog_add(pb_catalog *c, const char *name, const char *text,
                   size_t len, pb_error_fn fn, void *arg);
/* Every *.yaml in dir, in name order; -1 when dir cannot be read. */
int pb_catalog_load_dir(pb_catalog *c, const char *dir, pb_error_fn fn,
                        void *arg);
/* The rule files built into the binary (validated by the test suite). */
pb_catalog *pb_catalog_embedded(void);
size_t pb_catalog_count(const pb_catalog *c);

/* NULL for an id the catalog does not have. */
const pb_scenario *pb_find(const pb_catalog *c, const char *scenario);
const char *pb_approval_name(pb_approval a);

#endif
