/* Private to the engine's files: what the layers above the state share
 * (being taken apart into a header per layer). */
#ifndef CS_ENGINE_INTERNAL_H
#define CS_ENGINE_INTERNAL_H

#include "engine/faults.h"
#include "engine/state.h"

/* Correlation rules (corr.c): a fact from a signature that a rule lists
 * feeds that rule's state for its host or job; a complete rule opens or
 * touches its scenario's incident. */
void eng_corr_feed(engine *e, const sig *s, const fact *f);
/* Drops states with nothing left in their window: a pass at most once a
 * minute of the cluster's event time, a slice of it at each signal. */
void eng_corr_prune(engine *e, const char *cluster);
void eng_corr_state_free(void *p);
/* Writes the changed states (eng_flush, so into the batch's pipeline). */
void eng_corr_save(engine *e);
/* Forgets the changed states without writing them (their cluster state is
 * being freed). */
void eng_corr_forget(engine *e);
void eng_corr_index_free(engine *e);
/* Restart: one field of a rule's hash (cascade:{C}:cw:RULE, RULE being
 * "SCENARIO/KIND", the field the key). -1 when unreadable. */
int eng_corr_restore(engine *e, const char *cluster, const char *rule,
                     const char *field, const char *value);







/* metrics.c: metric samples as series (gauges and counter rates) and the
 * rules read from them; event-time timers for absent progress. */
typedef struct series series;
int eng_on_metric(engine *e, const sig *s);
/* 1 when the sample changed the job's progress state. */
int eng_progress(engine *e, const char *cluster, const char *jobid, int64_t ts,
                 double step);
void eng_timers(engine *e);
/* After a restart: the next stall check due, from the jobs read back. */
void eng_timers_rearm(engine *e);
void eng_rack_evidence(engine *e, const sig *s, const char *host);
void eng_job_started(engine *e, job *j);
int eng_restore_series(engine *e, const char *cluster, const char *field,
                       const char *value, cs_err *err);
void eng_series_free(void *p);
/* A host OOM kill that a checkpoint save or a memory ramp explains opens
 * that incident (1); 0 leaves it as evidence. */
int eng_host_oom(engine *e, const sig *s, const fact *f);
/* GPU driver trouble on a host (a hung GPU tool, driver errors, flapping
 * scrapes): opens hw.driver_dstate once the evidence is complete. */
void eng_driver_evidence(engine *e, const sig *s, const char *host);
/* The silent-host scan (telemetry.gap), at most once a minute. */
void eng_gap_timer(engine *e);
/* An incident under its own key (see metrics.c): opened once, touched
 * while its condition holds; NULL when it was open already. */
/* cascade.shifting_symptoms, when job j's failure is one more of its
 * logical job's (cascades.c). */
void eng_shifting_check(engine *e, const sig *s, job *j);
/* A failed attempt of a logical job, into its window (w:name:NAME), which
 * outlives the job's own record (pruned after the horizon). */
void eng_attempt_add(engine *e, const job *j);
int eng_restore_attempt(engine *e, const char *cluster, const char *name,
                        int64_t ts, const char *member);
void eng_names_free(void *p);
size_t eng_prune_names(engine *e);
/* When the host first showed heat (a GPU at 85 C or thermal throttling)
 * since `since`, or 0 (metrics.c). */
int64_t eng_host_hot(engine *e, const char *cluster, const char *host,
                     int64_t since);
/* A job held back by a queue limit or a full cluster: one more hit for its
 * team at this hour of day (marks.c). */
void eng_peak_hit(engine *e, const sig *s, const char *jobid);
/* Start of the common idle run of a host's GPUs, 0 when one is busy. */
int64_t eng_host_idle_since(engine *e, const char *cluster, const char *host);
/* The job's GPUs were computing at ts and its network was clean. */
int eng_job_computing(engine *e, const job *j, int64_t ts);

/* A job began to wait for capacity: other teams' idle allocations. */
void eng_capacity_waiting(engine *e, const sig *s);

/* marks.c: marks judged with the evidence around them. */
void eng_on_mark(engine *e, const sig *s, const fact *f);
/* The scenario a CUDA OOM takes from its context (a Serve replica that
 * failed to start), or NULL. */
const char *eng_oom_context(engine *e, const sig *s, const fact *f);
size_t eng_prune_series(engine *e);

/* After a node incident opened or changed. */
void eng_storm_check(engine *e, const sig *s, incident *inc);
incident *eng_storm_of(engine *e, const char *cluster, const char *host,
                       const char *root);
/* A node of a storm is back: the storm resolves once all of them are. */
void eng_storm_recovered(engine *e, const sig *s, const char *host,
                         const char *what);
void eng_storm_relink(engine *e, incident *storm);


json_t *eng_incident_json(engine *e, const incident *inc);
json_t *eng_actions(engine *e, const incident *inc);

#endif
