/* Responses per scenario (SCENARIOS.md, last column): which playbooks an
 * incident proposes, the approval each needs, and what it targets. The ids
 * are public vocabulary and never change meaning.
 *
 * The catalog is data: rules/<family>.yaml, one file per family, compiled
 * into the binary as the default and loadable from a folder. */
#ifndef CS_PLAYBOOKS_H
#define CS_PLAYBOOKS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

typedef enum { APPR_AUTO, APPR_HITL, APPR_CANARY } pb_approval;

/* Same order as the names in playbooks.c. */
typedef enum {
    PB_TARGET_NODE,     /* the incident's node */
    PB_TARGET_JOB,      /* the incident's job */
    PB_TARGET_EACH_JOB, /* every job the incident explains (failed) */
    PB_TARGET_NONE,
    PB_TARGET_EACH_AFFECTED, /* every job it names, failed or degraded */
    PB_TARGET_RACK,     /* the incident's rack */
    PB_TARGET_TEAM,     /* the incident's team (capacity planning) */
} pb_target;

typedef enum {
    PB_FIX_NONE,
    PB_FIX_EXCLUDE_NODE,  /* params.exclude_nodes = [node] */
    PB_FIX_BATCH,         /* smaller batch_size + gradient_checkpointing */
    PB_FIX_ACTIVATION,    /* gradient_checkpointing + fp16 */
    PB_FIX_ALLOC_CONF,    /* env PYTORCH_CUDA_ALLOC_CONF */
    PB_FIX_TICKET,        /* params.category */
    PB_FIX_WORKERS,       /* fewer DataLoader workers (num_workers) */
    PB_FIX_SHM,           /* a larger /dev/shm (shm_size, bytes) */
    PB_FIX_TOLERATIONS,   /* tolerations for the taint that blocked it */
    PB_FIX_SOCKET_IFNAME, /* env NCCL_SOCKET_IFNAME (+ NCCL_DEBUG=INFO) */
    PB_FIX_WORKER_MEMORY, /* more memory per Ray worker */
    PB_FIX_SAME_CONFIG,   /* the job's own config, unchanged */
    PB_FIX_INPUT_BOUND,   /* more DataLoader workers, shm, local staging */
    PB_FIX_CHECKPOINT_MEMORY, /* async checkpointing, more host memory */
    PB_FIX_GCS_FT,        /* GCS fault tolerance on, a larger head node */
    PB_FIX_PEAK_HOURS,    /* the team's peak hours (UTC) and days seen */
    PB_FIX_IDLE_COST,     /* idle GPUs and what they cost per day */
    PB_FIX_PIPELINE,      /* the dependency chain's jobs, top first */
    PB_FIX_HOST_MEMORY,   /* more host memory (config.host_memory_gb) */
} pb_fix;

/* When a step applies, decided from the job the incident is about. */
typedef enum {
    PB_WHEN_ALWAYS,
    PB_WHEN_RESERVED, /* the job's priority is reserved */
    PB_WHEN_ELASTIC,  /* the job's priority is elastic (or unknown) */
    PB_WHEN_REPEATED, /* the incident recurred (same logical job again) */
    PB_WHEN_GCS_FT,   /* the Ray job runs with GCS fault tolerance */
    PB_WHEN_NO_GCS_FT, /* ... without it */
    PB_WHEN_THERMAL,   /* the root cause is heat (a thermal.* root) */
    PB_WHEN_NOT_THERMAL,
} pb_when;

typedef struct pb_step {
    const char *playbook;
    pb_approval approval;
    pb_target target;
    pb_fix fix;
    const char *category; /* PB_FIX_TICKET */
    pb_when when;
    /* Fixed parameters written in the rule (`params:`, a flat mapping of
     * scalars), merged into the action's params; NULL when it has none. */
    json_t *params;
    char where[160]; /* FILE:LINE:COL of the action, for later checks */
} pb_step;

typedef struct pb_scenario {
    const char *id;
    int node_level; /* a fault of the node, not of one job */
    /* A cascade whose root cause keeps its own response: the root
     * scenario's actions (on the root job or node) come first. */
    int root_actions;
    const char *what; /* diagnosis, for the summary */
    const char *todo; /* what to do, for the summary */
    const pb_step *steps;
    int nsteps;
    /* Node scenarios this one escalates (`escalates:`): a node's open
     * incident of one of them takes this scenario when this fault follows
     * on the node (an NVMe timeout, then the controller removed). */
    const char **escalates;
    int nescalates;
    char escalates_where[160]; /* FILE:LINE:COL, for pb_catalog_link */
} pb_scenario;

