/* The numbers a report shows, over the incidents of a period and the
 * executor's audit trail (view/incidents.h, view/trail.h), as one JSON
 * object that view/reporthtml.h draws and tests read:
 *
 *   per_day   incidents opened per scenario per day (UTC), the eight
 *             commonest scenarios and "other"
 *   ttd, ttr  time to detect (first publication, else the opening, less
 *             the first signal's time) and to resolve (resolution less
 *             opening), per scenario: count, median and p90 in seconds
 *   nodes     the nodes with most incidents: count, mean time between
 *             failures (hours), lemon candidate (3 or more, or a lemon
 *             incident)
 *   idle      GPU-hours left idle and their cost, per team (cost.idle_gpu:
 *             the idle GPUs times how long, at its gpu_hour_usd)
 *   peak      capacity.peak_demand incidents per team per hour of day
 *   actions   the executor's outcomes: requested, run, approved, denied,
 *             refused, done, failed, proposed (shadow), waiting now
 *
 * Merged incidents (the storm counts) and incidents opened outside the
 * period are left out. */
#ifndef CS_VW_REPORT_H
#define CS_VW_REPORT_H

#include <jansson.h>
#include <stdint.h>

#include "view/incidents.h"
#include "view/trail.h"

typedef struct vw_report_in {
    const vw_incidents *incs;
    const vw_trail *trail;     /* NULL: no action numbers */
    /* incident id -> its first publication time (us, json integer), as
     * the topic's timestamps say; NULL: detection from the opening */
    const json_t *published;
    int64_t since_us, until_us; /* the period, by opening time */
    /* shadow mode scored (cascade shadow), when it was */
    int has_shadow;
    double shadow_match_rate, shadow_coverage;
    size_t shadow_proposals;
} vw_report_in;

/* The numbers (a new reference). */
json_t *vw_report(const vw_report_in *in);
/* The p-th percentile (0..100) of v[0..n) by nearest rank; v is sorted
 * in place. 0 for n 0. */
double vw_percentile(double *v, size_t n, double p);

#endif
