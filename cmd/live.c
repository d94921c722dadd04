/* The long-running commands' glue (cmd/live.h). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "commit.h" /* CASCADE_COMMIT, written at build time */
#include "cmd/live.h"
#include "ingest/colcfg.h"
#include "core/log.h"
#include "core/str.h"
#include "rules/playbooks.h"

static void stop_loop(void *base)
{
    event_base_loopbreak(base);
}

/* Posts waiting for Kafka are answered first (webhook.ack_timeout_s at
 * most); a second signal stops at once. */
static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    live *l = arg;
    (void)what;
    log_info("cascade", "%s: stopping", fd >= 0 ? "signal" : "time is up");
    if (l->wh)
        wh_drain(l->wh, stop_loop, l->base);
    else if (l->rw)
        rw_drain(l->rw, stop_loop, l->base);
    else
        event_base_loopbreak(l->base);
}

/* SIGHUP: the rule set, swapped whole or not at all. */
static void reload_rules(live *l, const char *dir)
{
    cs_err err;
    pb_catalog *c;

    if (!l->corr)
        return;
    if (!(c = cli_load_rules(dir, "SIGHUP", &err))) {
        log_error("cascade", "SIGHUP: rules not reloaded, keeping the running "
                             "set: %s", err.msg);
        return;
    }
    size_t n = pb_catalog_count(c);
    if (corr_set_catalog(l->corr, c, &err)) {
        log_error("cascade", "SIGHUP: rules not reloaded, keeping the running "
                             "set: %s", err.msg);
        return;
    }
    log_info("cascade", "SIGHUP: rules reloaded from %s: %zu scenarios",
             dir[0] ? dir : "the built-in set", n);
}

/* The remote-write receiver's token: its env variable wins, as at the
 * start; else collect.remote_write.token, read again. */
static void reload_rw_token(live *l)
{
    const char *env = getenv("CASCADE_REMOTE_WRITE_TOKEN");
    ccf_conf cc;
    cs_err err;

    if (env && *env)
        return;
    ccf_defaults(&cc);
    if (ccf_load(&cc, l->config_path, &err)) {
        log_error("cascade", "SIGHUP: remote-write token not reloaded: %s",
                  err.msg);
    } else if (cc.remote_write.token[0]) {
        rw_set_token(l->rw, cc.remote_write.token);
        log_info("cascade", "SIGHUP: remote-write token read again");
    }
    explicit_bzero(cc.remote_write.token, sizeof cc.remote_write.token);
    ccf_free(&cc);
}

/* SIGHUP re-reads the config file. What can change in place does (log
 * level, webhook token: rotating it needs no restart); the rest is
 * reported and kept until the next start. A bad file changes nothing. */
static void on_reload(evutil_socket_t fd, short what, void *arg)
{
    live *l = arg;
    cs_config next = l->cfg;
    cs_err err;

    (void)fd;
    (void)what;
    if (!l->config_path) {
        log_warn("cascade", "SIGHUP: no config file (--config) to reload");
        return;
    }
    if (cfg_load(&next, l->config_path, &err)) {
        log_error("cascade", "SIGHUP: config not reloaded, keeping the "
                             "running one: %s", err.msg);
        return;
    }
    if (strcmp(next.brokers, l->cfg.brokers) || !rt_same(&next.redis, &l->cfg.redis) ||
        strcmp(next.listen, l->cfg.listen) || next.port != l->cfg.port ||
        strcmp(next.group, l->cfg.group) ||
        strcmp(next.topic_prefix, l->cfg.topic_prefix) ||
        strcmp(next.instance_id, l->cfg.instance_id) ||
        memcmp(&next.kprops, &l->cfg.kprops, sizeof next.kprops) ||
        strcmp(next.metrics_listen, l->cfg.metrics_listen) ||
        next.metrics_correlate != l->cfg.metrics_correlate ||
        next.metrics_dev != l->cfg.metrics_dev ||
        next.metrics_ingest != l->cfg.metrics_ingest)
        log_warn("cascade", "SIGHUP: kafka, redis, listen address and metrics "
                            "changes take effect at the next start");
    log_set_level((enum log_level)next.log_level);
    log_set_format((enum log_format)next.log_format);
    l->cfg.log_level = next.log_level;
    if (l->wh && next.token[0] && strcmp(next.token, l->cfg.token)) {
        wh_set_token(l->wh, next.token);
        memcpy(l->cfg.token, next.token, sizeof l->cfg.token);
        log_info("cascade", "SIGHUP: webhook token replaced");
    }
    explicit_bzero(next.token, sizeof next.token);
    rt_wipe(&next.redis);
    if (l->rw)
        reload_rw_token(l);
    memcpy(l->cfg.rules_dir, next.rules_dir, sizeof l->cfg.rules_dir);
    reload_rules(l, l->cfg.rules_dir);
    log_info("cascade", "SIGHUP: %s reloaded", l->config_path);
}

