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
#include "cmd/colrun.h"
#include "cmd/live.h"
#include "core/log.h"
#include "core/str.h"
#include "ingest/filein.h"
#include "ingest/colcfg.h"
#include "ingest/follow.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

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
    if (!(p = colrun_producer("ingest file", brokers, config, "lz4", NULL)))
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
        "  --idle-close S    --follow: close a file that gave nothing this\n"
        "                    long, keeping its place, until it grows\n"
        "                    (default 300: job output files are many)\n"
        "  --for SECONDS     --follow: stop after this long\n\n"
        "The config's collect section gives the same (collect.cluster,\n"
        "collect.log: checkpoint, from_start, sweep_ms, files: [{path,\n"
        "format, source, host}]); flags and PATTERNs given win.\n\n"
        "exit: 0 all lines taken, 1 some rejected, 2 failure\n");
}

typedef struct log_args {
    const char *brokers, *config, *rules, *checkpoint;
    fin_opts fo;
    int all, follow, from_start, sweep_ms, seconds, idle_s;
} log_args;

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
        {"idle-close", required_argument, 0, 'I'},
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
            if (colrun_int("cascade ingest log: --year", optarg, 1970, 9999, &a->fo.line.year))
                return -1;
            break;
        case 'w':
            if (colrun_int("cascade ingest log: --sweep-ms", optarg, 10, 3600000, &a->sweep_ms))
                return -1;
            break;
        case 't':
            if (colrun_int("cascade ingest log: --for", optarg, 1, 100000000,
                        &a->seconds))
                return -1;
            break;
        case 'I':
            if (colrun_int("cascade ingest log: --idle-close", optarg, 1, 86400,
                           &a->idle_s))
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
    if (optind >= argc && !a->follow) {
        fprintf(stderr, "cascade ingest log: needs a FILE\n");
        return -1;
    }
    if (!a->follow && (a->checkpoint || a->from_start || a->sweep_ms ||
                       a->seconds || a->idle_s)) {
        fprintf(stderr, "cascade ingest log: --checkpoint, --from-start, "
                        "--sweep-ms, --idle-close and --for go with --follow\n");
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

static void follow_counts(void *arg, cmx_counts *c)
{
    fol_stats st;

    fol_get_stats(arg, &st);
    *c = (cmx_counts){.read = st.lines, .published = st.published,
                      .filtered = st.dropped, .rejected = st.rejected};
}

static void follow_report(evutil_socket_t fd, short what, void *arg)
{
    fol_stats st;

    (void)fd;
    (void)what;
    fol_get_stats(arg, &st);
    log_info("follow", "%lu files open, %lu idle (%lu opened, %lu rotations, %lu "
             "truncations): %llu lines, %llu bytes, %llu published, %llu "
             "dropped by the edge filter, %llu rejected, %lu re-read after a "
             "failed delivery", st.files, st.dormant, st.opened, st.rotations,
             st.truncations, st.lines, st.bytes, st.published, st.dropped,
             st.rejected, st.redeliveries);
}

/* The sources: the patterns given, else the config's collect.log.files. */
static fol_source *follow_sources(const log_args *a, char **pats, int n,
                                  const ccf_conf *cc, size_t *count)
{
    size_t total = n ? (size_t)n : cc->log.nfiles;
    fol_source *src = calloc(total ? total : 1, sizeof *src);

    *count = total;
    for (size_t i = 0; src && i < total; i++) {
        if (!n) {
            const ccf_file *f = &cc->log.files[i];
            src[i] = (fol_source){f->path, f->format, f->source,
                                  f->host[0] ? f->host : a->fo.origin.host};
            continue;
        }
        src[i] = (fol_source){pats[i], a->fo.line.format, a->fo.origin.source,
                              a->fo.origin.host};
        if (!strncmp(pats[i], "plain:", 6) || !strncmp(pats[i], "syslog:", 7)) {
            src[i].format = pats[i][0] == 'p' ? LL_PLAIN : LL_SYSLOG;
            src[i].pattern = strchr(pats[i], ':') + 1;
        }
    }
    return src;
}

static int log_follow(const log_args *a, char **pats, int n, kfk_producer *p,
                      const ccf_conf *cc, cs_err *err)
{
    size_t nsrc;
    fol_source *src = follow_sources(a, pats, n, cc, &nsrc);
    fol_opts o = {.nsources = nsrc, .checkpoint = a->checkpoint,
                  .cluster = a->fo.line.cluster, .year = a->fo.line.year,
                  .edge = a->fo.line.edge, .from_start = a->from_start,
                  .sweep_ms = a->sweep_ms, .idle_close_ms = a->idle_s * 1000};
    fol_follower *fw = NULL;
    colrun_loop l = {0};
    fol_stats st;
    int rc = 2;

    if (!src) {
        cs_err_set(err, "out of memory");
        goto out;
    }
    if (!nsrc) {
        cs_err_set(err, "--follow needs a PATTERN, or collect.log.files in "
                   "the config");
        goto out;
    }
    o.sources = src;
    if (colrun_open(&l, a->seconds, p, err) ||
        !(fw = fol_start(l.base, &o, p, err)) ||
        colrun_report(&l, follow_report, fw, err) ||
        colrun_observe(&l, "follow", a->config, follow_counts, fw, err))
        goto out;
    log_info("follow", "following %zu pattern%s%s%s", nsrc, nsrc == 1 ? "" : "s",
             a->checkpoint ? ", checkpoint " : "",
             a->checkpoint ? a->checkpoint : "");
    event_base_dispatch(l.base);
    rc = fol_stop(fw, 30000, err) ? 2 : 0;
    fol_get_stats(fw, &st);
    fprintf(stderr, "ingest log: followed %lu files (%lu rotations, %lu "
            "truncations, %lu closed while idle, %lu woken): %llu lines, %llu "
            "published, %llu dropped by the edge filter, %llu rejected\n",
            st.opened, st.rotations, st.truncations, st.idled, st.woken,
            st.lines, st.published, st.dropped, st.rejected);
    if (rc == 0 && st.rejected)
        rc = 1;
out:
    fol_free(fw);
    colrun_close(&l);
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
    ccf_conf cc;

    ccf_defaults(&cc);
    gmtime_r(&now, &tm);
    a.fo.line.year = tm.tm_year + 1900;
    if ((rc = log_parse(argc, argv, &a)))
        return rc > 0 ? 0 : 2;
    rc = 2;
    if (!a.all && (!(cat = cli_load_rules(a.rules, "ingest log", &err)) ||
                   !(cls = cls_new(cat, &err))))
        goto out;
    a.fo.line.edge = cls;
    if (!(p = colrun_producer("ingest log", a.brokers, a.config, "zstd", &cc))) {
        err.msg[0] = '\0'; /* told */
        goto out;
    }
    /* the flags win over the config's collect section */
    if (!a.fo.line.cluster && cc.cluster[0])
        a.fo.line.cluster = cc.cluster;
    if (!a.checkpoint && cc.log.checkpoint[0])
        a.checkpoint = cc.log.checkpoint;
    if (!a.sweep_ms)
        a.sweep_ms = cc.log.sweep_ms;
    a.from_start |= cc.log.from_start;
    if (a.follow && !(argc - optind == 1 && !strcmp(argv[optind], "-")))
        rc = log_follow(&a, argv + optind, argc - optind, p, &cc, &err);
    else
        rc = log_files(&a, argv + optind, argc - optind, p, &err);
out:
    if (rc == 2 && err.msg[0])
        fprintf(stderr, "cascade ingest log: %s\n", err.msg);
    kfk_producer_free(p);
    cls_free(cls);
    pb_catalog_free(cat);
    ccf_free(&cc);
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
    if (live_observe(&l, "ingest webhook", l.cfg.metrics_ingest, &err))
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
        return cmd_ingest_slurm(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "journal") == 0)
        return cmd_ingest_journal(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "remote-write") == 0)
        return cmd_ingest_remote_write(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "k8s") == 0)
        return cmd_ingest_k8s(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: cascade ingest webhook|file|log|journal|slurm|k8s|remote-write [--help] ...\n\n"
               "  webhook  Alertmanager webhook receiver -> cascade.signals\n"
               "  file     publish a signal JSONL file -> cascade.signals\n"
               "  log      raw log files (syslog lines, job output), read once\n"
               "           or followed (--follow), filtered at the edge\n"
               "           -> cascade.signals\n"
               "  journal  the systemd journal: kernel and chosen units\n"
               "           -> cascade.signals\n"
               "  slurm    the SLURM controller's jobs and nodes\n"
               "           -> cascade.signals\n"
               "  k8s      the Kubernetes API: Events, Jobs, Pods, Nodes, Kueue\n"
               "           Workloads, listed and watched -> cascade.signals\n"
               "  remote-write  a Prometheus remote-write receiver: the\n"
               "           samples the rules read -> cascade.signals\n");
        return 0;
    }
    fprintf(stderr, "usage: cascade ingest webhook|file|log|journal|slurm|k8s|remote-write ... (--help)\n");
    return 2;
}
