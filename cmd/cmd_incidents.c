/* cascade incidents list|show: the incidents on cascade.incidents and
 * their actions' trail on cascade.audit, read to their ends without
 * joining a group (core/kafka_scan.h), for people (a table, a chain) or
 * scripts (--json). Works against a running deployment and after it
 * stopped: the topics are the record. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "core/kafka_scan.h"
#include "core/str.h"
#include "core/topics.h"
#include "core/ts.h"
#include "view/incidents.h"
#include "view/render.h"

static const char incidents_help[] =
    "usage: cascade incidents list [--status open|resolved|merged]\n"
    "                              [--scenario ID|PREFIX.] [--cluster NAME]\n"
    "                              [--node HOST] [--job ID] [--since WHEN]\n"
    "                              [--limit N] [--json] [COMMON]\n"
    "       cascade incidents show ID [--json] [COMMON]\n\n"
    "list: the incidents published on cascade.incidents, the last version\n"
    "of each, newest first, as a table (--json: one incident a line, as\n"
    "docs/FORMATS.md gives it). show: one incident whole: its scope and\n"
    "evidence, its chain from the root cause to the jobs it broke (with\n"
    "the line that showed the root), its actions with the executor's id\n"
    "and their state now, and their audit trail from cascade.audit\n"
    "(--json: {incident, actions, audit}). Both read the topics to their\n"
    "end, joining no consumer group and committing nothing: they work\n"
    "against a running deployment and after it stopped.\n\n"
    "  --status S      open, resolved, or merged (into a storm)\n"
    "  --scenario S    a scenario id, or a family: hw. nccl. ...\n"
    "  --cluster NAME  of this cluster\n"
    "  --node HOST     naming this node (scope, root cause, chain)\n"
    "  --job ID        naming this job\n"
    "  --since WHEN    updated since (event time): 90m, 12h, 7d, or an\n"
    "                  RFC 3339 time\n"
    "  --limit N       at most N (the newest)\n"
    "  --json          JSON for scripts\n"
    "COMMON:\n"
    "  --brokers LIST  Kafka bootstrap servers (or kafka.brokers)\n"
    "  --config FILE   its kafka section (default $CASCADE_CONFIG)\n"
    "  --timeout S     how long reading a topic may take (default 30)\n\n"
    "exit: 0 found (list: even none), 1 show: no such incident, 2 usage\n"
    "or failure (the brokers did not answer, no such topic)\n";

typedef struct inc_args {
    vw_filter f;
    const char *brokers, *config, *since, *id;
    int json, show, timeout_s;
    long limit;
} inc_args;

/* -1 usage error (told), 1 --help. */
static int parse(int argc, char **argv, inc_args *a)
{
    static const struct option opts[] = {
        {"status", required_argument, 0, 's'},
        {"scenario", required_argument, 0, 'S'},
        {"cluster", required_argument, 0, 'c'},
        {"node", required_argument, 0, 'n'},
        {"job", required_argument, 0, 'j'},
        {"since", required_argument, 0, 'w'},
        {"limit", required_argument, 0, 'l'},
        {"json", no_argument, 0, 'J'},
        {"brokers", required_argument, 0, 'b'},
        {"config", required_argument, 0, 'C'},
        {"timeout", required_argument, 0, 't'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c;
    char *end;

    *a = (inc_args){.timeout_s = 30};
    if (argc < 2 || (strcmp(argv[1], "list") && strcmp(argv[1], "show"))) {
        if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
            return 1;
        fprintf(stderr, "%s", incidents_help);
        return -1;
    }
    a->show = !strcmp(argv[1], "show");
    optind = 2;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's': a->f.status = optarg; break;
        case 'S': a->f.scenario = optarg; break;
        case 'c': a->f.cluster = optarg; break;
        case 'n': a->f.node = optarg; break;
        case 'j': a->f.job = optarg; break;
        case 'w': a->since = optarg; break;
        case 'J': a->json = 1; break;
        case 'b': a->brokers = optarg; break;
        case 'C': a->config = optarg; break;
        case 'l':
        case 't': {
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < 1 || v > 1000000) {
                fprintf(stderr, "cascade incidents: bad number '%s' for --%s\n",
                        optarg, c == 'l' ? "limit" : "timeout");
                return -1;
            }
            if (c == 'l')
                a->limit = v;
            else
                a->timeout_s = (int)v;
            break;
        }
        case 'h': return 1;
        default: return -1;
        }
    }
    if (a->f.status && strcmp(a->f.status, "open") &&
        strcmp(a->f.status, "resolved") && strcmp(a->f.status, "merged")) {
        fprintf(stderr, "cascade incidents: --status is open, resolved or "
                        "merged, not '%s'\n", a->f.status);
        return -1;
    }
    if (a->show != (optind == argc - 1) || optind < argc - 1) {
        fprintf(stderr, "cascade incidents: %s\n",
                a->show ? "show takes one incident id" : "list takes no operand");
        return -1;
    }
    a->id = a->show ? argv[optind] : NULL;
    return 0;
}