/* cascade dev and cascade broker start what is not configured, and say
 * where it is, so that other processes (kcat, redis-cli) can look in.
 * Every other command needs both addresses: a throwaway broker or Redis
 * in production would lose everything at the next restart. */
static int live_services(live *l, cs_err *err)
{
    if (!l->brokers && !l->embedded) {
        cs_err_set(err, "no Kafka brokers: give --brokers or kafka.brokers "
                   "in the config (only cascade dev starts an embedded "
                   "broker)");
        return -1;
    }
    if (!l->redis_target && !l->embedded) {
        cs_err_set(err, "no Redis: give --redis or redis.address in the "
                   "config (only cascade dev starts a private redis-server)");
        return -1;
    }
    if (!l->brokers) {
        if (!(l->broker = kfk_broker_start(l->partitions, err)))
            return -1;
        if (kfk_broker_attach(l->broker, l->base)) {
            cs_err_set(err, "cannot schedule the embedded broker's socket sweep");
            return -1;
        }
        l->brokers = kfk_broker_bootstrap(l->broker);
        printf("kafka: embedded broker at %s (librdkafka mock cluster; "
               "development only)\n", l->brokers);
    }
    if (!l->redis_target) {
        if (!(l->redis = rproc_start(err)))
            return -1;
        rproc_target(l->redis, &l->private_redis);
        l->redis_target = &l->private_redis;
        printf("redis: private redis-server at %s\n", rproc_socket(l->redis));
    }
    fflush(stdout);
    return 0;
}

int live_start(live *l, cs_err *err)
{
    signal(SIGPIPE, SIG_IGN);
    l->base = event_base_new();
    if (!l->base) {
        cs_err_set(err, "cannot create the event loop");
        return -1;
    }
    if (live_services(l, err))
        return -1;
    kfk_producer_opts po = kfk_producer_defaults(l->brokers);
    po.linger_ms = l->cfg.linger_ms;
    po.props = &l->cfg.kprops;
    if (!(l->prod = kfk_producer_open(&po, err)) ||
        kfk_producer_attach(l->prod, l->base))
        return -1;
    l->sigint = evsignal_new(l->base, SIGINT, on_stop, l);
    l->sigterm = evsignal_new(l->base, SIGTERM, on_stop, l);
    l->sighup = evsignal_new(l->base, SIGHUP, on_reload, l);
    event_add(l->sigint, NULL);
    event_add(l->sigterm, NULL);
    event_add(l->sighup, NULL);
    return 0;
}

void live_stop_after(live *l, int seconds)
{
    struct timeval tv = {seconds, 0};

    if (seconds <= 0)
        return;
    l->stop_timer = evtimer_new(l->base, on_stop, l);
    evtimer_add(l->stop_timer, &tv);
}

static void rw_mx(mx_out *o, void *arg)
{
    rw_metrics(arg, o);
}

static void wh_mx(mx_out *o, void *arg)
{
    wh_metrics(arg, o);
}

static int wh_ok(char *why, size_t len, void *arg)
{
    return wh_ready(arg, why, len);
}

static int rw_ok(char *why, size_t len, void *arg)
{
    return rw_ready(arg, why, len);
}

static void corr_mx(mx_out *o, void *arg)
{
    corr_metrics(arg, o);
}

static int corr_ok(char *why, size_t len, void *arg)
{
    return corr_ready(arg, why, len);
}

int live_observe(live *l, const char *process, int port, cs_err *err)
{
    obs_build b = {process, CASCADE_VERSION, CASCADE_COMMIT};

    /* systemd's Type=notify: ready when the correlator is, at once for a
     * receiver */
    l->notify = cli_notify_ready(l->base, l->corr ? corr_ok : NULL, l->corr);
    if (port <= 0)
        return 0;
    if (!(l->obs = obs_start(l->base, l->cfg.metrics_listen, port, &b, err)))
        return -1;
    if (l->corr)
        obs_add(l->obs, &(obs_part){"correlator", corr_mx, corr_ok, l->corr});
    if (l->wh)
        obs_add(l->obs, &(obs_part){"webhook", wh_mx, wh_ok, l->wh});
    if (l->rw)
        obs_add(l->obs, &(obs_part){"remote-write", rw_mx, rw_ok, l->rw});
    log_info("cascade", "metrics on http://%s:%d/metrics (and /healthz, "
             "/readyz)", l->cfg.metrics_listen, obs_port(l->obs));
    return 0;
}

