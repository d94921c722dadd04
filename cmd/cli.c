/* Helpers every command may use (cmd/cli.h). */
#include <event2/event.h>
#include <systemd/sd-daemon.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "core/kafka.h"
#include "core/log.h"
#include "core/topics.h"
#include "engine/engine.h"
#include "rules/playbooks.h"

/* Problems of a rule folder go to the log, one per line, FILE:LINE:COL. */
static void rules_problem(void *arg, const char *where, const char *msg)
{
    log_error("cascade", "%s: %s: %s", (const char *)arg, where, msg);
}

/* The scenario ids a rule set lacks that a detector opens by name (two
 * detectors may name one), and the first few of them for one log line. */
typedef struct missing {
    const char *ids[128];
    size_t n;
    char text[200];
} missing;

static void note_missing(void *arg, const char *detector, const char *id)
{
    missing *m = arg;
    size_t len = strlen(m->text);

    (void)detector;
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->ids[i], id))
            return;
    if (m->n < sizeof m->ids / sizeof *m->ids)
        m->ids[m->n++] = id;
    if (len < 160)
        snprintf(m->text + len, sizeof m->text - len, "%s%s", len ? ", " : "",
                 id);
}

/* The rule set of rules.dir, or NULL (with the problems logged and counted
 * in err) when the folder cannot be read or any file has a problem: a
 * half-valid rule set is never used. Empty dir: the built-in set. */
pb_catalog *cli_load_rules(const char *dir, const char *who, cs_err *err)
{
    pb_catalog *c;
    int n;

    if (!dir[0])
        return pb_catalog_embedded();
    c = pb_catalog_new();
    n = pb_catalog_load_dir(c, dir, rules_problem, (void *)who);
    if (n < 0)
        cs_err_set(err, "rules.dir %s: cannot read the folder", dir);
    else if (n > 0)
        cs_err_set(err, "rules.dir %s: %d problem%s (above)", dir, n,
                   n == 1 ? "" : "s");
    if (n != 0) {
        pb_catalog_free(c);
        return NULL;
    }
    /* A rule folder of its own may leave out scenarios the built-in
     * detectors open by name: they then open nothing of them. Said once. */
    missing m = {.n = 0};
    if (eng_check_scenarios(c, note_missing, &m))
        log_info(who, "rules.dir %s: %zu scenarios the detectors open by name "
                 "are not in this rule set (they open nothing of them): %s%s",
                 dir, m.n, m.text, strlen(m.text) >= 160 ? ", ..." : "");
    return c;
}

int cli_config(cs_config *c, const char *path, const char *who,
               const char **used)
{
    cs_err err;

    if (!path)
        path = getenv("CASCADE_CONFIG");
    *used = NULL;
    cfg_defaults(c);
    if (path && *path) {
        if (cfg_load(c, path, &err)) {
            fprintf(stderr, "cascade %s: %s\n", who, err.msg);
            return -1;
        }
        *used = path;
        log_set_level((enum log_level)c->log_level);
        log_set_format((enum log_format)c->log_format);
    }
    if (kfk_props_check(&c->kprops, &err) ||
        topic_set_prefix(c->topic_prefix, &err)) {
        fprintf(stderr, "cascade %s: %s\n", who, err.msg);
        return -1;
    }
    return 0;
}

int cli_redis_flag(const char *cmd, const char *addr, rtarget *t)
{
    cs_err err;

    if (rt_set_addr(t, addr, &err) == 0)
        return 0;
    fprintf(stderr, "cascade %s: --redis: %s\n", cmd, err.msg);
    return -1;
}

struct notify {
    int (*ready)(char *why, size_t len, void *arg);
    void *arg;
    struct event *ev;
    char last[256];
};

static void notify_check(evutil_socket_t fd, short what, void *arg)
{
    struct notify *n = arg;
    char why[256], status[300];

    (void)fd;
    (void)what;
    if (n->ready && !n->ready(why, sizeof why, n->arg)) {
        if (strcmp(why, n->last)) { /* a STATUS line per change */
            snprintf(n->last, sizeof n->last, "%s", why);
            snprintf(status, sizeof status, "STATUS=waiting: %s", why);
            sd_notify(0, status);
        }
        return;
    }
    event_del(n->ev); /* once: the timer has nothing more to do */
    sd_notify(0, "READY=1\nSTATUS=ready");
}

struct event *cli_notify_ready(struct event_base *base,
                               int (*ready)(char *why, size_t len, void *arg),
                               void *arg)
{
    static const struct timeval half = {0, 500000};
    struct notify *n;
    struct event *ev;

    if (!getenv("NOTIFY_SOCKET"))
        return NULL;
    if (!ready) {
        sd_notify(0, "READY=1\nSTATUS=ready");
        return NULL;
    }
    n = calloc(1, sizeof *n);
    if (!n || !(ev = event_new(base, -1, EV_PERSIST, notify_check, n))) {
        free(n);
        return NULL;
    }
    n->ready = ready;
    n->arg = arg;
    n->ev = ev;
    event_add(ev, &half);
    return ev;
}

void cli_notify_free(struct event *ev)
{
    if (!ev)
        return;
    free(event_get_callback_arg(ev));
    event_free(ev);
}

int cli_scan(const cs_config *c, const char *who, const char *topic,
             int64_t since_ms, int timeout_ms,
             int (*fn)(void *arg, const rd_kafka_message_t *m), void *arg)
{
    cs_err err;
    kfk_scan_opts o = {.brokers = c->brokers, .props = &c->kprops,
                       .topic = topic, .since_ms = since_ms,
                       .timeout_ms = timeout_ms, .fn = fn, .arg = arg};

    if (kfk_scan(&o, NULL, &err)) {
        fprintf(stderr, "cascade %s: %s\n", who, err.msg);
        return -1;
    }
    return 0;
}
