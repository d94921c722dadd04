/* cascade dev: webhook, correlator and a dry-run action printer in one
 * process, on the embedded defaults. */
#include <stdio.h>

#include "cmd/cli.h"
#include "cmd/live.h"
#include "core/str.h"
#include "ingest/filein.h"

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

    if (live_parse(argc, argv, &a, allowed))
        return 2;
    if (a.help) {
        printf("usage: cascade dev [--feed FILE] [--token TOKEN] [--port N] "
               "[--config FILE] [--for SECONDS]\n\n"
               "Everything in one process on the embedded defaults: the\n"
               "Alertmanager webhook, the correlator, and a dry-run action\n"
               "printer. --feed publishes a signal file first.\n\n" LIVE_COMMON_HELP
               "  --token TOKEN   webhook bearer token (default:\n"
               "                  $CASCADE_WEBHOOK_TOKEN, else 'dev-token')\n"
               "  --listen ADDR   webhook address (default 127.0.0.1)\n"
               "  --port N        webhook port (default 9095; 0 = any)\n");
        return 0;
    }
    if (live_config(&l, &a, "dev"))
        return 2;
    l.embedded = 1;
    if ((dev_token = !l.cfg.token[0]))
        str_copy(l.cfg.token, sizeof l.cfg.token, "dev-token");
    int rc;
    if ((rc = live_correlator(&l, "dev", &err)))
        return rc;
    wh_config wc = live_webhook_config(&l);
    if (!(l.printer = act_printer_start(l.base, l.brokers, &l.cfg.kprops,
                                        l.cfg.fetch_wait_ms, stdout, &err)) ||
        !(l.wh = wh_start(l.base, &wc, l.prod, &err)))
        return live_fail(&l, "dev", &err);
    if (live_observe(&l, "dev", l.cfg.metrics_dev, &err))
        return live_fail(&l, "dev", &err);
    printf("webhook: http://%s:%d/api/v1/alerts (Authorization: Bearer %s)\n",
           wc.listen_addr, wh_port(l.wh), dev_token ? wc.token : "<token>");
    printf("correlate: consuming %s; incidents on %s, actions on %s\n",
           KFK_TOPIC_SIGNALS, KFK_TOPIC_INCIDENTS, KFK_TOPIC_ACTIONS);
    fflush(stdout);
    if (a.feed && feed_file(&l, a.feed, &err))
        return live_fail(&l, "dev", &err);
    live_stop_after(&l, a.seconds);
    event_base_dispatch(l.base);
    printf("dev: %lu actions printed\n", act_printer_count(l.printer));
    rc = corr_failed(l.corr) ? 2 : 0;
    live_free(&l);
    return rc;
}
