/* cascade ingest k8s: the Kubernetes collector (ingest/k8scol.h) as a
 * long-running service. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/colrun.h"
#include "core/log.h"
#include "core/signal.h"
#include "ingest/colcfg.h"
#include "ingest/k8scol.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

static void k8s_help(FILE *f)
{
    fprintf(f,
        "usage: cascade ingest k8s [--brokers LIST] [--config FILE]\n"
        "       [--kubeconfig FILE [--context NAME] | --in-cluster [--sa-dir DIR]]\n"
        "       [--namespace NS] [--events-api core|events] [--state FILE]\n"
        "       [--cluster NAME] [--all] [--rules DIR] [--no-workloads]\n"
        "       [--pod-selector SEL] [--max-age SECONDS] [--list-limit N]\n"
        "       [--watch-seconds N] [--for SECONDS]\n\n"
        "Lists, then watches, the API server's Nodes, the Pods of Jobs, Jobs,\n"
        "Events and Kueue Workloads, and publishes to cascade.signals, keyed\n"
        "by cluster: each Warning or rule-matched Event as a `k8s` signal;\n"
        "a container OOMKilled and a Node's Ready transitions as Events of\n"
        "its own making (reportingComponent cascade.io/k8s); each Job's\n"
        "PENDING, RUNNING and end as `job` signals with its nodes; each\n"
        "Node as `inventory` (rack and canary from labels, GPUs allocatable).\n"
        "One per cluster; the account needs get, list and watch on nodes,\n"
        "pods, events, jobs.batch and workloads.kueue.x-k8s.io.\n\n"
        "  --kubeconfig FILE   a kubeconfig (else collect.k8s.kubeconfig, else\n"
        "                      in-cluster when KUBERNETES_SERVICE_HOST is set,\n"
        "                      else $KUBECONFIG, else ~/.kube/config)\n"
        "  --context NAME      its context (default: current-context)\n"
        "  --in-cluster        the pod's service account (token read again\n"
        "                      every minute and on a 401)\n"
        "  --sa-dir DIR        the service account's files (default\n"
        "                      /var/run/secrets/kubernetes.io/serviceaccount)\n"
        "  --namespace NS      one namespace (default: all; Nodes always)\n"
        "  --events-api API    core (/api/v1, default) or events\n"
        "                      (events.k8s.io/v1): one, they are one store\n"
        "  --state FILE        where Events resume after a restart\n"
        "  --cluster NAME      the signals' cluster (else collect.cluster)\n"
        "  --all               no edge filter: every Event is published\n"
        "  --rules DIR         the rules the edge filter keeps Events of\n"
        "  --no-workloads      do not look for Kueue\n"
        "  --pod-selector SEL  which Pods to index (default\n"
        "                      batch.kubernetes.io/job-name; \"\": all)\n"
        "  --max-age SECONDS   skip what happened longer ago (default 7200)\n"
        "  --list-limit N      objects per LIST page (default 500)\n"
        "  --watch-seconds N   a watch's timeoutSeconds (default 300..600)\n"
        "  --for SECONDS       stop after this long (default: until SIGTERM)\n\n"
        "Config: collect.k8s (docs/COLLECTORS.md); flags win.\n"
        "Exit: 0 stopped; 1 some signals were not acknowledged at exit; 2\n"
        "usage, config or credentials error.\n");
}

static void k8s_counts(void *arg, cmx_counts *c)
{
    kw_stats st;

    kw_get_stats(arg, &st);
    *c = (cmx_counts){.read = st.obj.objects, .published = st.published,
                      .filtered = st.obj.filtered, .rejected = st.refused_full,
                      .dead = st.dead_letters,
                      .errors = st.http_errors + st.net_errors +
                                st.failed_delivery};
}

static void k8s_report(evutil_socket_t fd, short what, void *arg)
{
    kw_collector *c = arg;
    kw_stats st;
    char where[512];

    (void)fd;
    (void)what;
    kw_get_stats(c, &st);
    kw_describe(c, where, sizeof where);
    log_info("k8s", "%s; %lu lists, %lu watches, %lu watch events, %lu "
             "bookmarks, %lu relists after 410; %lu objects: %lu signals "
             "published, %lu repeats, %lu filtered, %lu too old; %lu "
             "dead-lettered; %lu HTTP and %lu network errors", where,
             st.lists, st.watches, st.watch_events, st.bookmarks,
             st.relists_410, st.obj.objects, st.published, st.obj.repeats,
             st.obj.filtered, st.obj.old, st.dead_letters, st.http_errors,
             st.net_errors);
}

/* The edge filter: an Event no rule reads is not published (--all
 * publishes them all). */
