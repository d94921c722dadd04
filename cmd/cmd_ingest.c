/* cascade ingest: the collectors (a signal file, raw logs read once or
 * followed, the Alertmanager webhook) -> cascade.signals. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "cmd/cli.h"
#include "cmd/live.h"
#include "core/log.h"
#include "core/str.h"
#include "ingest/filein.h"
#include "ingest/follow.h"
#include "ingest/slurmcol.h"
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
        "                          [--all] [--format syslog|plain]\n"
        "                          [--source NAME] [--host NAME] FILE...\n"
        "       cascade ingest log --follow [--checkpoint FILE] [--from-start]\n"
        "                          [--sweep-ms N] [--for SECONDS] [...] PATTERN...\n\n"
        "The collector for raw log files. A syslog line (\"TIME HOST [job=ID]\n"
        "PROGRAM[PID]: TEXT\", TIME in RFC 3339 or 'Mmm dd HH:MM:SS') becomes a\n"
        "signal of its program's source (kernel; slurmctld, slurmd, slurmstepd:\n"
        "slurm; raylet, gcs_server: ray; others: app). A plain line (a job's\n"
        "stdout or stderr) is a signal of --source, timed when it was read,\n"
        "with the host, job and rank its path names. Each is published to\n"
        "cascade.signals, keyed by cluster. Lines no signature of the rule set\n"
        "could take are dropped here, at the edge, and counted; a line that\n"
        "cannot be parsed is reported as FILE:LINE: reason and sent to\n"
        "cascade.deadletter. FILE '-' is standard input, read line by line.\n\n"
        "--follow follows the files a PATTERN names as they are written, and\n"
        "files that appear later: a glob ('*', '?') whose parts {job}, {rank}\n"
        "and {host} also give a plain line its job, rank and host, e.g.\n"
        "'/shared/jobs/{job}/rank{rank}.log'; 'plain:' or 'syslog:' before\n"
        "one gives its format. Rotation by rename and by\n"
        "copytruncate is followed; the checkpoint keeps, per file, where the\n"
        "lines Kafka has not acknowledged start, so a restart (even after\n"
        "kill -9) loses none (a line read twice keeps its id). At the first\n"
        "start the files there are read from their end (--from-start: from\n"
        "their beginning); a file that appears later from its beginning.\n"
        "SIGINT/SIGTERM: waits for delivery, saves the checkpoint, stops.\n\n"
        "  --brokers LIST    Kafka bootstrap servers (or kafka.brokers)\n"
        "  --config FILE     its kafka section: brokers, topic_prefix,\n"
        "                    properties (default $CASCADE_CONFIG)\n"
        "  --cluster NAME    the signals' cluster (default: default)\n"
        "  --year N          year of traditional syslog times (default: this\n"
        "                    year, UTC)\n"
        "  --rules DIR       the rule set the edge filter reads (default: the\n"
        "                    built-in set; give the correlator's rules.dir)\n"
        "  --all             publish every parsed line (no edge filter)\n"
        "  --format F        syslog (default) or plain\n"
        "  --source NAME     plain lines' source: app (default), kernel, ray,\n"
        "                    slurm\n"
        "  --host NAME       plain lines' host where the path names none\n"
        "                    (default: this machine's name)\n"
        "  --follow          follow PATTERNs (above)\n"
        "  --checkpoint FILE where the positions are kept (--follow; without\n"
        "                    one every start is a first start)\n"
        "  --from-start      --follow: read the files there at the first start\n"
        "                    from their beginning\n"
        "  --sweep-ms N      --follow: look for new, rotated and grown files\n"
        "                    this often (default 1000; inotify reads sooner)\n"
        "  --for SECONDS     --follow: stop after this long\n\n"
        "exit: 0 all lines taken, 1 some rejected, 2 failure\n");
}

typedef struct log_args {
    const char *brokers, *config, *rules, *checkpoint;
    fin_opts fo;
    int all, follow, from_start, sweep_ms, seconds;
} log_args;

static int int_arg(const char *what, const char *v, int lo, int hi, int *out)
{
    char *end;
    long n = strtol(v, &end, 10);

    if (*v == '\0' || *end || n < lo || n > hi) {
        fprintf(stderr, "%s wants %d..%d, not '%s'\n", what, lo, hi, v);
        return -1;
    }
    *out = (int)n;
    return 0;
}

/* 0 parsed, 1 --help given, -1 a usage error (told). */
static int log_parse(int argc, char **argv, log_args *a)
{
    static const struct option opts[] = {
        {"brokers", required_argument, 0, 'b'}, {"config", required_argument, 0, 'C'},
        {"cluster", required_argument, 0, 'c'}, {"year", required_argument, 0, 'y'},
        {"rules", required_argument, 0, 'r'},   {"all", no_argument, 0, 'a'},
        {"format", required_argument, 0, 'f'},  {"source", required_argument, 0, 's'},
        {"host", required_argument, 0, 'H'},    {"follow", no_argument, 0, 'F'},
        {"checkpoint", required_argument, 0, 'k'},
        {"from-start", no_argument, 0, 'S'},    {"sweep-ms", required_argument, 0, 'w'},
        {"for", required_argument, 0, 't'},     {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'b': a->brokers = optarg; break;
        case 'C': a->config = optarg; break;
        case 'c': a->fo.line.cluster = optarg; break;
        case 'r': a->rules = optarg; break;
        case 'a': a->all = 1; break;
        case 'H': a->fo.origin.host = optarg; break;
        case 'F': a->follow = 1; break;
        case 'k': a->checkpoint = optarg; break;
        case 'S': a->from_start = 1; break;
        case 'y':
            if (int_arg("cascade ingest log: --year", optarg, 1970, 9999, &a->fo.line.year))
                return -1;
            break;
        case 'w':
            if (int_arg("cascade ingest log: --sweep-ms", optarg, 10, 3600000, &a->sweep_ms))
                return -1;
            break;
        case 't':
            if (int_arg("cascade ingest log: --for", optarg, 1, 100000000,
                        &a->seconds))
                return -1;
            break;
        case 'f':
            if (strcmp(optarg, "syslog") && strcmp(optarg, "plain")) {
                fprintf(stderr, "cascade ingest log: --format is syslog or "
                                "plain, not '%s'\n", optarg);
                return -1;
            }
            a->fo.line.format = optarg[0] == 's' ? LL_SYSLOG : LL_PLAIN;
            break;
        case 's':
            if (sig_source_parse(optarg, &a->fo.origin.source) ||
                (a->fo.origin.source != SRC_APP && a->fo.origin.source != SRC_KERNEL &&
                 a->fo.origin.source != SRC_RAY && a->fo.origin.source != SRC_SLURM)) {
                fprintf(stderr, "cascade ingest log: --source is app, kernel, "
                                "ray or slurm, not '%s'\n", optarg);
                return -1;
            }
            break;
        case 'h':
            ingest_log_help(stdout);
            return 1;
        default:
            ingest_log_help(stderr);
            return -1;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "cascade ingest log: needs a FILE%s\n",
                a->follow ? " or PATTERN" : "");
        return -1;
    }
    if (!a->follow && (a->checkpoint || a->from_start || a->sweep_ms || a->seconds)) {
        fprintf(stderr, "cascade ingest log: --checkpoint, --from-start, "
                        "--sweep-ms and --for go with --follow\n");
        return -1;
    }
    return 0;
}

