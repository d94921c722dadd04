/* cascade mcp: the operator's tools for agents over the Model Context
 * Protocol (mcp/), on stdio (one JSON-RPC message a line; logs to
 * stderr) or streamable HTTP (--http). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "cmd/cli.h"
#include "core/kafka.h"
#include "core/log.h"
#include "core/secret.h"
#include "core/str.h"
#include "mcp/http.h"
#include "mcp/rpc.h"
#include "rules/playbooks.h"

static const char mcp_help[] =
    "usage: cascade mcp [--http [--listen ADDR] [--port N] [--token-file F]]\n"
    "                   [--agent NAME] [--brokers LIST] [--redis ADDR]\n"
    "                   [--config FILE] [--rules DIR] [--timeout S]\n"
    "                   [--for SECONDS]\n\n"
    "A Model Context Protocol server (revision " MCP_PROTOCOL_LATEST ") whose\n"
    "tools are the operator's: list_incidents, get_incident (the chain,\n"
    "the actions and their audit), list_playbooks, recent_signals (a\n"
    "node's or a job's), list_approvals, and propose_action, which goes\n"
    "through the executor's guardrails like any request: read-only and\n"
    "notification playbooks run alone, anything that changes state waits\n"
    "for a human's approval. Every call is audited on cascade.audit with\n"
    "the agent as its initiator (agent:NAME: --agent, else the client's\n"
    "name). It reads the topics and the executor's journal (the kafka and\n"
    "redis sections of the config) and writes only requests and audit.\n\n"
    "On stdio (the default) it reads one message a line on stdin and\n"
    "answers on stdout; logs go to stderr. --http serves the streamable\n"
    "HTTP transport on http://ADDR:PORT/mcp (loopback by default; a\n"
    "token then guards every request).\n\n"
    "  --http            streamable HTTP instead of stdio\n"
    "  --listen ADDR     default 127.0.0.1\n"
    "  --port N          default 9098; 0: any free port (printed)\n"
    "  --token-file F    the bearer token HTTP clients must send\n"
    "  --agent NAME      the initiator the audit names (agent:NAME)\n"
    "  --brokers LIST    Kafka bootstrap servers (or kafka.brokers)\n"
    "  --redis ADDR      the executor's Redis (or redis.address)\n"
    "  --config FILE     kafka, redis, rules (default $CASCADE_CONFIG)\n"
    "  --rules DIR       the rule set (playbooks; default built-in)\n"
    "  --timeout S       how long a topic read may take (default 30)\n"
    "  --for SECONDS     HTTP: stop after this long\n\n"
    "exit: 0 stopped (stdin closed, SIGTERM), 2 usage or start failure\n";

typedef struct mcp_args {
    const char *listen, *token_file, *agent, *brokers, *redis, *config, *rules;
    int http, port, timeout_s, seconds;
} mcp_args;

static int number(const char *s, const char *flag, int min, int max, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (!*s || *end || v < min || v > max) {
        fprintf(stderr, "cascade mcp: --%s wants %d..%d, not '%s'\n", flag, min,
                max, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* -1 usage error (told), 1 --help. */
