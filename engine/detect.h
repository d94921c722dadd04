/* The detector contract. A detector decides scenarios from what the
 * layers below keep (state.h: windows, jobs, incidents; faults.h: how a
 * fault becomes an incident) and keeps whatever else it needs. Every
 * detector is one eng_detector, listed once in the table of detectors.c;
 * dispatch (engine.c) and restore (restore.c) reach detectors only
 * through it, in table order, and so do the layers below when they must
 * tell the detectors something (a node incident opened or changed, a job
 * changed state, a node is back). A hook a detector does not need is
 * NULL. To add a detector: a file with its struct, a row in the table. */
#ifndef CS_ENGINE_DETECT_H
#define CS_ENGINE_DETECT_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/signal.h"
#include "rules/classify.h"

typedef struct engine engine;
typedef struct incident incident;
typedef struct job job;

/* What happened to a job, for on_job. */
typedef enum eng_job_event {
    ENG_JOB_STARTING,    /* about to be RUNNING (its record not yet updated) */
    ENG_JOB_FAILED,      /* its new state is a failure, before it is judged */
    ENG_JOB_UNEXPLAINED, /* a failure nothing open explains */
} eng_job_event;

/* The most detectors the table may list: each has one slot of state in
 * the engine (eng_slot). */
#define ENG_MAX_DETECTORS 32

typedef struct eng_detector {
    const char *name;
    /* The scenario ids it opens by name, NULL-terminated (those that come
     * with a signature's fact are the catalog's own). Checked against the
     * catalog when it loads (eng_check_scenarios). */
    const char *const *scenarios;
    /* A fact of a signal: 1 when taken (the detectors after it in the
     * table do not see it), 0 when passed on. */
    int (*on_fact)(engine *e, const sig *s, const fact *f);
    /* A metric sample (source metric): what eng_feed returns for it. */
    int (*on_metric)(engine *e, const sig *s);
    /* Timers due by the clock: after every signal fed, and at the wall
     * clock's tick once the stream has caught up. */
    void (*on_tick)(engine *e);
    /* After every signal fed (not at the wall clock's tick). */
    void (*on_signal)(engine *e, const sig *s);
    /* After the facts of a signal (one not seen before) went through. */
    void (*on_facts)(engine *e, const sig *s);
    /* A node incident opened or changed. */
    void (*on_incident)(engine *e, const sig *s, incident *inc);
    /* A job changed state. */
    void (*on_job)(engine *e, const sig *s, job *j, eng_job_event ev);
    /* A node is back (what said so). */
    void (*on_recovered)(engine *e, const sig *s, const char *host,
                         const char *what);
    /* The kinds of state record (what follows "cascade:{C}:") its restore
     * takes, NULL-terminated; one ending in ':' names a prefix ("cw:").
     * A restart reads back these and the state layer's own. */
    const char *const *records;
    /* A state record read back after a restart, of a hash (kind is what
     * follows "cascade:{C}:") or of a window: 1 taken, 0 not its own,
     * -1 unreadable (err set for a hash). */
    int (*restore)(engine *e, const char *cluster, const char *kind,
                   const char *field, const char *value, cs_err *err);
    int (*restore_window)(engine *e, const char *cluster, const char *win,
                          int64_t ts, const char *member);
    /* An incident read back takes its place again (in opening order). */
    void (*relink)(engine *e, incident *inc);
    /* Every record read back and pruned: timers armed again. */
    void (*restored)(engine *e);
    /* Its state past the horizon goes; how many entries went. */
    size_t (*prune)(engine *e);
    /* Its changed state into the batch's writes (eng_flush). */
    void (*flush)(engine *e);
    /* Its state is forgotten (a reset, the end), before the clusters go. */
    void (*forget)(engine *e);
    /* What it keeps for the engine's life goes (eng_free). */
    void (*free)(engine *e);
} eng_detector;

/* The table, in the order facts go through it (detectors.c), NULL last. */
extern const eng_detector *const eng_detectors[];

/* for each detector d (a const eng_detector *const *) in table order */
/* d's slot of state in e: what the detector keeps for itself (NULL until
 * it makes it; its forget or free hook lets it go). */
void **eng_slot(engine *e, const eng_detector *d);

#define EACH_DETECTOR(d) \
    for (const eng_detector *const *d = eng_detectors; *d; d++)

/* What the layers below tell the detectors, through the table. */
void eng_tell_incident(engine *e, const sig *s, incident *inc);
void eng_tell_job(engine *e, const sig *s, job *j, eng_job_event ev);
void eng_tell_recovered(engine *e, const sig *s, const char *host,
                        const char *what);

#endif
