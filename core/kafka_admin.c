/* cascade's topics created and checked (core/kafka_admin.h). */
#include "core/kafka_admin.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/kafka.h"
#include "core/mem.h"

struct kfk_admin {
    rd_kafka_t *rk;
    rd_kafka_queue_t *q; /* where the admin requests' results come */
};

/* What was found of one planned topic. */
typedef struct finding {
    const topic_plan *plan;
    enum { F_EXISTS, F_MISSING, F_CREATED, F_FAILED } state;
    int32_t partitions;
    int replication;
    /* 1 checked, 0 not (no DescribeConfigs at that broker), -1 failed */
    int configs_checked;
    char configs[512]; /* the planned configs that differ, "" if none */
    char why[512];     /* F_FAILED, or configs unchecked (a cs_err's) */
} finding;

kfk_admin *kfk_admin_open(const char *brokers, const cfg_kprops *props,
                          cs_err *err)
{
    const char *const kv[] = {"bootstrap.servers", brokers,
                              "client.id", "cascade-admin",
                              /* asking about a topic must not make it */
                              "allow.auto.create.topics", "false", NULL};
    kfk_admin *a = xcalloc(1, sizeof *a);
    rd_kafka_conf_t *conf = kfk_conf_new(kv, props, err);

    if (!conf || !(a->rk = kfk_client_new(RD_KAFKA_PRODUCER, conf, err))) {
        free(a);
        return NULL;
    }
    a->q = rd_kafka_queue_new(a->rk);
    return a;
}

void kfk_admin_free(kfk_admin *a)
{
    if (!a)
        return;
    rd_kafka_queue_destroy(a->q);
    rd_kafka_destroy(a->rk);
    free(a);
}

static rd_kafka_AdminOptions_t *admin_opts(kfk_admin *a, rd_kafka_admin_op_t op,
                                           int timeout_ms)
{
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(a->rk, op);
    char why[256];

    rd_kafka_AdminOptions_set_request_timeout(o, timeout_ms, why, sizeof why);
    /* CreateTopics: answered once the topics are made, not when asked */
    if (op == RD_KAFKA_ADMIN_OP_CREATETOPICS)
        rd_kafka_AdminOptions_set_operation_timeout(o, timeout_ms, why,
                                                    sizeof why);
    return o;
}

/* The result of the request just sent, or NULL with why (the request as
 * a whole failed: no answer, or the broker has no such request). */
static rd_kafka_event_t *admin_wait(kfk_admin *a, int timeout_ms,
                                    rd_kafka_resp_err_t *e, char *why,
                                    size_t len)
{
    rd_kafka_event_t *ev = rd_kafka_queue_poll(a->q, timeout_ms + 5000);

    *e = ev ? rd_kafka_event_error(ev) : RD_KAFKA_RESP_ERR__TIMED_OUT;
    if (!*e)
        return ev;
    snprintf(why, len, "%s", ev ? rd_kafka_event_error_string(ev)
                                : "no answer from the brokers");
    rd_kafka_event_destroy(ev);
    return NULL;
}

/* ---- what exists ---- */

/* -1 (err set) when the brokers do not answer: asking about the other
 * topics would only wait as long again. */
static int look(kfk_admin *a, finding *f, size_t n, int timeout_ms,
                cs_err *err)
{
    for (size_t i = 0; i < n; i++) {
        int rc = kfk_topic_meta(a->rk, f[i].plan->name, timeout_ms,
                                &f[i].partitions, &f[i].replication, err);
        if (rc == KFK_NO_ANSWER)
            return -1;
        f[i].state = rc > 0 ? F_EXISTS : rc == 0 ? F_MISSING : F_FAILED;
        if (rc < 0)
            snprintf(f[i].why, sizeof f[i].why, "%s", err->msg);
    }
    return 0;
}

/* Whether the brokers name a controller among them. Admin requests go
 * to it, and librdkafka waits for it up to the request's timeout; the
 * embedded broker names broker 0, which does not exist. All topics are
 * asked for: librdkafka 2.0 asks for its known topics otherwise, and
 * lets the broker create them (rd_kafka_metadata, "cached topics"). */
