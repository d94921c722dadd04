/* The metric families every file collector shares (follow, slurm,
 * journal, k8s), declared once here and labelled by collector, so that
 * one dashboard panel and one alert cover them all. A collector's
 * command fills cmx_counts from its stats at scrape time. */
#ifndef CS_COLMX_H
#define CS_COLMX_H

#include "core/metrics.h"

typedef struct cmx_counts {
    unsigned long long read;      /* lines, entries, objects or polls read */
    unsigned long long published; /* signals published to cascade.signals */
    unsigned long long filtered;  /* left out at the edge (by design) */
    unsigned long long rejected;  /* unreadable or refused input */
    unsigned long long dead;      /* sent to cascade.deadletter */
    unsigned long long errors;    /* failed polls, HTTP and network errors */
    int kafka_up;                 /* its producer's link (kfk_producer_up) */
} cmx_counts;

void cmx_write(mx_out *o, const char *collector, const cmx_counts *c);

#endif
