/* The correlator's metrics: see cmetrics.h. */
#include "correlate/cmetrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kafka.h"
#include "core/mem.h"
#include "core/signal.h"
#include "core/strmap.h"
#include "correlate/store.h"
#include "engine/engine.h"

/* Declared once: cm_write goes over this table in order. */
enum {
    M_SIGNALS, M_DEAD, M_LAST, M_BATCH, M_PHASE, M_DETECT, M_INCIDENTS,
    M_OPEN, M_ACTIONS, M_REPUBLISHED, M_REDIS, M_KAFKA, M_ASSIGNED, M_LAG,
    M_SEEN, M_SEEN_EVICTED, M_SEEN_HORIZON, M__COUNT
};
static const mx_family FAM[M__COUNT] = {
    [M_SIGNALS] = {"cascade_signals_read_total", MX_COUNTER,
                   "Signals read from cascade.signals and fed to the engine, "
                   "by source.", "source"},
    [M_DEAD] = {"cascade_signals_dead_lettered_total", MX_COUNTER,
                "Signals sent to cascade.deadletter, by reason (undecodable, "
                "refused by the engine).", "reason"},
    [M_LAST] = {"cascade_last_signal_timestamp_seconds", MX_GAUGE,
                "Event time of the newest signal read, by cluster and source "
                "(a source that stops moving is a silent collector).",
                "cluster,source"},
    [M_BATCH] = {"cascade_batch_signals", MX_HISTOGRAM,
                 "Signals per committed batch.", NULL},
    [M_PHASE] = {"cascade_batch_phase_seconds", MX_HISTOGRAM,
                 "Time a batch spent in each phase: feed (engine), redis "
                 "(state acknowledged), kafka (outputs delivered), commit "
                 "(outbox cleared, offsets handed to Kafka).", "phase"},
    [M_DETECT] = {"cascade_detection_latency_seconds", MX_HISTOGRAM,
                  "From the event time of an incident's first signal to its "
                  "first publication.", NULL},
    [M_INCIDENTS] = {"cascade_incidents_total", MX_COUNTER,
                     "Incident publications, by what they were: opened, "
                     "updated, resolved, reopened.", "event"},
    [M_OPEN] = {"cascade_incidents_open", MX_GAUGE,
                "Incidents published open now, by scenario.", "scenario"},
    [M_ACTIONS] = {"cascade_actions_requested_total", MX_COUNTER,
                   "Action requests published to cascade.actions, by playbook "
                   "and approval class.", "playbook,approval"},
    [M_REPUBLISHED] = {"cascade_outputs_republished_total", MX_COUNTER,
                       "Outputs published again after a delivery failed.",
                       NULL},
    [M_REDIS] = {"cascade_redis_up", MX_GAUGE,
                 "1 while the link to Redis is connected and authenticated.",
                 NULL},
    [M_KAFKA] = {"cascade_kafka_up", MX_GAUGE,
                 "1 while the correlator's consumer and producer each have a "
                 "broker connection up.", NULL},
    [M_ASSIGNED] = {"cascade_kafka_partitions_assigned", MX_GAUGE,
                    "Partitions of cascade.signals this correlator owns.", NULL},
    [M_LAG] = {"cascade_kafka_consumer_lag", MX_GAUGE,
               "Messages of a partition not read yet (the high watermark last "
               "fetched less the next offset; absent while unknown).",
               "partition"},
    [M_SEEN] = {"cascade_seen_ids", MX_GAUGE,
                "Signal ids kept to count a redelivered signal once, every "
                "cluster.", NULL},
    [M_SEEN_EVICTED] = {"cascade_seen_evicted_total", MX_COUNTER,
                        "Signal ids forgotten before the 2-hour horizon "
                        "because a cluster held correlate.max_seen_ids.",
                        NULL},
    [M_SEEN_HORIZON] = {"cascade_seen_horizon_seconds", MX_GAUGE,
                        "How far back every cluster still knows the ids it "
                        "saw: 7200 unless correlate.max_seen_ids made one "
                        "forget sooner; a signal delivered again later than "
                        "this counts again.", NULL},
};

