/* Metric series (a layer over the state, beside the records): the samples
 * the metric rules read, one series a host, metric and device, each
 * keeping its last sample and what the rules need (extremes of a gauge,
 * the start of a counter's run of increases); and what they say about a
 * host or a job's GPUs. Stored whole after every sample (series_persist),
 * so a restarted engine goes on from it; a sample not newer than the
 * series' last is a redelivery and changes nothing. Private to engine/. */
#ifndef CS_ENGINE_SERIES_H
#define CS_ENGINE_SERIES_H

#include "engine/state.h"
#include "rules/mnames.h"

typedef struct series series;

/* The metric names (M_*): rules/mnames.h. */

#define STALL_RECHECK (5 * TS_MIN)
#define UTIL_BUSY 50.0  /* % GPU utilisation that counts as busy */
#define UTIL_IDLE 10.0
#define POWER_IDLE 0.5  /* below half its peak, a busy GPU computes nothing */
#define MAX_GPUS 16     /* GPU indexes looked up per node ("0".."15") */
#define WINDOW TS_HOUR  /* counters are compared as increases over this */
#define UTIL_LOW 5.0          /* SCENARIOS.md cost.idle_gpu: "< 5%" */
#define LEAK_DIP 0.01         /* a fall under 1% does not end a ramp */
#define BURST_QUIET (10 * TS_MIN) /* a counter at rest this long, then rising */
#define BURST_BEFORE (10 * TS_MIN) /* a burst this close to a hang caused it */
#define SCRAPE_TIMEOUT 10.0   /* seed 004: ~12 s is the plugin timing out */
#define SCRAPE_OK 3.0         /* ... under 3 s a scrape that worked */

struct series {
    char cluster[64], host[128], name[64], dev[64];
    int64_t ts;    /* last sample */
    double v;      /* its value */
    double lo, hi; /* gauge extremes since the series started */
    int64_t since; /* counter: start of the current run of increases;
                    * gauge: start of its current run without a real fall */
    int64_t first;   /* the first sample */
    int64_t changed; /* the last sample whose value differed from the one
                      * before (first when it never did) */
    int64_t anchor_ts; /* counter: a sample about WINDOW ago, and its value, */
    double anchor_v;   /* so that v - anchor_v is the increase over it */
    int64_t low_since; /* utilisation: start of its run under UTIL_LOW;
                        * a rank's compute time: start of its run over
                        * its peers' (failslow.c) */
    int64_t burst;     /* counter: first increase after BURST_QUIET of none */
    int64_t up;        /* counter: the last increase */
    double run_v;      /* gauge: its value when `since` began */
    int n;             /* step time: slow samples in a row; scrape
                        * duration: samples at the timeout */
};

/* What the GPUs of a job's nodes were doing (eng_census). */
typedef struct gpu_census {
    int busy_wait, idle, working, other;
} gpu_census;

void eng_series_free(void *p);
/* Whether a metric of that name gets a series. */
int eng_metric_kept(const char *name);
int eng_is_util(const char *name);
/* The device a sample is about: a GPU, a NIC, or for training metrics
 * the job. */
const char *eng_dev_of(const sig *s);
series *eng_series_get(engine *e, const char *cluster, const char *host,
                       const char *name, const char *dev);
/* Takes one sample into its series; NULL when it is not newer than the
 * series' last (a redelivery or a late sample: the rules saw its time). */
series *eng_series_take(engine *e, const sig *s, const char *dev);
void eng_series_persist(engine *e, const series *se);
int eng_restore_series(engine *e, const char *cluster, const char *field,
                       const char *value, cs_err *err);
/* Series silent for the horizon are forgotten, here and in Redis. */
size_t eng_prune_series(engine *e);

/* The most recent value of a host-level gauge, if sampled lately. */
const series *eng_host_gauge(engine *e, const char *cluster, const char *host,
                             const char *name);
/* The host's GPUs that report utilisation: how many are under UTIL_LOW
 * now (*idle), and since when all of them are (0: not all, or none
 * reports). */
int64_t eng_host_idle(engine *e, const char *cluster, const char *host,
                      int *idle);
int eng_idle_gpus(engine *e, const char *cluster, const char *host);
/* Start of the common idle run of a host's GPUs, 0 when one is busy. */
int64_t eng_host_idle_since(engine *e, const char *cluster, const char *host);
/* The time of the host's earliest mark of scen since `since`, or 0. */
int64_t eng_first_mark(engine *e, const char *cluster, const char *host,
                       const char *scen, int64_t since);
/* When the host first showed heat (a GPU at 85 C or thermal throttling)
 * since `since`, or 0. */
int64_t eng_host_hot(engine *e, const char *cluster, const char *host,
                     int64_t since);
/* Whether the host's metrics are stale (an open ghost-data incident). */
int eng_untrusted(engine *e, const char *cluster, const char *host);
/* The GPUs of the job's nodes sampled after `since`. */
gpu_census eng_census(engine *e, const job *j, int64_t since);
/* The job's GPUs were computing at ts and its network was clean. */
int eng_job_computing(engine *e, const job *j, int64_t ts);

#endif
