/* Glue for the long-running commands: embedded defaults (an in-process
 * Kafka-protocol broker, a private redis-server), signals, and the loop.
 * Compiled into the cascade binary only; each component stays a library. */
#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "actions/printer.h"
#include "core/cli.h"
#include "core/config.h"
#include "core/str.h"
#include "core/kafka.h"
#include "core/log.h"
#include "core/redisproc.h"
#include "correlate/correlator.h"
#include "rules/classify.h"
#include "rules/playbooks.h"
#include "ingest/filein.h"
#include "ingest/webhook.h"

typedef struct live {
    cs_config cfg;
    const char *config_path; /* NULL: embedded defaults only */
    struct event_base *base;
    kfk_broker *broker;
    rproc *redis;
    const char *brokers, *redis_addr;
    kfk_producer *prod;
    correlator *corr;
    webhook *wh;
    act_printer *printer;
    struct event *sigint, *sigterm, *sighup, *stop_timer, *drain_timer;
    struct event *sigusr1;
    int drained; /* --drain: the backlog was read and committed */
} live;

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    live *l = arg;
    (void)what;
    log_info("cascade", "%s: stopping", fd >= 0 ? "signal" : "time is up");
    event_base_loopbreak(l->base);
}

/* Problems of a rule folder go to the log, one per line, FILE:LINE:COL. */
static void rules_problem(void *arg, const char *where, const char *msg)
{
    log_error("cascade", "%s: %s: %s", (const char *)arg, where, msg);
}

/* The rule set of rules.dir, or NULL (with the problems logged and counted
 * in err) when the folder cannot be read or any file has a problem: a
 * half-valid rule set is never used. Empty dir: the built-in set. */
pb_catalog *cli_load_rules(const char *dir, const char *who, cs_err *err)
{
    pb_catalog *c;
    int n;

    if (!dir[0])
        return pb_catalog_embedded();
    c = pb_catalog_new();
    n = pb_catalog_load_dir(c, dir, rules_problem, (void *)who);
    if (n < 0)
        cs_err_set(err, "rules.dir %s: cannot read the folder", dir);
    else if (n > 0)
        cs_err_set(err, "rules.dir %s: %d problem%s (above)", dir, n,
                   n == 1 ? "" : "s");
    if (n != 0) {
        pb_catalog_free(c);
        return NULL;
    }
    return c;
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
    if (strcmp(next.brokers, l->cfg.brokers) || strcmp(next.redis, l->cfg.redis) ||
        strcmp(next.listen, l->cfg.listen) || next.port != l->cfg.port ||
        strcmp(next.group, l->cfg.group))
        log_warn("cascade", "SIGHUP: kafka, redis and listen address changes "
                            "take effect at the next start");
    log_set_level((enum log_level)next.log_level);
    l->cfg.log_level = next.log_level;
    if (l->wh && next.token[0] && strcmp(next.token, l->cfg.token)) {
        wh_set_token(l->wh, next.token);
        memcpy(l->cfg.token, next.token, sizeof l->cfg.token);
        log_info("cascade", "SIGHUP: webhook token replaced");
    }
    explicit_bzero(next.token, sizeof next.token);
    memcpy(l->cfg.rules_dir, next.rules_dir, sizeof l->cfg.rules_dir);
    reload_rules(l, l->cfg.rules_dir);
    log_info("cascade", "SIGHUP: %s reloaded", l->config_path);
}

/* A producer learns a topic's leader from the periodic metadata scan,
 * once a second: until then its first messages wait (up to 1 s for the
 * first alert, or a collector's whole file). Asking now costs one round
 * trip. Not fatal: with the broker away they wait as they would have. */
static void warm_topics(kfk_producer *p, const char *who)
{
    static const char *const topics[] = {KFK_TOPIC_SIGNALS, KFK_TOPIC_INCIDENTS,
                                         KFK_TOPIC_ACTIONS,
                                         KFK_TOPIC_DEADLETTER, NULL};
    cs_err err;

    if (kfk_producer_warm(p, topics, 2000, &err))
        log_warn(who, "topics not ready yet: %s", err.msg);
}

/* With no broker or Redis configured, start the embedded ones and say
 * where they are, so other processes (kcat, redis-cli) can look in. */