static const char *const dead_names[CM_DEAD__COUNT] = {"undecodable",
                                                       "refused"};
static const char *const phase_names[CM_PHASE__COUNT] = {"feed", "redis",
                                                         "kafka", "commit"};
static const char *const kind_names[] = {"opened", "updated", "resolved",
                                         "reopened"};

struct cmetrics {
    unsigned long signals[SRC__COUNT];
    unsigned long dead[CM_DEAD__COUNT];
    unsigned long incidents[4];
    unsigned long republished;
    strmap *last;    /* cluster -> double[SRC__COUNT] (s; 0: none) */
    strmap *actions; /* "playbook\tapproval" -> unsigned long */
    mx_hist batch, phase[CM_PHASE__COUNT], detect;
};

cmetrics *cm_new(void)
{
    cmetrics *m = xcalloc(1, sizeof *m);

    m->last = strmap_new();
    m->actions = strmap_new();
    mx_hist_init(&m->batch, mx_bounds_batch, mx_nbounds_batch);
    for (int i = 0; i < CM_PHASE__COUNT; i++)
        mx_hist_init(&m->phase[i], mx_bounds_step_s, mx_nbounds_step_s);
    mx_hist_init(&m->detect, mx_bounds_detect_s, mx_nbounds_detect_s);
    return m;
}

/* fn for every key and value of map. */
static void each_of(const strmap *map,
                    void (*fn)(const char *key, void *val, void *arg),
                    void *arg)
{
    size_t pos = 0;
    const char *k;
    void *v;

    while (strmap_next(map, &pos, &k, &v))
        fn(k, v, arg);
}

void cm_free(cmetrics *m)
{
    if (!m)
        return;
    strmap_free(m->last, free);
    strmap_free(m->actions, free);
    free(m);
}

void cm_signal(cmetrics *m, int source, const char *cluster, int64_t ts_us)
{
    double *last;

    if (source < 0 || source >= SRC__COUNT)
        return;
    m->signals[source]++;
    if (!(last = strmap_get(m->last, cluster))) {
        last = xcalloc(SRC__COUNT, sizeof *last);
        strmap_put(m->last, cluster, last);
    }
    if ((double)ts_us / 1e6 > last[source])
        last[source] = (double)ts_us / 1e6;
}

void cm_dead(cmetrics *m, enum cm_dead why)
{
    m->dead[why]++;
}

void cm_batch(cmetrics *m, size_t n, const double phase_s[CM_PHASE__COUNT])
{
    mx_hist_observe(&m->batch, (double)n);
    for (int i = 0; i < CM_PHASE__COUNT; i++)
        mx_hist_observe(&m->phase[i], phase_s[i]);
}

void cm_incident(cmetrics *m, int kind, double detect_s)
{
    if (kind < 0 || kind > ENG_REOPENED)
        return;
    m->incidents[kind]++;
    if (kind == ENG_OPENED && detect_s >= 0)
        mx_hist_observe(&m->detect, detect_s);
}

void cm_action(cmetrics *m, const char *playbook, const char *approval)
{
    char key[160];
    unsigned long *n;

    snprintf(key, sizeof key, "%.100s\t%.40s", playbook ? playbook : "?",
             approval ? approval : "?");
    if (!(n = strmap_get(m->actions, key))) {
        n = xcalloc(1, sizeof *n);
        strmap_put(m->actions, key, n);
    }
    (*n)++;
}

void cm_republished(cmetrics *m, size_t n)
{
    m->republished += n;
}

/* ---- the scrape --------------------------------------------------------- */

struct each {
    mx_out *o;
    strmap *counts; /* cm_write's open incidents by scenario */
};

static void write_last(const char *cluster, void *val, void *arg)
{
    struct each *w = arg;
    const double *last = val;

    for (int s = 0; s < SRC__COUNT; s++)
        if (last[s] > 0) {
            const char *v[] = {cluster, sig_source_name((sig_source)s)};
            mx_sample(w->o, &FAM[M_LAST], v, last[s]);
        }
}

