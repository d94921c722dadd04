/* cascade report: a period's incidents, their timings, the nodes that
 * fail most, idle GPUs, peak demand and the executor's work, as one
 * self-contained HTML page with charts (view/report.h, reporthtml.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions/shadow.h"
#include "cmd/cli.h"
#include "core/kafka_scan.h"
#include "core/str.h"
#include "core/topics.h"
#include "core/ts.h"
#include "view/report.h"
#include "view/reporthtml.h"

static const char report_help[] =
    "usage: cascade report [--since WHEN] [--until WHEN] [--out FILE]\n"
    "                      [--json] [--operators FILE]\n"
    "                      [--incidents FILE [--audit FILE]]\n"
    "                      [--brokers LIST] [--config FILE]\n\n"
    "Writes one HTML page (no script, nothing loaded from elsewhere) with\n"
    "charts of the incidents opened in the period: incidents per scenario\n"
    "per day; time to detect (first publication less the first signal) and\n"
    "to resolve per scenario, median and p90; the nodes that fail most with\n"
    "their mean time between failures and the lemon candidates; idle\n"
    "GPU-hours and their cost by team; each team's peak-demand hours as a\n"
    "heatmap; the executor's actions run, approved, refused; and, with\n"
    "--operators, how many of cascade's proposals operators also took\n"
    "(cascade shadow's match rate). It reads cascade.incidents and\n"
    "cascade.audit (or files) to their end; the console shows the same\n"
    "report at /report.\n\n"
    "  --since WHEN      from (opening time): 7d (default), 12h, or RFC 3339\n"
    "  --until WHEN      to (default: now)\n"
    "  --out FILE        the page (default report.html; - for stdout)\n"
    "  --json            the numbers behind the charts, on stdout\n"
    "  --operators FILE  the operators' actions (cascade shadow's format)\n"
    "  --incidents FILE  incidents as cascade replay prints them, instead\n"
    "                    of the topic; --audit FILE its audit records\n"
    "  --brokers LIST    Kafka bootstrap servers (or kafka.brokers)\n"
    "  --config FILE     its kafka section (default $CASCADE_CONFIG)\n\n"
    "exit: 0 written, 1 a bad line in a file, 2 usage or failure\n";

typedef struct rep_args {
    const char *since, *until, *out, *operators, *incidents, *audit, *brokers, *config;
    int json;
} rep_args;

static int parse(int argc, char **argv, rep_args *a)
{
    static const struct option opts[] = {
        {"since", required_argument, 0, 's'},     {"until", required_argument, 0, 'u'},
        {"out", required_argument, 0, 'o'},       {"json", no_argument, 0, 'J'},
        {"operators", required_argument, 0, 'O'}, {"incidents", required_argument, 0, 'i'},
        {"audit", required_argument, 0, 'a'},     {"brokers", required_argument, 0, 'b'},
        {"config", required_argument, 0, 'C'},    {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c;

    *a = (rep_args){.since = "7d", .out = "report.html"};
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's': a->since = optarg; break;
        case 'u': a->until = optarg; break;
        case 'o': a->out = optarg; break;
        case 'J': a->json = 1; break;
        case 'O': a->operators = optarg; break;
        case 'i': a->incidents = optarg; break;
        case 'a': a->audit = optarg; break;
        case 'b': a->brokers = optarg; break;
        case 'C': a->config = optarg; break;
        case 'h': return 1;
        default: return -1;
        }
    }
    if (optind != argc || (a->audit && !a->incidents)) {
        fprintf(stderr, "cascade report: %s\n",
                optind != argc ? "unexpected operand" : "--audit goes with --incidents");
        return -1;
    }
    return 0;
}

typedef struct sink {
    vw_incidents *incs;
    vw_trail *trail;
    json_t *published; /* id -> first publication (us) */
    json_t *lines;     /* every incident version's text, for shadow */
} sink;

static int take_incident(void *arg, const rd_kafka_message_t *m)
{
    sink *s = arg;
    const char *id = vw_incidents_take(s->incs, m->payload, m->len);
    rd_kafka_timestamp_type_t tt;
    int64_t ts = rd_kafka_message_timestamp(m, &tt);

    /* the first version's time: when the incident was first published */
    if (id && ts > 0 && !json_object_get(s->published, id))
        json_object_set_new(s->published, id, json_integer(ts * 1000));
    return 0;
}

static int take_audit(void *arg, const rd_kafka_message_t *m)
{
    vw_trail_add(((sink *)arg)->trail, m->payload, m->len);
    return 0;
}

/* A file of JSON lines into add(arg, line, len, err); -1 names the bad
 * line and why. */
typedef int (*line_fn)(void *arg, const char *line, size_t len, cs_err *err);