static int defaults_start(live *l, cs_err *err)
{
    signal(SIGPIPE, SIG_IGN);
    l->base = event_base_new();
    if (!l->base) {
        cs_err_set(err, "cannot create the event loop");
        return -1;
    }
    if (!l->brokers) {
        if (!(l->broker = kfk_broker_start(0, err)))
            return -1;
        if (kfk_broker_attach(l->broker, l->base)) {
            cs_err_set(err, "cannot schedule the embedded broker's socket sweep");
            return -1;
        }
        l->brokers = kfk_broker_bootstrap(l->broker);
        printf("kafka: embedded broker at %s (librdkafka mock cluster; "
               "development only)\n", l->brokers);
    }
    if (!l->redis_addr) {
        if (!(l->redis = rproc_start(err)))
            return -1;
        l->redis_addr = rproc_socket(l->redis);
        printf("redis: private redis-server at %s\n", l->redis_addr);
    }
    fflush(stdout);
    if (!(l->prod = kfk_producer_new_linger(l->brokers, l->cfg.linger_ms,
                                            err)) ||
        kfk_producer_attach(l->prod, l->base))
        return -1;
    warm_topics(l->prod, "kafka");
    l->sigint = evsignal_new(l->base, SIGINT, on_stop, l);
    l->sigterm = evsignal_new(l->base, SIGTERM, on_stop, l);
    l->sighup = evsignal_new(l->base, SIGHUP, on_reload, l);
    event_add(l->sigint, NULL);
    event_add(l->sigterm, NULL);
    event_add(l->sighup, NULL);
    return 0;
}

/* --drain: every 20 ms, whether the backlog is done; then the offsets
 * are committed (waited for) and the loop ends. */
#define DRAIN_CHECK_US 20000
#define DRAIN_COMMIT_MS 10000

/* Resident memory, for the log line a drain ends with (-1: unknown). */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = -1, rss = -1;

    if (f && fscanf(f, "%ld %ld", &pages, &rss) != 2)
        rss = -1;
    if (f)
        fclose(f);
    return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static void on_drain_check(evutil_socket_t fd, short what, void *arg)
{
    live *l = arg;
    struct timeval tv = {0, DRAIN_CHECK_US};
    cs_err err;

    (void)fd;
    (void)what;
    if (!corr_drained(l->corr)) {
        evtimer_add(l->drain_timer, &tv);
        return;
    }
    if (corr_commit_wait(l->corr, DRAIN_COMMIT_MS, &err)) {
        log_error("cascade", "drained, but %s", err.msg);
    } else {
        l->drained = 1;
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        log_info("cascade", "drained: every partition read to its end, "
                            "outputs delivered, offsets committed (rss %ld "
                            "KiB, cpu %.3f s)", rss_kib(),
                 (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
    }
    event_base_loopbreak(l->base);
}

static void drain_when_done(live *l)
{
    struct timeval tv = {0, DRAIN_CHECK_US};

    if (!l->drain_timer)
        l->drain_timer = evtimer_new(l->base, on_drain_check, l);
    if (!evtimer_pending(l->drain_timer, NULL))
        evtimer_add(l->drain_timer, &tv);
}

/* SIGUSR1: finish what is on the topic now, then exit (as --drain). */
static void on_usr1(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    log_info("cascade", "SIGUSR1: draining the backlog, then exiting");
    drain_when_done(arg);
}

static void stop_after(live *l, int seconds)
{
    struct timeval tv = {seconds, 0};

    if (seconds <= 0)
        return;
    l->stop_timer = evtimer_new(l->base, on_stop, l);
    evtimer_add(l->stop_timer, &tv);
}

static void live_free(live *l)
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
    wh_free(l->wh);
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
    if (l->stop_timer)
        event_free(l->stop_timer);
    if (l->drain_timer)
        event_free(l->drain_timer);
    if (l->base)
        event_base_free(l->base);
    kfk_broker_stop(l->broker);
    rproc_stop(l->redis);
}

static int fail(live *l, const char *cmd, const cs_err *err)
{
    fprintf(stderr, "cascade %s: %s\n", cmd, err->msg);
    live_free(l);
    return 2;
}

/* The rule set first (a bad one is a usage error: exit 2, nothing
 * started), then the embedded services; o is ready for corr_start. */
static int correlator_start(live *l, const char *who, corr_opts *o,
                            cs_err *err)
{
    memset(o, 0, sizeof *o);
    o->group = l->cfg.group;
    o->batch = (size_t)l->cfg.batch;
    o->fetch_wait_ms = l->cfg.fetch_wait_ms;
    if (!(o->rules = cli_load_rules(l->cfg.rules_dir, who, err))) {
        fprintf(stderr, "%s: %s\n", who, err->msg);
        live_free(l);
        return 2;
    }
    if (defaults_start(l, err)) {
        pb_catalog_free(o->rules);
        return fail(l, who, err);
    }
    o->brokers = l->brokers;
    o->redis = l->redis_addr;
    return 0;
}

enum { OPT_BROKERS = 1, OPT_REDIS, OPT_GROUP, OPT_FOR, OPT_TOKEN, OPT_LISTEN,
       OPT_PORT, OPT_FEED, OPT_BATCH, OPT_CONFIG, OPT_DRAIN, OPT_HELP };

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
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0}};

