/* cascade console: the operator's page (console/). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "actions/approvals.h"
#include "cmd/cli.h"
#include "console/live.h"
#include "console/server.h"
#include "core/kafka.h"
#include "core/log.h"
#include "core/str.h"

static const char console_help[] =
    "usage: cascade console --approvers FILE [--act-url URL] [--watch URL]...\n"
    "                       [--listen ADDR] [--port N] [--brokers LIST]\n"
    "                       [--config FILE] [--for SECONDS]\n\n"
    "Serves the operator's page: the incidents live (new and updated ones\n"
    "appear without a reload), an incident's chain drawn from its root\n"
    "cause to the jobs it broke with the line that showed it, its actions\n"
    "with Approve and Deny for what waits on a human, the audit trail, and\n"
    "cascade's own health (each --watch process's /readyz and metrics).\n"
    "It reads cascade.incidents and cascade.audit whole (a consumer group\n"
    "of its own that commits nothing); the page is in the binary and loads\n"
    "nothing from elsewhere. Every /api request needs a token of the\n"
    "approvers file: the executor's people and tokens. A decision is sent\n"
    "to the executor's approvals API (--act-url) with the person's own\n"
    "token, so the executor checks what they may approve and audits their\n"
    "name.\n\n"
    "  --approvers FILE  who may sign in (the executor's approvers file)\n"
    "  --act-url URL     the executor's approvals API (http://HOST:9096)\n"
    "  --watch URL       a process's metrics endpoint (http://HOST:9464);\n"
    "                    repeatable, 16 at most\n"
    "  --listen ADDR     default 127.0.0.1 (loopback)\n"
    "  --port N          default 9099; 0: any free port (printed)\n"
    "  --brokers LIST    Kafka bootstrap servers (or kafka.brokers)\n"
    "  --config FILE     its kafka section (default $CASCADE_CONFIG)\n"
    "  --for SECONDS     stop after this long\n\n"
    "exit: 0 stopped (SIGTERM), 2 usage or start failure\n";

#define MAX_WATCH 16

typedef struct con_args {
    const char *approvers, *act_url, *listen, *brokers, *config;
    const char *watch[MAX_WATCH + 1];
    int nwatch, port, seconds;
} con_args;

/* -1 usage error (told), 1 --help. */
static int parse(int argc, char **argv, con_args *a)
{
    static const struct option opts[] = {
        {"approvers", required_argument, 0, 'a'}, {"act-url", required_argument, 0, 'u'},
        {"watch", required_argument, 0, 'w'},     {"listen", required_argument, 0, 'L'},
        {"port", required_argument, 0, 'p'},      {"brokers", required_argument, 0, 'b'},
        {"config", required_argument, 0, 'C'},    {"for", required_argument, 0, 'f'},
        {"help", no_argument, 0, 'h'},            {0, 0, 0, 0}};
    int c;
    char *end;
    long v;

    *a = (con_args){.listen = "127.0.0.1", .port = 9099};
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'a': a->approvers = optarg; break;
        case 'u': a->act_url = optarg; break;
        case 'L': a->listen = optarg; break;
        case 'b': a->brokers = optarg; break;
        case 'C': a->config = optarg; break;
        case 'w':
            if (a->nwatch == MAX_WATCH) {
                fprintf(stderr, "cascade console: at most %d --watch\n", MAX_WATCH);
                return -1;
            }
            a->watch[a->nwatch++] = optarg;
            break;
        case 'p':
        case 'f':
            v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < (c == 'p' ? 0 : 1) ||
                v > (c == 'p' ? 65535 : 86400 * 365)) {
                fprintf(stderr, "cascade console: bad --%s '%s'\n",
                        c == 'p' ? "port" : "for", optarg);
                return -1;
            }
            if (c == 'p')
                a->port = (int)v;
            else
                a->seconds = (int)v;
            break;
        case 'h': return 1;
        default: return -1;
        }
    }
    if (optind != argc || !a->approvers) {
        fprintf(stderr, "cascade console: %s\n", optind != argc
                        ? "unexpected operand" : "--approvers FILE is required");
        return -1;
    }
    return 0;
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    event_base_loopexit(arg, NULL);
}

int cmd_console(int argc, char **argv)
{
    con_args a;
    cs_config c;
    const char *used;
    cs_err err;
    approvers *people;
    struct event_base *base = NULL;
    struct event *ev[3] = {NULL, NULL, NULL}, *notify;
    struct timeval tv;
    cn_live *live = NULL;
    cn_server *srv = NULL;
    char group[200], host[64] = "host";
    int rc;

    if ((rc = parse(argc, argv, &a)))
        return rc > 0 ? (printf("%s", console_help), 0) : 2;
    if (cli_config(&c, a.config, "console", &used))
        return 2;
    if (a.brokers)
        str_copy(c.brokers, sizeof c.brokers, a.brokers);
    if (!c.brokers[0]) {
        fprintf(stderr, "cascade console: no Kafka brokers: give --brokers or "
                        "kafka.brokers in --config\n");
        return 2;
    }
    if (!(people = apv_load(a.approvers, &err))) {
        fprintf(stderr, "cascade console: %s\n", err.msg);
        return 2;
    }
    gethostname(host, sizeof host - 1);
    snprintf(group, sizeof group, "cascade-console-%s-%d", host, (int)getpid());
    rc = 2;
    if (!(base = event_base_new()) || !(live = cn_live_start(base, &c, group, &err)) ||
        !(srv = cn_start(base, live, people,
                         &(cn_opts){.listen = a.listen, .port = a.port,
                                    .act_url = a.act_url, .watch = a.watch},
                         &err))) {
        if (!srv && !live)
            apv_free(people);
        fprintf(stderr, "cascade console: %s\n", base ? err.msg : "no event loop");
        goto out;
    }
    ev[0] = evsignal_new(base, SIGINT, on_stop, base);
    ev[1] = evsignal_new(base, SIGTERM, on_stop, base);
    event_add(ev[0], NULL);
    event_add(ev[1], NULL);
    if (a.seconds) {
        tv = (struct timeval){a.seconds, 0};
        ev[2] = evtimer_new(base, on_stop, base);
        event_add(ev[2], &tv);
    }
    /* systemd's Type=notify: serving from here on */
    notify = cli_notify_ready(base, NULL, NULL);
    printf("console: http://%s:%d/\n", a.listen, cn_port(srv));
    fflush(stdout);
    log_info("console", "serving http://%s:%d/ (%zu people may sign in)", a.listen,
             cn_port(srv), apv_count(people));
    event_base_dispatch(base);
    cli_notify_free(notify);
    rc = 0;
out:
    cn_free(srv);
    cn_live_free(live);
    for (int i = 0; i < 3; i++)
        if (ev[i])
            event_free(ev[i]);
    if (base)
        event_base_free(base);
    return rc;
}
