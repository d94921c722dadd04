/* `cascade act` (the executor service) and `cascade approve|deny` (its
 * approvals API from the command line). Compiled into the binary only. */
#include <curl/curl.h>
#include <event2/event.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions/act.h"
#include "actions/approvals.h"
#include "cmd/cli.h"
#include "commit.h" /* CASCADE_COMMIT, written at build time */
#include "core/err.h"
#include "core/kafka.h"
#include "core/log.h"
#include "core/obsrv.h"
#include "core/secret.h"
#include "core/str.h"
#include "rules/playbooks.h"

enum { O_BROKERS = 1, O_REDIS, O_GROUP, O_SCHED, O_MODE, O_CANARY, O_SLURM_BIN,
       O_TTL, O_LISTEN, O_PORT, O_APPROVERS, O_RULES, O_FOR, O_POLL, O_CONFIG,
       O_JOURNAL_KEY, O_CASCADE_CONFIG, O_INSTANCE_ID, O_HELP };

static const struct option act_opts_long[] = {
    {"brokers", required_argument, 0, O_BROKERS},
    {"redis", required_argument, 0, O_REDIS},
    {"group", required_argument, 0, O_GROUP},
    {"scheduler", required_argument, 0, O_SCHED},
    {"mode", required_argument, 0, O_MODE},
    {"canary", required_argument, 0, O_CANARY},
    {"slurm-bin", required_argument, 0, O_SLURM_BIN},
    {"approval-ttl", required_argument, 0, O_TTL},
    {"listen", required_argument, 0, O_LISTEN},
    {"port", required_argument, 0, O_PORT},
    {"approvers", required_argument, 0, O_APPROVERS},
    {"rules", required_argument, 0, O_RULES},
    {"for", required_argument, 0, O_FOR},
    {"verify-poll-ms", required_argument, 0, O_POLL},
    {"config", required_argument, 0, O_CONFIG},
    {"journal-key", required_argument, 0, O_JOURNAL_KEY},
    {"cascade-config", required_argument, 0, O_CASCADE_CONFIG},
    {"instance-id", required_argument, 0, O_INSTANCE_ID},
    {"help", no_argument, 0, O_HELP},
    {0, 0, 0, 0}};

static const char act_help[] =
    "usage: cascade act --brokers LIST --redis ADDR [--scheduler slurm|k8s]\n"
    "                   [--cascade-config FILE] [--instance-id ID]\n"
    "                   [--mode shadow|canary|on] [--canary NODE,NODE]\n"
    "                   [--approvers FILE [--listen ADDR] [--port N]]\n"
    "                   [--approval-ttl SECONDS] [--slurm-bin DIR]\n"
    "                   [--config FILE] [--journal-key SECRET] [--rules DIR]\n"
    "                   [--group NAME] [--for SECONDS]\n\n"
    "The executor: consumes cascade.actions, applies the guardrails (approval,\n"
    "canary nodes, budgets per rack and cluster, preconditions read from the\n"
    "scheduler right before acting), runs the playbook's steps, verifies,\n"
    "rolls back on failure, and writes every request, decision, approval,\n"
    "refusal, step and result to cascade.audit. Each action id runs once: its\n"
    "journal in Redis is written before every step, so a restart never runs a\n"
    "step twice. Malformed requests go to cascade.deadletter.\n\n"
    "  --brokers LIST     Kafka bootstrap servers (required: or kafka.brokers)\n"
    "  --redis ADDR       Redis host:port or socket path (required: or\n"
    "                     redis.address or redis.sentinels; the journal and\n"
    "                     the budget ledger must outlive the process: one\n"
    "                     that evicts keys or does not persist is refused)\n"
    "  --cascade-config FILE\n"
    "                     the config the other commands take as --config\n"
    "                     (default $CASCADE_CONFIG): act reads kafka.brokers,\n"
    "                     topic_prefix, instance_id, properties and the redis\n"
    "                     block (address or Sentinels, user, password, db,\n"
    "                     wait_replicas, require_durable) from it; flags win\n"
    "  --instance-id ID   static group membership (kafka.instance_id): a\n"
    "                     restart within the session timeout keeps its\n"
    "                     partitions; one id per process\n"
    "  --scheduler NAME   slurm (scontrol, scancel, sbatch; SLURM_CONF picks the\n"
    "                     cluster) or k8s (default slurm)\n"
    "  --mode MODE        for every playbook the config's modes do not name:\n"
    "                     shadow proposes only, canary changes canary nodes\n"
    "                     only, on (default shadow); never above a playbook's own\n"
    "  --config FILE      the one config file: its act section holds the\n"
    "                     executors (slack, jira, pagerduty, webhook,\n"
    "                     kubernetes, slurmrestd: URLs, secrets as file:PATH\n"
    "                     or env:NAME, CA files) and modes per playbook, and\n"
    "                     the rest (kafka, redis, metrics) is read as\n"
    "                     --cascade-config when that is not given; an\n"
    "                     executor file of the old form (those sections at\n"
    "                     its top) is still read, with a warning; see\n"
    "                     docs/ACTIONS.md and docs/CONFIG.md\n"
    "  --journal-key SECRET\n"
    "                     file:PATH or env:NAME: the key the journal's entries\n"
    "                     are sealed with, 32 bytes or more (openssl rand -hex\n"
    "                     32); over journal.key in --config. Without one, a\n"
    "                     restart refuses the actions it finds running or\n"
    "                     waiting: it cannot verify an earlier process's seals\n"
    "  --canary NODES     nodes that may take a change without an approval\n"
    "  --approvers FILE   who may approve what (see docs/ACTIONS.md); serves\n"
    "                     the approvals API on --listen (127.0.0.1) --port (9096)\n"
    "  --approval-ttl S   a waiting action expires after S seconds (3600)\n"
    "  --slurm-bin DIR    where scontrol, squeue, scancel, sbatch are (PATH)\n"
    "  --rules DIR        rule folder with playbooks.yaml (the built-in set)\n"
    "  --group NAME       consumer group (cascade-act)\n"
    "  --for SECONDS      stop after this long (until SIGINT/SIGTERM)\n"
    "  --verify-poll-ms N how often a verification reads the scheduler (1000)\n\n"
    "Exit codes: 0 stopped, 2 usage or start-up failure, or its Kafka\n"
    "consumer lost for good (fenced by another process of its instance id).\n";