typedef struct live_args {
    const char *brokers, *redis, *group, *token, *listen, *feed, *config;
    int seconds, port, help, batch; /* port, batch: -1 when not given */
    int drain;
} live_args;

static int parse_live(int argc, char **argv, live_args *a, const char *allowed)
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
        case OPT_FOR:
        case OPT_BATCH:
        case OPT_PORT: {
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < 0 || v > 65535 ||
                (c == OPT_BATCH && v == 0)) {
                fprintf(stderr, "cascade %s: bad number '%s' for --%s\n",
                        argv[0], optarg,
                        c == OPT_FOR ? "for" : c == OPT_BATCH ? "batch" : "port");
                return -1;
            }
            *(c == OPT_FOR ? &a->seconds
              : c == OPT_BATCH ? &a->batch : &a->port) = (int)v;
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

/* Embedded defaults, then the config file (--config or $CASCADE_CONFIG),
 * then $CASCADE_WEBHOOK_TOKEN, then the flags. */
static int live_config(live *l, const live_args *a, const char *cmd)
{
    const char *path = a->config ? a->config : getenv("CASCADE_CONFIG");
    const char *env_token = getenv("CASCADE_WEBHOOK_TOKEN");
    cs_config *c = &l->cfg;
    cs_err err;

    cfg_defaults(c);
    if (path && *path) {
        if (cfg_load(c, path, &err)) {
            fprintf(stderr, "cascade %s: %s\n", cmd, err.msg);
            return -1;
        }
        l->config_path = path;
        log_set_level((enum log_level)c->log_level);
    }
    if (env_token && *env_token)
        str_copy(c->token, sizeof c->token, env_token);
    if (a->brokers)
        str_copy(c->brokers, sizeof c->brokers, a->brokers);
    if (a->redis)
        str_copy(c->redis, sizeof c->redis, a->redis);
    if (a->group)
        str_copy(c->group, sizeof c->group, a->group);
    if (a->token)
        str_copy(c->token, sizeof c->token, a->token);
    if (a->listen)
        str_copy(c->listen, sizeof c->listen, a->listen);
    if (a->port >= 0)
        c->port = a->port;
    if (a->batch > 0)
        c->batch = a->batch;
    l->brokers = c->brokers[0] ? c->brokers : NULL;
    l->redis_addr = c->redis[0] ? c->redis : NULL;
    return 0;
}

static wh_config webhook_config(const live *l)
{
    const cs_config *c = &l->cfg;
    return (wh_config){.listen_addr = c->listen, .port = c->port,
                       .token = c->token, .max_body = c->max_body,
                       .max_headers = c->max_headers,
                       .max_connections = c->max_connections,
                       .timeout_s = c->timeout_s};
}

#define COMMON_HELP                                                           \
    "  --brokers LIST  Kafka bootstrap servers (default: start an embedded\n" \
    "                  broker and print its address)\n"                      \
    "  --redis ADDR    Redis host:port or socket path (default: start a\n"   \
    "                  private redis-server)\n"                               \
    "  --for SECONDS   stop after this long (default: until SIGINT/SIGTERM)\n" \
    "  --config FILE   YAML config (default $CASCADE_CONFIG; flags win;\n"   \
    "                  SIGHUP reloads it). See 'cascade config --help'.\n"