static void write_action(const char *key, void *val, void *arg)
{
    struct each *w = arg;
    char pb[160];
    char *tab;
    const char *v[2];

    snprintf(pb, sizeof pb, "%s", key);
    tab = strchr(pb, '\t');
    if (tab)
        *tab++ = '\0';
    v[0] = pb;
    v[1] = tab ? tab : "";
    mx_sample(w->o, &FAM[M_ACTIONS], v, (double)*(unsigned long *)val);
}

static void count_open(const char *scenario, void *arg)
{
    struct each *w = arg;
    unsigned long *n = strmap_get(w->counts, scenario);

    if (!n) {
        n = xcalloc(1, sizeof *n);
        strmap_put(w->counts, scenario, n);
    }
    (*n)++;
}

static void write_open(const char *scenario, void *val, void *arg)
{
    struct each *w = arg;
    const char *v[] = {scenario};

    mx_sample(w->o, &FAM[M_OPEN], v, (double)*(unsigned long *)val);
}

static void write_counts(const cmetrics *m, mx_out *o)
{
    mx_family_begin(o, &FAM[M_SIGNALS]);
    for (int s = 0; s < SRC__COUNT; s++) {
        const char *v[] = {sig_source_name((sig_source)s)};
        mx_sample(o, &FAM[M_SIGNALS], v, (double)m->signals[s]);
    }
    mx_family_begin(o, &FAM[M_DEAD]);
    for (int i = 0; i < CM_DEAD__COUNT; i++) {
        const char *v[] = {dead_names[i]};
        mx_sample(o, &FAM[M_DEAD], v, (double)m->dead[i]);
    }
    mx_family_begin(o, &FAM[M_INCIDENTS]);
    for (int i = 0; i <= ENG_REOPENED; i++) {
        const char *v[] = {kind_names[i]};
        mx_sample(o, &FAM[M_INCIDENTS], v, (double)m->incidents[i]);
    }
    mx_single(o, &FAM[M_REPUBLISHED], (double)m->republished);
    mx_family_begin(o, &FAM[M_BATCH]);
    mx_hist_write(o, &FAM[M_BATCH], NULL, &m->batch);
    mx_family_begin(o, &FAM[M_PHASE]);
    for (int i = 0; i < CM_PHASE__COUNT; i++) {
        const char *v[] = {phase_names[i]};
        mx_hist_write(o, &FAM[M_PHASE], v, &m->phase[i]);
    }
    mx_family_begin(o, &FAM[M_DETECT]);
    mx_hist_write(o, &FAM[M_DETECT], NULL, &m->detect);
}

static void write_seen(mx_out *o, const engine *e)
{
    eng_seen s = {0};

    if (e)
        eng_seen_stats(e, &s);
    mx_single(o, &FAM[M_SEEN], (double)s.ids);
    mx_single(o, &FAM[M_SEEN_EVICTED], (double)s.evicted);
    mx_single(o, &FAM[M_SEEN_HORIZON], (double)s.horizon / 1e6);
}

void cm_write(const cmetrics *m, mx_out *o, const engine *e, const store *st,
              const kfk_consumer *cons, int kafka_up)
{
    struct each w = {o, strmap_new()};

    write_counts(m, o);
    mx_family_begin(o, &FAM[M_LAST]);
    each_of(m->last, write_last, &w);
    mx_family_begin(o, &FAM[M_ACTIONS]);
    each_of(m->actions, write_action, &w);
    mx_family_begin(o, &FAM[M_OPEN]);
    if (e)
        eng_each_open(e, count_open, &w);
    each_of(w.counts, write_open, &w);
    strmap_free(w.counts, free);
    mx_single(o, &FAM[M_REDIS], st && store_up(st));
    mx_single(o, &FAM[M_KAFKA], kafka_up);
    mx_single(o, &FAM[M_ASSIGNED], cons ? (double)kfk_consumer_owned(cons) : 0);
    write_seen(o, e);
    if (cons)
        kfk_consumer_lag_write(cons, o, &FAM[M_LAG]);
    else
        mx_family_begin(o, &FAM[M_LAG]);
}
