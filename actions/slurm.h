/* The SLURM executor: playbook calls (slurm.drain, slurm.resume, ...) as
 * the operator's own tools (scontrol, scancel, sbatch) run without
 * blocking the loop, and the facts guardrails check (node.state,
 * node.drained_by, node.jobs, job.state) read back from the controller.
 * SLURM_CONF in the environment picks the cluster, as for the tools. */
#ifndef CS_SLURM_H
#define CS_SLURM_H

#include <jansson.h>

#include "actions/exec.h"
#include "core/err.h"

struct event_base;

typedef struct slurm slurm;

/* bindir: where scontrol, squeue, scancel and sbatch are ("" = PATH). */
slurm *slurm_new(struct event_base *base, const char *bindir, int timeout_ms);
void slurm_free(slurm *s);

typedef exec_done_fn slurm_done_fn;

/* Whether op is one of this executor's calls. */
int slurm_knows(const char *op);
/* args: the call's arguments with templates already filled in; target:
 * {node, job, ...}; params: the action's params (resubmission patch).
 * -1 (err set) when it cannot even start; else fn is called once. */
int slurm_call(slurm *s, const char *op, const json_t *args,
               const json_t *target, const json_t *params, slurm_done_fn fn,
               void *arg, cs_err *err);
/* Reads node.* facts for node and job.state for job (either may be NULL)
 * into facts; fn's ok is 0 when the controller could not be asked. */
int slurm_facts(slurm *s, const char *node, const char *job, json_t *facts,
                slurm_done_fn fn, void *arg, cs_err *err);
/* As an executor; reads: whether it reads the facts too (not when
 * slurmrestd reads them). */
executor slurm_executor(slurm *s, int reads);

/* Parsers of the controllers' one-line output, exposed for tests and
 * fuzzing. `scontrol show node -o` -> node.state, node.drained_by,
 * node.reason into facts; -1 when it is not a node record. */
int slurm_parse_node(const char *text, size_t len, json_t *facts, cs_err *err);
/* `scontrol show job -o` -> job.state (and job.name, job.partition,
 * job.workdir, job.nodes into facts); -1 when not a job record. */
int slurm_parse_job(const char *text, size_t len, json_t *facts, cs_err *err);

#endif
