/* cascade broker: only the embedded Kafka-protocol broker. */
#include <signal.h>
#include <stdio.h>

#include "cmd/cli.h"
#include "cmd/live.h"

/* SIGUSR1: the broker goes down; SIGUSR2: up again. */
static void on_usr(evutil_socket_t signo, short what, void *arg)
{
    (void)what;
    kfk_broker_set_down(arg, signo == SIGUSR1);
}

int cmd_broker(int argc, char **argv)
{
    struct event *usr[2] = {NULL, NULL};
    live_args a;
    live l = {0};
    cs_err err = {{0}};
    char allowed[] = {OPT_FOR + '0', OPT_PARTITIONS + '0', OPT_CONFIG + '0', 0};

    if (live_parse(argc, argv, &a, allowed))
        return 2;
    if (a.help) {
        printf("usage: cascade broker [--partitions N] [--config FILE] "
               "[--for SECONDS]\n\n"
               "Runs only the embedded Kafka-protocol broker (librdkafka's mock\n"
               "cluster, development and tests only) and prints its bootstrap\n"
               "address, for other cascade processes and kcat to share. It\n"
               "makes cascade's five topics itself (it has no CreateTopics for\n"
               "cascade kafka init), with replication 1.\n\n"
               "  --partitions N  partitions per topic (default 64)\n"
               "  --config FILE   only kafka.topic_prefix is read: the topics'\n"
               "                  names (default $CASCADE_CONFIG)\n"
               "  --for SECONDS   stop after this long (default: until\n"
               "                  SIGINT/SIGTERM)\n\n"
               "SIGUSR1 takes the broker down (connections closed, new ones\n"
               "refused), SIGUSR2 brings it up again on the same address: an\n"
               "outage for a test to watch the clients through.\n");
        return 0;
    }
    if (live_config(&l, &a, "broker"))
        return 2;
    /* the broker is this process, whatever the config names, and its own
     * client talks to it in plain text */
    l.brokers = NULL;
    l.cfg.kprops.n = 0;
    l.redis_target = &l.private_redis; /* unused: no Redis for a bare broker */
    l.embedded = 1;
    if (live_start(&l, &err))
        return live_fail(&l, "broker", &err);
    live_stop_after(&l, a.seconds);
    for (int i = 0; i < 2; i++) {
        usr[i] = evsignal_new(l.base, i ? SIGUSR2 : SIGUSR1, on_usr, l.broker);
        if (!usr[i] || event_add(usr[i], NULL)) {
            cs_err_set(&err, "cannot set up the event loop");
            for (int j = 0; j <= i; j++)
                if (usr[j])
                    event_free(usr[j]);
            return live_fail(&l, "broker", &err);
        }
    }
    event_base_dispatch(l.base);
    for (int i = 0; i < 2; i++)
        event_free(usr[i]);
    live_free(&l);
    return 0;
}