/* A signature: a pattern over one source's text, with named fields
 * (host, job, gpu, pci, xid, rank, nodes, step, pid, detail), the fact
 * kind it makes and, where the text alone decides it, the scenario.
 * Examples travel with it: `cascade rules test` runs them. */
typedef struct pb_example {
    const char *text;     /* a line, or an alert's labels as JSON */
    const char *scenario; /* what it must produce, or NULL: no scenario */
    const char *fact;     /* the fact kind it must produce, or NULL */
    const char *detail;   /* the detail it must carry, or NULL: not checked */
    int source;           /* the signal source it arrives on (sig_source) */
    int line;             /* where it is written, for reports */
} pb_example;

typedef struct pb_signature {
    const char *id;
    int source;           /* sig_source: the first one listed */
    unsigned sources;     /* every source it reads, 1u << sig_source */
    const char *fact;     /* fact kind name (see classify.h) */
    int kind;             /* the same, parsed (fact_kind) */
    const char *scenario; /* NULL: the engine decides from evidence */
    const char *match;    /* PCRE2 pattern; for alerts, over alertname */
    void *re;             /* compiled pattern (pcre2_code) */
    /* The line heads a report: its fact waits for the indented lines that
     * follow from the same rank and carries them as its detail. */
    int report;
    /* Tried after every signature of its sources that is not one: a
     * catch-all ("CUDA error: ") that the specific ones, in any file,
     * come before. */
    int fallback;
    const char *file;
    int line;
    pb_example *examples;
    int nexamples;
} pb_signature;

/* A correlation over signatures (`correlations:` in a rule file): the
 * events are signature ids, counted per key (the fact's host or job) in
 * event time; when it completes it opens (or touches) the scenario's
 * incident for that key, then ignores the key's events until the window
 * that fired has passed (SEC's semantics, so the counts compare).
 *   threshold: `count` events of the one signature within `window`
 *   sequence:  the signatures in the order listed, first to last within
 *              `window`; a repeat of the first while waiting keeps the
 *              earliest, a late last one clears the wait
 *   group:     every signature at least once, in any order, within
 *              `window` */
typedef enum { PB_CORR_THRESHOLD, PB_CORR_SEQUENCE, PB_CORR_GROUP } pb_corr_kind;
typedef enum { PB_BY_HOST, PB_BY_JOB } pb_corr_by;
#define PB_CORR_MAX_EVENTS 8

typedef struct pb_correlation {
    const char *scenario; /* what it opens; a scenario of the catalog */
    pb_corr_kind kind;
    pb_corr_by by;
    const char *events[PB_CORR_MAX_EVENTS]; /* signature ids */
    int nevents;
    int count;      /* threshold: events needed (>= 2) */
    int64_t window; /* ms */
    char where[160]; /* FILE:LINE:COL, for the checks after loading */
} pb_correlation;


/* ---- playbooks (rules/playbooks.yaml): what an action does when an
 * executor runs it (seed 003's runbook metadata) ---- */

/* Same order as the names in playbooks.c. */
typedef enum {
    PB_CLASS_READ_ONLY,   /* runs alone */
    PB_CLASS_NOTIFY,      /* runs alone */
    PB_CLASS_JOB,         /* on jobs the incident broke; needs a budget */
    PB_CLASS_CHANGE,      /* needs an approval or a canary node */
    PB_CLASS_RECOVERY,    /* never held back by a spent budget */
    PB_CLASS_DESTRUCTIVE, /* always needs an approval */
} pb_class;

typedef enum { PB_MODE_SHADOW, PB_MODE_CANARY, PB_MODE_ON } pb_mode;

/* The scheduler a cluster runs; steps for PB_ON_ANY run on every one. */
typedef enum { PB_ON_ANY, PB_ON_SLURM, PB_ON_K8S, PB_ON__COUNT } pb_backend;

/* One call of an executor's operation: "slurm.drain" with its arguments
 * (scalars; "{name}" in a string is the action's value when it runs). */
typedef struct pb_call {
    const char *op;
    json_t *args;
} pb_call;