static int has_controller(kfk_admin *a, int timeout_ms)
{
    int32_t id = rd_kafka_controllerid(a->rk, timeout_ms);
    const struct rd_kafka_metadata *md = NULL;
    int found = 0;

    if (id < 0 || rd_kafka_metadata(a->rk, 1, NULL, &md, timeout_ms))
        return 0;
    for (int i = 0; i < md->broker_cnt; i++)
        found |= md->brokers[i].id == id;
    rd_kafka_metadata_destroy(md);
    return found;
}

#define NO_CONTROLLER "the brokers name no controller to send it to (the " \
                      "embedded broker has none)"

/* ---- creating what is missing ---- */

static rd_kafka_NewTopic_t *new_topic(const topic_plan *p, char *why,
                                      size_t len)
{
    rd_kafka_NewTopic_t *t = rd_kafka_NewTopic_new(p->name, p->partitions,
                                                   p->replication, why, len);

    for (int i = 0; t && i < TOPIC_CONFIGS; i++)
        if (rd_kafka_NewTopic_set_config(t, p->configs[i].key,
                                         p->configs[i].value)) {
            snprintf(why, len, "config %s: refused", p->configs[i].key);
            rd_kafka_NewTopic_destroy(t);
            return NULL;
        }
    return t;
}

/* Marks each missing topic created or failed from the result. */
static void created(finding *f, size_t n, rd_kafka_event_t *ev)
{
    const rd_kafka_CreateTopics_result_t *res =
        rd_kafka_event_CreateTopics_result(ev);
    size_t cnt;
    const rd_kafka_topic_result_t **tr =
        rd_kafka_CreateTopics_result_topics(res, &cnt);

    for (size_t k = 0; k < cnt; k++)
        for (size_t i = 0; i < n; i++) {
            if (f[i].state != F_MISSING ||
                strcmp(f[i].plan->name, rd_kafka_topic_result_name(tr[k])))
                continue;
            if (!rd_kafka_topic_result_error(tr[k])) {
                f[i].state = F_CREATED;
                break;
            }
            f[i].state = F_FAILED;
            snprintf(f[i].why, sizeof f[i].why, "creating it: %s",
                     rd_kafka_topic_result_error_string(tr[k]));
        }
}

/* One CreateTopics request for every missing topic. */
static void create(kfk_admin *a, finding *f, size_t n, int timeout_ms)
{
    rd_kafka_NewTopic_t **nt = xcalloc(n + 1, sizeof *nt);
    size_t cnt = 0;
    rd_kafka_resp_err_t e;
    rd_kafka_event_t *ev;
    char why[256];

    for (size_t i = 0; i < n; i++) {
        if (f[i].state != F_MISSING)
            continue;
        if (!(nt[cnt] = new_topic(f[i].plan, why, sizeof why))) {
            f[i].state = F_FAILED;
            snprintf(f[i].why, sizeof f[i].why, "cannot ask for it: %s", why);
            continue;
        }
        cnt++;
    }
    if (cnt) {
        rd_kafka_AdminOptions_t *o =
            admin_opts(a, RD_KAFKA_ADMIN_OP_CREATETOPICS, timeout_ms);
        rd_kafka_CreateTopics(a->rk, nt, cnt, o, a->q);
        rd_kafka_AdminOptions_destroy(o);
        if ((ev = admin_wait(a, timeout_ms, &e, why, sizeof why))) {
            created(f, n, ev);
            rd_kafka_event_destroy(ev);
        }
        for (size_t i = 0; i < n; i++)
            if (f[i].state == F_MISSING) { /* the request as a whole failed */
                f[i].state = F_FAILED;
                snprintf(f[i].why, sizeof f[i].why, "creating it: %s", why);
            }
    }
    rd_kafka_NewTopic_destroy_array(nt, cnt);
    free(nt);
}

/* A real broker answers CreateTopics once the controller has the topic,
 * before every broker's metadata shows it: a process started right after
 * `cascade kafka init` was told the topic did not exist (seen on Apache
 * Kafka 4.4, never on the embedded broker). Until each created topic is
 * in the metadata with its planned partitions, up to timeout_ms. */