static int log_files(const log_args *a, char **paths, int n, kfk_producer *p,
                     cs_err *err)
{
    fin_stats st;
    int worst = 0;

    for (int i = 0; i < n; i++) {
        int r = fin_publish_opts(paths[i], &a->fo, p, &st, err);
        fprintf(stderr, "ingest log: %s: %lu lines, %lu published, %lu "
                "dropped by the edge filter, %lu rejected\n",
                strcmp(paths[i], "-") ? paths[i] : "<stdin>", st.lines,
                st.published, st.dropped, st.rejected);
        if (r < 0)
            return 2;
        worst = r > worst ? r : worst;
    }
    return worst;
}

/* A long-running collector's loop: SIGINT, SIGTERM and --for end it;
 * the producer is polled from it. */
typedef struct run_loop {
    struct event_base *base;
    struct event *ev[3];
} run_loop;

static void loop_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

static int loop_open(run_loop *l, int seconds, kfk_producer *p, cs_err *err)
{
    struct timeval tv = {seconds, 0};

    memset(l, 0, sizeof *l);
    if (!(l->base = event_base_new()))
        goto fail;
    l->ev[0] = evsignal_new(l->base, SIGINT, loop_stop, l->base);
    l->ev[1] = evsignal_new(l->base, SIGTERM, loop_stop, l->base);
    l->ev[2] = evtimer_new(l->base, loop_stop, l->base);
    if (!l->ev[0] || !l->ev[1] || !l->ev[2] || event_add(l->ev[0], NULL) ||
        event_add(l->ev[1], NULL) || (seconds && event_add(l->ev[2], &tv)) ||
        kfk_producer_attach(p, l->base))
        goto fail;
    return 0;
fail:
    cs_err_set(err, "cannot set up the event loop");
    return -1;
}