typedef struct act_args {
    const char *brokers, *redis, *group, *canary, *slurm_bin, *listen,
        *approvers, *rules, *config, *journal_key, *cascade_config,
        *instance_id;
    pb_mode mode;
    pb_backend sched;
    int ttl, port, seconds, poll, help;
} act_args;

static int number(const char *s, const char *flag, int max, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (!*s || *end || v < 0 || v > max) {
        fprintf(stderr, "cascade act: bad number '%s' for --%s (0..%d)\n", s,
                flag, max);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse(int argc, char **argv, act_args *a)
{
    int c;

    memset(a, 0, sizeof *a);
    a->mode = PB_MODE_SHADOW;
    a->sched = PB_ON_SLURM;
    a->port = 9096;
    a->ttl = 3600;
    a->poll = 1000;
    a->slurm_bin = "";
    a->rules = "";
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", act_opts_long, NULL)) != -1) {
        switch (c) {
        case 'h':
        case O_HELP: a->help = 1; return 0;
        case O_BROKERS: a->brokers = optarg; break;
        case O_REDIS: a->redis = optarg; break;
        case O_GROUP: a->group = optarg; break;
        case O_CANARY: a->canary = optarg; break;
        case O_SLURM_BIN: a->slurm_bin = optarg; break;
        case O_LISTEN: a->listen = optarg; break;
        case O_APPROVERS: a->approvers = optarg; break;
        case O_RULES: a->rules = optarg; break;
        case O_CONFIG: a->config = optarg; break;
        case O_JOURNAL_KEY: a->journal_key = optarg; break;
        case O_CASCADE_CONFIG: a->cascade_config = optarg; break;
        case O_INSTANCE_ID: a->instance_id = optarg; break;
        case O_SCHED:
            if (!strcmp(optarg, "slurm"))
                a->sched = PB_ON_SLURM;
            else if (!strcmp(optarg, "k8s"))
                a->sched = PB_ON_K8S;
            else {
                fprintf(stderr, "cascade act: --scheduler is slurm or k8s, not "
                                "'%s'\n", optarg);
                return -1;
            }
            break;
        case O_MODE:
            if (!strcmp(optarg, "shadow"))
                a->mode = PB_MODE_SHADOW;
            else if (!strcmp(optarg, "canary"))
                a->mode = PB_MODE_CANARY;
            else if (!strcmp(optarg, "on"))
                a->mode = PB_MODE_ON;
            else {
                fprintf(stderr, "cascade act: --mode is shadow, canary or on, "
                                "not '%s'\n", optarg);
                return -1;
            }
            break;
        case O_TTL: if (number(optarg, "approval-ttl", 7 * 86400, &a->ttl)) return -1; break;
        case O_PORT: if (number(optarg, "port", 65535, &a->port)) return -1; break;
        case O_FOR: if (number(optarg, "for", 1 << 30, &a->seconds)) return -1; break;
        case O_POLL: if (number(optarg, "verify-poll-ms", 60000, &a->poll)) return -1; break;
        default:
            fprintf(stderr, "cascade act: see 'cascade act --help'\n");
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cascade act: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}

/* The process config (--cascade-config; else --config when it is the one
 * config file, whose 'act' section is the executor's; else
 * $CASCADE_CONFIG) under the flags: the addresses must be in one or the
 * other. */
static int process_config(act_args *a, cs_config *c)
{
    const char *used, *path = a->cascade_config;
    cs_config probe;
    cs_err e;

    cfg_defaults(&probe);
    if (!path && a->config && !cfg_load(&probe, a->config, &e))
        path = a->config;
    rt_wipe(&probe.redis);
    explicit_bzero(&probe, sizeof probe);
    if (cli_config(c, path, "act", &used))
        return -1;
    if (a->brokers)
        str_copy(c->brokers, sizeof c->brokers, a->brokers);
    if (a->redis && cli_redis_flag("act", a->redis, &c->redis))
        return -1;
    if (a->instance_id)
        str_copy(c->instance_id, sizeof c->instance_id, a->instance_id);
    if (!c->brokers[0] || !rt_configured(&c->redis)) {
        fprintf(stderr, "cascade act: no %s: give %s, or %s in "
                "--cascade-config\n", !c->brokers[0] ? "Kafka brokers" : "Redis",
                !c->brokers[0] ? "--brokers" : "--redis",
                !c->brokers[0] ? "kafka.brokers" : "redis.address");
        return -1;
    }
    return 0;
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    log_info("act", "%s: stopping", fd >= 0 ? "signal" : "time is up");
    event_base_loopbreak(arg);
}

static void act_mx(mx_out *o, void *arg)
{
    act_metrics(arg, o);
}

static int act_ok(char *why, size_t len, void *arg)
{
    return act_ready(arg, why, len);
}

int cmd_act(int argc, char **argv)
{
    act_args a;
    act_opts o = {0};
    cs_config pc;
    cs_err err;
    pb_catalog *rules = NULL;
    approvers *apv = NULL;
    ex_conf exc;
    struct event_base *base = NULL;
    kfk_producer *prod = NULL;
    act *ex = NULL;
    apv_server *srv = NULL;
    obsrv *obs = NULL;
    struct event *notify = NULL;
    struct event *sigs[2] = {0}, *timer = NULL;
    char jkey[256] = "";
    int rc = 2;

    if (parse(argc, argv, &a))
        return 2;
    if (a.help) {
        fputs(act_help, stdout);
        return 0;
    }
    if (process_config(&a, &pc))
        return 2;
    if (!(rules = cli_load_rules(a.rules, "act", &err))) {
        fprintf(stderr, "cascade act: %s\n", err.msg);
        return 2;
    }
    ex_conf_init(&exc);
    if (a.config && ex_conf_load(&exc, a.config, rules, &err)) {
        fprintf(stderr, "cascade act: %s\n", err.msg);
        goto out;
    }
    if (a.journal_key && secret_read(a.journal_key, jkey, sizeof jkey, &err)) {
        fprintf(stderr, "cascade act: --journal-key: %s\n", err.msg);
        goto out;
    }
    if (a.approvers && !(apv = apv_load(a.approvers, &err))) {
        fprintf(stderr, "cascade act: approvers: %s\n", err.msg);
        goto out;
    }
    signal(SIGPIPE, SIG_IGN);
    kfk_producer_opts po = kfk_producer_defaults(pc.brokers);
    po.props = &pc.kprops;
    const char *const topics[] = {KFK_TOPIC_ACTIONS, KFK_TOPIC_AUDIT,
                                  KFK_TOPIC_DEADLETTER, NULL};
    if (!(base = event_base_new()) || !(prod = kfk_producer_open(&po, &err)) ||
        kfk_producer_attach(prod, base) ||
        kfk_producer_topics(prod, topics, NULL, CLI_TOPICS_MS, &err)) {
        fprintf(stderr, "cascade act: %s\n", base ? err.msg : "no event loop");
        goto out;
    }
    o = (act_opts){.brokers = pc.brokers, .redis = &pc.redis, .group = a.group,
                   .props = &pc.kprops,
                   .instance_id = pc.instance_id[0] ? pc.instance_id : NULL,
                   .rules = rules, .mode = a.mode, .scheduler = a.sched,
                   .canary = a.canary, .slurm_bin = a.slurm_bin,
                   .approval_ttl_s = a.ttl, .verify_poll_ms = a.poll,
                   .ex = a.config ? &exc : NULL,
                   .journal_key = jkey[0] ? jkey
                                  : exc.journal_key[0] ? exc.journal_key : NULL};
    if (a.sched == PB_ON_K8S && !exc.k8s.set)
        log_warn("act", "--scheduler k8s without a kubernetes section in "
                 "--config: Kubernetes calls and facts will fail");
    ex = act_start(base, &o, prod, &err);
    explicit_bzero(jkey, sizeof jkey); /* the service holds its copy */
    if (!ex) {
        fprintf(stderr, "cascade act: %s\n", err.msg);
        goto out;
    }
    if (apv) {
        apv_opts ao = {.listen = a.listen, .port = a.port};
        if (!(srv = apv_start(base, ex, apv, &ao, &err))) {
            apv = NULL; /* apv_start freed it */
            fprintf(stderr, "cascade act: %s\n", err.msg);
            goto out;
        }
        apv = NULL;
        printf("act: approvals API on http://%s:%d\n",
               a.listen ? a.listen : "127.0.0.1", apv_port(srv));
    }
    notify = cli_notify_ready(base, act_ok, ex);
    if (pc.metrics_act > 0) {
        obs_build b = {"act", CASCADE_VERSION, CASCADE_COMMIT};
        if (!(obs = obs_start(base, pc.metrics_listen, pc.metrics_act, &b,
                              &err))) {
            fprintf(stderr, "cascade act: %s\n", err.msg);
            goto out;
        }
        obs_add(obs, &(obs_part){"executor", act_mx, act_ok, ex});
        log_info("act", "metrics on http://%s:%d/metrics (and /healthz, "
                 "/readyz)", pc.metrics_listen, obs_port(obs));
    }
    printf("act: consuming %s, mode %s, scheduler %s; audit on %s; "
           "executors:%s%s%s%s%s%s%s\n", KFK_TOPIC_ACTIONS, pb_mode_name(a.mode),
           a.sched == PB_ON_SLURM ? "slurm" : "k8s", KFK_TOPIC_AUDIT,
           a.sched == PB_ON_SLURM ? " slurm" : "",
           a.sched == PB_ON_SLURM && exc.slurmrestd.set ? " slurmrestd" : "",
           exc.slack.set ? " slack" : "",
           exc.jira.set ? " jira" : "", exc.pagerduty.set ? " pagerduty" : "",
           exc.webhook.set ? " webhook" : "", exc.k8s.set ? " kubernetes" : "");
    fflush(stdout);
    sigs[0] = evsignal_new(base, SIGINT, on_stop, base);
    sigs[1] = evsignal_new(base, SIGTERM, on_stop, base);
    event_add(sigs[0], NULL);
    event_add(sigs[1], NULL);
    if (a.seconds > 0) {
        struct timeval tv = {a.seconds, 0};
        timer = evtimer_new(base, on_stop, base);
        evtimer_add(timer, &tv);
    }
    event_base_dispatch(base);
    act_stats st;
    act_get_stats(ex, &st);
    log_info("act", "%lu requests: %lu done, %lu failed, %lu refused, %lu "
             "proposed, %lu waited for a human, %lu expired; %lu duplicates, "
             "%lu resumed, %lu dead letters", st.requests, st.done, st.failed,
             st.refused, st.proposed, st.waiting, st.expired, st.duplicates,
             st.resumed, st.dead);
    rc = act_failed(ex) ? 2 : 0;
out:
    cli_notify_free(notify);
    obs_free(obs); /* it reads the executor's counts */
    act_free(ex); /* before the server: it answers decisions in flight */
    apv_stop(srv);
    apv_free(apv);
    kfk_producer_free(prod);
    for (int i = 0; i < 2; i++)
        if (sigs[i])
            event_free(sigs[i]);
    if (timer)
        event_free(timer);
    if (base)
        event_base_free(base);
    pb_catalog_free(rules);
    ex_conf_clear(&exc);
    explicit_bzero(jkey, sizeof jkey);
    rt_wipe(&pc.redis);
    return rc;
}

/* ---- cascade approve / deny ---- */

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
    struct { char buf[2048]; size_t len; } *b = arg;
    size_t take = size * n;

    if (take > sizeof b->buf - 1 - b->len)
        take = sizeof b->buf - 1 - b->len;
    memcpy(b->buf + b->len, data, take);
    b->len += take;
    b->buf[b->len] = 0;
    return size * n;
}

static int read_token(const char *file, char *out, size_t cap)
{
    const char *env = getenv("CASCADE_TOKEN");
    FILE *f;
    size_t n;

    if (!file) {
        if (!env || !*env) {
            fprintf(stderr, "cascade approve: no token: give --token-file or "
                            "set CASCADE_TOKEN\n");
            return -1;
        }
        str_copy(out, cap, env);
        return 0;
    }
    if (!(f = fopen(file, "r"))) {
        perror(file);
        return -1;
    }
    n = fread(out, 1, cap - 1, f);
    fclose(f);
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        n--;
    out[n] = 0;
    return n ? 0 : -1;
}

int cmd_approve(int argc, char **argv)
{
    int deny = !strcmp(argv[0], "deny"), c, rc = 2;
    const char *url = getenv("CASCADE_ACT_URL"), *reason = NULL, *tfile = NULL;
    static const struct option opts[] = {
        {"reason", required_argument, 0, 'r'}, {"url", required_argument, 0, 'u'},
        {"token-file", required_argument, 0, 't'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    char token[512], endpoint[1024], auth[600];
    struct { char buf[2048]; size_t len; } body = {{0}, 0};

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            printf("usage: cascade %s ID %s[--url URL] [--token-file FILE]\n\n"
                   "%s a waiting action through cascade act's approvals API.\n"
                   "  --reason TEXT      why (%s)\n"
                   "  --url URL          the API (default $CASCADE_ACT_URL, else\n"
                   "                     http://127.0.0.1:9096)\n"
                   "  --token-file FILE  your bearer token (default $CASCADE_TOKEN)\n\n"
                   "Exit codes: 0 recorded, 1 refused by the executor (the reason\n"
                   "is printed), 2 usage error or the API unreachable.\n",
                   argv[0], deny ? "--reason TEXT " : "[--reason TEXT] ",
                   deny ? "Denies" : "Approves", deny ? "required" : "optional");
            return 0;
        }
        if (c == 'r')
            reason = optarg;
        else if (c == 'u')
            url = optarg;
        else if (c == 't')
            tfile = optarg;
        else
            return 2;
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "cascade %s: give one action id (see --help)\n", argv[0]);
        return 2;
    }
    if (deny && (!reason || !*reason)) {
        fprintf(stderr, "cascade deny: --reason is required\n");
        return 2;
    }
    if (read_token(tfile, token, sizeof token))
        return 2;
    snprintf(endpoint, sizeof endpoint, "%s/v1/actions/%s/%s",
             url && *url ? url : "http://127.0.0.1:9096", argv[optind],
             deny ? "deny" : "approve");
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    json_t *b = json_pack("{s:s*}", "reason", reason);
    char *payload = json_dumps(b, JSON_COMPACT);
    CURL *h = curl_easy_init();
    struct curl_slist *hdr = curl_slist_append(NULL, auth);
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_URL, endpoint);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    CURLcode e = curl_easy_perform(h);
    long code = 0;
    if (e != CURLE_OK) {
        fprintf(stderr, "cascade %s: %s: %s\n", argv[0], endpoint,
                curl_easy_strerror(e));
    } else {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        printf("%s", body.buf);
        rc = code == 200 ? 0 : 1;
    }
    explicit_bzero(token, sizeof token);
    explicit_bzero(auth, sizeof auth);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    free(payload);
    json_decref(b);
    return rc;
}
