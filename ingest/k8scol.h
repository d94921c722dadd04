/* The Kubernetes collector: `cascade ingest k8s`. Lists then watches
 * Nodes, the Pods of Jobs, Jobs (batch/v1), Events (one of the two
 * Event APIs: they serve the same objects) and Kueue Workloads (where
 * Kueue is installed) through the API server, on the event loop, and
 * publishes what ingest/k8sobj.h derives from each object version to
 * cascade.signals.
 *
 * The protocol is client-go's reflector's: LIST in pages (limit,
 * continue), then WATCH from the list's resourceVersion with bookmarks
 * and a timeoutSeconds drawn from 300..600 s; a watch that ends is
 * started again from the last resourceVersion; 410 Gone (an HTTP answer
 * or an ERROR event inside the stream) is answered by a fresh LIST. A
 * 401 reads the token file again; 403 and 404 wait 5 minutes (the
 * others go on); 429, 5xx and network errors back off 1..30 s with
 * jitter. Nothing loops faster than that.
 *
 * Delivery: every signal is counted by a Kafka tracker. Events resume
 * from a resourceVersion kept in the state file, which moves only when
 * every signal of every Event before it is acknowledged; the other
 * kinds are listed again at each start (their signals' ids repeat, and
 * the correlator counts a repeat once). A signal Kafka refuses (queue
 * full) or fails to deliver makes that kind start again from a point
 * before it. */
#ifndef CS_K8SCOL_H
#define CS_K8SCOL_H

#include "core/err.h"
#include "core/kafka.h"
#include "ingest/k8sobj.h"
#include "ingest/kubecfg.h"

struct event_base;

typedef struct kw_opts {
    const char *cluster;      /* NULL: default */
    const char *ns;           /* NULL: every namespace */
    int events_api_v1;        /* 1: events.k8s.io/v1; 0: core/v1 */
    const char *state;        /* the Events' place; NULL: none */
    const char *pod_selector; /* NULL: batch.kubernetes.io/job-name */
    int no_workloads;         /* 1: do not look for Kueue */
    int list_limit;           /* 0: 500 */
    int watch_min_s;          /* 0: 300 (the watch's timeoutSeconds */
    int watch_max_s;          /*     is drawn from min..max) */
    ko_opts obj;
} kw_opts;

typedef struct kw_stats {
    unsigned long lists, pages, watches, watch_events, bookmarks;
    unsigned long relists_410, http_errors, net_errors, token_reloads;
    unsigned long published, dead_letters, refused_full, failed_delivery;
    ko_stats obj;
} kw_stats;

typedef struct kw_collector kw_collector;

/* auth is copied (and the copy owns its PEM buffers: auth's are moved). */
kw_collector *kw_start(struct event_base *base, const kw_opts *o,
                       kc_conf *auth, kfk_producer *p, cs_err *err);
void kw_get_stats(const kw_collector *c, kw_stats *st);
/* One line per kind: where it stands (listing, watching from RV, waiting
 * after an error, off), for the minute's report. */
void kw_describe(const kw_collector *c, char *buf, size_t len);
/* Stops the watches, waits up to timeout_ms for delivery, saves the
 * state (blocking: shutdown only). */
int kw_stop(kw_collector *c, int timeout_ms, cs_err *err);
void kw_free(kw_collector *c);

#endif
