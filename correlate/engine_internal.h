/* Private to the engine's files: its state and the incident record. */
#ifndef CS_ENGINE_INTERNAL_H
#define CS_ENGINE_INTERNAL_H

#include "core/strmap.h"
#include "correlate/engine.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

typedef struct entry {
    int64_t ts;
    uint64_t sig;
    fact_kind kind;
    char job[64];
    const char *scenario; /* static catalog string or NULL */
} entry;

typedef struct node_win {
    entry *v;
    size_t n, cap;
} node_win;

typedef struct node_info {
    char rack[64];
    int canary;
} node_info;

typedef struct job {
    char id[64];
    char name[128];
    char team[64];
    char state[16];
    json_t *nodes;  /* array of host names */
    json_t *config; /* launch parameters */
    char incident[24]; /* the incident that explains its failure */
} job;

typedef struct child {
    char job[64];
    char state[16];
    char scenario[48];
    int64_t ts;
} child;

typedef struct incident {
    char id[24];
    const pb_scenario *sc;
    char cluster[64], node[128], gpu[16], job[64];
    const char *root_scenario;
    char root_node[128], root_job[64];
    int64_t root_ts, opened, updated, first, last;
    int count;
    unsigned sources;
    child *children;
    size_t nchildren;
    fact cause;      /* the fact that opened it (sizes for OOM fixes) */
    int dirty;
    json_t *published; /* actions already sent */
} incident;

struct engine {
    const eng_store_ops *ops;
    void *ctx;
    classifier *cls;
    strmap *nodes;     /* host -> node_win */
    strmap *inventory; /* host -> node_info */
    strmap *jobs;      /* job id -> job */
    strmap *open_node; /* host -> incident (node-level) */
    strmap *open_job;  /* job id -> incident (job-level) */
    strmap *seen;      /* signal id hex -> (int64_t *) ts */
    incident **incs;
    size_t ninc, capinc;
    int64_t now; /* event-time watermark */
};

json_t *eng_incident_json(engine *e, const incident *inc);
json_t *eng_actions(engine *e, const incident *inc);

#endif
