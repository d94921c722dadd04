/* The SLURM collector: `cascade ingest slurm`. Polls the controller's JSON
 * interfaces (`squeue --json`, `sinfo --json`: ingest/slurmjson.h) on the
 * event loop and publishes what changed since the last poll to
 * cascade.signals:
 *
 * - a `job` signal on each job's change of state (PENDING, RUNNING, and
 *   its end: COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL,
 *   PREEMPTED; OUT_OF_MEMORY is FAILED, BOOT_FAIL NODE_FAIL, DEADLINE
 *   TIMEOUT, the raw state in slurm_state), with its nodes, dependencies
 *   (kept from when it was pending: SLURM forgets fulfilled ones), the
 *   reason SLURM gives (DependencyNeverSatisfied), account as team,
 *   attempt (restart_cnt + 1), GPUs, and its launch config read from the
 *   batch script (`scontrol write batch_script`, ingest/jobconf.h) before
 *   its first signal; a requeue whose end no poll saw is told as
 *   NODE_FAIL when one of the attempt's nodes is down, PREEMPTED when it
 *   was preempted;
 * - a `slurm` line on each node's change: "Nodes X not responding,
 *   setting DOWN" once the controller has marked it so for two polls,
 *   "Node X now responding" when it is back, and otherwise the node as
 *   scontrol prints it (NodeName=X State=DOWN+DRAIN Reason=...), except
 *   for reasons cascade's own actions set;
 * - an `inventory` signal per node (rack from a rack feature, else its
 *   leaf switch in `scontrol show topology`; GPUs from its GRES; canary
 *   from a feature or canary_nodes) at start, on change, and every
 *   inventory_ms (the topology is read again then).
 *
 * Each signal's id derives from what it tells (a job's id, attempt and
 * state), so a restart that tells it again is harmless. The state file
 * (what was told of each job and node) is replaced once a poll's signals
 * are acknowledged by Kafka. A failed poll (the controller not answering:
 * squeue exits 0 with errors) publishes nothing and is retried with
 * back-off up to 5 minutes. */
#ifndef CS_SLURMCOL_H
#define CS_SLURMCOL_H

#include "core/err.h"
#include "core/kafka.h"

struct event_base;

typedef struct sc_opts {
    const char *cluster;  /* NULL: default */
    const char *state;    /* the state file; NULL: none */
    const char *bindir;   /* where squeue, sinfo, scontrol are; NULL: PATH */
    int poll_ms;          /* default 10000 */
    int inventory_ms;     /* default 600000 */
    const char *canary_feature; /* default "canary" */
    const char *canary_nodes;   /* a hostlist of canary nodes; NULL: none */
} sc_opts;

typedef struct sc_stats {
    unsigned long polls, failed_polls, jobs, nodes;
    unsigned long published, job_signals, node_signals, inventory_signals;
    unsigned long scripts, scripts_failed;
} sc_stats;

typedef struct sc_collector sc_collector;

sc_collector *sc_start(struct event_base *base, const sc_opts *o,
                       kfk_producer *p, cs_err *err);
void sc_get_stats(const sc_collector *c, sc_stats *st);
/* Stops polling, waits up to timeout_ms for delivery, saves the state
 * (blocking: shutdown only). */
int sc_stop(sc_collector *c, int timeout_ms, cs_err *err);
void sc_free(sc_collector *c);

#endif