static void loop_close(run_loop *l)
{
    for (int i = 0; i < 3; i++)
        if (l->ev[i])
            event_free(l->ev[i]);
    if (l->base)
        event_base_free(l->base);
}

static int log_follow(const log_args *a, char **pats, int n, kfk_producer *p,
                      cs_err *err)
{
    fol_source *src = calloc((size_t)n, sizeof *src);
    fol_opts o = {.nsources = (size_t)n, .checkpoint = a->checkpoint,
                  .cluster = a->fo.line.cluster, .year = a->fo.line.year,
                  .edge = a->fo.line.edge, .from_start = a->from_start,
                  .sweep_ms = a->sweep_ms};
    fol_follower *fw = NULL;
    run_loop l = {0};
    fol_stats st;
    int rc = 2;

    if (!src) {
        cs_err_set(err, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        src[i] = (fol_source){pats[i], a->fo.line.format, a->fo.origin.source,
                              a->fo.origin.host};
        if (!strncmp(pats[i], "plain:", 6) || !strncmp(pats[i], "syslog:", 7)) {
            src[i].format = pats[i][0] == 'p' ? LL_PLAIN : LL_SYSLOG;
            src[i].pattern = strchr(pats[i], ':') + 1;
        }
    }
    o.sources = src;
    if (loop_open(&l, a->seconds, p, err) ||
        !(fw = fol_start(l.base, &o, p, err)))
        goto out;
    log_info("follow", "following %d pattern%s%s%s", n, n == 1 ? "" : "s",
             a->checkpoint ? ", checkpoint " : "",
             a->checkpoint ? a->checkpoint : "");
    event_base_dispatch(l.base);
    rc = fol_stop(fw, 30000, err) ? 2 : 0;
    fol_get_stats(fw, &st);
    fprintf(stderr, "ingest log: followed %lu files (%lu rotations, %lu "
            "truncations): %llu lines, %llu published, %llu dropped by the "
            "edge filter, %llu rejected\n", st.opened, st.rotations,
            st.truncations, st.lines, st.published, st.dropped, st.rejected);
    if (rc == 0 && st.rejected)
        rc = 1;
out:
    fol_free(fw);
    loop_close(&l);
    free(src);
    return rc;
}

static int ingest_log(int argc, char **argv)
{
    log_args a = {.rules = "",
                  .fo = {.line = {.format = LL_SYSLOG},
                         .origin = {.source = SRC_APP, .rank = -1}}};
    pb_catalog *cat = NULL;
    classifier *cls = NULL;
    kfk_producer *p = NULL;
    cs_err err = {{0}};
    int rc = 2;
    time_t now = time(NULL);
    struct tm tm;

    gmtime_r(&now, &tm);
    a.fo.line.year = tm.tm_year + 1900;
    if ((rc = log_parse(argc, argv, &a)))
        return rc > 0 ? 0 : 2;
    rc = 2;
    if (!a.all && (!(cat = cli_load_rules(a.rules, "ingest log", &err)) ||
                   !(cls = cls_new(cat, &err))))
        goto out;
    a.fo.line.edge = cls;
    if (!(p = collector("ingest log", a.brokers, a.config, "zstd"))) {
        err.msg[0] = '\0'; /* told */
        goto out;
    }
    if (a.follow && !(argc - optind == 1 && !strcmp(argv[optind], "-")))
        rc = log_follow(&a, argv + optind, argc - optind, p, &err);
    else
        rc = log_files(&a, argv + optind, argc - optind, p, &err);
out:
    if (rc == 2 && err.msg[0])
        fprintf(stderr, "cascade ingest log: %s\n", err.msg);
    kfk_producer_free(p);
    cls_free(cls);
    pb_catalog_free(cat);
    return rc;
}

static void ingest_slurm_help(FILE *f)
{
    fprintf(f,
        "usage: cascade ingest slurm [--brokers LIST] [--config FILE]\n"
        "                            [--cluster NAME] [--poll SECONDS]\n"
        "                            [--state FILE] [--slurm-bin DIR]\n"
        "                            [--canary-feature NAME] [--for SECONDS]\n\n"
        "The SLURM collector: polls the controller (squeue --json, sinfo\n"
        "--json; SLURM 22.05 or later) and publishes what changed to\n"
        "cascade.signals: a job signal on each job's change of state (with\n"
        "nodes, dependencies, account as team, attempt, GPUs, and the launch\n"
        "config read from its batch script), a slurm line on each node's\n"
        "(not responding, back, drained, down, with the reason), and an\n"
        "inventory signal per node (rack from a rack feature, GPUs from its\n"
        "GRES, canary from a feature). A controller that does not answer is\n"
        "retried with back-off; nothing is published for that poll. Runs as\n"
        "SlurmUser or root (batch scripts are theirs to read), once per\n"
        "cluster. SIGINT/SIGTERM: waits for delivery, saves the state, stops.\n\n"
        "  --brokers LIST        Kafka bootstrap servers (or kafka.brokers)\n"
        "  --config FILE         its kafka section (default $CASCADE_CONFIG)\n"
        "  --cluster NAME        the signals' cluster (default: default)\n"
        "  --poll SECONDS        how often (default 10)\n"
        "  --state FILE          what was told of each job and node, kept\n"
        "                        across restarts (default: none: a restart\n"
        "                        tells everything again, harmlessly)\n"
        "  --slurm-bin DIR       where squeue, sinfo, scontrol are (default\n"
        "                        PATH)\n"
        "  --canary-feature NAME the node feature of canary nodes (canary)\n"
        "  --for SECONDS         stop after this long\n\n"
        "exit: 0 stopped cleanly, 2 failure\n");
}

static int ingest_slurm(int argc, char **argv)
{
    static const struct option opts[] = {
        {"brokers", required_argument, 0, 'b'}, {"config", required_argument, 0, 'C'},
        {"cluster", required_argument, 0, 'c'}, {"poll", required_argument, 0, 'p'},
        {"state", required_argument, 0, 's'},   {"slurm-bin", required_argument, 0, 'B'},
        {"canary-feature", required_argument, 0, 'f'},
        {"for", required_argument, 0, 't'},     {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *brokers = NULL, *config = NULL;
    sc_opts o = {.poll_ms = 10000};
    sc_collector *sc = NULL;
    kfk_producer *p = NULL;
    run_loop l = {0};
    cs_err err = {{0}};
    int c, poll = 10, seconds = 0, rc = 2;
    sc_stats st;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'b': brokers = optarg; break;
        case 'C': config = optarg; break;
        case 'c': o.cluster = optarg; break;
        case 's': o.state = optarg; break;
        case 'B': o.bindir = optarg; break;
        case 'f': o.canary_feature = optarg; break;
        case 'p':
            if (int_arg("cascade ingest slurm: --poll", optarg, 1, 3600, &poll))
                return 2;
            o.poll_ms = poll * 1000;
            break;
        case 't':
            if (int_arg("cascade ingest slurm: --for", optarg, 1, 100000000,
                        &seconds))
                return 2;
            break;
        case 'h':
            ingest_slurm_help(stdout);
            return 0;
        default:
            ingest_slurm_help(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "cascade ingest slurm: unexpected '%s'\n", argv[optind]);
        return 2;
    }
    if (!(p = collector("ingest slurm", brokers, config, "lz4")))
        return 2;
    if (loop_open(&l, seconds, p, &err) ||
        !(sc = sc_start(l.base, &o, p, &err)))
        goto out;
    log_info("slurm", "polling the controller every %d s%s%s", poll,
             o.state ? ", state " : "", o.state ? o.state : "");
    event_base_dispatch(l.base);
    rc = sc_stop(sc, 30000, &err) ? 2 : 0;
    sc_get_stats(sc, &st);
    fprintf(stderr, "ingest slurm: %lu polls (%lu failed), %lu jobs and %lu "
            "nodes last seen; %lu published: %lu job, %lu node, %lu "
            "inventory; %lu batch scripts read\n", st.polls, st.failed_polls,
            st.jobs, st.nodes, st.published, st.job_signals, st.node_signals,
            st.inventory_signals, st.scripts);
out:
    if (rc == 2 && err.msg[0])
        fprintf(stderr, "cascade ingest slurm: %s\n", err.msg);
    sc_free(sc);
    loop_close(&l);
    kfk_producer_free(p);
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
    if (argc >= 2 && strcmp(argv[1], "slurm") == 0)
        return ingest_slurm(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: cascade ingest webhook|file|log|slurm [--help] ...\n\n"
               "  webhook  Alertmanager webhook receiver -> cascade.signals\n"
               "  file     publish a signal JSONL file -> cascade.signals\n"
               "  log      raw log files (syslog lines, job output), read once\n"
               "           or followed (--follow), filtered at the edge\n"
               "           -> cascade.signals\n"
               "  slurm    the SLURM controller's jobs and nodes\n"
               "           -> cascade.signals\n");
        return 0;
    }
    fprintf(stderr, "usage: cascade ingest webhook|file|log|slurm ... (--help)\n");
    return 2;
}
