/* What SLURM's controller says of its jobs and nodes, read from its JSON
 * interfaces: `squeue --json` and `sinfo --json` (22.05: the openapi
 * v0.0.38 plugin loaded by the command; slurmrestd's GET /jobs and
 * /nodes answer the same document). Later shapes are read too: a number
 * as {"set", "infinite", "number"}, a job_state as a list of its base
 * state and flags.
 *
 * The commands exit 0 even when the controller does not answer: the only
 * sign is a non-empty "errors" list, which is a failed read here, never
 * "no jobs" (that would read as every job gone). */
#ifndef CS_SLURMJSON_H
#define CS_SLURMJSON_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/err.h"

typedef struct sj_job {
    char id[32];
    char name[256];
    char account[128];
    char partition[128];
    char qos[128];
    char cluster[128];
    /* the base state (PENDING, RUNNING, ... OUT_OF_MEMORY); "" while
     * only a flag shows (COMPLETING, CONFIGURING, REQUEUED, ...: 22.05
     * prints the flag instead of the base) */
    char state[32];
    char flag[32];    /* that flag, or "" */
    char reason[128]; /* state_reason; "" for None */
    char *nodes;      /* a hostlist: gpu-[001-004] (malloc'd, never NULL) */
    char dependency[1024];
    char command[1024];
    char workdir[1024];
    int restart_cnt;
    int batch; /* batch_flag: a script exists */
    int exit_code;
    int gpus;  /* allocated (gres_detail, tres_alloc_str), else asked */
    int64_t submit, start, end, preempt; /* epoch seconds, 0: none */
} sj_job;

typedef struct sj_node {
    char name[128];
    char state[32];  /* idle allocated mixed down ... (lower case) */
    char flags[256]; /* DRAIN+NOT_RESPONDING..., "" for none */
    char reason[512];
    char reason_by[64];
    char gres[256];
    char features[512];
    char address[64];   /* NodeAddr, "" when the same as the name */
    char hostname[128]; /* NodeHostname, the same */
    int64_t reason_at, boot;
    int gpus;        /* from gres: gpu[:TYPE]:N entries summed */
} sj_node;

/* squeue --json's text: -1 with err (the controller's errors, or what is
 * malformed and where) when it is not a full answer. Freed with
 * sj_free_jobs. */
int sj_parse_jobs(const char *text, size_t len, sj_job **jobs, size_t *n,
                  cs_err *err);
void sj_free_jobs(sj_job *jobs, size_t n);
int sj_parse_nodes(const char *text, size_t len, sj_node **nodes, size_t *n,
                   cs_err *err);

/* The node's features as the site's words for its place and policy: the
 * first "rack..." feature in rack ("rack=R" and "rack:R" give R, "rack7"
 * itself; "" for none); 1 when canary_f is among them. */
int sj_node_features(const sj_node *n, const char *canary_f, char *rack,
                     size_t len);
/* NodeAddr and NodeHostname where they say more than the name (not
 * loopback, which names every node alike): the names other logs know the
 * node by (Ray's names nodes by IP), as an inventory's `addrs`; NULL when
 * none. */
json_t *sj_node_addrs(const sj_node *n);

/* Whether a node is unreachable by the controller: down, or
 * NOT_RESPONDING among its flags (FAIL is an admin's "failing", not
 * unreachable). */
int sj_node_down(const sj_node *n);

#endif