int cmd_correlate(int argc, char **argv)
{
    live_args a;
    live l = {0};
    cs_err err = {{0}};
    char allowed[] = {OPT_BROKERS + '0', OPT_REDIS + '0', OPT_GROUP + '0',
                      OPT_FOR + '0', OPT_BATCH + '0', OPT_CONFIG + '0',
                      OPT_DRAIN + '0', 0};

    if (parse_live(argc, argv, &a, allowed))
        return 2;
    if (a.help) {
        printf("usage: cascade correlate [--brokers LIST] [--redis ADDR] "
               "[--group NAME] [--batch N] [--config FILE]\n"
               "                         [--for SECONDS] [--drain]\n\n"
               "Consumes cascade.signals in a consumer group, keeps windows in\n"
               "Redis, publishes incidents to cascade.incidents and action\n"
               "requests to cascade.actions; undecodable messages go to\n"
               "cascade.deadletter. Offsets are committed only after Redis\n"
               "acknowledged the batch's writes and Kafka has its outputs.\n"
               "On start it reads its state back from Redis and republishes\n"
               "outputs a killed predecessor may not have delivered.\n\n"
               COMMON_HELP
               "  --group NAME    consumer group (default cascade-correlate)\n"
               "  --batch N       most signals per batch (default 10000)\n"
               "  --drain         exit once every partition is read to its end,\n"
               "                  its outputs delivered and offsets committed\n"
               "                  (a backfill; exit 1 when the commit failed);\n"
               "                  SIGUSR1 does the same at any time\n");
        return 0;
    }
    if (live_config(&l, &a, "correlate"))
        return 2;
    corr_opts o;
    int rc;
    if ((rc = correlator_start(&l, "correlate", &o, &err)))
        return rc;
    if (!(l.corr = corr_start(l.base, &o, l.prod, &err)))
        return fail(&l, "correlate", &err);
    printf("correlate: consuming %s\n", KFK_TOPIC_SIGNALS);
    fflush(stdout);
    stop_after(&l, a.seconds);
    l.sigusr1 = evsignal_new(l.base, SIGUSR1, on_usr1, &l);
    event_add(l.sigusr1, NULL);
    if (a.drain)
        drain_when_done(&l);
    event_base_dispatch(l.base);
    rc = (a.drain || l.drain_timer) && !l.drained ? 1 : 0;
    live_free(&l);
    return rc;
}

int cmd_broker(int argc, char **argv)
{
    live_args a;
    live l = {0};
    cs_err err = {{0}};
    char allowed[] = {OPT_FOR + '0', 0};

    if (parse_live(argc, argv, &a, allowed))
        return 2;
    if (a.help) {
        printf("usage: cascade broker [--for SECONDS]\n\n"
               "Runs only the embedded Kafka-protocol broker (librdkafka's mock\n"
               "cluster, development and tests only) and prints its bootstrap\n"
               "address, for other cascade processes and kcat to share.\n");
        return 0;
    }
    l.redis_addr = "unused"; /* no Redis for a bare broker */
    if (defaults_start(&l, &err))
        return fail(&l, "broker", &err);
    stop_after(&l, a.seconds);
    event_base_dispatch(l.base);
    live_free(&l);
    return 0;
}


/* Publishes a sample stream before the loop runs: the broker serves it
 * from its own threads, and the correlator picks it up once started. */
static int feed_file(live *l, const char *path, cs_err *err)
{
    fin_stats st = {0};
    int rc = fin_publish(path, l->prod, &st, err);

    printf("feed: %lu signals from %s published to %s (%lu rejected)\n",
           st.published, path, KFK_TOPIC_SIGNALS, st.rejected);
    return rc < 0 ? -1 : 0;
}

