/* cascade ingest remote-write: the Prometheus remote-write receiver
 * (ingest/rwrecv.h) as a long-running service. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/live.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/str.h"
#include "ingest/colcfg.h"
#include "ingest/rwrecv.h"

#define RW_DEFAULT_PORT 9097

static void rw_help(void)
{
    printf(
        "usage: cascade ingest remote-write --brokers LIST [--token TOKEN]\n"
        "       [--listen ADDR] [--port N] [--cluster NAME] [--all]\n"
        "       [--config FILE] [--for SECONDS]\n\n"
        "A Prometheus remote-write 1.0 receiver (snappy + protobuf). Each\n"
        "sample of a metric the rules read (or collect.remote_write.allow\n"
        "names) becomes one `metric` signal on cascade.signals, keyed by\n"
        "cluster; every other sample is decoded, counted and dropped. The\n"
        "host is the Hostname/hostname/node/nodename/host label, else the\n"
        "instance's host; the cluster the `cluster` label (external_labels),\n"
        "else --cluster / collect.cluster; Prometheus' `job` label is kept\n"
        "as scrape_job.\n\n"
        "Prometheus: remote_write: [{url: http://HOST:9097/api/v1/write,\n"
        "  authorization: {credentials_file: FILE}}]\n\n"
        "Answers: 204 stored (Kafka acknowledged every sample kept); 400\n"
        "malformed, or some samples refused (the rest stored); 401 bad token\n"
        "and 413/415: dropped by Prometheus; 503 retry (queue full, Kafka\n"
        "slow or down, stopping): Prometheus retries from its WAL.\n\n"
        "  --token TOKEN   the bearer token (else $CASCADE_REMOTE_WRITE_TOKEN,\n"
        "                  else collect.remote_write.token: file:PATH or\n"
        "                  env:NAME); required\n"
        "  --listen ADDR   default 127.0.0.1 (collect.remote_write.listen)\n"
        "  --port N        default %d; 0 = any free port\n"
        "  --cluster NAME  the cluster of series without a cluster label\n"
        "  --all           keep every metric name (no allow list)\n"
        "  --brokers LIST  Kafka bootstrap servers (or kafka.brokers)\n"
        "  --config FILE   YAML config (kafka.*, collect.remote_write.*);\n"
        "                  SIGHUP reads the token again\n"
        "  --for SECONDS   stop after this long (default: until SIGTERM)\n"
        "Exit: 0 stopped, 2 usage or config error, or the receiver could\n"
        "not start.\n", RW_DEFAULT_PORT);
}

/* The decoder's options, pointing into cc (which outlives them). */
typedef struct rw_names {
    const char *allow[CCF_MAX_NAMES];
    const char *rename[2 * CCF_MAX_RENAME];
    const char *jobs[CCF_MAX_JOB_LABELS];
} rw_names;

static rwd_opts decode_opts(const ccf_conf *cc, const live_args *a,
                            rw_names *nm)
{
    const __typeof__(cc->remote_write) *c = &cc->remote_write;

    for (size_t i = 0; i < c->nallow; i++)
        nm->allow[i] = c->allow[i];
    for (size_t i = 0; i < c->nrename; i++) {
        nm->rename[2 * i] = c->rename[i][0];
        nm->rename[2 * i + 1] = c->rename[i][1];
    }
    for (size_t i = 0; i < c->njob_labels; i++)
        nm->jobs[i] = c->job_labels[i];
    return (rwd_opts){
        .cluster = a->cluster ? a->cluster : cc->cluster[0] ? cc->cluster
                                                             : NULL,
        .max_decompressed = c->max_decompressed,
        .max_samples = c->max_samples,
        .all = a->all || c->all,
        .allow = nm->allow, .nallow = c->nallow,
        .rename = nm->rename, .nrename = c->nrename,
        .job_labels = nm->jobs, .njob_labels = c->njob_labels};
}

static const char *rw_token(const live_args *a, const ccf_conf *cc)
{
    const char *env = getenv("CASCADE_REMOTE_WRITE_TOKEN");

    if (a->token)
        return a->token;
    if (env && *env)
        return env;
    return cc->remote_write.token;
}