typedef struct feed {
    vw_incidents *incs;
    vw_trail *trail;
} feed;

static int take_incident(void *arg, const rd_kafka_message_t *m)
{
    vw_incidents_add(((feed *)arg)->incs, m->payload, m->len);
    return 0;
}

static int take_audit(void *arg, const rd_kafka_message_t *m)
{
    vw_trail_add(((feed *)arg)->trail, m->payload, m->len);
    return 0;
}

static int read_topic(const cs_config *c, const inc_args *a, const char *topic,
                      int64_t since_us, int (*fn)(void *, const rd_kafka_message_t *),
                      feed *fd)
{
    return cli_scan(c, "incidents", topic, since_us / 1000, a->timeout_s * 1000,
                    fn, fd);
}

static int terminal_width(void)
{
    struct winsize w;

    return isatty(STDOUT_FILENO) && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) &&
                   w.ws_col ? w.ws_col : 0;
}

static int list(const inc_args *a, feed *fd)
{
    size_t n;
    const json_t **sel = vw_select(fd->incs, &a->f, &n);

    if (a->limit && (size_t)a->limit < n)
        n = (size_t)a->limit;
    if (a->json) {
        for (size_t i = 0; i < n; i++) {
            char *t = json_dumps(sel[i], JSON_COMPACT);
            printf("%s\n", t ? t : "{}");
            free(t);
        }
    } else {
        vw_table(stdout, sel, n, terminal_width());
        fflush(stdout);
        fprintf(stderr, "%zu of %zu incident(s)\n", n,
                vw_incidents_count(fd->incs));
    }
    free(sel);
    return 0;
}

static int show(const cs_config *c, const inc_args *a, feed *fd)
{
    const json_t *inc = vw_incidents_get(fd->incs, a->id);

    if (!inc) {
        fprintf(stderr, "cascade incidents: no incident %s on %s\n", a->id,
                KFK_TOPIC_INCIDENTS);
        return 1;
    }
    fd->trail = vw_trail_new(a->id);
    if (read_topic(c, a, KFK_TOPIC_AUDIT, 0, take_audit, fd))
        return 2;
    if (a->json) {
        json_t *o = json_pack("{s:O, s:o, s:O}", "incident", inc, "actions",
                              vw_actions(inc, fd->trail), "audit",
                              vw_trail_records(fd->trail));
        char *t = json_dumps(o, JSON_COMPACT);
        printf("%s\n", t ? t : "{}");
        free(t);
        json_decref(o);
    } else {
        vw_show(stdout, inc, fd->trail);
    }
    return 0;
}

int cmd_incidents(int argc, char **argv)
{
    inc_args a;
    cs_config c;
    const char *used;
    feed fd = {0};
    int64_t since = 0;
    int rc;

    if ((rc = parse(argc, argv, &a)))
        return rc > 0 ? (printf("%s", incidents_help), 0) : 2;
    if (a.since && vw_since(a.since, ts_now(), &since)) {
        fprintf(stderr, "cascade incidents: --since wants 90m, 12h, 7d or an "
                        "RFC 3339 time, not '%s'\n", a.since);
        return 2;
    }
    a.f.since_us = since;
    if (cli_config(&c, a.config, "incidents", &used))
        return 2;
    if (a.brokers)
        str_copy(c.brokers, sizeof c.brokers, a.brokers);
    if (!c.brokers[0]) {
        fprintf(stderr, "cascade incidents: no Kafka brokers: give --brokers "
                        "or kafka.brokers in --config\n");
        return 2;
    }
    fd.incs = vw_incidents_new();
    rc = read_topic(&c, &a, KFK_TOPIC_INCIDENTS, a.show ? 0 : since,
                    take_incident, &fd) ? 2
         : a.show ? show(&c, &a, &fd) : list(&a, &fd);
    vw_incidents_free(fd.incs);
    vw_trail_free(fd.trail);
    return rc;
}