int cmd_dev(int argc, char **argv)
{
    live_args a;
    live l = {0};
    cs_err err = {{0}};
    char allowed[] = {OPT_BROKERS + '0', OPT_REDIS + '0', OPT_FOR + '0',
                      OPT_TOKEN + '0', OPT_LISTEN + '0', OPT_PORT + '0',
                      OPT_FEED + '0', OPT_CONFIG + '0', 0};
    int dev_token;

    if (parse_live(argc, argv, &a, allowed))
        return 2;
    if (a.help) {
        printf("usage: cascade dev [--feed FILE] [--token TOKEN] [--port N] "
               "[--config FILE] [--for SECONDS]\n\n"
               "Everything in one process on the embedded defaults: the\n"
               "Alertmanager webhook, the correlator, and a dry-run action\n"
               "printer. --feed publishes a signal file first.\n\n" COMMON_HELP
               "  --token TOKEN   webhook bearer token (default:\n"
               "                  $CASCADE_WEBHOOK_TOKEN, else 'dev-token')\n"
               "  --listen ADDR   webhook address (default 127.0.0.1)\n"
               "  --port N        webhook port (default 9095; 0 = any)\n");
        return 0;
    }
    if (live_config(&l, &a, "dev"))
        return 2;
    if ((dev_token = !l.cfg.token[0]))
        str_copy(l.cfg.token, sizeof l.cfg.token, "dev-token");
    corr_opts o;
    int rc;
    if ((rc = correlator_start(&l, "dev", &o, &err)))
        return rc;
    wh_config wc = webhook_config(&l);
    if (!(l.corr = corr_start(l.base, &o, l.prod, &err)) ||
        !(l.printer = act_printer_start(l.base, l.brokers,
                                        l.cfg.fetch_wait_ms, stdout, &err)) ||
        !(l.wh = wh_start(l.base, &wc, l.prod, &err)))
        return fail(&l, "dev", &err);
    printf("webhook: http://%s:%d/api/v1/alerts (Authorization: Bearer %s)\n",
           wc.listen_addr, wh_port(l.wh), dev_token ? wc.token : "<token>");
    printf("correlate: consuming %s; incidents on %s, actions on %s\n",
           KFK_TOPIC_SIGNALS, KFK_TOPIC_INCIDENTS, KFK_TOPIC_ACTIONS);
    fflush(stdout);
    if (a.feed && feed_file(&l, a.feed, &err))
        return fail(&l, "dev", &err);
    stop_after(&l, a.seconds);
    event_base_dispatch(l.base);
    printf("dev: %lu actions printed\n", act_printer_count(l.printer));
    live_free(&l);
    return 0;
}

static int ingest_file(int argc, char **argv)
{
    static const struct option opts[] = {{"brokers", required_argument, 0, 'b'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *brokers = NULL;
    kfk_producer *p;
    fin_stats st = {0};
    cs_err err = {{0}};
    int c, rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'b') {
            brokers = optarg;
        } else if (c == 'h') {
            printf("usage: cascade ingest file --brokers LIST FILE|-\n\n"
                   "Publishes a signal JSONL file (or stdin) to cascade.signals,\n"
                   "keyed by cluster. Bad lines are reported as FILE:LINE: reason\n"
                   "and sent to cascade.deadletter.\n"
                   "exit: 0 all published, 1 some rejected, 2 failure\n");
            return 0;
        } else {
            return 2;
        }
    }
    if (!brokers || optind != argc - 1) {
        fprintf(stderr, "cascade ingest file: needs --brokers and one FILE\n");
        return 2;
    }
    if (!(p = kfk_producer_new(brokers, &err))) {
        fprintf(stderr, "cascade ingest file: %s\n", err.msg);
        return 2;
    }
    warm_topics(p, "ingest file");
    rc = fin_publish(argv[optind], p, &st, &err);
    fprintf(stderr, "ingest file: %lu lines, %lu published, %lu rejected\n",
            st.lines, st.published, st.rejected);
    if (rc < 0)
        fprintf(stderr, "cascade ingest file: %s\n", err.msg);
    kfk_producer_free(p);
    return rc < 0 ? 2 : rc;
}

