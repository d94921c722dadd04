/* cascade broker: only the embedded Kafka-protocol broker. */
#include <stdio.h>

#include "cmd/cli.h"
#include "cmd/live.h"

int cmd_broker(int argc, char **argv)
{
    live_args a;
    live l = {0};
    cs_err err = {{0}};
    char allowed[] = {OPT_FOR + '0', 0};

    if (live_parse(argc, argv, &a, allowed))
        return 2;
    if (a.help) {
        printf("usage: cascade broker [--for SECONDS]\n\n"
               "Runs only the embedded Kafka-protocol broker (librdkafka's mock\n"
               "cluster, development and tests only) and prints its bootstrap\n"
               "address, for other cascade processes and kcat to share.\n");
        return 0;
    }
    l.redis_addr = "unused"; /* no Redis for a bare broker */
    if (live_start(&l, &err))
        return live_fail(&l, "broker", &err);
    live_stop_after(&l, a.seconds);
    event_base_dispatch(l.base);
    live_free(&l);
    return 0;
}
