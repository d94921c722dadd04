/* The table of detectors (engine/detect.h): the one place that names
 * them. Facts go through it in this order, and a detector may take a fact
 * from the ones after it: the correlation rules see every fact first; a
 * CUDA OOM in a Serve replica's context, a host OOM a checkpoint or a
 * leak explains, and progress are taken before the jobs detector judges
 * the rest; the capacity, peak, thermal and mark detectors read what it
 * left. A maintenance window takes its nodes' faults before anything
 * opens for them, and a flapping link's downs before net.ib_down reopens. */
#include "engine/detect.h"
#include "engine/engine.h"
#include "engine/state.h"

#include "rules/playbooks.h"

extern const eng_detector eng_det_corr, eng_det_evidence, eng_det_serve,
    eng_det_hostmem, eng_det_progress, eng_det_jobs, eng_det_capacity,
    eng_det_peak, eng_det_thermal, eng_det_marks, eng_det_metrics,
    eng_det_cascades, eng_det_storms, eng_det_lemon, eng_det_maint,
    eng_det_flaps, eng_det_failslow;

const eng_detector *const eng_detectors[] = {
    &eng_det_corr,     /* correlation rules of the rule files (corr.c) */
    &eng_det_evidence, /* the cluster's window, a job's last error (jobs.c) */
    &eng_det_maint,    /* a node's faults in its maintenance window (maint.c) */
    &eng_det_flaps,    /* a link's downtime over the hour (flaps.c) */
    &eng_det_serve,    /* an OOM of a Serve replica that did not start (marks.c) */
    &eng_det_hostmem,  /* host OOM kills: checkpoint or leak (metrics.c) */
    &eng_det_progress, /* training steps (metrics.c) */
    &eng_det_jobs,     /* jobs, nodes, Xids, NCCL, spot, recovery (jobs.c) */
    &eng_det_capacity, /* idle allocations of a waiting job (metrics.c) */
    &eng_det_peak,     /* a team's recurring peak hours (marks.c) */
    &eng_det_thermal,  /* a rack's hot hosts (metrics.c) */
    &eng_det_marks,    /* marks judged with the evidence around them (marks.c) */
    &eng_det_metrics,  /* metric series and the rules read from them (metrics.c) */
    &eng_det_cascades, /* a logical job's attempts (cascades.c) */
    &eng_det_storms,   /* one fault on many nodes of a rack (storms.c) */
    &eng_det_lemon,    /* a node that keeps failing across weeks (lemon.c) */
    &eng_det_failslow, /* a rank slower than its peers (failslow.c) */
    NULL,
};

_Static_assert(sizeof eng_detectors / sizeof *eng_detectors - 1 <=
                   ENG_MAX_DETECTORS,
               "more detectors than the engine has slots for");

void **eng_slot(engine *e, const eng_detector *d)
{
    size_t i = 0;

    while (eng_detectors[i] != d) /* d is in the table */
        i++;
    return &e->slot[i];
}

void eng_tell_incident(engine *e, const sig *s, incident *inc)
{
    EACH_DETECTOR(d)
        if ((*d)->on_incident)
            (*d)->on_incident(e, s, inc);
}

void eng_tell_job(engine *e, const sig *s, job *j, eng_job_event ev)
{
    EACH_DETECTOR(d)
        if ((*d)->on_job)
            (*d)->on_job(e, s, j, ev);
}

void eng_tell_recovered(engine *e, const sig *s, const char *host,
                        const char *what)
{
    EACH_DETECTOR(d)
        if ((*d)->on_recovered)
            (*d)->on_recovered(e, s, host, what);
}

size_t eng_check_scenarios(const pb_catalog *cat,
                           void (*report)(void *arg, const char *detector,
                                          const char *id),
                           void *arg)
{
    size_t missing = 0;

    EACH_DETECTOR(d)
        for (const char *const *id = (*d)->scenarios; id && *id; id++)
            if (!pb_find(cat, *id)) {
                missing++;
                if (report)
                    report(arg, (*d)->name, *id);
            }
    return missing;
}