static void ingest_log_help(FILE *f)
{
    fprintf(f,
        "usage: cascade ingest log --brokers LIST [--cluster NAME] [--year N]\n"
        "                          [--rules DIR] [--all] FILE...\n\n"
        "The collector for raw log files: reads lines as syslog writes them\n"
        "(\"TIME HOST [job=ID] PROGRAM[PID]: TEXT\", TIME in RFC 3339 or\n"
        "'Mmm dd HH:MM:SS'), makes each a signal of its source (kernel;\n"
        "slurmctld, slurmd, slurmstepd: slurm; raylet, gcs_server: ray;\n"
        "others: app) and publishes it to cascade.signals, keyed by cluster.\n"
        "Lines that no signature of the rule set could take are dropped here,\n"
        "at the edge, and counted; a line that cannot be parsed is reported\n"
        "as FILE:LINE: reason and sent to cascade.deadletter.\n\n"
        "  --cluster NAME  the signals' cluster (default: default)\n"
        "  --year N        year of traditional syslog times (default: this\n"
        "                  year, UTC)\n"
        "  --rules DIR     the rule set the edge filter reads (default: the\n"
        "                  built-in set; give the correlator's rules.dir)\n"
        "  --all           publish every parsed line (no edge filter)\n\n"
        "exit: 0 all lines taken, 1 some rejected, 2 failure\n");
}

static int ingest_log(int argc, char **argv)
{
    static const struct option opts[] = {{"brokers", required_argument, 0, 'b'},
                                         {"cluster", required_argument, 0, 'c'},
                                         {"year", required_argument, 0, 'y'},
                                         {"rules", required_argument, 0, 'r'},
                                         {"all", no_argument, 0, 'a'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *brokers = NULL, *rules = "";
    fin_opts fo = {.format = FIN_SYSLOG};
    fin_stats st, sum = {0};
    pb_catalog *cat = NULL;
    classifier *cls = NULL;
    kfk_producer *p = NULL;
    cs_err err = {{0}};
    int c, rc = 2, all = 0, worst = 0;
    time_t now = time(NULL);
    struct tm tm;
    char *end;

    gmtime_r(&now, &tm);
    fo.year = tm.tm_year + 1900;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            brokers = optarg;
            break;
        case 'c':
            fo.cluster = optarg;
            break;
        case 'y':
            fo.year = (int)strtol(optarg, &end, 10);
            if (*end || fo.year < 1970 || fo.year > 9999) {
                fprintf(stderr, "cascade ingest log: --year wants 1970..9999, "
                                "not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'r':
            rules = optarg;
            break;
        case 'a':
            all = 1;
            break;
        case 'h':
            ingest_log_help(stdout);
            return 0;
        default:
            ingest_log_help(stderr);
            return 2;
        }
    }
    if (!brokers || optind >= argc) {
        fprintf(stderr, "cascade ingest log: needs --brokers and a FILE\n");
        return 2;
    }
    if (!all && (!(cat = cli_load_rules(rules, "ingest log", &err)) ||
                 !(cls = cls_new(cat, &err))))
        goto out;
    fo.edge = cls;
    if (!(p = kfk_producer_new_codec(brokers, KFK_DEFAULT_LINGER_MS, "zstd",
                                     &err)))
        goto out;
    warm_topics(p, "ingest log");
    for (int i = optind; i < argc; i++) {
        int r = fin_publish_opts(argv[i], &fo, p, &st, &err);
        fprintf(stderr, "ingest log: %s: %lu lines, %lu published, %lu "
                "dropped by the edge filter, %lu rejected\n",
                strcmp(argv[i], "-") ? argv[i] : "<stdin>", st.lines,
                st.published, st.dropped, st.rejected);
        sum.lines += st.lines;
        sum.published += st.published;
        if (r < 0)
            goto out;
        worst = r > worst ? r : worst;
    }
    rc = worst;
out:
    if (rc == 2 && err.msg[0])
        fprintf(stderr, "cascade ingest log: %s\n", err.msg);
    kfk_producer_free(p);
    cls_free(cls);
    pb_catalog_free(cat);
    return rc;
}

static int ingest_webhook(int argc, char **argv)
{
    live_args a;
    live l = {0};
    cs_err err = {{0}};
    char allowed[] = {OPT_BROKERS + '0', OPT_FOR + '0', OPT_TOKEN + '0',
                      OPT_LISTEN + '0', OPT_PORT + '0', OPT_CONFIG + '0', 0};

    if (parse_live(argc, argv, &a, allowed))
        return 2;
    if (a.help) {
        printf("usage: cascade ingest webhook --brokers LIST [--token TOKEN] "
               "[--listen ADDR] [--port N] [--config FILE] [--for SECONDS]\n\n"
               "Alertmanager webhook receiver (payload version 4). Requires\n"
               "'Authorization: Bearer TOKEN' (--token or\n"
               "$CASCADE_WEBHOOK_TOKEN). Publishes one signal per alert to\n"
               "cascade.signals. 400 malformed body, 401 bad token, 413 too\n"
               "large, 503 producer queue full (Alertmanager retries).\n"
               "  --listen ADDR   default 127.0.0.1\n"
               "  --port N        default 9095; 0 = any free port\n"
               "  --config FILE   YAML config (kafka.brokers, webhook.*); SIGHUP\n"
               "                  reloads it, a new token applies at once\n");
        return 0;
    }
    if (live_config(&l, &a, "ingest webhook"))
        return 2;
    if (!l.brokers) {
        fprintf(stderr, "cascade ingest webhook: no brokers: give --brokers "
                        "or kafka.brokers in the config (cascade dev runs it "
                        "on an embedded broker)\n");
        return 2;
    }
    l.redis_addr = "unused";
    if (defaults_start(&l, &err))
        return fail(&l, "ingest webhook", &err);
    wh_config wc = webhook_config(&l);
    if (!(l.wh = wh_start(l.base, &wc, l.prod, &err)))
        return fail(&l, "ingest webhook", &err);
    printf("webhook: listening on http://%s:%d/api/v1/alerts\n", wc.listen_addr,
           wh_port(l.wh));
    fflush(stdout);
    stop_after(&l, a.seconds);
    event_base_dispatch(l.base);
    live_free(&l);
    return 0;
}

int cmd_ingest(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "file") == 0)
        return ingest_file(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "webhook") == 0)
        return ingest_webhook(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "log") == 0)
        return ingest_log(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: cascade ingest webhook|file|log [--help] ...\n\n"
               "  webhook  Alertmanager webhook receiver -> cascade.signals\n"
               "  file     publish a signal JSONL file -> cascade.signals\n"
               "  log      raw log files (syslog lines), filtered at the edge\n"
               "           -> cascade.signals\n");
        return 0;
    }
    fprintf(stderr, "usage: cascade ingest webhook|file|log ... (--help)\n");
    return 2;
}

