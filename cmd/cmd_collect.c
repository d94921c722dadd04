/* cascade ingest slurm and cascade ingest journal: the collectors that
 * read a cluster's services (the SLURM controller, the systemd journal)
 * as long-running processes. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "cmd/cli.h"
#include "cmd/colrun.h"
#include "core/log.h"
#include "ingest/colcfg.h"
#include "ingest/sdjournal.h"
#include "ingest/slurmcol.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

static void slurm_counts(void *arg, cmx_counts *c)
{
    sc_stats st;

    sc_get_stats(arg, &st);
    *c = (cmx_counts){.read = st.polls, .published = st.published,
                      .errors = st.failed_polls};
}

static void journal_counts(void *arg, cmx_counts *c)
{
    sdj_stats st;

    sdj_get_stats(arg, &st);
    *c = (cmx_counts){.read = st.entries, .published = st.published,
                      .filtered = st.dropped, .rejected = st.rejected};
}

static void slurm_report(evutil_socket_t fd, short what, void *arg)
{
    sc_stats st;

    (void)fd;
    (void)what;
    sc_get_stats(arg, &st);
    log_info("slurm", "%lu polls (%lu failed), %lu jobs and %lu nodes in "
             "the last; %lu published: %lu job, %lu node, %lu inventory; "
             "%lu batch scripts read, %lu not", st.polls, st.failed_polls,
             st.jobs, st.nodes, st.published, st.job_signals,
             st.node_signals, st.inventory_signals, st.scripts,
             st.scripts_failed);
}

static void ingest_slurm_help(FILE *f)
{
    fprintf(f,
        "usage: cascade ingest slurm [--brokers LIST] [--config FILE]\n"
        "                            [--cluster NAME] [--poll SECONDS]\n"
        "                            [--state FILE] [--slurm-bin DIR]\n"
        "                            [--canary-feature NAME] [--canary-nodes LIST]\n"
        "                            [--for SECONDS]\n\n"
        "The SLURM collector: polls the controller (squeue --json, sinfo\n"
        "--json; SLURM 22.05 or later) and publishes what changed to\n"
        "cascade.signals: a job signal on each job's change of state (with\n"
        "nodes, dependencies, account as team, attempt, GPUs, and the launch\n"
        "config read from its batch script), a slurm line on each node's\n"
        "(not responding, back, drained, down, with the reason), and an\n"
        "inventory signal per node (rack, GPUs from its GRES, canary from a\n"
        "feature or a list). A controller that does not answer is\n"
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
        "  --canary-nodes LIST   canary nodes by name, a hostlist\n"
        "                        (gpu-[001-002]), besides the feature\n"
        "  --for SECONDS         stop after this long\n\n"
        "The config's collect section gives the same (collect.cluster,\n"
        "collect.slurm: poll, state, bin, canary_feature, canary_nodes);\n"
        "flags win. A node's rack is its rack feature (rack-N, rack=N),\n"
        "else its leaf switch in `scontrol show topology` (topology.conf).\n\n"
        "exit: 0 stopped cleanly, 2 failure\n");
}

int cmd_ingest_slurm(int argc, char **argv)
{
    static const struct option opts[] = {
        {"brokers", required_argument, 0, 'b'}, {"config", required_argument, 0, 'C'},
        {"cluster", required_argument, 0, 'c'}, {"poll", required_argument, 0, 'p'},
        {"state", required_argument, 0, 's'},   {"slurm-bin", required_argument, 0, 'B'},
        {"canary-feature", required_argument, 0, 'f'},
        {"canary-nodes", required_argument, 0, 'n'},
        {"for", required_argument, 0, 't'},     {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *brokers = NULL, *config = NULL;
    sc_opts o = {.poll_ms = 10000};
    sc_collector *sc = NULL;
    kfk_producer *p = NULL;
    colrun_loop l = {0};
    cs_err err = {{0}};
    int c, poll = 10, seconds = 0, rc = 2, poll_given = 0;
    ccf_conf cc;
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
        case 'n': o.canary_nodes = optarg; break;
        case 'p':
            if (colrun_int("cascade ingest slurm: --poll", optarg, 1, 3600, &poll))
                return 2;
            o.poll_ms = poll * 1000;
            poll_given = 1;
            break;
        case 't':
            if (colrun_int("cascade ingest slurm: --for", optarg, 1, 100000000,
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
    ccf_defaults(&cc);
    if (!(p = colrun_producer("ingest slurm", brokers, config, "lz4", &cc)))
        return 2;
    /* the flags win over the config's collect.slurm */
    if (!o.cluster && cc.cluster[0])
        o.cluster = cc.cluster;
    if (!o.state && cc.slurm.state[0])
        o.state = cc.slurm.state;
    if (!o.bindir && cc.slurm.bindir[0])
        o.bindir = cc.slurm.bindir;
    if (!o.canary_feature && cc.slurm.canary_feature[0])
        o.canary_feature = cc.slurm.canary_feature;
    if (!o.canary_nodes && cc.slurm.canary_nodes[0])
        o.canary_nodes = cc.slurm.canary_nodes;
    if (!poll_given && cc.slurm.poll_ms) {
        o.poll_ms = cc.slurm.poll_ms;
        poll = o.poll_ms / 1000;
    }
    if (colrun_open(&l, seconds, p, &err) ||
        !(sc = sc_start(l.base, &o, p, &err)) ||
        colrun_report(&l, slurm_report, sc, &err) ||
        colrun_observe(&l, "slurm", config, slurm_counts, sc, &err))
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
    colrun_close(&l);
    kfk_producer_free(p);
    ccf_free(&cc);
    return rc;
}

