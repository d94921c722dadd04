#include "correlate/correlator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/signal.h"
#include "correlate/engine.h"
#include "correlate/store.h"

typedef struct pending {
    char *topic_incident; /* NULL for an action */
    char *key;
    char *value;
} pending;

struct correlator {
    engine *eng;
    store *st;
    kfk_consumer *cons;
    kfk_producer *out;
    pending *pend;
    size_t npend, cappend, sent;
    struct event *retry;
    unsigned long signals, dead, incidents;
};

static void pend_push(correlator *c, int incident, const char *key, char *value)
{
    if (c->npend == c->cappend) {
        c->cappend = c->cappend ? c->cappend * 2 : 64;
        c->pend = realloc(c->pend, c->cappend * sizeof *c->pend);
        if (!c->pend)
            abort();
    }
    c->pend[c->npend++] = (pending){incident ? "1" : NULL, strdup(key), value};
}

/* Raw bytes may not be text: dead letters carry them as hex, capped. */
static char *hex_of(const void *data, size_t len)
{
    const unsigned char *p = data;
    size_t n = len > 4096 ? 4096 : len;
    char *h = malloc(2 * n + 1);

    if (!h)
        abort();
    for (size_t i = 0; i < n; i++)
        sprintf(h + 2 * i, "%02x", p[i]);
    h[2 * n] = '\0';
    return h;
}

static void dead_letter(correlator *c, const rd_kafka_message_t *m,
                        const char *reason)
{
    char *hex = hex_of(m->payload, m->len);
    json_t *d = json_pack("{s:s, s:i, s:I, s:s, s:s, s:I}", "topic",
                          rd_kafka_topic_name(m->rkt), "partition", m->partition,
                          "offset", (json_int_t)m->offset, "reason", reason,
                          "raw_hex", hex, "bytes", (json_int_t)m->len);
    char *txt = json_dumps(d, JSON_COMPACT);
    cs_err err;

    log_warn("correlate", "dead letter %s[%d]@%lld: %s",
             rd_kafka_topic_name(m->rkt), (int)m->partition,
             (long long)m->offset, reason);
    /* Dead letters go out at once: they must not wait on Redis. */
    if (kfk_produce(c->out, KFK_TOPIC_DEADLETTER, NULL, 0, txt, strlen(txt),
                    &err) != KFK_OK)
        log_error("correlate", "cannot publish a dead letter: %s", err.msg);
    c->dead++;
    free(txt);
    free(hex);
    json_decref(d);
}

static void on_change(void *arg, const char *id, json_t *inc, json_t *acts)
{
    correlator *c = arg;
    size_t i;
    json_t *a;

    pend_push(c, 1, id, json_dumps(inc, JSON_COMPACT));
    json_array_foreach(acts, i, a) {
        json_t *req = json_pack("{s:s, s:s, s:O}", "incident", id, "scenario",
                                json_string_value(json_object_get(inc, "scenario")),
                                "action", a);
        pend_push(c, 0, id, json_dumps(req, JSON_COMPACT));
        json_decref(req);
    }
}

/* Publishes what the acknowledged batch changed, in order. Returns 1 when
 * the producer queue is full: the rest stays pending and a timer retries,
 * so the loop never blocks and the offsets wait until everything is out. */
static int publish_pending(correlator *c)
{
    size_t i;

    for (i = c->sent; i < c->npend; i++) {
        pending *p = &c->pend[i];
        const char *topic = p->topic_incident ? KFK_TOPIC_INCIDENTS
                                              : KFK_TOPIC_ACTIONS;
        cs_err err;
        int rc = kfk_produce(c->out, topic, p->key, strlen(p->key), p->value,
                             strlen(p->value), &err);
        if (rc == KFK_QUEUE_FULL) {
            c->sent = i;
            return 1;
        }
        if (rc != KFK_OK)
            log_error("correlate", "publish to %s failed: %s", topic, err.msg);
        if (p->topic_incident)
            c->incidents++;
    }
    for (i = 0; i < c->npend; i++) {
        free(c->pend[i].key);
        free(c->pend[i].value);
    }
    c->npend = c->sent = 0;
    return 0;
}

static void publish_and_commit(correlator *c)
{
    struct timeval tv = {0, 50000};
    cs_err err;

    if (publish_pending(c)) {
        evtimer_add(c->retry, &tv);
        return;
    }
    if (kfk_consumer_commit_held(c->cons, &err))
        log_warn("correlate", "offsets not committed: %s", err.msg);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    publish_and_commit(arg);
}

static void on_acked(void *arg)
{
    publish_and_commit(arg);
}

static void on_batch(void *arg, rd_kafka_message_t **msgs, size_t n)
{
    correlator *c = arg;

    for (size_t i = 0; i < n; i++) {
        sig s;
        cs_err err;
        if (sig_parse_msgpack(&s, msgs[i]->payload, msgs[i]->len, &err)) {
            dead_letter(c, msgs[i], err.msg);
            continue;
        }
        eng_feed(c->eng, &s);
        sig_free(&s);
        c->signals++;
    }
    eng_flush(c->eng, on_change, c);
    store_flush(c->st, on_acked, c);
}

correlator *corr_start(struct event_base *base, const corr_opts *o,
                       kfk_producer *out, cs_err *err)
{
    correlator *c = calloc(1, sizeof *c);
    long restored;

    if (!c) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    c->out = out;
    c->retry = evtimer_new(base, on_retry, c);
    if (!c->retry || !(c->st = store_new(base, o->redis, "", err)) ||
        !(c->eng = eng_new(store_ops(), c->st, err)))
        goto fail;
    /* Windows survive a restart: read them back before consuming. */
    restored = store_restore(o->redis, "", c->eng, err);
    if (restored < 0)
        goto fail;
    log_info("correlate", "restored %ld window entries from redis", restored);
    c->cons = kfk_consumer_new(base, o->brokers,
                               o->group ? o->group : "cascade-correlate",
                               KFK_TOPIC_SIGNALS, o->batch ? o->batch : 1000,
                               on_batch, c, err);
    if (!c->cons)
        goto fail;
    return c;
fail:
    corr_free(c);
    return NULL;
}

void corr_stats(const correlator *c, unsigned long *signals,
                unsigned long *dead, unsigned long *incidents)
{
    *signals = c->signals;
    *dead = c->dead;
    *incidents = c->incidents;
}

void corr_free(correlator *c)
{
    if (!c)
        return;
    kfk_consumer_free(c->cons);
    if (c->retry)
        event_free(c->retry);
    eng_free(c->eng);
    store_free(c->st);
    for (size_t i = 0; i < c->npend; i++) {
        free(c->pend[i].key);
        free(c->pend[i].value);
    }
    free(c->pend);
    free(c);
}
