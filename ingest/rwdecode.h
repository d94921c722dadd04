/* Prometheus remote-write 1.0 bodies to `metric` signals: the decoding
 * half of `cascade ingest remote-write`, apart from the server so that
 * it is fuzzed and tested alone. Prefix rwd_.
 *
 * A body is a snappy block (libsnappy) holding a prometheus.WriteRequest
 * (protobuf-c, from ingest/proto/prompb.proto). Each sample of a series
 * whose name the rules read (rules/mnames.h), after renaming, or which
 * the allow list names, becomes one signal:
 *
 *   name     __name__, renamed (DCGM_FI_DEV_CLOCKS_EVENT_REASONS is
 *            DCGM's new name of DCGM_FI_DEV_CLOCK_THROTTLE_REASONS...)
 *   host     the first of the labels Hostname, hostname, node, nodename,
 *            host, instance (its host part)
 *   cluster  the label cluster (Prometheus' external_labels), else the
 *            configured one, else "default"
 *   job      the first of the job labels present (default hpc_job:
 *            dcgm-exporter's HPC job mapping)
 *   labels   every other label; Prometheus' own `job` (the scrape job)
 *            becomes scrape_job, since a signal's labels.job is the
 *            training job the rules read
 *   ts, id   the sample's time; a hash of the cluster, name, labels and
 *            time, so that a retried request repeats the same ids
 *
 * Samples dropped and counted, the request still good: names not kept
 * (filtered: a whole remote-write firehose costs only its decoding),
 * series without a host (the rules could not place them), values that
 * are NaN or infinite (stale markers). Samples refused (invalid: a series
 * without __name__, a label not UTF-8 or over its limits, a time before
 * 1970 or more than max_ahead in the future) are counted with the first
 * reason: the receiver publishes the rest and answers 400 naming it. */
#ifndef CS_RWDECODE_H
#define CS_RWDECODE_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "ingest/pubwait.h"

typedef struct rwd_opts {
    const char *cluster;       /* NULL: "default" */
    size_t max_decompressed;   /* default 16 MiB: the snappy block's
                                * length, refused before decompressing */
    size_t max_memory;         /* default 64 MiB: the decoded message */
    size_t max_samples;        /* default 50,000 a request */
    int64_t max_ahead_us;      /* default 10 min */
    int all;                   /* 1: keep every name */
    const char *const *allow;  /* names kept beside the rules' ones */
    size_t nallow;
    const char *const *rename; /* pairs: from, to; replace the defaults */
    size_t nrename;            /* pairs; 0: the defaults */
    const char *const *job_labels; /* default {"hpc_job"} */
    size_t njob_labels;
} rwd_opts;

typedef struct rwd rwd;

/* Copies what it needs of o. Fails on a rename pair with an empty side. */
rwd *rwd_new(const rwd_opts *o, cs_err *err);
void rwd_free(rwd *d);

typedef struct rwd_result {
    pw_msg *msgs; /* the signals to publish, as their Kafka messages */
    size_t n;
    unsigned long series, samples;
    unsigned long filtered;  /* not a name kept */
    unsigned long nohost;    /* kept, but no host label */
    unsigned long nonfinite; /* NaN (stale markers) or infinite */
    unsigned long invalid;   /* refused: first_invalid says why */
    char first_invalid[256];
} rwd_result;

/* Decodes one request body (now_us: the wall clock, for max_ahead).
 * 0 with r filled; else the HTTP status the request gets (400 for a body
 * that is not snappy or not a WriteRequest, 413 over a limit) and err
 * says why, r empty. Free r with rwd_result_free either way. */
int rwd_decode(const rwd *d, const void *body, size_t len, int64_t now_us,
               rwd_result *r, cs_err *err);
void rwd_result_free(rwd_result *r);

#endif
