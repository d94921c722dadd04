/* Glue for the long-running commands: embedded defaults (an in-process
 * Kafka-protocol broker, a private redis-server), signals, and the loop.
 * Compiled into the cascade binary only; each component stays a library. */
#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actions/printer.h"
#include "core/cli.h"
#include "core/kafka.h"
#include "core/log.h"
#include "core/redisproc.h"
#include "correlate/correlator.h"

typedef struct live {
    struct event_base *base;
    kfk_broker *broker;
    rproc *redis;
    const char *brokers, *redis_addr;
    kfk_producer *prod;
    correlator *corr;
    act_printer *printer;
    struct event *sigint, *sigterm, *stop_timer;
} live;

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    live *l = arg;
    (void)what;
    log_info("cascade", "%s: stopping", fd >= 0 ? "signal" : "time is up");
    event_base_loopbreak(l->base);
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
    if (!(l->prod = kfk_producer_new(l->brokers, err)) ||
        kfk_producer_attach(l->prod, l->base))
        return -1;
    l->sigint = evsignal_new(l->base, SIGINT, on_stop, l);
    l->sigterm = evsignal_new(l->base, SIGTERM, on_stop, l);
    event_add(l->sigint, NULL);
    event_add(l->sigterm, NULL);
    return 0;
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

    if (l->corr) {
        corr_stats(l->corr, &s, &d, &i);
        log_info("cascade", "correlated %lu signals, %lu dead letters, %lu "
                            "incident updates", s, d, i);
    }
    act_printer_free(l->printer);
    corr_free(l->corr);
    kfk_producer_free(l->prod);
    if (l->sigint)
        event_free(l->sigint);
    if (l->sigterm)
        event_free(l->sigterm);
    if (l->stop_timer)
        event_free(l->stop_timer);
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

enum { OPT_BROKERS = 1, OPT_REDIS, OPT_GROUP, OPT_FOR, OPT_TOKEN, OPT_LISTEN,
       OPT_PORT, OPT_FEED, OPT_HELP };

static const struct option live_opts[] = {
    {"brokers", required_argument, 0, OPT_BROKERS},
    {"redis", required_argument, 0, OPT_REDIS},
    {"group", required_argument, 0, OPT_GROUP},
    {"for", required_argument, 0, OPT_FOR},
    {"token", required_argument, 0, OPT_TOKEN},
    {"listen", required_argument, 0, OPT_LISTEN},
    {"port", required_argument, 0, OPT_PORT},
    {"feed", required_argument, 0, OPT_FEED},
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0}};

typedef struct live_args {
    const char *brokers, *redis, *group, *token, *listen, *feed;
    int seconds, port, help;
} live_args;

static int parse_live(int argc, char **argv, live_args *a, const char *allowed)
{
    int c;
    char *end;

    memset(a, 0, sizeof *a);
    a->token = getenv("CASCADE_WEBHOOK_TOKEN");
    a->port = 9095;
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
        case OPT_FOR:
        case OPT_PORT: {
            long v = strtol(optarg, &end, 10);
            if (*end || v < 0 || v > 65535) {
                fprintf(stderr, "cascade %s: bad number '%s'\n", argv[0], optarg);
                return -1;
            }
            *(c == OPT_FOR ? &a->seconds : &a->port) = (int)v;
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

#define COMMON_HELP                                                           \
    "  --brokers LIST  Kafka bootstrap servers (default: start an embedded\n" \
    "                  broker and print its address)\n"                      \
    "  --redis ADDR    Redis host:port or socket path (default: start a\n"   \
    "                  private redis-server)\n"                               \
    "  --for SECONDS   stop after this long (default: until SIGINT/SIGTERM)\n"

int cmd_correlate(int argc, char **argv)
{
    live_args a;
    live l = {0};
    cs_err err = {{0}};
    char allowed[] = {OPT_BROKERS + '0', OPT_REDIS + '0', OPT_GROUP + '0',
                      OPT_FOR + '0', 0};

    if (parse_live(argc, argv, &a, allowed))
        return 2;
    if (a.help) {
        printf("usage: cascade correlate [--brokers LIST] [--redis ADDR] "
               "[--group NAME] [--for SECONDS]\n\n"
               "Consumes cascade.signals in a consumer group, keeps windows in\n"
               "Redis, publishes incidents to cascade.incidents and action\n"
               "requests to cascade.actions; undecodable messages go to\n"
               "cascade.deadletter. Offsets are committed only after Redis\n"
               "acknowledged the batch's writes.\n\n" COMMON_HELP
               "  --group NAME    consumer group (default cascade-correlate)\n");
        return 0;
    }
    l.brokers = a.brokers;
    l.redis_addr = a.redis;
    if (defaults_start(&l, &err))
        return fail(&l, "correlate", &err);
    corr_opts o = {.brokers = l.brokers, .redis = l.redis_addr, .group = a.group};
    if (!(l.corr = corr_start(l.base, &o, l.prod, &err)))
        return fail(&l, "correlate", &err);
    printf("correlate: consuming %s\n", KFK_TOPIC_SIGNALS);
    fflush(stdout);
    stop_after(&l, a.seconds);
    event_base_dispatch(l.base);
    live_free(&l);
    return 0;
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

