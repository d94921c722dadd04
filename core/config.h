/* The process configuration: embedded defaults, then a YAML file, then
 * command-line flags. Loading validates everything and names the file,
 * line and column of the first problem; nothing half-loaded is returned.
 *
 *   kafka:   brokers, group, batch, linger_ms, fetch_wait_ms, topic_prefix,
 *            instance_id, properties (librdkafka's, for every client)
 *   redis:   address, user, password, db, sentinels, master,
 *            sentinel_password, wait_replicas, wait_timeout_ms,
 *            require_durable (core/rtarget.h)
 *   webhook: listen, port, token | token_file, max_body, max_headers,
 *            max_connections, timeout_s, request_timeout_s, max_alerts,
 *            max_output, ack_timeout_s
 *   log:     level, format (text, json)
 *   rules:   dir (a folder of rule files; empty: the built-in set)
 *   correlate: max_clusters (signals of more are dead-lettered),
 *            max_seen_ids (a cluster's ids kept to count redeliveries
 *            once; 0: all for the 2-hour horizon)
 *   metrics: listen, and a port per process (correlate, dev, ingest, act;
 *            0: no endpoint): /metrics, /healthz, /readyz (core/obsrv.h)
 *   collect: the collectors' (ingest/colcfg.h reads and checks it)
 *   act:     the executor's endpoints, secrets and modes (actions/excfg.h)
 *
 * Empty brokers, or no redis address and no sentinels, means "none
 * given": `cascade dev` then starts an embedded one, every other command
 * refuses to start. */
#ifndef CS_CONFIG_H
#define CS_CONFIG_H

#include <stddef.h>

#include "core/err.h"
#include "core/rtarget.h"

/* kafka.properties: librdkafka properties every client of the process is
 * given over cascade's own settings, each with where it was written, so
 * that a value librdkafka refuses later (core/kafka.h kfk_props_check,
 * which cs_core cannot call) is still told as FILE:LINE:COL. Checked here:
 * the keys cascade sets itself are refused, and a secret (a key ending in
 * "password" or "secret", and ssl.key.pem) is a reference, file:PATH or
 * env:NAME (core/secret.h), read when a client is made. */
#define CFG_MAX_KPROPS 32
typedef struct cfg_kprop {
    char key[96];
    char value[1024];
    int key_line, key_col, value_line, value_col;
} cfg_kprop;
typedef struct cfg_kprops {
    char file[256]; /* where they were read */
    size_t n;
    cfg_kprop v[CFG_MAX_KPROPS];
} cfg_kprops;

/* Whether key's value is a secret reference. */
int cfg_kprop_secret(const char *key);

typedef struct cs_config {
    char brokers[512];
    char group[128]; /* "": the default, kafka.topic_prefix + cascade-correlate */
    int batch;
    int linger_ms;     /* producers: librdkafka linger.ms */
    int fetch_wait_ms; /* consumers: fetch.wait.max.ms */
    char topic_prefix[201]; /* TOPIC_PREFIX_MAX */
    char instance_id[128];  /* group.instance.id; "": dynamic membership */
    cfg_kprops kprops;
    rtarget redis;
    char listen[64];
    int port;
    char token[256];
    size_t max_body, max_headers;
    int max_connections, timeout_s;
    int request_timeout_s; /* a whole request, head and body */
    int max_alerts;        /* in one post */
    size_t max_output;     /* one post's signals, as JSON */
    int ack_timeout_s;     /* a post's wait for Kafka's acknowledgement */
    int log_level; /* enum log_level */
    int log_format; /* enum log_format */
    char rules_dir[512];
    int max_clusters; /* correlate: signals of more clusters are refused */
    int max_seen_ids; /* correlate: a cluster's seen ids (0: no limit) */
    char metrics_listen[64];
    /* per process: 0 none, else the port of its /metrics endpoint */
    int metrics_correlate, metrics_dev, metrics_ingest, metrics_act;
} cs_config;

void cfg_defaults(cs_config *c);
/* Reads path over the values already in c. On error c is unchanged and
 * err says "PATH:LINE:COL: what". */
int cfg_load(cs_config *c, const char *path, cs_err *err);
/* The effective configuration as YAML (the token and the Redis secrets
 * redacted, secret properties as their references). */
void cfg_print(const cs_config *c, void *stdio_file);

/* The reference of the sections this module reads (docs/CONFIG.md), as
 * Markdown tables from its key tables and defaults. */
void cfg_reference(void *stdio_file);

#endif
