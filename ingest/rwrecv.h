/* Prometheus remote-write receiver: an evhttp server on the daemon's
 * event loop that turns the samples the rules read into `metric` signals
 * on cascade.signals, keyed by cluster (the decoding: ingest/rwdecode.h).
 * Prefix rw_.
 *
 * Routes: POST /api/v1/write (and /) take a remote-write 1.0 body;
 * GET /healthz answers "ok". Answers, in what Prometheus does with them:
 *   204  every kept sample acknowledged by Kafka (or none kept);
 *   400  the body is not snappy + WriteRequest, or some samples were
 *        refused (the rest published first): dropped by Prometheus,
 *        whose log shows the reason;
 *   401  no or a wrong bearer token: dropped by Prometheus, so a token
 *        mistake loses samples (logged here, one line a minute);
 *   413  over max_body, max_decompressed, max_samples: dropped;
 *   415  not Content-Encoding snappy, or not application/x-protobuf
 *        remote-write 1.0 (2.0's io.prometheus.write.v2.Request): dropped;
 *   503  + Retry-After: the queue was full, Kafka refused a sample, not
 *        acknowledged within ack_timeout_s, or stopping: Prometheus
 *        retries with backoff, from its WAL (never 429, which Prometheus
 *        2.42 drops unless retry_on_http_429 is set).
 * Token, encoding and type are judged on the head: such a request's body
 * is never read. */
#ifndef CS_RWRECV_H
#define CS_RWRECV_H

#include <stddef.h>

#include "core/err.h"
#include "core/metrics.h"
#include "core/kafka.h"
#include "ingest/rwdecode.h"

struct event_base;

typedef struct rw_config {
    const char *listen_addr; /* default "127.0.0.1" */
    int port;                /* 0 = ephemeral; read back with rw_port() */
    const char *token;       /* required bearer token */
    size_t max_body;         /* default 1 MiB: the compressed body */
    int max_connections;     /* default 256 (Prometheus opens one a shard,
                              * up to queue_config.max_shards) */
    int timeout_s;           /* default 10 */
    int ack_timeout_s;       /* default 5 (Prometheus waits 30 s) */
    rwd_opts decode;
} rw_config;

typedef struct rw_stat {
    unsigned long requests;  /* remote-write posts read whole */
    unsigned long samples;   /* samples in them */
    unsigned long published; /* signals of requests answered 204 or 400 */
    unsigned long filtered, nohost, nonfinite, invalid; /* rwdecode.h */
    unsigned long refused;   /* requests answered 4xx */
    unsigned long unavailable; /* requests answered 503 */
    unsigned long waiting;   /* requests waiting for Kafka now */
} rw_stat;

typedef struct rwrecv rwrecv;

/* The producer must outlive the receiver and be polled. */
rwrecv *rw_start(struct event_base *base, const rw_config *cfg,
                 kfk_producer *prod, cs_err *err);
int rw_port(const rwrecv *r);
/* Replaces the bearer token; ignored when empty. */
void rw_set_token(rwrecv *r, const char *token);
void rw_get_stats(const rwrecv *r, rw_stat *st);
/* The same counts as metric families, for /metrics (core/obsrv.h). */
void rw_metrics(const rwrecv *r, mx_out *o);
/* As wh_ready (ingest/webhook.h). */
int rw_ready(const rwrecv *r, char *why, size_t len);
/* As wh_drain (ingest/webhook.h). */
void rw_drain(rwrecv *r, void (*done)(void *), void *arg);
void rw_free(rwrecv *r);

#endif
