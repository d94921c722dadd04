/* cascade: one binary, one subcommand per role. Each subcommand parses its
 * own options and answers --help; exit codes: 0 ok, 1 input rejected,
 * 2 usage or runtime failure. */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "core/log.h"

static const cli_command commands[] = {
    {"replay", "replay signal files through the engine; print incidents",
     cmd_replay},
    {"dev", "webhook + correlator + dry-run actions on embedded defaults",
     cmd_dev},
    {"correlate", "consume signals, correlate, publish incidents", cmd_correlate},
    {"ingest", "collectors: webhook, files, followed logs, SLURM -> cascade.signals", cmd_ingest},
    {"act", "run action requests under guardrails; audit every step", cmd_act},
    {"incidents", "list incidents, show one's chain, actions and audit",
     cmd_incidents},
    {"actions", "list the actions waiting for a human (or running)",
     cmd_actions},
    {"console", "the operator's page: incidents live, chains, approvals",
     cmd_console},
    {"report", "a period's incidents, timings, lemons, idle GPUs as HTML charts",
     cmd_report},
    {"mcp", "the operator's tools for agents (Model Context Protocol)",
     cmd_mcp},
    {"approve", "approve a waiting action (cascade act's approvals API)",
     cmd_approve},
    {"deny", "deny a waiting action, with a reason", cmd_approve},
    {"shadow", "score proposals against the actions operators took",
     cmd_shadow},
    {"broker", "run only the embedded Kafka-protocol broker", cmd_broker},
    {"kafka", "create (init) or compare (check) cascade's Kafka topics",
     cmd_kafka},
    {"config", "validate a config file, print the defaults", cmd_config},
    {"rules", "validate rule files", cmd_rules},
    {"version", "print the version", cmd_version},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: cascade [--log-level LEVEL] [--log-format text|json] "
               "COMMAND [ARGS]\n\n"
               "Incident correlation for GPU fleets.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-18s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nRun 'cascade COMMAND --help' for a command's options.\n"
               "Logs go to stderr: --log-format json writes one object a line\n"
               "({ts, level, component, msg}); log.format in the config too.\n");
}

int main(int argc, char **argv)
{
    int i = 1;

    /* Blocks from 256 KiB up are mappings of their own, always: glibc
     * otherwise raises that threshold to the size of the biggest block
     * freed, and the correlator's windows and tables then live in the
     * heap, where growing one copies it into fresh pages. A thousand host
     * windows doubling together in a storm (they grow in step) touched
     * 850 MB at once and held a batch for most of a second; a mapping
     * grows in place (mremap) and its new pages fault in as they fill. */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);

    while (i < argc && argv[i][0] == '-') {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--log-level") && i + 1 < argc) {
            int lvl = log_parse_level(argv[i + 1]);
            if (lvl < 0) {
                fprintf(stderr, "cascade: unknown log level '%s' "
                                "(error, warn, info, debug)\n", argv[i + 1]);
                return 2;
            }
            log_pin_level((enum log_level)lvl);
            i += 2;
            continue;
        }
        if (!strcmp(argv[i], "--log-format") && i + 1 < argc) {
            int f = log_parse_format(argv[i + 1]);
            if (f < 0) {
                fprintf(stderr, "cascade: unknown log format '%s' "
                                "(text, json)\n", argv[i + 1]);
                return 2;
            }
            log_pin_format((enum log_format)f);
            i += 2;
            continue;
        }
        fprintf(stderr, "cascade: unknown option '%s'\n", argv[i]);
        usage(stderr);
        return 2;
    }
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    for (size_t k = 0; k < sizeof commands / sizeof *commands; k++)
        if (strcmp(argv[i], commands[k].name) == 0)
            return commands[k].run(argc - i, argv + i);
    fprintf(stderr, "cascade: unknown command '%s'\n", argv[i]);
    usage(stderr);
    return 2;
}