static void settle(kfk_admin *a, finding *f, size_t n, int timeout_ms)
{
    struct timespec pause = {0, 100 * 1000000L};
    int32_t parts;
    int repl, waited = 0;
    cs_err err;

    for (size_t i = 0; i < n; i++) {
        if (f[i].state != F_CREATED)
            continue;
        while (!(kfk_topic_meta(a->rk, f[i].plan->name, 2000, &parts, &repl,
                                &err) == 1 &&
                 parts == f[i].plan->partitions)) {
            if (waited >= timeout_ms) {
                f[i].state = F_FAILED;
                snprintf(f[i].why, sizeof f[i].why, "created, but not in the "
                         "brokers' metadata after %d ms", waited);
                break;
            }
            nanosleep(&pause, NULL);
            waited += 100;
        }
    }
}

/* ---- comparing the configs of what exists ---- */

/* The planned configs whose value differs from the entries, into
 * f->configs: "retention.ms 86400000, planned 604800000; ...". */
static void compare_configs(finding *f, const rd_kafka_ConfigEntry_t **es,
                            size_t cnt)
{
    size_t off = 0;

    f->configs_checked = 1;
    for (int c = 0; c < TOPIC_CONFIGS; c++) {
        const topic_config *want = &f->plan->configs[c];
        const char *have = NULL;
        for (size_t k = 0; k < cnt; k++)
            if (!strcmp(rd_kafka_ConfigEntry_name(es[k]), want->key))
                have = rd_kafka_ConfigEntry_value(es[k]);
        if (have && !strcmp(have, want->value))
            continue;
        if (off < sizeof f->configs)
            off += (size_t)snprintf(f->configs + off, sizeof f->configs - off,
                                    "%s%s %s, planned %s", off ? "; " : "",
                                    want->key, have ? have : "unset",
                                    want->value);
    }
}

static void described(finding *f, size_t n, rd_kafka_event_t *ev)
{
    const rd_kafka_DescribeConfigs_result_t *res =
        rd_kafka_event_DescribeConfigs_result(ev);
    size_t cnt, ecnt;
    const rd_kafka_ConfigResource_t **rs =
        rd_kafka_DescribeConfigs_result_resources(res, &cnt);

    for (size_t k = 0; k < cnt; k++)
        for (size_t i = 0; i < n; i++) {
            if (f[i].state != F_EXISTS ||
                strcmp(f[i].plan->name, rd_kafka_ConfigResource_name(rs[k])))
                continue;
            if (rd_kafka_ConfigResource_error(rs[k])) {
                f[i].configs_checked = -1;
                snprintf(f[i].why, sizeof f[i].why, "describing its configs: "
                         "%s", rd_kafka_ConfigResource_error_string(rs[k]));
                continue;
            }
            const rd_kafka_ConfigEntry_t **es =
                rd_kafka_ConfigResource_configs(rs[k], &ecnt);
            compare_configs(&f[i], es, ecnt);
        }
}

/* One DescribeConfigs request for every topic that exists. The embedded
 * broker has none: its topics' configs stay unchecked, said so. */
static void describe(kfk_admin *a, finding *f, size_t n, int timeout_ms)
{
    rd_kafka_ConfigResource_t **cr = xcalloc(n + 1, sizeof *cr);
    size_t cnt = 0;
    rd_kafka_resp_err_t e;
    rd_kafka_event_t *ev;
    char why[256];

    for (size_t i = 0; i < n; i++)
        if (f[i].state == F_EXISTS)
            cr[cnt++] = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC,
                                                    f[i].plan->name);
    if (cnt) {
        rd_kafka_AdminOptions_t *o =
            admin_opts(a, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout_ms);
        rd_kafka_DescribeConfigs(a->rk, cr, cnt, o, a->q);
        rd_kafka_AdminOptions_destroy(o);
        if ((ev = admin_wait(a, timeout_ms, &e, why, sizeof why))) {
            described(f, n, ev);
            rd_kafka_event_destroy(ev);
        } else {
            for (size_t i = 0; i < n; i++) {
                if (f[i].state != F_EXISTS)
                    continue;
                f[i].configs_checked =
                    e == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE ? 0 : -1;
                snprintf(f[i].why, sizeof f[i].why, "%s", why);
            }
        }
    }
    rd_kafka_ConfigResource_destroy_array(cr, cnt);
    free(cr);
}