void live_free(live *l)
{
    unsigned long s = 0, d = 0, i = 0;
    unsigned long long lost = 0;

    if (l->corr) {
        corr_stats(l->corr, &s, &d, &i, &lost);
        log_info("cascade", "correlated %lu signals, %lu dead letters, %lu "
                            "incident updates", s, d, i);
        if (lost)
            log_error("cascade", "%llu signals were deleted by the broker "
                                 "before they were read", lost);
    }
    cli_notify_free(l->notify);
    obs_free(l->obs);
    wh_free(l->wh);
    rw_free(l->rw);
    act_printer_free(l->printer);
    corr_free(l->corr);
    kfk_producer_free(l->prod);
    if (l->sigint)
        event_free(l->sigint);
    if (l->sigterm)
        event_free(l->sigterm);
    if (l->sighup)
        event_free(l->sighup);
    if (l->sigusr1)
        event_free(l->sigusr1);
    explicit_bzero(l->cfg.token, sizeof l->cfg.token);
    rt_wipe(&l->cfg.redis);
    if (l->stop_timer)
        event_free(l->stop_timer);
    if (l->drain_timer)
        event_free(l->drain_timer);
    if (l->base)
        event_base_free(l->base);
    kfk_broker_stop(l->broker);
    rproc_stop(l->redis);
}

int live_fail(live *l, const char *cmd, const cs_err *err)
{
    fprintf(stderr, "cascade %s: %s\n", cmd, err->msg);
    live_free(l);
    return 2;
}

/* The rule set first, then the embedded services; o is ready for
 * corr_start. */
static int correlator_opts(live *l, const char *who, corr_opts *o,
                            cs_err *err)
{
    memset(o, 0, sizeof *o);
    o->group = l->cfg.group[0] ? l->cfg.group : NULL;
    o->props = &l->cfg.kprops;
    o->instance_id = l->cfg.instance_id[0] ? l->cfg.instance_id : NULL;
    o->batch = (size_t)l->cfg.batch;
    o->fetch_wait_ms = l->cfg.fetch_wait_ms;
    o->max_clusters = (size_t)l->cfg.max_clusters;
    o->max_seen = (size_t)l->cfg.max_seen_ids;
    if (!(o->rules = cli_load_rules(l->cfg.rules_dir, who, err))) {
        fprintf(stderr, "%s: %s\n", who, err->msg);
        live_free(l);
        return 2;
    }
    /* the correlator's own, signals, is checked with its partitions */
    const char *const out[] = {KFK_TOPIC_INCIDENTS, KFK_TOPIC_ACTIONS,
                               KFK_TOPIC_DEADLETTER, NULL};
    int32_t parts[3] = {0};
    if (live_start(l, err) ||
        kfk_producer_topics(l->prod, out, parts, CLI_TOPICS_MS, err)) {
        pb_catalog_free(o->rules);
        return live_fail(l, who, err);
    }
    o->incident_parts = parts[0];
    o->action_parts = parts[1];
    o->brokers = l->brokers;
    o->redis = l->redis_target;
    return 0;
}

int live_correlator(live *l, const char *who, cs_err *err)
{
    corr_opts o;
    int rc;

    if ((rc = correlator_opts(l, who, &o, err)))
        return rc;
    if (!(l->corr = corr_start(l->base, &o, l->prod, err)))
        return live_fail(l, who, err);
    return 0;
}

static const struct option live_opts[] = {
    {"brokers", required_argument, 0, OPT_BROKERS},
    {"redis", required_argument, 0, OPT_REDIS},
    {"group", required_argument, 0, OPT_GROUP},
    {"for", required_argument, 0, OPT_FOR},
    {"token", required_argument, 0, OPT_TOKEN},
    {"listen", required_argument, 0, OPT_LISTEN},
    {"port", required_argument, 0, OPT_PORT},
    {"feed", required_argument, 0, OPT_FEED},
    {"batch", required_argument, 0, OPT_BATCH},
    {"config", required_argument, 0, OPT_CONFIG},
    {"drain", no_argument, 0, OPT_DRAIN},
    {"instance-id", required_argument, 0, OPT_INSTANCE_ID},
    {"partitions", required_argument, 0, OPT_PARTITIONS},
    {"cluster", required_argument, 0, OPT_CLUSTER},
    {"all", no_argument, 0, OPT_ALL},
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0}};