static void ingest_journal_help(FILE *f)
{
    fprintf(f,
        "usage: cascade ingest journal [--brokers LIST] [--config FILE]\n"
        "                              [--cluster NAME] [--rules DIR] [--all]\n"
        "                              [--unit NAME]... [--no-kernel]\n"
        "                              [--directory DIR | --file FILE...]\n"
        "                              [--checkpoint FILE] [--from-start]\n"
        "                              [--for SECONDS]\n\n"
        "The journald collector, one per node: reads the systemd journal\n"
        "(libsystemd's sd-journal) as it is written, and publishes kernel\n"
        "messages, and the messages of each --unit, to cascade.signals: a\n"
        "kernel entry is a kernel signal, another is of its\n"
        "SYSLOG_IDENTIFIER's source (slurmd: slurm; raylet: ray; else app),\n"
        "with _HOSTNAME as host and the entry's time. Entries no signature of\n"
        "the rule set could take are dropped at the edge, and counted. The\n"
        "checkpoint keeps the cursor of the last entry Kafka acknowledged: a\n"
        "restart (even after kill -9) goes on after it; an entry read twice\n"
        "keeps its id. Without one it starts at the journal's end.\n"
        "SIGINT/SIGTERM: waits for delivery, saves the checkpoint, stops.\n\n"
        "  --brokers LIST    Kafka bootstrap servers (or kafka.brokers)\n"
        "  --config FILE     kafka and collect sections (default\n"
        "                    $CASCADE_CONFIG)\n"
        "  --cluster NAME    the signals' cluster (default: default)\n"
        "  --rules DIR       the rule set the edge filter reads (default: the\n"
        "                    built-in set)\n"
        "  --all             publish every entry (no edge filter)\n"
        "  --unit NAME       also this unit's messages (slurmd,\n"
        "                    nvidia-fabricmanager.service, ...); repeatable\n"
        "  --no-kernel       not the kernel's messages\n"
        "  --directory DIR   a journal directory (journal-remote's) instead\n"
        "                    of the system journal\n"
        "  --file FILE       a journal file; repeatable\n"
        "  --checkpoint FILE where the cursor is kept\n"
        "  --from-start      without a checkpoint, from the journal's start\n"
        "  --for SECONDS     stop after this long\n\n"
        "The config's collect section gives the same (collect.cluster,\n"
        "collect.journal: checkpoint, directory, kernel, units,\n"
        "from_start); flags win.\n\n"
        "exit: 0 stopped cleanly, 1 some entries rejected, 2 failure\n");
}

#define MAX_JOURNAL_ARGS 64

