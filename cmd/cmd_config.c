/* cascade config: validate a config file, print the defaults. */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "core/config.h"
#include "actions/excfg.h"
#include "ingest/colcfg.h"
#include "rules/playbooks.h"
#include "core/kafka.h"

/* docs/CONFIG.md: written from the key tables themselves (ctest
 * ops.config_reference compares them), so that it cannot drift. */
static void reference(void)
{
    fputs("# Configuration reference\n\n"
          "<!-- Written by `cascade config reference > docs/CONFIG.md`; "
          "ctest ops.config_reference fails when it differs. -->\n\n"
          "One YAML file configures every process (`--config FILE`, else "
          "`$CASCADE_CONFIG`; each process reads the sections it needs and "
          "its flags win). `cascade config check FILE` validates all of it, "
          "every problem as FILE:LINE:COL; `cascade config defaults` prints "
          "the defaults. Secrets are references, `file:PATH` or "
          "`env:NAME` (docs/SECURITY.md). Sizes take \"64KiB\", \"1MiB\".\n\n"
          "## Sections\n\n", stdout);
    cfg_reference(stdout);
    rt_reference(stdout);
    ccf_reference(stdout);
    ex_conf_reference(stdout);
}

int cmd_config(int argc, char **argv)
{
    cs_config c;
    cs_err err;

    /* `cascade config check --help` too: a file is never named so */
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        (argc == 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))) {
        printf("usage: cascade config check FILE | cascade config defaults\n\n"
               "  check FILE  validate a YAML config; prints the effective\n"
               "              configuration (secrets redacted), or the file,\n"
               "              line and column of the first problem\n"
               "  defaults    print the embedded defaults as a config file\n\n"
               "Sections and keys:\n"
               "  kafka:   brokers (required but by cascade dev, which starts an\n"
               "           embedded broker without), group (default\n"
               "           cascade-correlate), batch, linger_ms (producers;\n"
               "           unset: 5 for the collectors and the webhook, 0 for\n"
               "           the correlator), fetch_wait_ms (consumers, default 100;\n"
               "           the embedded broker answers a waiting fetch only\n"
               "           when the wait is over, so 0, a fetch that answers at\n"
               "           once, trades CPU for latency there; a real broker\n"
               "           answers on arrival),\n"
               "           topic_prefix (before every topic and default group\n"
               "           name: installations sharing a Kafka cluster),\n"
               "           instance_id (group.instance.id: static membership, a\n"
               "           restart keeps its partitions; one per process),\n"
               "           properties (librdkafka properties for every client,\n"
               "           over cascade's: security.protocol, sasl.*, ssl.*,\n"
               "           client.rack, session.timeout.ms, ...; checked at\n"
               "           load; the ones cascade owns are refused with the\n"
               "           reason; secrets (*password, *secret, ssl.key.pem) as\n"
               "           file:PATH or env:NAME, printed as that reference)\n"
               "  redis:   address (host:port or socket; it or sentinels required\n"
               "           but by cascade dev, which starts a private server\n"
               "           without), user and password (ACL: AUTH; the\n"
               "           password as file:PATH or env:NAME), db, sentinels\n"
               "           ([host:port, ...]) with master (its name) and\n"
               "           sentinel_password, wait_replicas (a write counts once\n"
               "           that many replicas have it), wait_timeout_ms,\n"
               "           require_durable (refuse a Redis that evicts or does\n"
               "           not persist; default true)\n"
               "  webhook: listen, port, token | token_file, max_body,\n"
               "           max_headers (sizes: 65536, 64KiB, 1MiB),\n"
               "           max_connections, timeout_s (the longest silence),\n"
               "           request_timeout_s (the longest a request may take\n"
               "           to arrive, head and body), max_alerts (in one\n"
               "           post), max_output (one post's signals, as JSON),\n"
               "           ack_timeout_s (default 5: a post not acknowledged\n"
               "           by Kafka within it is answered 503)\n"
               "  log:     level (error, warn, info, debug), format (text, json)\n"
               "  rules:   dir (a folder of rule files; \"\" = built-in set)\n"
               "  correlate: max_clusters (default 4096; signals of more\n"
               "           clusters are dead-lettered), max_seen_ids (default\n"
               "           8388608 a cluster: the signal ids kept to count a\n"
               "           redelivery once; past it the oldest go first; 0:\n"
               "           all of the last 2 hours, however many)\n"
               "  act:     the executor's: modes, http, slack, jira, pagerduty,\n"
               "           webhook, kubernetes, slurmrestd, journal (docs/ACTIONS.md)\n"
               "  metrics: listen (default 127.0.0.1), and the port of each\n"
               "           process's /metrics, /healthz and /readyz: correlate,\n"
               "           dev, ingest, act (default 0: no endpoint)\n\n"
               "exit: 0 valid, 1 invalid, 2 usage\n");
        return argc < 2 ? 2 : 0;
    }
    cfg_defaults(&c);
    if (!strcmp(argv[1], "defaults") && argc == 2) {
        cfg_print(&c, stdout);
        return 0;
    }
    if (!strcmp(argv[1], "reference") && argc == 2) {
        reference();
        return 0;
    }
    if (strcmp(argv[1], "check") || argc != 3) {
        fprintf(stderr, "usage: cascade config check FILE | defaults | reference\n");
        return 2;
    }
    ccf_conf cc;
    ex_conf ex;
    pb_catalog *rules;
    int bad;
    ccf_defaults(&cc);
    ex_conf_init(&ex);
    if (cfg_load(&c, argv[2], &err) || kfk_props_check(&c.kprops, &err) ||
        ccf_load(&cc, argv[2], &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    ccf_free(&cc);
    /* the executor's section, against the rule set the config names */
    if (!(rules = cli_load_rules(c.rules_dir, "config check", &err))) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    bad = ex_conf_load(&ex, argv[2], rules, &err);
    ex_conf_clear(&ex);
    pb_catalog_free(rules);
    if (bad) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    cfg_print(&c, stdout);
    explicit_bzero(c.token, sizeof c.token);
    fprintf(stderr, "%s: ok\n", argv[2]);
    return 0;
}