static rw_config rw_conf(const ccf_conf *cc, const live_args *a, rw_names *nm)
{
    const __typeof__(cc->remote_write) *c = &cc->remote_write;

    return (rw_config){
        .listen_addr = a->listen ? a->listen
                       : c->listen[0] ? c->listen : "127.0.0.1",
        .port = a->port >= 0 ? a->port
                : c->port >= 0 ? c->port : RW_DEFAULT_PORT,
        .token = rw_token(a, cc),
        .max_body = c->max_body,
        .ack_timeout_s = c->ack_timeout_s,
        .decode = decode_opts(cc, a, nm)};
}

static void rw_report(evutil_socket_t fd, short what, void *arg)
{
    live *l = arg;
    rw_stat st;

    (void)fd;
    (void)what;
    rw_get_stats(l->rw, &st);
    log_info("remote-write", "%lu requests, %lu samples: %lu published, %lu "
             "filtered by name, %lu without a host, %lu NaN or infinite, %lu "
             "invalid; %lu requests refused, %lu answered 503, %lu waiting",
             st.requests, st.samples, st.published, st.filtered, st.nohost,
             st.nonfinite, st.invalid, st.refused, st.unavailable,
             st.waiting);
}

static int rw_run(live *l, const live_args *a, ccf_conf *cc)
{
    const char *const topics[] = {KFK_TOPIC_SIGNALS, NULL};
    struct timeval minute = {60, 0};
    struct event *report;
    cs_err err = {{0}};
    rw_names nm;
    rw_config rc;

    l->redis_target = &l->private_redis; /* unused */
    if (live_start(l, &err) ||
        kfk_producer_topics(l->prod, topics, NULL, CLI_TOPICS_MS, &err))
        return live_fail(l, "ingest remote-write", &err);
    rc = rw_conf(cc, a, &nm);
    if (!(l->rw = rw_start(l->base, &rc, l->prod, &err)))
        return live_fail(l, "ingest remote-write", &err);
    if (live_observe(l, "ingest remote-write", l->cfg.metrics_ingest, &err))
        return live_fail(l, "ingest remote-write", &err);
    printf("remote-write: listening on http://%s:%d/api/v1/write\n",
           rc.listen_addr, rw_port(l->rw));
    fflush(stdout);
    report = cs_oom(event_new(l->base, -1, EV_PERSIST, rw_report, l));
    event_add(report, &minute);
    live_stop_after(l, a->seconds);
    event_base_dispatch(l->base);
    event_free(report);
    rw_report(-1, 0, l);
    live_free(l);
    return 0;
}

int cmd_ingest_remote_write(int argc, char **argv)
{
    live_args a;
    live l = {0};
    ccf_conf cc;
    cs_err err = {{0}};
    char allowed[] = {OPT_BROKERS + '0', OPT_FOR + '0', OPT_TOKEN + '0',
                      OPT_LISTEN + '0', OPT_PORT + '0', OPT_CONFIG + '0',
                      OPT_CLUSTER + '0', OPT_ALL + '0', 0};
    int rc;

    if (live_parse(argc, argv, &a, allowed))
        return 2;
    if (a.help) {
        rw_help();
        return 0;
    }
    if (live_config(&l, &a, "ingest remote-write"))
        return 2;
    ccf_defaults(&cc);
    if (l.config_path && ccf_load(&cc, l.config_path, &err)) {
        fprintf(stderr, "cascade ingest remote-write: %s\n", err.msg);
        live_free(&l);
        return 2;
    }
    if (!*rw_token(&a, &cc)) {
        fprintf(stderr, "cascade ingest remote-write: a bearer token is "
                "required: --token, $CASCADE_REMOTE_WRITE_TOKEN or "
                "collect.remote_write.token (file:PATH or env:NAME)\n");
        live_free(&l);
        return 2;
    }
    rc = rw_run(&l, &a, &cc);
    explicit_bzero(cc.remote_write.token, sizeof cc.remote_write.token);
    ccf_free(&cc);
    return rc;
}