typedef struct pb_calls {
    pb_call *v;
    int n;
} pb_calls;

/* A precondition or a verification: field in / not in a list of values,
 * or at most a number. */
typedef enum { PB_CHECK_IN, PB_CHECK_NOT_IN, PB_CHECK_AT_MOST } pb_check_op;

typedef struct pb_check {
    const char *field; /* node.state, node.jobs, node.drained_by, ... */
    pb_check_op op;
    json_t *value;     /* an array of strings, or an integer */
} pb_check;

typedef struct pb_budget {
    int per_rack; /* else per cluster */
    int max;
    int64_t window; /* ms */
} pb_budget;

typedef struct pb_playbook {
    const char *id, *version, *what;
    pb_class cls;
    pb_approval approval; /* the least it may run under */
    pb_mode mode;
    pb_budget *budgets;
    int nbudgets;
    pb_check *pre;
    int npre;
    pb_calls steps[PB_ON__COUNT];
    pb_check *verify;
    int nverify;
    int64_t verify_timeout; /* ms */
    pb_calls rollback[PB_ON__COUNT];
    const char *file;
    int line;
} pb_playbook;

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
/* Cross-file checks (scenarios named by signatures, examples, Xid codes);
 * load_dir runs it. Returns the number of problems. */
int pb_catalog_link(pb_catalog *c, pb_error_fn fn, void *arg);
/* Warnings about patterns that load but cost too much (after linking):
 * nested unbounded quantifiers, which backtrack catastrophically on a
 * line that almost matches, and patterns the prefilter cannot hold. Each
 * goes to fn as (FILE:LINE, message); returns how many. */
int pb_catalog_lint(const pb_catalog *c, pb_error_fn fn, void *arg);
/* The rule files built into the binary (validated by the test suite). */
pb_catalog *pb_catalog_embedded(void);
size_t pb_catalog_count(const pb_catalog *c);

/* NULL for an id the catalog does not have. */
const pb_scenario *pb_find(const pb_catalog *c, const char *scenario);
/* Whether scenario `to` escalates scenario `from` (its `escalates:`). */
int pb_escalates(const pb_scenario *to, const char *from);
const char *pb_approval_name(pb_approval a);

/* Signatures in file order (the order they are tried in). */
const pb_signature *pb_signatures(const pb_catalog *c, size_t *n);
/* The signatures' prefilter (rules/prefilter.h); NULL before
 * pb_catalog_link. */
struct pfl;
const struct pfl *pb_prefilter(const pb_catalog *c);
/* Xid codes that name a fault of either the GPU or the program running
 * on it (13, 31, 43): where they recur decides which (hardware.yaml
 * xid_tracked). Returns the scenario for "one GPU, several jobs" in
 * *same_gpu and for "one job, several GPUs" in *same_job; 0 when the code
 * is not tracked. */
int pb_xid_tracked(const pb_catalog *c, int code, const char **same_gpu,
                   const char **same_job);
/* An action request's id: "act-" and 16 hex digits of the incident id and
 * the action (keys sorted), so a request published again, by the same
 * correlator or its replacement, has the id it had. len >= 21. */
void pb_action_id(const char *incident, const json_t *action, char *buf,
                  size_t len);
/* NULL for an id the catalog does not have. */
const pb_playbook *pb_playbook_find(const pb_catalog *c, const char *id);
/* Playbooks in file order. */
const pb_playbook *pb_playbooks(const pb_catalog *c, size_t *n);
const char *pb_class_name(pb_class k);
const char *pb_mode_name(pb_mode m);
/* The calls a playbook makes (or undoes, rollback) on a cluster of this
 * scheduler: its own when it has them, else those for any; NULL: none. */
const pb_calls *pb_calls_for(const pb_calls set[PB_ON__COUNT], pb_backend b);

/* Correlations in file order. */
const pb_correlation *pb_correlations(const pb_catalog *c, size_t *n);
const char *pb_corr_kind_name(pb_corr_kind k);

/* NULL for an id the catalog does not have. */
const pb_signature *pb_signature_find(const pb_catalog *c, const char *id);
/* The scenario an Xid code signals on its own (hardware.yaml xid_codes),
 * or NULL: decided from evidence (13/31/43) or not a fault. */
const char *pb_xid_scenario(const pb_catalog *c, int code);

#endif
