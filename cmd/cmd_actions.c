/* cascade actions list: the actions waiting for a human (or running),
 * read from the executor's journal in Redis, so that it works whether an
 * executor runs or not: an id to approve without digging in Redis. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions/act.h"
#include "cmd/cli.h"
#include "core/rconn.h"
#include "core/ts.h"

static const char actions_help[] =
    "usage: cascade actions list [--pending | --running] [--limit N]\n"
    "                            [--json] [--redis ADDR] [--config FILE]\n\n"
    "The actions in the executor's journal that wait for a human's\n"
    "decision (--pending, the default: soonest to expire first) or run\n"
    "now (--running: oldest first), read from Redis (the redis section of\n"
    "the config, as the executor reads it): works with no executor\n"
    "running. A table for people; --json: one journal entry a line\n"
    "({id, state, why, who, expires_ms | started_ms, request, ...}).\n"
    "Decide one with `cascade approve ID` or `cascade deny ID --reason`;\n"
    "finished actions are on cascade.audit (`cascade incidents show`).\n"
    "The executor's approvals API lists the same: GET\n"
    "/v1/actions?state=pending (a bearer token).\n\n"
    "  --pending       waiting for a decision (default)\n"
    "  --running       running now\n"
    "  --limit N       at most N (default 1000)\n"
    "  --json          JSON for scripts\n"
    "  --redis ADDR    the journal's Redis (host:port or a socket path;\n"
    "                  else redis.address in --config)\n"
    "  --config FILE   its redis section (default $CASCADE_CONFIG)\n\n"
    "exit: 0 listed (even none), 2 usage or Redis unreachable\n";

typedef struct act_args {
    const char *state, *redis, *config;
    long limit;
    int json;
} act_args;

/* -1 usage error (told), 1 --help. */
static int parse(int argc, char **argv, act_args *a)
{
    static const struct option opts[] = {
        {"pending", no_argument, 0, 'p'}, {"running", no_argument, 0, 'r'},
        {"limit", required_argument, 0, 'l'}, {"json", no_argument, 0, 'J'},
        {"redis", required_argument, 0, 'R'}, {"config", required_argument, 0, 'C'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    char *end;

    *a = (act_args){.state = "pending", .limit = 1000};
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
        return 1;
    if (argc < 2 || strcmp(argv[1], "list")) {
        fprintf(stderr, "%s", actions_help);
        return -1;
    }
    optind = 2;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': a->state = "pending"; break;
        case 'r': a->state = "running"; break;
        case 'J': a->json = 1; break;
        case 'R': a->redis = optarg; break;
        case 'C': a->config = optarg; break;
        case 'l':
            a->limit = strtol(optarg, &end, 10);
            if (!*optarg || *end || a->limit < 1 || a->limit > 1000) {
                fprintf(stderr, "cascade actions: --limit is 1 to 1000\n");
                return -1;
            }
            break;
        case 'h': return 1;
        default: return -1;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "cascade actions: unexpected '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}

static const char *field(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static void table(const json_t *list, const char *state)
{
    size_t i;
    json_t *e;
    int pending = !strcmp(state, "pending");

    printf("%-20s  %-16s  %-22s  %-20s  %-24s  %-19s  %s\n", "ID", "PLAYBOOK",
           "TARGET", "INCIDENT", "SCENARIO", pending ? "EXPIRES" : "STARTED",
           pending ? "WAITS FOR" : "WHO");
    json_array_foreach(list, i, e) {
        const json_t *req = json_object_get(e, "request");
        const json_t *what = json_object_get(req, "action");
        char *target = json_dumps(json_object_get(what, "target"), JSON_COMPACT);
        char at[40];
        json_int_t ms = json_integer_value(
            json_object_get(e, pending ? "expires_ms" : "started_ms"));
        ts_format((int64_t)ms * 1000, at, sizeof at);
        printf("%-20s  %-16s  %-22s  %-20s  %-24s  %.10s %.8s  %s\n",
               field(e, "id"), field(what, "playbook"), target ? target : "",
               field(req, "incident"), field(req, "scenario"), at, at + 11,
               pending ? field(e, "why") : field(e, "who"));
        free(target);
    }
    fflush(stdout);
}

int cmd_actions(int argc, char **argv)
{
    act_args a;
    cs_config c;
    const char *used;
    cs_err err;
    redisContext *rc;
    json_t *list;
    int r;

    if ((r = parse(argc, argv, &a)))
        return r > 0 ? (printf("%s", actions_help), 0) : 2;
    if (cli_config(&c, a.config, "actions", &used))
        return 2;
    if (a.redis && cli_redis_flag("actions", a.redis, &c.redis))
        return 2;
    if (!(rc = rconn_open(&c.redis, NULL, 0, &err))) {
        fprintf(stderr, "cascade actions: %s\n", err.msg);
        return 2;
    }
    list = act_list_sync(rc, a.state, (size_t)a.limit, &err);
    redisFree(rc);
    if (!list) {
        fprintf(stderr, "cascade actions: %s\n", err.msg);
        return 2;
    }
    if (a.json) {
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
            char *t = json_dumps(e, JSON_COMPACT);
            printf("%s\n", t ? t : "{}");
            free(t);
        }
    } else {
        table(list, a.state);
        fprintf(stderr, "%zu action(s) %s\n", json_array_size(list),
                !strcmp(a.state, "pending") ? "waiting for a decision"
                                            : "running");
    }
    json_decref(list);
    return 0;
}
