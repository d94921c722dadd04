/* The long-running commands' glue: the event loop, the embedded services
 * of `cascade dev` and `cascade broker` (an in-process Kafka-protocol
 * broker, a private redis-server), signals and reload, and the setup every
 * command that runs a correlator shares. Part of the cascade binary; the
 * components stay libraries. */
#ifndef CS_CMD_LIVE_H
#define CS_CMD_LIVE_H

#include <event2/event.h>

#include "actions/printer.h"
#include "core/config.h"
#include "core/err.h"
#include "core/kafka.h"
#include "core/kafka_broker.h"
#include "core/obsrv.h"
#include "core/redisproc.h"
#include "correlate/correlator.h"
#include "ingest/rwrecv.h"
#include "ingest/webhook.h"

typedef struct live {
    cs_config cfg;
    const char *config_path; /* NULL: embedded defaults only */
    struct event_base *base;
    kfk_broker *broker;
    rproc *redis;
    const char *brokers;
    const rtarget *redis_target; /* NULL: none configured */
    rtarget private_redis;       /* the private redis-server's */
    /* cascade dev, cascade broker: start the broker and Redis that are not
     * configured. Every other command refuses to start without them. */
    int embedded;
    int partitions; /* the embedded broker's per topic (0: its default) */
    kfk_producer *prod;
    correlator *corr;
    webhook *wh;
    rwrecv *rw; /* cascade ingest remote-write */
    act_printer *printer;
    obsrv *obs; /* /metrics, /healthz, /readyz (metrics.<process> port) */
    struct event *sigint, *sigterm, *sighup, *stop_timer, *drain_timer;
    struct event *sigusr1;
    struct event *notify; /* systemd readiness (cli_notify_ready) */
    int drained; /* --drain: the backlog was read and committed */
} live;

/* The options the long-running commands know; each command allows some. */
enum { OPT_BROKERS = 1, OPT_REDIS, OPT_GROUP, OPT_FOR, OPT_TOKEN, OPT_LISTEN,
       OPT_PORT, OPT_FEED, OPT_BATCH, OPT_CONFIG, OPT_DRAIN, OPT_HELP,
       OPT_INSTANCE_ID, OPT_PARTITIONS, OPT_CLUSTER, OPT_ALL };

typedef struct live_args {
    const char *brokers, *redis, *group, *token, *listen, *feed, *config;
    const char *instance_id;
    const char *cluster; /* collectors' --cluster */
    int all;             /* collectors' --all: no filter at the edge */
    int seconds, port, help, batch; /* port, batch: -1 when not given */
    int drain, partitions;
} live_args;

#define LIVE_COMMON_HELP                                                           \
    "  --brokers LIST  Kafka bootstrap servers (or kafka.brokers; only\n"    \
    "                  cascade dev starts an embedded broker without one)\n" \
    "  --redis ADDR    Redis host:port or socket path (or redis.address;\n"  \
    "                  only cascade dev starts a private redis-server); the\n" \
    "                  user, password, db and Sentinels come from --config\n" \
    "  --for SECONDS   stop after this long (default: until SIGINT/SIGTERM)\n" \
    "  --config FILE   YAML config (default $CASCADE_CONFIG; flags win;\n"   \
    "                  SIGHUP reloads it). See 'cascade config --help'.\n"

/* Parses argv; an option not in allowed (OPT_* + '0' each) is refused.
 * -1: usage error, already reported. */
int live_parse(int argc, char **argv, live_args *a, const char *allowed);
/* Embedded defaults, then the config file (--config or $CASCADE_CONFIG;
 * cmd/cli.h cli_config), then $CASCADE_WEBHOOK_TOKEN, then the flags.
 * -1: reported. */
int live_config(live *l, const live_args *a, const char *cmd);
/* The loop, the embedded broker and Redis where none is configured
 * (l->embedded; otherwise a missing address is an error naming its flag
 * and config key), the producer, and SIGINT/SIGTERM/SIGHUP. */
int live_start(live *l, cs_err *err);
/* The rule set (a bad one is a usage error: exit 2, nothing started),
 * live_start, the correlator's topics checked, and the correlator on
 * l->corr. 0, or the exit code with everything freed and the reason
 * printed. */
int live_correlator(live *l, const char *who, cs_err *err);
void live_stop_after(live *l, int seconds);
/* The process's observability endpoint on metrics.listen:port (port 0:
 * none), with the correlator's metrics and readiness when l->corr is set;
 * and systemd's readiness notification (READY=1 once the correlator is
 * ready, at once without one). -1 with the reason in err. */
int live_observe(live *l, const char *process, int port, cs_err *err);
wh_config live_webhook_config(const live *l);
/* Prints "cascade CMD: reason", frees l; returns 2. */
int live_fail(live *l, const char *cmd, const cs_err *err);
void live_free(live *l);

#endif