int cmd_ingest_journal(int argc, char **argv)
{
    static const struct option opts[] = {
        {"brokers", required_argument, 0, 'b'}, {"config", required_argument, 0, 'C'},
        {"cluster", required_argument, 0, 'c'}, {"rules", required_argument, 0, 'r'},
        {"all", no_argument, 0, 'a'},           {"unit", required_argument, 0, 'u'},
        {"no-kernel", no_argument, 0, 'K'},     {"directory", required_argument, 0, 'D'},
        {"file", required_argument, 0, 'f'},    {"checkpoint", required_argument, 0, 'k'},
        {"from-start", no_argument, 0, 'S'},    {"for", required_argument, 0, 't'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    const char *brokers = NULL, *config = NULL, *rules = "";
    const char *units[MAX_JOURNAL_ARGS + 1] = {0}, *files[MAX_JOURNAL_ARGS + 1] = {0};
    int nunits = 0, nfiles = 0, all = 0, seconds = 0, c, rc = 2, no_kernel = 0;
    sdj_opts o = {.kernel = 1};
    pb_catalog *cat = NULL;
    classifier *cls = NULL;
    kfk_producer *p = NULL;
    sdj_reader *r = NULL;
    colrun_loop l = {0};
    cs_err err = {{0}};
    sdj_stats st;
    ccf_conf cc;

    ccf_defaults(&cc);
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'b': brokers = optarg; break;
        case 'C': config = optarg; break;
        case 'c': o.cluster = optarg; break;
        case 'r': rules = optarg; break;
        case 'a': all = 1; break;
        case 'K': o.kernel = 0; no_kernel = 1; break;
        case 'D': o.directory = optarg; break;
        case 'k': o.checkpoint = optarg; break;
        case 'S': o.from_start = 1; break;
        case 'u':
        case 'f':
            if ((c == 'u' ? nunits : nfiles) == MAX_JOURNAL_ARGS) {
                fprintf(stderr, "cascade ingest journal: at most %d of --%s\n",
                        MAX_JOURNAL_ARGS, c == 'u' ? "unit" : "file");
                return 2;
            }
            if (c == 'u')
                units[nunits++] = optarg;
            else
                files[nfiles++] = optarg;
            break;
        case 't':
            if (colrun_int("cascade ingest journal: --for", optarg, 1, 100000000,
                        &seconds))
                return 2;
            break;
        case 'h':
            ingest_journal_help(stdout);
            return 0;
        default:
            ingest_journal_help(stderr);
            return 2;
        }
    }
    if (optind != argc || (nfiles && o.directory)) {
        fprintf(stderr, "cascade ingest journal: %s\n", optind != argc
                ? "unexpected arguments" : "give --directory or --file, not both");
        return 2;
    }
    o.units = nunits ? units : NULL;
    o.files = nfiles ? files : NULL;
    if (!all && (!(cat = cli_load_rules(rules, "ingest journal", &err)) ||
                 !(cls = cls_new(cat, &err))))
        goto out;
    o.edge = cls;
    if (!(p = colrun_producer("ingest journal", brokers, config, "zstd", &cc))) {
        err.msg[0] = '\0'; /* told */
        goto out;
    }
    /* the flags win over the config's collect section */
    if (!o.cluster && cc.cluster[0])
        o.cluster = cc.cluster;
    if (!o.checkpoint && cc.journal.checkpoint[0])
        o.checkpoint = cc.journal.checkpoint;
    if (!o.directory && !nfiles && cc.journal.directory[0])
        o.directory = cc.journal.directory;
    if (!no_kernel && cc.journal.kernel >= 0)
        o.kernel = cc.journal.kernel;
    o.from_start |= cc.journal.from_start;
    for (size_t i = 0; !nunits && i < cc.journal.nunits; i++)
        units[i] = cc.journal.units[i];
    if (!nunits && cc.journal.nunits) {
        o.units = units;
        nunits = (int)cc.journal.nunits;
    }
    if (colrun_open(&l, seconds, p, &err) || !(r = sdj_start(l.base, &o, p, &err)) ||
        colrun_observe(&l, "journal", config, journal_counts, r, &err))
        goto out;
    log_info("journal", "reading %s%s%s (kernel: %s, %d units)",
             o.directory ? o.directory : nfiles ? "journal files" : "the system journal",
             o.checkpoint ? ", checkpoint " : "", o.checkpoint ? o.checkpoint : "",
             o.kernel ? "yes" : "no", nunits);
    event_base_dispatch(l.base);
    rc = sdj_stop(r, 30000, &err) ? 2 : 0;
    sdj_get_stats(r, &st);
    fprintf(stderr, "ingest journal: %llu entries, %llu published, %llu "
            "dropped by the edge filter, %llu rejected; %lu gaps\n",
            st.entries, st.published, st.dropped, st.rejected, st.lost_gaps);
    if (rc == 0 && st.rejected)
        rc = 1;
out:
    if (rc == 2 && err.msg[0])
        fprintf(stderr, "cascade ingest journal: %s\n", err.msg);
    sdj_free(r);
    colrun_close(&l);
    kfk_producer_free(p);
    cls_free(cls);
    pb_catalog_free(cat);
    ccf_free(&cc);
    return rc;
}