/* Without a controller: nothing is created, no config is checked. */
static void unsent(finding *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (f[i].state == F_EXISTS)
            snprintf(f[i].why, sizeof f[i].why, "DescribeConfigs: "
                     NO_CONTROLLER);
}

/* ---- telling ---- */

/* What differs of an existing topic, into detail; returns its status. */
static int tell_existing(const finding *f, char *detail, size_t len)
{
    const topic_plan *p = f->plan;
    int rc = KFK_ADMIN_OK;
    size_t off;

    off = (size_t)snprintf(detail, len, "%d partitions", (int)f->partitions);
    if (f->partitions != p->partitions) {
        off += (size_t)snprintf(detail + off, len - off, ", planned %d (an "
                                "existing topic's count is never changed "
                                "here)", p->partitions);
        rc = KFK_ADMIN_DIFFERS;
    }
    off += (size_t)snprintf(detail + off, len - off, "; replication %d",
                            f->replication);
    if (f->replication != p->replication) {
        off += (size_t)snprintf(detail + off, len - off, ", planned %d",
                                p->replication);
        rc = KFK_ADMIN_DIFFERS;
    }
    if (f->configs_checked == 1 && f->configs[0]) {
        snprintf(detail + off, len - off, "; %s", f->configs);
        rc = KFK_ADMIN_DIFFERS;
    } else if (f->configs_checked == 1) {
        snprintf(detail + off, len - off, "; configs as planned");
    } else {
        snprintf(detail + off, len - off, "; configs not checked: %s",
                 f->why);
        if (f->configs_checked < 0)
            rc = KFK_ADMIN_FAILED;
    }
    return rc;
}

static int tell(const finding *f, int create, kfk_admin_say say, void *arg)
{
    static const char *const words[] = {"as planned", "differs", "exists"};
    char line[1400], detail[1200];
    const topic_plan *p = f->plan;
    int rc;

    switch (f->state) {
    case F_CREATED:
        snprintf(line, sizeof line, "%s: created: %d partitions, "
                 "replication %d, %s=%s %s=%s %s=%s", p->name, p->partitions,
                 p->replication, p->configs[0].key, p->configs[0].value,
                 p->configs[1].key, p->configs[1].value, p->configs[2].key,
                 p->configs[2].value);
        rc = KFK_ADMIN_OK;
        break;
    case F_MISSING:
        if (create) { /* not created: there was no controller to ask */
            snprintf(line, sizeof line, "%s: missing, not created: "
                     "CreateTopics: " NO_CONTROLLER, p->name);
            rc = KFK_ADMIN_FAILED;
        } else {
            snprintf(line, sizeof line, "%s: missing (cascade kafka init "
                     "creates it)", p->name);
            rc = KFK_ADMIN_DIFFERS;
        }
        break;
    case F_FAILED:
        snprintf(line, sizeof line, "%s: failed: %s", p->name, f->why);
        rc = KFK_ADMIN_FAILED;
        break;
    default:
        rc = tell_existing(f, detail, sizeof detail);
        snprintf(line, sizeof line, "%s: %s: %s", p->name, words[rc], detail);
    }
    say(arg, line);
    return rc;
}

int kfk_admin_apply(kfk_admin *a, const topic_plan *plans, size_t n,
                    int create_missing, int timeout_ms, kfk_admin_say say,
                    void *arg)
{
    finding *f = xcalloc(n ? n : 1, sizeof *f);
    int worst = KFK_ADMIN_OK, rc;
    cs_err err;

    for (size_t i = 0; i < n; i++)
        f[i].plan = &plans[i];
    if (look(a, f, n, timeout_ms, &err)) {
        say(arg, err.msg);
        free(f);
        return KFK_ADMIN_FAILED;
    }
    if (!has_controller(a, timeout_ms)) {
        unsent(f, n);
    } else {
        if (create_missing) {
            create(a, f, n, timeout_ms);
            settle(a, f, n, timeout_ms);
        }
        describe(a, f, n, timeout_ms);
    }
    for (size_t i = 0; i < n; i++)
        if ((rc = tell(&f[i], create_missing, say, arg)) > worst)
            worst = rc;
    free(f);
    return worst;
}
