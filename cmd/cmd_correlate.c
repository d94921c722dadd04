/* cascade correlate: the correlator as a service, and --drain. */
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/live.h"
#include "core/log.h"

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

int cmd_correlate(int argc, char **argv)
{
    live_args a;
    live l = {0};
    cs_err err = {{0}};
    char allowed[] = {OPT_BROKERS + '0', OPT_REDIS + '0', OPT_GROUP + '0',
                      OPT_FOR + '0', OPT_BATCH + '0', OPT_CONFIG + '0',
                      OPT_DRAIN + '0', OPT_INSTANCE_ID + '0', 0};

    if (live_parse(argc, argv, &a, allowed))
        return 2;
    if (a.help) {
        printf("usage: cascade correlate --brokers LIST --redis ADDR "
               "[--group NAME] [--batch N] [--config FILE]\n"
               "                         [--instance-id ID] [--for SECONDS] "
               "[--drain]\n\n"
               "Consumes cascade.signals in a consumer group, keeps windows in\n"
               "Redis, publishes incidents to cascade.incidents and action\n"
               "requests to cascade.actions; undecodable messages go to\n"
               "cascade.deadletter. Offsets are committed only after Redis\n"
               "acknowledged the batch's writes and Kafka has its outputs.\n"
               "On start it reads its state back from Redis and republishes\n"
               "outputs a killed predecessor may not have delivered. It\n"
               "refuses to start when a topic is missing (cascade kafka init)\n"
               "or the signals topic's partition count is not the one its\n"
               "state in Redis was built with.\n\n"
               LIVE_COMMON_HELP
               "  --group NAME    consumer group (default cascade-correlate,\n"
               "                  after kafka.topic_prefix)\n"
               "  --instance-id ID  static group membership (kafka.instance_id):\n"
               "                  a restart within the session timeout keeps\n"
               "                  its partitions, no rebalance; one id per\n"
               "                  process (a second one fences the first)\n"
               "  --batch N       most signals per batch (default 10000)\n"
               "  --drain         exit once every partition is read to its end,\n"
               "                  its outputs delivered and offsets committed\n"
               "                  (a backfill; exit 1 when the commit failed);\n"
               "                  SIGUSR1 does the same at any time\n");
        return 0;
    }
    if (live_config(&l, &a, "correlate"))
        return 2;
    int rc;
    if ((rc = live_correlator(&l, "correlate", &err)))
        return rc;
    if (live_observe(&l, "correlate", l.cfg.metrics_correlate, &err))
        return live_fail(&l, "correlate", &err);
    printf("correlate: consuming %s as group %s\n", KFK_TOPIC_SIGNALS,
           l.cfg.group[0] ? l.cfg.group : KFK_GROUP_CORRELATE);
    fflush(stdout);
    live_stop_after(&l, a.seconds);
    l.sigusr1 = evsignal_new(l.base, SIGUSR1, on_usr1, &l);
    event_add(l.sigusr1, NULL);
    if (a.drain)
        drain_when_done(&l);
    event_base_dispatch(l.base);
    rc = corr_failed(l.corr) ? 2 : (a.drain || l.drain_timer) && !l.drained ? 1 : 0;
    live_free(&l);
    return rc;
}