/* ---- cascade config ---------------------------------------------------- */

int cmd_config(int argc, char **argv)
{
    cs_config c;
    cs_err err;

    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("usage: cascade config check FILE | cascade config defaults\n\n"
               "  check FILE  validate a YAML config; prints the effective\n"
               "              configuration (token redacted), or the file,\n"
               "              line and column of the first problem\n"
               "  defaults    print the embedded defaults as a config file\n\n"
               "Sections and keys:\n"
               "  kafka:   brokers (\"\" = embedded broker), group, batch,\n"
               "           linger_ms (producers, default 5), fetch_wait_ms\n"
               "           (consumers, default 100; the embedded broker answers\n"
               "           a waiting fetch only when the wait is over, so 0,\n"
               "           a fetch that answers at once, trades CPU for\n"
               "           latency there; a real broker answers on arrival)\n"
               "  redis:   address (host:port or socket; \"\" = private server)\n"
               "  webhook: listen, port, token | token_file, max_body,\n"
               "           max_headers (sizes: 65536, 64KiB, 1MiB),\n"
               "           max_connections, timeout_s\n"
               "  log:     level (error, warn, info, debug)\n"
               "  rules:   dir (a folder of rule files; \"\" = built-in set)\n\n"
               "exit: 0 valid, 1 invalid, 2 usage\n");
        return argc < 2 ? 2 : 0;
    }
    cfg_defaults(&c);
    if (!strcmp(argv[1], "defaults") && argc == 2) {
        cfg_print(&c, stdout);
        return 0;
    }
    if (strcmp(argv[1], "check") || argc != 3) {
        fprintf(stderr, "usage: cascade config check FILE | defaults\n");
        return 2;
    }
    if (cfg_load(&c, argv[2], &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    cfg_print(&c, stdout);
    explicit_bzero(c.token, sizeof c.token);
    fprintf(stderr, "%s: ok\n", argv[2]);
    return 0;
}