static int keep_event(void *arg, const char *text)
{
    return cls_edge_keep(arg, SRC_K8S, text);
}

typedef struct k8s_args {
    const char *brokers, *config, *kubeconfig, *context, *sa_dir, *rules;
    int in_cluster, all, seconds;
    kw_opts o;
} k8s_args;

/* Where the API is: the flags, collect.k8s, the environment. */
static int k8s_auth(const k8s_args *a, const ccf_conf *cc, kc_conf *auth,
                    cs_err *err)
{
    const char *kc = a->kubeconfig, *ctx = a->context, *env = getenv("KUBECONFIG");
    char home[4096];

    if (!kc && !a->in_cluster && cc->k8s.kubeconfig[0])
        kc = cc->k8s.kubeconfig;
    if (!ctx && cc->k8s.context[0])
        ctx = cc->k8s.context;
    if (a->in_cluster || (!kc && getenv("KUBERNETES_SERVICE_HOST")))
        return kc_in_cluster(auth, a->sa_dir, err);
    if (!kc && env && *env) {
        snprintf(home, sizeof home, "%.*s", (int)strcspn(env, ":"), env);
        kc = home;
    }
    if (!kc && getenv("HOME")) {
        snprintf(home, sizeof home, "%s/.kube/config", getenv("HOME"));
        if (access(home, R_OK) == 0)
            kc = home;
    }
    if (!kc) {
        cs_err_set(err, "no API server: give --kubeconfig or --in-cluster "
                   "(or collect.k8s.kubeconfig)");
        return -1;
    }
    return kc_kubeconfig(auth, kc, ctx, err);
}

/* collect.k8s where no flag was given. */
static void k8s_merge(k8s_args *a, ccf_conf *cc, const char **reserved)
{
    kw_opts *o = &a->o;

    if (!o->cluster && cc->cluster[0])
        o->cluster = cc->cluster;
    if (!o->ns && cc->k8s.ns[0])
        o->ns = cc->k8s.ns;
    if (o->events_api_v1 < 0)
        o->events_api_v1 = cc->k8s.events_api_v1 > 0;
    if (!o->state && cc->k8s.state[0])
        o->state = cc->k8s.state;
    if (!o->pod_selector && cc->k8s.pod_selector[0])
        o->pod_selector = cc->k8s.pod_selector;
    if (cc->k8s.workloads == 0)
        o->no_workloads = 1;
    if (cc->k8s.team_label[0])
        o->obj.team_label = cc->k8s.team_label;
    if (cc->k8s.job_name_label[0])
        o->obj.job_name_label = cc->k8s.job_name_label;
    if (cc->k8s.rack_label[0])
        o->obj.rack_label = cc->k8s.rack_label;
    if (cc->k8s.canary_label[0])
        o->obj.canary_label = cc->k8s.canary_label;
    if (!o->obj.max_age_s && cc->k8s.max_age_s)
        o->obj.max_age_s = cc->k8s.max_age_s;
    for (size_t i = 0; i < cc->k8s.nreserved; i++)
        reserved[i] = cc->k8s.reserved[i];
    o->obj.reserved = reserved;
    o->obj.nreserved = cc->k8s.nreserved;
}

