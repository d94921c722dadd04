#include "actions/printer.h"

#include <jansson.h>
#include <stdlib.h>

#include "core/kafka.h"
#include "core/log.h"

struct act_printer {
    kfk_consumer *cons;
    FILE *out;
    unsigned long count;
};

static void print_one(act_printer *p, const rd_kafka_message_t *m)
{
    json_error_t jerr;
    json_t *req = json_loadb(m->payload, m->len, 0, &jerr);
    json_t *a = json_object_get(req, "action");
    char *target, *params;

    if (!json_is_object(a)) {
        log_warn("actions", "not an action request at offset %lld: %s",
                 (long long)m->offset, req ? "no 'action'" : jerr.text);
        json_decref(req);
        return;
    }
    target = json_dumps(json_object_get(a, "target"), JSON_COMPACT);
    params = json_dumps(json_object_get(a, "params"), JSON_COMPACT);
    fprintf(p->out, "[dry-run] %s %s: %s (%s) target=%s params=%s\n",
            json_string_value(json_object_get(req, "incident")),
            json_string_value(json_object_get(req, "scenario")),
            json_string_value(json_object_get(a, "playbook")),
            json_string_value(json_object_get(a, "approval")), target, params);
    fflush(p->out);
    p->count++;
    free(target);
    free(params);
    json_decref(req);
}

static void on_batch(void *arg, rd_kafka_message_t **msgs, size_t n)
{
    act_printer *p = arg;
    cs_err err;

    for (size_t i = 0; i < n; i++)
        print_one(p, msgs[i]);
    if (kfk_consumer_commit_held(p->cons, &err))
        log_warn("actions", "commit failed: %s", err.msg);
}

act_printer *act_printer_start(struct event_base *base, const char *brokers,
                               const cfg_kprops *props, int fetch_wait_ms,
                               FILE *out, cs_err *err)
{
    act_printer *p = calloc(1, sizeof *p);

    if (!p) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    p->out = out;
    kfk_consumer_opts co = kfk_consumer_defaults(brokers, KFK_GROUP_DRY_RUN,
                                                 KFK_TOPIC_ACTIONS);
    co.props = props;
    co.max_batch = 256;
    co.fetch_wait_ms = fetch_wait_ms;
    co.on_batch = on_batch;
    co.arg = p;
    p->cons = kfk_consumer_open(base, &co, err);
    if (!p->cons) {
        free(p);
        return NULL;
    }
    return p;
}

unsigned long act_printer_count(const act_printer *p)
{
    return p->count;
}

void act_printer_free(act_printer *p)
{
    if (!p)
        return;
    kfk_consumer_free(p->cons);
    free(p);
}
