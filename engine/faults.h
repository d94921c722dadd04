/* The engine's fault layer: a fault becomes an incident or joins one.
 * Over the state layer (engine/state.h); the detectors call these. */
#ifndef CS_ENGINE_FAULTS_H
#define CS_ENGINE_FAULTS_H

#include "engine/series.h"
#include "engine/state.h"

/* A fault on a host: its node incident opened, or the open one touched
 * (job failures on the host within minutes folded in, a node crash when
 * they are two or more); the detectors hear of it (on_incident). */
void eng_on_node_fault(engine *e, const sig *s, const fact *f,
                       const char *host);
/* A fault of a job (its own OOM, a scheduling failure): the job's
 * incident opened or touched. */
void eng_on_job_fault(engine *e, const sig *s, const fact *f);
/* A node incident for host opened for scenario (the fact that opened it,
 * or NULL), its root the earliest anomaly of the crash window. */
incident *eng_open_node_incident(engine *e, const sig *s, const char *host,
                                 const char *scenario, const fact *f);
/* Folds into a node incident the job failures already seen on that host
 * within the crash window that no other incident explains. */
void eng_absorb_failed_jobs(engine *e, incident *inc, const char *host);
/* Two or more job failures minutes apart make a node fault a node crash
 * cascade; the fault stays its root cause. */
void eng_maybe_escalate(engine *e, incident *inc);
/* The earliest anomaly, or node-level fault, on a host since `since`. */
const entry *eng_earliest_anomaly(engine *e, const char *cluster,
                                  const char *host, int64_t since);
const entry *eng_earliest_node_fault(engine *e, const char *cluster,
                                     const char *host, int64_t since);
/* The window a fact goes to: its host's, or "job:<id>" for a signal that
 * names no host. */
const char *eng_window_of(const fact *f, char *buf, size_t len);
/* An incident under its own key (an advisory: "ghost:", "gap:",
 * "driver:", "perf:", ...): opened once, touched while its condition
 * holds; NULL when it was open already. */
incident *eng_advisory(engine *e, const sig *s, const fact *f,
                       const char *key, int node);
/* The advisory under "KIND:ID". */
incident *eng_advisory_of(engine *e, const sig *s, const fact *f,
                          const char *kind, const char *id, int node);
/* GPU driver trouble on a host (hung GPU tools, driver errors in the
 * kernel log, scrapes at their timeout): hw.driver_dstate once the
 * evidence is complete, from marks and from metric samples alike. */
void eng_driver_evidence(engine *e, const sig *s, const char *host);
/* A job held back by a full cluster: the fact the jobs detector opened a
 * sched.capacity_exhausted incident from (the capacity and peak detectors
 * read it after). The name is compared first: most facts are not. */
int eng_capacity_wait(const engine *e, const fact *f);
/* into takes m in (evidence, failed jobs, its node and key); m is
 * published once more, merged, then gone. */
void eng_merge(engine *e, incident *into, incident *m);

#endif