static int k8s_flags(int argc, char **argv, k8s_args *a)
{
    static const struct option opts[] = {
        {"brokers", required_argument, 0, 'b'},    {"config", required_argument, 0, 'C'},
        {"kubeconfig", required_argument, 0, 'k'}, {"context", required_argument, 0, 'x'},
        {"in-cluster", no_argument, 0, 'I'},       {"sa-dir", required_argument, 0, 'D'},
        {"namespace", required_argument, 0, 'n'},  {"events-api", required_argument, 0, 'e'},
        {"state", required_argument, 0, 's'},      {"cluster", required_argument, 0, 'c'},
        {"all", no_argument, 0, 'a'},              {"rules", required_argument, 0, 'r'},
        {"no-workloads", no_argument, 0, 'W'},     {"pod-selector", required_argument, 0, 'p'},
        {"max-age", required_argument, 0, 'm'},    {"list-limit", required_argument, 0, 'l'},
        {"watch-seconds", required_argument, 0, 'w'}, {"for", required_argument, 0, 't'},
        {"help", no_argument, 0, 'h'},             {0, 0, 0, 0}};
    int c, n;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'b': a->brokers = optarg; break;
        case 'C': a->config = optarg; break;
        case 'k': a->kubeconfig = optarg; break;
        case 'x': a->context = optarg; break;
        case 'I': a->in_cluster = 1; break;
        case 'D': a->sa_dir = optarg; break;
        case 'n': a->o.ns = optarg; break;
        case 's': a->o.state = optarg; break;
        case 'c': a->o.cluster = optarg; break;
        case 'a': a->all = 1; break;
        case 'r': a->rules = optarg; break;
        case 'W': a->o.no_workloads = 1; break;
        case 'p': a->o.pod_selector = optarg; break;
        case 'e':
            if (strcmp(optarg, "core") && strcmp(optarg, "events")) {
                fprintf(stderr, "cascade ingest k8s: --events-api wants core "
                        "or events, not '%s'\n", optarg);
                return 2;
            }
            a->o.events_api_v1 = !strcmp(optarg, "events");
            break;
        case 'm':
            if (colrun_int("cascade ingest k8s: --max-age", optarg, 60, 7 * 86400, &n))
                return 2;
            a->o.obj.max_age_s = n;
            break;
        case 'l':
            if (colrun_int("cascade ingest k8s: --list-limit", optarg, 1, 100000,
                           &a->o.list_limit))
                return 2;
            break;
        case 'w':
            if (colrun_int("cascade ingest k8s: --watch-seconds", optarg, 1, 3600, &n))
                return 2;
            a->o.watch_min_s = a->o.watch_max_s = n;
            break;
        case 't':
            if (colrun_int("cascade ingest k8s: --for", optarg, 1, 100000000, &a->seconds))
                return 2;
            break;
        case 'h':
            k8s_help(stdout);
            return 0;
        default:
            k8s_help(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "cascade ingest k8s: unexpected '%s'\n", argv[optind]);
        return 2;
    }
    return -1;
}

int cmd_ingest_k8s(int argc, char **argv)
{
    k8s_args a = {.o = {.events_api_v1 = -1}};
    const char *reserved[CCF_MAX_CLASSES];
    pb_catalog *cat = NULL;
    classifier *cls = NULL;
    kfk_producer *p = NULL;
    kw_collector *kw = NULL;
    colrun_loop l = {0};
    kc_conf auth = {0};
    cs_err err = {{0}};
    ccf_conf cc;
    kw_stats st;
    int rc;

    if ((rc = k8s_flags(argc, argv, &a)) >= 0)
        return rc;
    rc = 2;
    ccf_defaults(&cc);
    if (!a.all && (!(cat = cli_load_rules(a.rules ? a.rules : "", "ingest k8s", &err)) ||
                   !(cls = cls_new(cat, &err))))
        goto out;
    if (!(p = colrun_producer("ingest k8s", a.brokers, a.config, "zstd", &cc))) {
        err.msg[0] = '\0'; /* told */
        goto out;
    }
    k8s_merge(&a, &cc, reserved);
    if (k8s_auth(&a, &cc, &auth, &err))
        goto out;
    a.o.obj.keep = cls ? keep_event : NULL;
    a.o.obj.keep_arg = cls;
    if (colrun_open(&l, a.seconds, p, &err) ||
        !(kw = kw_start(l.base, &a.o, &auth, p, &err)) ||
        colrun_report(&l, k8s_report, kw, &err) ||
        colrun_observe(&l, "k8s", a.config, k8s_counts, kw, &err))
        goto out;
    log_info("k8s", "watching %s%s%s (events: %s)%s%s", auth.server,
             a.o.ns ? " namespace " : "", a.o.ns ? a.o.ns : "",
             a.o.events_api_v1 ? "events.k8s.io/v1" : "core/v1",
             a.o.state ? ", state " : "", a.o.state ? a.o.state : "");
    event_base_dispatch(l.base);
    rc = kw_stop(kw, 30000, &err) ? 1 : 0;
    if (rc)
        fprintf(stderr, "cascade ingest k8s: %s\n", err.msg);
    kw_get_stats(kw, &st);
    fprintf(stderr, "ingest k8s: %lu lists, %lu watches, %lu watch events, "
            "%lu relists after 410; %lu objects: %lu signals published, %lu "
            "repeats, %lu filtered, %lu too old, %lu dead-lettered\n",
            st.lists, st.watches, st.watch_events, st.relists_410,
            st.obj.objects, st.published, st.obj.repeats, st.obj.filtered,
            st.obj.old, st.dead_letters);
out:
    if (rc == 2 && err.msg[0])
        fprintf(stderr, "cascade ingest k8s: %s\n", err.msg);
    kw_free(kw);
    kc_free(&auth);
    colrun_close(&l);
    kfk_producer_free(p);
    cls_free(cls);
    pb_catalog_free(cat);
    ccf_free(&cc);
    return rc;
}
