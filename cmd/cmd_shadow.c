/* `cascade shadow`: scores shadow mode. The stream is replayed (or the
 * incidents are read as `cascade replay` printed them) and the actions
 * the incidents propose are matched against what the operators did. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions/shadow.h"
#include "cmd/cli.h"
#include "core/ts.h"
#include "correlate/replay.h"

static const char shadow_help[] =
    "usage: cascade shadow --operators FILE [--window DURATION] [--json]\n"
    "                      [--redis ADDR] (STREAM... | --incidents FILE)\n\n"
    "Scores shadow mode: replays the signal STREAMs (as `cascade replay`),\n"
    "takes every action the incidents propose, and matches them against the\n"
    "actions the operators really took (JSON Lines, one per line:\n"
    "{\"ts\": \"2026-03-02T08:12:00Z\", \"playbook\": \"node.drain\", \"node\":\n"
    "\"gpu-020\", \"by\": \"alice\"}; \"job\" for job actions). A proposal\n"
    "matches an action with the same playbook and target taken within the\n"
    "window around its incident. Prints the match rate (proposals an\n"
    "operator also took), the coverage (operator actions cascade proposed),\n"
    "and each proposal and action left unmatched.\n\n"
    "  --operators FILE   the operators' actions (required)\n"
    "  --window D         how far from the incident's span an action still\n"
    "                     counts: seconds, or with s, m, h (default 1h)\n"
    "  --incidents FILE   incidents as `cascade replay` printed them, instead\n"
    "                     of replaying streams\n"
    "  --redis ADDR       Redis for the replay (default: a private one)\n"
    "  --json             one JSON object instead of text\n\n"
    "Exit codes: 0 scored, 1 a bad line in an input (FILE:LINE named),\n"
    "2 usage or the replay failed.\n";

static int duration(const char *s, int64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    int64_t unit = TS_SEC;

    if (end == s || v < 0)
        return -1;
    if (!strcmp(end, "m"))
        unit = TS_MIN;
    else if (!strcmp(end, "h"))
        unit = TS_HOUR;
    else if (*end && strcmp(end, "s"))
        return -1;
    *out = (int64_t)(v * (double)unit);
    return 0;
}

typedef int (*line_fn)(shadow *s, const char *line, size_t len, cs_err *err);

/* Feeds every line of f to fn; the first bad one is reported as
 * NAME:LINE. */
static int each_line(FILE *f, const char *name, shadow *s, line_fn fn)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0, rc = 0;
    cs_err err;

    while ((n = getline(&line, &cap, f)) > 0) {
        lineno++;
        if (strspn(line, " \t\r\n") == (size_t)n)
            continue;
        if (fn(s, line, (size_t)n, &err)) {
            fprintf(stderr, "cascade shadow: %s:%d: %s\n", name, lineno, err.msg);
            rc = 1;
        }
    }
    free(line);
    return rc;
}

static int read_file(const char *path, shadow *s, line_fn fn)
{
    FILE *f = fopen(path, "r");
    int rc;

    if (!f) {
        fprintf(stderr, "cascade shadow: %s: %s\n", path, strerror(errno));
        return 2;
    }
    rc = each_line(f, path, s, fn);
    fclose(f);
    return rc;
}

/* The streams through the replay engine, its output kept in memory. */
static int replay_into(char **files, int n, const rtarget *redis, shadow *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    replay_opts o = {.redis = redis, .batch = 1000, .out = mem};
    int rc;

    if (!mem)
        return 2;
    rc = replay_run(files, n, &o);
    fclose(mem);
    if (rc == 2) {
        free(buf);
        return 2;
    }
    mem = fmemopen(buf, len ? len : 1, "r");
    if (mem) {
        rc |= each_line(mem, "replay", s, shadow_add_incident);
        fclose(mem);
    }
    free(buf);
    return rc;
}

int cmd_shadow(int argc, char **argv)
{
    static const struct option opts[] = {{"operators", required_argument, 0, 'o'},
                                         {"window", required_argument, 0, 'w'},
                                         {"incidents", required_argument, 0, 'i'},
                                         {"redis", required_argument, 0, 'r'},
                                         {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *operators = NULL, *incidents = NULL;
    rtarget redis, *use_redis = NULL;
    int64_t window = TS_HOUR;
    int c, json = 0, rc;
    shadow *s;
    shadow_score sc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': operators = optarg; break;
        case 'i': incidents = optarg; break;
        case 'r':
            rt_init(&redis);
            if (cli_redis_flag("shadow", optarg, &redis))
                return 2;
            use_redis = &redis;
            break;
        case 'j': json = 1; break;
        case 'w':
            if (duration(optarg, &window)) {
                fprintf(stderr, "cascade shadow: --window '%s': seconds, or a "
                        "number with s, m or h\n", optarg);
                return 2;
            }
            break;
        case 'h': fputs(shadow_help, stdout); return 0;
        default: fputs(shadow_help, stderr); return 2;
        }
    }
    if (!operators || (!incidents && optind >= argc) ||
        (incidents && optind < argc)) {
        fprintf(stderr, "cascade shadow: --operators and either STREAMs or "
                        "--incidents are required (see --help)\n");
        return 2;
    }
    s = shadow_new(window);
    rc = incidents ? read_file(incidents, s, shadow_add_incident)
                   : replay_into(argv + optind, argc - optind, use_redis, s);
    if (rc != 2) {
        int orc = read_file(operators, s, shadow_add_operator);
        rc = orc > rc ? orc : rc;
    }
    if (rc != 2) {
        shadow_run(s, &sc);
        shadow_print(s, &sc, json, stdout);
    }
    shadow_free(s);
    return rc;
}
