/* The process configuration: embedded defaults, then a YAML file, then
 * command-line flags. Loading validates everything and names the file,
 * line and column of the first problem; nothing half-loaded is returned.
 *
 *   kafka:   brokers, group, batch, linger_ms, fetch_wait_ms
 *   redis:   address
 *   webhook: listen, port, token | token_file, max_body, max_headers,
 *            max_connections, timeout_s, request_timeout_s, max_alerts,
 *            max_output
 *   log:     level
 *   rules:   dir (a folder of rule files; empty: the built-in set)
 *   correlate: max_clusters (signals of more are dead-lettered)
 *
 * Empty brokers or redis address means "start the embedded one". */
#ifndef CS_CONFIG_H
#define CS_CONFIG_H

#include <stddef.h>

#include "core/err.h"

typedef struct cs_config {
    char brokers[512];
    char group[128];
    int batch;
    int linger_ms;     /* producers: librdkafka linger.ms */
    int fetch_wait_ms; /* consumers: fetch.wait.max.ms */
    char redis[512];
    char listen[64];
    int port;
    char token[256];
    size_t max_body, max_headers;
    int max_connections, timeout_s;
    int request_timeout_s; /* a whole request, head and body */
    int max_alerts;        /* in one post */
    size_t max_output;     /* one post's signals, as JSON */
    int log_level; /* enum log_level */
    char rules_dir[512];
    int max_clusters; /* correlate: signals of more clusters are refused */
} cs_config;

void cfg_defaults(cs_config *c);
/* Reads path over the values already in c. On error c is unchanged and
 * err says "PATH:LINE:COL: what". */
int cfg_load(cs_config *c, const char *path, cs_err *err);
/* The effective configuration as YAML (the token redacted). */
void cfg_print(const cs_config *c, void *stdio_file);

#endif