int live_parse(int argc, char **argv, live_args *a, const char *allowed)
{
    int c;
    char *end;

    memset(a, 0, sizeof *a);
    a->port = a->batch = -1;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", live_opts, NULL)) != -1) {
        if (c == 'h' || c == OPT_HELP) {
            a->help = 1;
            return 0;
        }
        if (c == '?' || !strchr(allowed, c + '0')) {
            fprintf(stderr, "cascade %s: option not valid here\n", argv[0]);
            return -1;
        }
        switch (c) {
        case OPT_BROKERS: a->brokers = optarg; break;
        case OPT_REDIS: a->redis = optarg; break;
        case OPT_GROUP: a->group = optarg; break;
        case OPT_TOKEN: a->token = optarg; break;
        case OPT_LISTEN: a->listen = optarg; break;
        case OPT_FEED: a->feed = optarg; break;
        case OPT_CONFIG: a->config = optarg; break;
        case OPT_DRAIN: a->drain = 1; break;
        case OPT_INSTANCE_ID: a->instance_id = optarg; break;
        case OPT_CLUSTER: a->cluster = optarg; break;
        case OPT_ALL: a->all = 1; break;
        case OPT_FOR:
        case OPT_BATCH:
        case OPT_PARTITIONS:
        case OPT_PORT: {
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < 0 || v > 65535 ||
                ((c == OPT_BATCH || c == OPT_PARTITIONS) && v == 0)) {
                fprintf(stderr, "cascade %s: bad number '%s' for --%s\n",
                        argv[0], optarg,
                        c == OPT_FOR ? "for" : c == OPT_BATCH ? "batch"
                        : c == OPT_PARTITIONS ? "partitions" : "port");
                return -1;
            }
            *(c == OPT_FOR ? &a->seconds
              : c == OPT_BATCH ? &a->batch
              : c == OPT_PARTITIONS ? &a->partitions : &a->port) = (int)v;
            break;
        }
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cascade %s: unexpected argument '%s'\n", argv[0],
                argv[optind]);
        return -1;
    }
    return 0;
}

int live_config(live *l, const live_args *a, const char *cmd)
{
    const char *env_token = getenv("CASCADE_WEBHOOK_TOKEN");
    cs_config *c = &l->cfg;

    if (cli_config(c, a->config, cmd, &l->config_path))
        return -1;
    if (env_token && *env_token)
        str_copy(c->token, sizeof c->token, env_token);
    if (a->brokers)
        str_copy(c->brokers, sizeof c->brokers, a->brokers);
    if (a->redis && cli_redis_flag(cmd, a->redis, &c->redis))
        return -1;
    if (a->group)
        str_copy(c->group, sizeof c->group, a->group);
    if (a->instance_id)
        str_copy(c->instance_id, sizeof c->instance_id, a->instance_id);
    l->partitions = a->partitions;
    if (a->token)
        str_copy(c->token, sizeof c->token, a->token);
    if (a->listen)
        str_copy(c->listen, sizeof c->listen, a->listen);
    if (a->port >= 0)
        c->port = a->port;
    if (a->batch > 0)
        c->batch = a->batch;
    if (c->linger_ms == KFK_LINGER_UNSET)
        c->linger_ms = !strcmp(cmd, "correlate") || !strcmp(cmd, "dev")
                           ? KFK_CORRELATOR_LINGER_MS
                           : KFK_DEFAULT_LINGER_MS;
    l->brokers = c->brokers[0] ? c->brokers : NULL;
    l->redis_target = rt_configured(&c->redis) ? &c->redis : NULL;
    return 0;
}

wh_config live_webhook_config(const live *l)
{
    const cs_config *c = &l->cfg;
    return (wh_config){.listen_addr = c->listen, .port = c->port,
                       .token = c->token, .max_body = c->max_body,
                       .max_headers = c->max_headers,
                       .max_connections = c->max_connections,
                       .timeout_s = c->timeout_s,
                       .request_timeout_s = c->request_timeout_s,
                       .max_alerts = (size_t)c->max_alerts,
                       .max_output = c->max_output,
                       .ack_timeout_s = c->ack_timeout_s};
}