static int parse(int argc, char **argv, mcp_args *a)
{
    static const struct option opts[] = {
        {"http", no_argument, 0, 'H'},          {"listen", required_argument, 0, 'L'},
        {"port", required_argument, 0, 'p'},    {"token-file", required_argument, 0, 'T'},
        {"agent", required_argument, 0, 'A'},   {"brokers", required_argument, 0, 'b'},
        {"redis", required_argument, 0, 'R'},   {"config", required_argument, 0, 'C'},
        {"rules", required_argument, 0, 'r'},   {"timeout", required_argument, 0, 't'},
        {"for", required_argument, 0, 'f'},     {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c;

    *a = (mcp_args){.listen = "127.0.0.1", .port = 9098, .timeout_s = 30};
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'H': a->http = 1; break;
        case 'L': a->listen = optarg; break;
        case 'T': a->token_file = optarg; break;
        case 'A': a->agent = optarg; break;
        case 'b': a->brokers = optarg; break;
        case 'R': a->redis = optarg; break;
        case 'C': a->config = optarg; break;
        case 'r': a->rules = optarg; break;
        case 'p': if (number(optarg, "port", 0, 65535, &a->port)) return -1; break;
        case 't': if (number(optarg, "timeout", 1, 3600, &a->timeout_s)) return -1; break;
        case 'f': if (number(optarg, "for", 1, 86400 * 365, &a->seconds)) return -1; break;
        case 'h': return 1;
        default: return -1;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "cascade mcp: unexpected '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}

/* stdio: a message a line in, an answer a line out. */
static int serve_stdio(const mcp_env *env, const char *agent)
{
    mcp_session s;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;

    mcp_session_init(&s, agent);
    while ((n = getline(&line, &cap, stdin)) > 0) {
        json_error_t jerr;
        json_t *msg, *answer;
        if (n == 1 && line[0] == '\n')
            continue;
        msg = json_loadb(line, (size_t)n, 0, &jerr);
        answer = msg ? mcp_handle(env, &s, msg) : mcp_parse_error(jerr.text);
        if (answer) {
            char *txt = json_dumps(answer, JSON_COMPACT);
            printf("%s\n", txt ? txt : "{}");
            fflush(stdout);
            free(txt);
        }
        json_decref(answer);
        json_decref(msg);
    }
    free(line);
    return 0;
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    event_base_loopexit(arg, NULL);
}

static int serve_http(const mcp_env *env, const mcp_args *a, const char *token)
{
    struct event_base *base = event_base_new();
    struct event *ev[3] = {NULL, NULL, NULL};
    struct timeval tv = {a->seconds, 0};
    mcp_http *h;
    cs_err err;

    if (!base)
        return 2;
    if (!(h = mcp_http_start(base, env,
                             &(mcp_http_opts){.listen = a->listen, .port = a->port,
                                              .token = token, .agent = a->agent},
                             &err))) {
        fprintf(stderr, "cascade mcp: %s\n", err.msg);
        event_base_free(base);
        return 2;
    }
    ev[0] = evsignal_new(base, SIGINT, on_stop, base);
    ev[1] = evsignal_new(base, SIGTERM, on_stop, base);
    event_add(ev[0], NULL);
    event_add(ev[1], NULL);
    if (a->seconds) {
        ev[2] = evtimer_new(base, on_stop, base);
        event_add(ev[2], &tv);
    }
    printf("mcp: streamable HTTP on http://%s:%d/mcp\n", a->listen, mcp_http_port(h));
    fflush(stdout);
    log_info("mcp", "serving http://%s:%d/mcp%s", a->listen, mcp_http_port(h),
             token ? " (bearer token required)" : "");
    event_base_dispatch(base);
    mcp_http_free(h);
    for (int i = 0; i < 3; i++)
        if (ev[i])
            event_free(ev[i]);
    event_base_free(base);
    return 0;
}

int cmd_mcp(int argc, char **argv)
{
    mcp_args a;
    cs_config c;
    const char *used;
    cs_err err;
    char token[256] = "";
    pb_catalog *rules = NULL;
    kfk_producer *prod = NULL;
    kfk_producer_opts po;
    int rc;

    if ((rc = parse(argc, argv, &a)))
        return rc > 0 ? (printf("%s", mcp_help), 0) : 2;
    if (cli_config(&c, a.config, "mcp", &used))
        return 2;
    if (a.brokers)
        str_copy(c.brokers, sizeof c.brokers, a.brokers);
    if (a.redis && cli_redis_flag("mcp", a.redis, &c.redis))
        return 2;
    if (!c.brokers[0]) {
        fprintf(stderr, "cascade mcp: no Kafka brokers: give --brokers or "
                        "kafka.brokers in --config\n");
        return 2;
    }
    if (a.token_file) {
        char ref[600];
        snprintf(ref, sizeof ref, "file:%s", a.token_file);
        if (secret_read(ref, token, sizeof token, &err)) {
            fprintf(stderr, "cascade mcp: --token-file: %s\n", err.msg);
            return 2;
        }
    }
    if (!(rules = cli_load_rules(a.rules ? a.rules : c.rules_dir, "mcp", &err)))
        return 2;
    po = kfk_producer_defaults(c.brokers);
    po.props = &c.kprops;
    if (!(prod = kfk_producer_open(&po, &err))) {
        fprintf(stderr, "cascade mcp: %s\n", err.msg);
        pb_catalog_free(rules);
        return 2;
    }
    mcp_env env = {.cfg = &c, .rules = rules, .prod = prod,
                   .timeout_ms = a.timeout_s * 1000};
    rc = a.http ? serve_http(&env, &a, token[0] ? token : NULL)
                : serve_stdio(&env, a.agent);
    kfk_producer_free(prod);
    pb_catalog_free(rules);
    explicit_bzero(token, sizeof token);
    return rc;
}
