/* cascade broker: only the embedded Kafka-protocol broker. */
#include <stdio.h>

#include "cmd/cli.h"
#include "cmd/live.h"

int cmd_broker(int argc, char **argv)
{
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
               "                  SIGINT/SIGTERM)\n");
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
    event_base_dispatch(l.base);
    live_free(&l);
    return 0;
}
