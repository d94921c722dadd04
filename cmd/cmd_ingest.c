/* cascade ingest: the collectors (a signal file, raw logs, the
 * Alertmanager webhook) -> cascade.signals. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cli.h"
#include "cmd/live.h"
#include "core/str.h"
#include "ingest/filein.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

/* A file collector's producer: --brokers, else kafka.brokers of the
 * config (--config, $CASCADE_CONFIG), with its kafka.properties, and the
 * topics a collector writes checked. NULL with the reason printed. */
static kfk_producer *collector(const char *who, const char *brokers,
                               const char *config, const char *codec)
{
    const char *const topics[] = {KFK_TOPIC_SIGNALS, KFK_TOPIC_DEADLETTER,
                                  NULL};
    const char *used;
    kfk_producer *p;
    cs_config c;
    cs_err err;

    if (cli_config(&c, config, who, &used))
        return NULL;
    if (brokers)
        str_copy(c.brokers, sizeof c.brokers, brokers);
    if (!c.brokers[0]) {
        fprintf(stderr, "cascade %s: no Kafka brokers: give --brokers or "
                        "kafka.brokers in --config\n", who);
        return NULL;
    }
    kfk_producer_opts po = kfk_producer_defaults(c.brokers);
    po.linger_ms = c.linger_ms;
    po.props = &c.kprops;
    po.codec = codec;
    if (!(p = kfk_producer_open(&po, &err)) ||
        kfk_producer_topics(p, topics, NULL, CLI_TOPICS_MS, &err)) {
        fprintf(stderr, "cascade %s: %s\n", who, err.msg);
        kfk_producer_free(p);
        return NULL;
    }
    return p;
}

static int ingest_file(int argc, char **argv)
{
    static const struct option opts[] = {{"brokers", required_argument, 0, 'b'},
                                         {"config", required_argument, 0, 'C'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *brokers = NULL, *config = NULL;
    kfk_producer *p;
    fin_stats st = {0};
    cs_err err = {{0}};
    int c, rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'b') {
            brokers = optarg;
        } else if (c == 'C') {
            config = optarg;
        } else if (c == 'h') {
            printf("usage: cascade ingest file [--brokers LIST] [--config FILE] "
                   "FILE|-\n\n"
                   "Publishes a signal JSONL file (or stdin) to cascade.signals,\n"
                   "keyed by cluster. Bad lines are reported as FILE:LINE: reason\n"
                   "and sent to cascade.deadletter.\n"
                   "  --brokers LIST  Kafka bootstrap servers (or kafka.brokers)\n"
                   "  --config FILE   its kafka section: brokers, topic_prefix,\n"
                   "                  properties (default $CASCADE_CONFIG)\n"
                   "exit: 0 all published, 1 some rejected, 2 failure\n");
            return 0;
        } else {
            return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "cascade ingest file: needs one FILE\n");
        return 2;
    }
    if (!(p = collector("ingest file", brokers, config, "lz4")))
        return 2;
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
        "usage: cascade ingest log [--brokers LIST] [--config FILE]\n"
        "                          [--cluster NAME] [--year N] [--rules DIR]\n"
        "                          [--all] FILE...\n\n"
        "The collector for raw log files: reads lines as syslog writes them\n"
        "(\"TIME HOST [job=ID] PROGRAM[PID]: TEXT\", TIME in RFC 3339 or\n"
        "'Mmm dd HH:MM:SS'), makes each a signal of its source (kernel;\n"
        "slurmctld, slurmd, slurmstepd: slurm; raylet, gcs_server: ray;\n"
        "others: app) and publishes it to cascade.signals, keyed by cluster.\n"
        "Lines that no signature of the rule set could take are dropped here,\n"
        "at the edge, and counted; a line that cannot be parsed is reported\n"
        "as FILE:LINE: reason and sent to cascade.deadletter.\n\n"
        "  --brokers LIST  Kafka bootstrap servers (or kafka.brokers)\n"
        "  --config FILE   its kafka section: brokers, topic_prefix,\n"
        "                  properties (default $CASCADE_CONFIG)\n"
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
                                         {"config", required_argument, 0, 'C'},
                                         {"cluster", required_argument, 0, 'c'},
                                         {"year", required_argument, 0, 'y'},
                                         {"rules", required_argument, 0, 'r'},
                                         {"all", no_argument, 0, 'a'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *brokers = NULL, *config = NULL, *rules = "";
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
        case 'C':
            config = optarg;
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
    if (optind >= argc) {
        fprintf(stderr, "cascade ingest log: needs a FILE\n");
        return 2;
    }
    if (!all && (!(cat = cli_load_rules(rules, "ingest log", &err)) ||
                 !(cls = cls_new(cat, &err))))
        goto out;
    fo.edge = cls;
    if (!(p = collector("ingest log", brokers, config, "zstd"))) {
        err.msg[0] = '\0'; /* told */
        goto out;
    }
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

    if (live_parse(argc, argv, &a, allowed))
        return 2;
    if (a.help) {
        printf("usage: cascade ingest webhook --brokers LIST [--token TOKEN] "
               "[--listen ADDR] [--port N] [--config FILE] [--for SECONDS]\n\n"
               "Alertmanager webhook receiver (payload version 4). Requires\n"
               "'Authorization: Bearer TOKEN' (--token or\n"
               "$CASCADE_WEBHOOK_TOKEN). Publishes one signal per alert to\n"
               "cascade.signals and answers 200 once Kafka has acknowledged\n"
               "every one. 400 malformed body, 401 bad token, 413 too large,\n"
               "503 not acknowledged within webhook.ack_timeout_s, or the\n"
               "queue is full (Alertmanager retries). SIGTERM answers the\n"
               "posts that wait, then stops.\n"
               "  --listen ADDR   default 127.0.0.1\n"
               "  --port N        default 9095; 0 = any free port\n"
               "  --config FILE   YAML config (kafka.brokers, webhook.*); SIGHUP\n"
               "                  reloads it, a new token applies at once\n");
        return 0;
    }
    if (live_config(&l, &a, "ingest webhook"))
        return 2;
    l.redis_target = &l.private_redis; /* unused */
    const char *const topics[] = {KFK_TOPIC_SIGNALS, NULL};
    if (live_start(&l, &err) ||
        kfk_producer_topics(l.prod, topics, NULL, CLI_TOPICS_MS, &err))
        return live_fail(&l, "ingest webhook", &err);
    wh_config wc = live_webhook_config(&l);
    if (!(l.wh = wh_start(l.base, &wc, l.prod, &err)))
        return live_fail(&l, "ingest webhook", &err);
    printf("webhook: listening on http://%s:%d/api/v1/alerts\n", wc.listen_addr,
           wh_port(l.wh));
    fflush(stdout);
    live_stop_after(&l, a.seconds);
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
