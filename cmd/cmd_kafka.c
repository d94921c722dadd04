/* cascade kafka init|check: cascade's topics created or compared with
 * what they should be (core/kafka_admin.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "core/kafka_admin.h"
#include "core/str.h"
#include "core/topics.h"

static const char kafka_help[] =
    "usage: cascade kafka init|check [--brokers LIST] [--config FILE]\n"
    "                                [--partitions N] [--replication N]\n"
    "                                [--single-broker] [--timeout SECONDS]\n\n"
    "init creates the topics of cascade that do not exist (CreateTopics),\n"
    "check only looks. Both compare every topic that exists with the plan\n"
    "below and print one line per topic: created, as planned, missing, or\n"
    "what differs (partition count, replication factor, each planned\n"
    "config, read with DescribeConfigs). An existing topic is never\n"
    "changed: the signals topic's partition count is fixed once\n"
    "correlators ran (their state is per partition), and replication and\n"
    "configs are the cluster operator's to change (kafka-reassign-\n"
    "partitions.sh, kafka-configs.sh).\n\n"
    "The plan: every topic with --partitions partitions and --replication\n"
    "replicas, min.insync.replicas 2 (1 under 3 replicas),\n"
    "cleanup.policy=delete, and retention.ms of 7 days (signals), 30 days\n"
    "(incidents, actions, dead letters) or 90 days (audit).\n\n"
    "  --brokers LIST    Kafka bootstrap servers (or kafka.brokers)\n"
    "  --config FILE     its kafka section: brokers, topic_prefix (the\n"
    "                    topics' names), properties (security.protocol,\n"
    "                    sasl.*: an admin principal's; default\n"
    "                    $CASCADE_CONFIG)\n"
    "  --partitions N    partitions of every topic (default 64)\n"
    "  --replication N   replicas of every partition (default 3)\n"
    "  --single-broker   a cluster of one broker (a lab): replication 1\n"
    "  --timeout S       how long each request may take (default 30)\n\n"
    "The embedded broker (cascade broker, cascade dev) makes the topics\n"
    "itself and has neither CreateTopics nor DescribeConfigs: check there\n"
    "compares partitions and replication only.\n\n"
    "exit: 0 every topic as planned, 1 one missing or different, 2 usage\n"
    "or a failure (the brokers did not answer, a request was refused)\n";

typedef struct kafka_args {
    const char *brokers, *config;
    int partitions, replication, timeout_s, create;
} kafka_args;

static int number(const char *s, const char *flag, int max, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (!*s || *end || v < 1 || v > max) {
        fprintf(stderr, "cascade kafka: bad number '%s' for --%s (1..%d)\n", s,
                flag, max);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* -1 usage error (told), 1 --help. */
static int parse(int argc, char **argv, kafka_args *a)
{
    static const struct option opts[] = {
        {"brokers", required_argument, 0, 'b'},
        {"config", required_argument, 0, 'C'},
        {"partitions", required_argument, 0, 'p'},
        {"replication", required_argument, 0, 'r'},
        {"single-broker", no_argument, 0, 's'},
        {"timeout", required_argument, 0, 't'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c, rc = 0;

    *a = (kafka_args){.partitions = TOPIC_DEFAULT_PARTITIONS,
                      .replication = TOPIC_DEFAULT_REPLICATION,
                      .timeout_s = 30};
    optind = 1;
    while (rc == 0 && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'b': a->brokers = optarg; break;
        case 'C': a->config = optarg; break;
        case 'p': rc = number(optarg, "partitions", 100000, &a->partitions); break;
        case 'r': rc = number(optarg, "replication", 32, &a->replication); break;
        case 's': a->replication = 1; break;
        case 't': rc = number(optarg, "timeout", 3600, &a->timeout_s); break;
        case 'h': return 1;
        default: rc = -1;
        }
    }
    if (rc == 0 && optind < argc) {
        fprintf(stderr, "cascade kafka: unexpected argument '%s'\n",
                argv[optind]);
        rc = -1;
    }
    return rc;
}

static void say(void *arg, const char *line)
{
    (void)arg;
    printf("%s\n", line);
    fflush(stdout);
}

int cmd_kafka(int argc, char **argv)
{
    kafka_args a;
    topic_plan plans[TOPIC_COUNT];
    const char *used;
    kfk_admin *adm;
    cs_config c;
    cs_err err;
    int rc;

    if (argc < 2 || (strcmp(argv[1], "init") && strcmp(argv[1], "check"))) {
        int help = argc >= 2 && (!strcmp(argv[1], "--help") ||
                                 !strcmp(argv[1], "-h"));
        fputs(kafka_help, help ? stdout : stderr);
        return help ? 0 : 2;
    }
    if ((rc = parse(argc - 1, argv + 1, &a)) != 0) {
        if (rc > 0)
            fputs(kafka_help, stdout);
        return rc > 0 ? 0 : 2;
    }
    a.create = !strcmp(argv[1], "init");
    if (cli_config(&c, a.config, "kafka", &used))
        return 2;
    if (a.brokers)
        str_copy(c.brokers, sizeof c.brokers, a.brokers);
    if (!c.brokers[0]) {
        fprintf(stderr, "cascade kafka: no Kafka brokers: give --brokers or "
                        "kafka.brokers in --config\n");
        return 2;
    }
    if (!(adm = kfk_admin_open(c.brokers, &c.kprops, &err))) {
        fprintf(stderr, "cascade kafka: %s\n", err.msg);
        return 2;
    }
    topic_plans(plans, a.partitions, a.replication);
    rc = kfk_admin_apply(adm, plans, TOPIC_COUNT, a.create,
                         a.timeout_s * 1000, say, NULL);
    kfk_admin_free(adm);
    return rc;
}