static int read_lines(const char *path, line_fn add, void *arg)
{
    cs_err err;
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int no = 0, rc = 0;

    if (!f) {
        perror(path);
        return -1;
    }
    while (rc == 0 && (n = getline(&line, &cap, f)) > 0) {
        no++;
        err.msg[0] = '\0';
        if (n > 1 && add(arg, line, (size_t)n, &err)) {
            fprintf(stderr, "cascade report: %s:%d: %s\n", path, no,
                    err.msg[0] ? err.msg : "not a record");
            rc = -1;
        }
    }
    free(line);
    fclose(f);
    return rc;
}

static int add_inc_line(void *arg, const char *l, size_t n, cs_err *err)
{
    (void)err;
    return vw_incidents_add(((sink *)arg)->incs, l, n);
}

static int add_audit_line(void *arg, const char *l, size_t n, cs_err *err)
{
    (void)err;
    return vw_trail_add(((sink *)arg)->trail, l, n);
}

static int add_operator_line(void *arg, const char *l, size_t n, cs_err *err)
{
    return shadow_add_operator(arg, l, n, err);
}

/* Shadow's match rate over the incidents of the period. */
static int score(const char *operators, const vw_incidents *incs, int64_t since,
                 int64_t until, vw_report_in *in)
{
    shadow *sh = shadow_new(3600LL * 1000000);
    vw_filter f = {0};
    size_t n;
    const json_t **all = vw_select(incs, &f, &n);
    shadow_score sc;
    cs_err err;
    int rc;

    for (size_t i = 0; i < n; i++) {
        int64_t t;
        const char *o = json_string_value(json_object_get(all[i], "opened"));
        char *txt;
        if (!o || ts_parse_rfc3339(o, &t) || t < since || t > until)
            continue;
        txt = json_dumps(all[i], JSON_COMPACT);
        shadow_add_incident(sh, txt, strlen(txt), &err);
        free(txt);
    }
    if (!(rc = read_lines(operators, add_operator_line, sh))) {
        shadow_run(sh, &sc);
        *in = (vw_report_in){.has_shadow = 1, .shadow_match_rate = sc.match_rate,
                             .shadow_coverage = sc.coverage,
                             .shadow_proposals = sc.proposals};
    }
    free(all);
    shadow_free(sh);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    rep_args a;
    cs_config c;
    const char *used;
    sink s = {0};
    vw_report_in in = {0};
    int64_t now = ts_now(), since, until = now;
    json_t *st = NULL;
    int rc;

    if ((rc = parse(argc, argv, &a)))
        return rc > 0 ? (printf("%s", report_help), 0) : 2;
    if (vw_since(a.since, now, &since) || (a.until && vw_since(a.until, now, &until))) {
        fprintf(stderr, "cascade report: --since/--until want 7d, 12h, 90m or an "
                        "RFC 3339 time\n");
        return 2;
    }
    s.incs = vw_incidents_new();
    s.trail = vw_trail_new(NULL);
    s.published = json_object();
    rc = 2;
    if (a.incidents) {
        if (read_lines(a.incidents, add_inc_line, &s) ||
            (a.audit && read_lines(a.audit, add_audit_line, &s))) {
            rc = 1;
            goto out;
        }
    } else {
        if (cli_config(&c, a.config, "report", &used))
            goto out;
        if (a.brokers)
            str_copy(c.brokers, sizeof c.brokers, a.brokers);
        if (!c.brokers[0]) {
            fprintf(stderr, "cascade report: no Kafka brokers: give --brokers, "
                            "kafka.brokers in --config, or --incidents FILE\n");
            goto out;
        }
        if (cli_scan(&c, "report", KFK_TOPIC_INCIDENTS, 0, 60000, take_incident, &s) ||
            cli_scan(&c, "report", KFK_TOPIC_AUDIT, 0, 60000, take_audit, &s))
            goto out;
    }
    if (a.operators && score(a.operators, s.incs, since, until, &in)) {
        rc = 1;
        goto out;
    }
    in.incs = s.incs;
    in.trail = s.trail;
    in.published = a.incidents ? NULL : s.published;
    in.since_us = since;
    in.until_us = until;
    st = vw_report(&in);
    if (a.json) {
        char *t = json_dumps(st, JSON_COMPACT);
        printf("%s\n", t ? t : "{}");
        free(t);
    }
    if (!a.json || strcmp(a.out, "report.html")) {
        FILE *f = strcmp(a.out, "-") ? fopen(a.out, "w") : stdout;
        if (!f) {
            perror(a.out);
            goto out;
        }
        vw_report_html(f, st);
        if (f != stdout && fclose(f)) {
            perror(a.out);
            goto out;
        }
        if (f != stdout)
            fprintf(stderr, "cascade report: %s (%lld incidents)\n", a.out,
                    (long long)json_integer_value(json_object_get(st, "incidents")));
    }
    rc = 0;
out:
    json_decref(st);
    json_decref(s.published);
    vw_incidents_free(s.incs);
    vw_trail_free(s.trail);
    return rc;
}
