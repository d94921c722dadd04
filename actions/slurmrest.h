/* SLURM through slurmrestd, where the REST API has the call. Debian 12
 * ships slurmrestd 22.05, whose OpenAPI (v0.0.38) reads nodes and jobs and
 * cancels, submits and updates jobs, but has no node update (drain and
 * resume came with v0.0.39 in 23.02) and no batch script in a job read.
 * So, when a slurmrestd section is configured:
 *
 *   facts         GET /slurm/v0.0.38/node/N (state, flags, reason),
 *                 GET /slurm/v0.0.38/jobs (running jobs on N), and
 *                 GET /slurm/v0.0.38/job/J (job.state)
 *   slurm.cancel  DELETE /slurm/v0.0.38/job/J
 *
 * and every other slurm.* call still runs scontrol/sbatch (slurm.c).
 * Authentication: X-SLURM-USER-NAME / X-SLURM-USER-TOKEN (a JWT) over
 * HTTP(S), or none over slurmrestd's unix socket (rest_auth/local). */
#ifndef CS_SLURMREST_H
#define CS_SLURMREST_H

#include <jansson.h>

#include "actions/excfg.h"
#include "actions/exec.h"
#include "core/httpc.h"
#include "core/err.h"

typedef struct srest srest;

/* Borrows h and c (its slurmrestd section must be set). */
srest *srest_new(httpc *h, const ex_conf *c);
/* Frees calls in flight without calling back: free h first. */
void srest_free(srest *s);

int srest_knows(const char *op);
int srest_call(srest *s, const char *op, const json_t *target,
               exec_done_fn fn, void *arg, cs_err *err);
int srest_facts(srest *s, const char *node, const char *job, json_t *facts,
                exec_done_fn fn, void *arg, cs_err *err);
/* As an executor (its calls go through h: free h first). */
executor srest_executor(srest *s);

/* Exposed for tests: a v0.0.38 node object as facts (the same rules as
 * scontrol's record), and whether a hostlist ("gpu-[001-003,007]") names
 * a node. */
int srest_node_facts(const json_t *node, json_t *facts, cs_err *err);
int srest_hostlist_has(const char *list, const char *node);

#endif
