#include "correlate/correlator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/jw.h"
#include "core/log.h"
#include "core/logcap.h"
#include "core/mem.h"
#include "core/rconn.h"
#include "core/signal.h"
#include "core/str.h"
#include "core/ts.h"
#include "engine/engine.h"
#include "correlate/cmetrics.h"
#include "correlate/outq.h"
#include "correlate/store.h"
#include "rules/playbooks.h"

/* How often delivery reports are polled while a batch waits for them, and
 * how often finished state is pruned (wall time). */
#define DELIVERY_POLL_US 2000
#define PRUNE_EVERY_S 60
/* A storm of incidents or of malformed messages writes this many lines a
 * second of each, then one line with the count: all are on their topics. */
#define LOG_LINES_PER_S 100
/* The prune's walk over the jobs goes on this many at a time (about a
 * millisecond's work), one slice per turn of the loop. */
#define PRUNE_SLICE 16384
static const struct timeval at_once = {0, 0};

/* The cycle of one batch:
 *   feed -> Redis pipeline (state + outbox) acked -> produce, tracked ->
 *   all delivered -> HDEL outbox acked -> commit offsets.
 * Two batches overlap: the next one is fed, and its pipeline sent behind
 * the first's, while Redis applies the first (Redis's time and the
 * feed's, in turn, filled the cycle at 100k signals/s). The first batch
 * lets its messages go for a ticket of its offsets once fed; the second
 * stays held, so the consumer hands out no third, and takes its ticket
 * when the first is committed. Outputs go out, and offsets are
 * committed, one batch after the other. */
enum phase { PH_IDLE, PH_STORING, PH_PUBLISHING, PH_DELIVERING, PH_CLEARING };

/* One batch on its way: its outputs, its offsets, its times (monotonic
 * us: came, fed, stored, delivered) for the debug line at its commit. */
typedef struct cycle {
    struct correlator *owner;
    outq out; /* its outputs */
    /* its offsets, once its messages went (until then the consumer
     * holds them) */
    kfk_ticket *ticket;
    int batch;          /* a consumed batch (not outputs of the outbox) */
    int stored;         /* Redis acknowledged its state */
    size_t nbatch;
    int64_t t_batch, t_fed, t_stored, t_delivered;
    enum phase phase;
} cycle;

struct correlator {
    struct event_base *base;
    corr_opts opts;
    engine *eng;
    store *st;
    kfk_consumer *cons;
    kfk_producer *out;
    kfk_tracker *trk;
    /* cyc[head]: the batch publishing and committing next; the other:
     * the batch fed behind it (PH_IDLE: none). fill: where outputs go. */
    cycle cyc[2];
    int head;
    cycle *fill;
    int reading; /* the first batch since the start has come */
    struct event *tick, *prune, *kick, *prune_more, *say_held;
    /* at most LOG_LINES_PER_S incident lines and dead-letter lines a
     * second each (core/logcap.h); the held ones said once a second */
    lcap *cap_inc, *cap_dead;
    size_t pruned; /* by the prune under way */
    unsigned long signals, dead, incidents, republished, misrouted;
    cmetrics *mx; /* what /metrics shows (cmetrics.h) */
    /* The partitions whose clusters' state is in the engine (sorted), and
     * the topic's partition count (0: unknown, every cluster counts as
     * owned). */
    int32_t *owned;
    size_t nowned;
    int32_t nparts;
    int32_t want_parts; /* the count the state in Redis was built with */
    int failed;         /* stopped the loop on a fault (corr_failed) */
    int loaded;   /* state read for the current assignment */
    int leftover; /* publishing outputs found in the outbox; consumer paused */
    /* Fault injection for the restart tests (CASCADE_CRASH_AT). */
    enum phase crash_phase;
    long crash_n;
};

static void advance(correlator *c);

/* CASCADE_CRASH_AT=stored:N or delivered:N makes the process die, as if
 * SIGKILLed, the Nth time a consumed batch with outputs reaches that point: after
 * Redis acknowledged its state (outputs not yet on Kafka), or after Kafka
 * has its outputs (outbox not cleared, offsets not committed). Those are
 * the moments a real crash can hit that a kill from outside rarely does. */
static void crash_setup(correlator *c)
{
    const char *v = getenv("CASCADE_CRASH_AT");
    long n;

    if (!v)
        return;
    if (sscanf(v, "stored:%ld", &n) == 1)
        c->crash_phase = PH_STORING;
    else if (sscanf(v, "delivered:%ld", &n) == 1)
        c->crash_phase = PH_DELIVERING;
    else
        return;
    c->crash_n = n;
    log_warn("correlate", "CASCADE_CRASH_AT=%s: this process will crash on "
                          "purpose", v);
}

static void crash_point(correlator *c, const cycle *y, enum phase at)
{
    if (c->crash_phase != at || !y->batch || y->out.n == 0 || --c->crash_n > 0)
        return;
    log_warn("correlate", "crashing on purpose (CASCADE_CRASH_AT)");
    _exit(137);
}

/* The cluster's partition of an output topic: keys stay the incident's
 * id (FORMATS.md), and an incident never changes cluster, so its
 * messages keep their order. librdkafka sends a request per partition,
 * five in flight at a time (idempotence): outputs spread by incident id
 * over 64 partitions took 5 ms a batch against the embedded broker,
 * those of one cluster 0.6 ms. */
static int32_t out_partition(const correlator *c, const char *topic,
                             const char *cluster)
{
    int32_t n = 0;

    if (!strcmp(topic, KFK_TOPIC_INCIDENTS))
        n = c->opts.incident_parts;
    else if (!strcmp(topic, KFK_TOPIC_ACTIONS))
        n = c->opts.action_parts;
    if (!cluster || n <= 0)
        return KFK_ANY_PARTITION;
    return kfk_partition_of(cluster, strlen(cluster), n);
}

static cycle *cur(correlator *c)
{
    return &c->cyc[c->head];
}

static cycle *behind(correlator *c)
{
    return &c->cyc[!c->head];
}

/* An output of the batch being filled. */
static pending *pend_push(correlator *c, const char *topic, const char *key,
                          char *value, const char *cluster)
{
    return outq_push(&c->fill->out, topic, out_partition(c, topic, cluster),
                     key, value, cluster);
}

/* The cycle done with (its ticket committed or dropped): free for the
 * next batch. */
static void cycle_clear(cycle *y)
{
    outq_clear(&y->out);
    y->ticket = NULL;
    y->batch = y->stored = 0;
    y->nbatch = 0;
    y->phase = PH_IDLE;
}

static void dead_letter(correlator *c, const rd_kafka_message_t *m,
                        const char *reason)
{
    json_t *d = kfk_dead_letter(m, reason);

    if (log_current_level >= LOG_LVL_WARN && lcap_take(c->cap_dead, ts_mono()))
        log_warn("correlate", "dead letter %s[%d]@%lld: %s",
                 rd_kafka_topic_name(m->rkt), (int)m->partition,
                 (long long)m->offset, reason);
    /* Tracked like every output: the offset is committed only once the
     * dead letter is on its topic. */
    pend_push(c, KFK_TOPIC_DEADLETTER, NULL, json_dumps(d, JSON_COMPACT), NULL);
    c->dead++;
    json_decref(d);
}

/* Queues an outbox record in the same pipeline as the state it reports. */
static void outbox_put(correlator *c, const pending *p)
{
    char *rec = outq_record(p);

    store_ops()->hash_put(c->st, p->outbox, p->field, rec);
    free(rec);
}

/* ["node.drain (canary)", ...]: every action the incident proposes. */
static json_t *proposed_of(const json_t *acts)
{
    json_t *out = json_array(), *a;
    size_t i;

    json_array_foreach(acts, i, a) {
        const char *pb = json_string_value(json_object_get(a, "playbook"));
        const char *ap = json_string_value(json_object_get(a, "approval"));
        char buf[160];
        snprintf(buf, sizeof buf, "%.100s (%.40s)", pb ? pb : "?",
                 ap ? ap : "?");
        json_array_append_new(out, json_string(buf));
    }
    return out;
}

/* The incident's log line (opened, resolved and reopened at info, any
 * other change at debug) and its metrics. */
static void note_change(correlator *c, const char *id, json_t *inc,
                        json_t *acts)
{
    static const char *const what[] = {"opened", "updated", "resolved",
                                       "reopened"};
    int kind = eng_flush_kind(c->eng);
    const char *sum = json_string_value(json_object_get(inc, "summary"));
    const char *opened, *into;
    int64_t at;
    double detect = -1;
    json_t *a;
    size_t i;

    if (kind == ENG_OPENED &&
        (opened = json_string_value(json_object_get(inc, "opened"))) &&
        !ts_parse_rfc3339(opened, &at))
        detect = (double)(ts_now() - at) / TS_SEC;
    cm_incident(c->mx, kind, detect);
    json_array_foreach(acts, i, a)
        cm_action(c->mx,
                  json_string_value(json_object_get(a, "playbook")),
                  json_string_value(json_object_get(a, "approval")));
    into = json_string_value(json_object_get(inc, "merged_into"));
    if ((into || kind != ENG_UPDATED) && log_current_level >= LOG_LVL_INFO &&
        !lcap_take(c->cap_inc, ts_mono()))
        return;
    /* merged into a storm: said at info whatever the publication's kind,
     * so that the incident an operator followed is not lost in debug */
    if (into)
        log_info("correlate", "incident %s merged into %s: %s", id, into,
                 json_string_value(json_object_get(inc, "scenario")));
    else
        LOG_AT(kind == ENG_UPDATED ? LOG_LVL_DEBUG : LOG_LVL_INFO, "correlate",
               "incident %s %s: %s (%s; %zu new actions)", id, what[kind & 3],
               json_string_value(json_object_get(inc, "scenario")),
               sum ? sum : "", json_array_size(acts));
}

static void on_change(void *arg, const char *id, json_t *inc,
                      const char *text, json_t *acts)
{
    correlator *c = arg;
    const char *cluster =
        json_string_value(json_object_get(json_object_get(inc, "scope"),
                                          "cluster"));
    json_t *scope = json_object_get(inc, "scope");
    json_t *proposed = proposed_of(acts), *a;
    size_t i;

    if (!cluster)
        cluster = "default";
    note_change(c, id, inc, acts);
    outbox_put(c, pend_push(c, KFK_TOPIC_INCIDENTS, id, strdup(text),
                            cluster));
    json_array_foreach(acts, i, a) {
        char aid[32];
        pb_action_id(id, a, aid, sizeof aid);
        /* cluster and rack: what the executor's budgets count by */
        /* members set one by one, not by json_pack, whose format parse
         * cost as much as the members: a storm publishes thousands */
        json_t *req = json_object(), *v;
        json_object_set_new_nocheck(req, "id", json_string(aid));
        json_object_set_new_nocheck(req, "incident", json_string(id));
        json_object_set_nocheck(req, "scenario", json_object_get(inc, "scenario"));
        json_object_set_new_nocheck(req, "cluster", json_string(cluster));
        if ((v = json_object_get(scope, "rack")) && json_is_string(v))
            json_object_set_nocheck(req, "rack", v);
        if ((v = json_object_get(inc, "summary")) && json_is_string(v))
            json_object_set_nocheck(req, "summary", v);
        json_object_set_nocheck(req, "action", a);
        /* what a notification shows beside the one action it carries */
        json_object_set_nocheck(req, "status", json_object_get(inc, "status"));
        json_object_set_nocheck(req, "root_cause",
                                json_object_get(inc, "root_cause"));
        json_object_set_nocheck(req, "proposed", proposed);
        outbox_put(c, pend_push(c, KFK_TOPIC_ACTIONS, id, jw_dumps(req, 0),
                                cluster));
        json_decref(req);
    }
    json_decref(proposed);
}

/* Produces what is pending, in order. Returns 1 when the producer queue is
 * full: the rest waits for the next tick, so the loop never blocks. */
static int produce_pending(correlator *c)
{
    cycle *y = cur(c);

    for (; y->out.sent < y->out.n; y->out.sent++) {
        pending *p = &y->out.v[y->out.sent];
        cs_err err;
        int rc = kfk_produce_tracked_to(c->out, p->topic, p->part, p->key,
                                        strlen(p->key), p->value,
                                        strlen(p->value), c->trk, &err);
        if (rc == KFK_QUEUE_FULL)
            return 1;
        if (rc != KFK_OK) {
            /* Not retriable as it stands (unknown topic, message too
             * large): say so loudly; the offsets still move on. */
            log_error("correlate", "cannot publish to %s: %s", p->topic,
                      err.msg);
            continue;
        }
        if (strcmp(p->topic, KFK_TOPIC_INCIDENTS) == 0)
            c->incidents++;
    }
    return 0;
}


/* Every output of the batch is reported: go on now, not at the next
 * tick (up to DELIVERY_POLL_US later). Not from inside the report's
 * callback: through the loop. */
static void on_delivered(void *arg)
{
    correlator *c = arg;

    if (cur(c)->phase == PH_DELIVERING)
        event_active(c->tick, EV_TIMEOUT, 0);
}

static void arm_tick(correlator *c)
{
    struct timeval tv = {0, DELIVERY_POLL_US};
    evtimer_add(c->tick, &tv);
}

/* The first batch's state is in Redis: its outputs go out. */
static void publish_head(correlator *c)
{
    cycle *y = cur(c);

    crash_point(c, y, PH_STORING);
    y->phase = PH_PUBLISHING;
    advance(c);
}

static void on_stored(void *arg)
{
    cycle *y = arg;
    correlator *c = y->owner;

    y->stored = 1;
    y->t_stored = ts_mono();
    if (y == cur(c) && y->phase == PH_STORING)
        publish_head(c);
}

static void on_batch(void *arg, rd_kafka_message_t **msgs, size_t n);

/* The first batch's messages go for a ticket of its offsets: the
 * consumer may hand out the next. */
static void let_go(correlator *c)
{
    cycle *y = cur(c);

    if (y->batch && !y->ticket)
        y->ticket = kfk_consumer_detach(c->cons);
}

/* The batch fed behind the first one becomes the first: its messages go,
 * and its outputs go out once its state is in Redis. */
static void promote(correlator *c)
{
    cycle *y;

    c->head = !c->head;
    y = cur(c);
    if (y->phase == PH_IDLE)
        return;
    let_go(c);
    if (y->stored)
        publish_head(c);
}

static void on_cleared(void *arg)
{
    correlator *c = arg;
    cycle *y = cur(c);
    cs_err err;

    if (y->batch) {
        double phase[CM_PHASE__COUNT] = {
            (double)(y->t_fed - y->t_batch) / TS_SEC,
            (double)(y->t_stored - y->t_fed) / TS_SEC,
            (double)(y->t_delivered - y->t_stored) / TS_SEC,
            (double)(ts_mono() - y->t_delivered) / TS_SEC};
        cm_batch(c->mx, y->nbatch, phase);
        if (kfk_consumer_commit_ticket(c->cons, y->ticket, &err))
            log_warn("correlate", "offsets not committed: %s", err.msg);
        else
            log_debug("correlate", "batch committed: %zu signals, %zu outputs "
                      "delivered, %lu signals so far; feed %.1f ms, redis "
                      "%.1f ms, kafka %.1f ms, outbox+commit %.1f ms",
                      y->nbatch, y->out.n, c->signals,
                      (double)(y->t_fed - y->t_batch) / 1000,
                      (double)(y->t_stored - y->t_fed) / 1000,
                      (double)(y->t_delivered - y->t_stored) / 1000,
                      (double)(ts_mono() - y->t_delivered) / 1000);
        y->ticket = NULL;
    }
    cycle_clear(y);
    if (c->leftover) {
        /* The outbox found in Redis is out: now take new signals. */
        c->leftover = 0;
        kfk_consumer_pause(c->cons, 0);
    }
    promote(c);
}

/* Drives a batch from "state stored" to "offsets committed". */
static void advance(correlator *c)
{
    cycle *y = cur(c);
    unsigned long failed;
    size_t outbox = 0;

    switch (y->phase) {
    case PH_PUBLISHING:
        if (produce_pending(c)) {
            arm_tick(c);
            return;
        }
        y->phase = PH_DELIVERING;
        /* fall through */
    case PH_DELIVERING:
        kfk_producer_poll(c->out);
        if (kfk_tracker_pending(c->trk) > 0) {
            arm_tick(c);
            return;
        }
        if ((failed = kfk_tracker_take_failed(c->trk)) > 0) {
            log_warn("correlate", "%lu outputs not delivered; publishing the "
                                  "batch's %zu outputs again", failed, y->out.n);
            c->republished += y->out.n;
            cm_republished(c->mx, y->out.n);
            y->out.sent = 0;
            y->phase = PH_PUBLISHING;
            arm_tick(c);
            return;
        }
        crash_point(c, y, PH_DELIVERING);
        y->t_delivered = ts_mono();
        y->phase = PH_CLEARING;
        /* The outbox fields are their content's hash: a batch behind this
         * one that queued the same field queued the same output, already
         * delivered here. */
        for (size_t i = 0; i < y->out.n; i++)
            if (y->out.v[i].outbox) {
                store_ops()->hash_del(c->st, y->out.v[i].outbox,
                                      y->out.v[i].field);
                outbox++;
            }
        /* Nothing to clear: done now, not after the batch fed behind
         * this one (a flush is acknowledged after every one before it). */
        if (outbox)
            store_flush(c->st, on_cleared, c);
        else
            on_cleared(c);
        return;
    default:
        return;
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    advance(arg);
}

/* A cluster's signals must come on the partition its state belongs to:
 * another partitioner (a Java producer's murmur2) would split it. */
static void check_route(correlator *c, const rd_kafka_message_t *m,
                        const sig *s)
{
    int32_t want;

    if (c->nparts <= 0)
        return;
    want = kfk_partition_of(s->cluster, strlen(s->cluster), c->nparts);
    if (want == m->partition || c->misrouted++)
        return;
    log_warn("correlate", "cluster %s arrived on partition %d, not on %d "
             "where the producers' default partitioner puts it: with more "
             "than one correlator its state is split (produce signals keyed "
             "by cluster with librdkafka's consistent_random)", s->cluster,
             (int)m->partition, (int)want);
}

static void on_batch(void *arg, rd_kafka_message_t **msgs, size_t n)
{
    correlator *c = arg;
    /* the first slot when free (outputs of the outbox may wait there),
     * else the one behind: the consumer hands out no third batch */
    cycle *y = cur(c)->phase == PH_IDLE ? cur(c) : behind(c);

    y->batch = 1;
    y->nbatch = n;
    y->t_batch = ts_mono();
    c->fill = y;
    if (!c->reading) { /* says the consumer reads; bench/e2e.sh times it */
        c->reading = 1;
        log_info("correlate", "first batch read: %zu signals", n);
    }
    eng_set_wall(c->eng, ts_now()); /* no signal may run ahead of it */
    for (size_t i = 0; i < n; i++) {
        sig s;
        cs_err err;
        if (sig_parse_msgpack(&s, msgs[i]->payload, msgs[i]->len, &err)) {
            dead_letter(c, msgs[i], err.msg);
            cm_dead(c->mx, CM_DEAD_UNDECODABLE);
            continue;
        }
        check_route(c, msgs[i], &s);
        if (eng_feed(c->eng, &s) < 0) {
            char why[256];
            eng_refusal_reason(c->eng, &s, why, sizeof why);
            dead_letter(c, msgs[i], why);
            cm_dead(c->mx, CM_DEAD_REFUSED);
        } else {
            c->signals++;
            cm_signal(c->mx, (int)s.source, s.cluster, s.ts);
        }
        sig_free(&s);
    }
    /* Timers (a job's absent progress) by the wall clock once caught up.
     * They ride on batches: a cluster's metrics arrive every scrape, so a
     * silent topic is the one case where a stall waits for the next one. */
    eng_tick(c->eng, ts_now());
    eng_flush(c->eng, on_change, c);
    y->t_fed = ts_mono();
    y->phase = PH_STORING;
    if (y == cur(c)) /* nothing ahead: the next batch may come */
        let_go(c);
    store_flush(c->st, on_stored, y);
}

/* A slice of the prune's walk over the jobs, then the loop's other work
 * (batches, replies) before the next: a timer due at once, not an active
 * event, which the loop would run again before polling its sockets. Its
 * deletions ride along with the next batch's pipeline. */
static void on_prune_more(evutil_socket_t fd, short what, void *arg)
{
    correlator *c = arg;
    int done;

    (void)fd;
    (void)what;
    c->pruned += eng_prune_step(c->eng, PRUNE_SLICE, &done);
    if (!done) {
        evtimer_add(c->prune_more, &at_once);
        return;
    }
    if (c->pruned > 0)
        log_info("correlate", "forgot %zu incidents and jobs past the horizon",
                 c->pruned);
    c->pruned = 0;
}

/* The log lines the caps held back in the second that ended. */
static void on_say_held(evutil_socket_t fd, short what, void *arg)
{
    correlator *c = arg;
    int64_t now = ts_mono();

    (void)fd;
    (void)what;
    lcap_flush(c->cap_inc, now);
    lcap_flush(c->cap_dead, now);
}

static void on_prune(evutil_socket_t fd, short what, void *arg)
{
    correlator *c = arg;

    (void)fd;
    (void)what;
    c->pruned += eng_prune_begin(c->eng); /* a walk under way goes on */
    if (!evtimer_pending(c->prune_more, NULL))
        evtimer_add(c->prune_more, &at_once);
}

/* ---- start-up: read the state back ----------------------------------- */

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int owns(const correlator *c, const char *cluster)
{
    int32_t p;

    if (c->nparts <= 0)
        return 1;
    p = kfk_partition_of(cluster, strlen(cluster), c->nparts);
    return bsearch(&p, c->owned, c->nowned, sizeof *c->owned, cmp_i32) != NULL;
}

/* Whether the state key "cascade:{C}:..." is of a cluster owned here. */
static int owned_key(const correlator *c, const char *key)
{
    const char *open = strchr(key, '{');
    const char *close = open ? strstr(open, "}:") : NULL;
    char cluster[128];

    if (!close || (size_t)(close - open - 1) >= sizeof cluster)
        return 0;
    snprintf(cluster, sizeof cluster, "%.*s", (int)(close - open - 1),
             open + 1);
    return owns(c, cluster);
}

static int r_owned(void *arg, const char *key)
{
    return owned_key(arg, key);
}

static int r_window(void *arg, const char *key, int64_t ts, const char *member)
{
    correlator *c = arg;
    if (eng_restore_window(c->eng, key, ts, member) == 0)
        return 0;
    log_warn("correlate", "%s: unreadable window entry '%s' skipped", key,
             member);
    return -1;
}

static int r_wants(void *arg, const char *key)
{
    (void)arg;
    return eng_restore_wants(key) || outq_is_outbox(key);
}

static int32_t r_part(void *arg, const char *topic, const char *cluster)
{
    return out_partition(arg, topic, cluster);
}

static int r_hash(void *arg, const char *key, const char *field,
                  const char *value)
{
    correlator *c = arg;
    cs_err err;

    if (outq_is_outbox(key)) {
        if (outq_restore(&c->fill->out, key, field, value, r_part, c) == 0)
            return 0;
        log_warn("correlate", "%s %s: malformed outbox record skipped", key,
                 field);
        return -1;
    }
    if (eng_restore_hash(c->eng, key, field, value, &err) == 0)
        return 0;
    log_warn("correlate", "state record skipped: %s", err.msg);
    return -1;
}

static int restore(correlator *c, cs_err *err)
{
    static const store_restore_fns fns = {r_window, r_wants, r_hash,
                                          r_owned};
    long n;
    size_t open;

    if (eng_reset(c->eng, err))
        return -1;
    c->fill = cur(c); /* the outbox's outputs go out first */
    n = store_restore(c->opts.redis, "", &fns, c, err);
    if (n < 0)
        return -1;
    open = eng_restore_done(c->eng);
    log_info("correlate", "restored %ld state records from redis for %zu of "
             "%d partitions: %zu open incidents, %zu outputs to publish again",
             n, c->nowned, (int)c->nparts, open, cur(c)->out.n);
    return 0;
}

/* Outputs found in the outbox go out before the next signal is taken,
 * unless a batch that came meanwhile carries them. */
static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    correlator *c = arg;
    cycle *y = cur(c);

    (void)fd;
    (void)what;
    if (y->phase != PH_IDLE || behind(c)->phase != PH_IDLE || y->out.n == 0)
        return;
    c->leftover = 1;
    c->republished += y->out.n;
    kfk_consumer_pause(c->cons, 1);
    y->phase = PH_PUBLISHING;
    advance(c);
}

/* A fault that leaves nothing safe to do: said, and the loop stopped. */
static void stop(correlator *c, const char *what, const char *why)
{
    log_error("correlate", "%s: %s; stopping", what, why);
    c->failed = 1;
    c->loaded = 0;
    event_base_loopbreak(c->base);
}

static void on_fatal(void *arg, const char *reason)
{
    stop(arg, "kafka", reason);
}

/* The signals topic's partition count is not the one the state was
 * built with: what it means and what to do (in full: docs/ARCHITECTURE.md,
 * "Kafka topics"). */
static void parts_differ(cs_err *err, long have, long want)
{
    cs_err_set(err, "%s has %ld partitions, but the correlators' state in "
               "Redis was built for %ld (%s): each cluster's state belongs to "
               "the partition its key hashes to. Give the topic %ld "
               "partitions again, or drain every correlator and record %ld "
               "there (docs/ARCHITECTURE.md, \"Kafka topics\")",
               KFK_TOPIC_SIGNALS, have, want, STORE_META, want, have);
}

/* At start: the signals topic must exist, and its partition count is the
 * one on record in Redis (recorded now by the first correlator). */
static int partitions_check(correlator *c, cs_err *err)
{
    const char *const topics[] = {KFK_TOPIC_SIGNALS, NULL};
    int32_t have;
    long want;

    if (kfk_producer_topics(c->out, topics, &have, 10000, err))
        return -1;
    if (have <= 0) { /* a topic just made, its leaders not elected yet */
        cs_err_set(err, "%s has no partitions with a leader yet: start again "
                   "in a moment", KFK_TOPIC_SIGNALS);
        return -1;
    }
    if ((want = store_partitions(c->opts.redis, KFK_TOPIC_SIGNALS, have,
                                 err)) < 0)
        return -1;
    if (want != have) {
        parts_differ(err, have, want);
        return -1;
    }
    c->want_parts = have;
    return 0;
}

static int same_set(const correlator *c, const int32_t *parts, size_t n,
                    int32_t cnt)
{
    return c->loaded && c->nparts == cnt && c->nowned == n &&
           (n == 0 || !memcmp(c->owned, parts, n * sizeof *parts));
}

/* A rebalance changed what this correlator owns. No batch is held (the
 * consumer calls this between batches), so every write of ours is in
 * Redis: forget everything and read back the clusters now owned,
 * including the outputs another member (or our previous run) stored but
 * may not have published. Blocking, like a start: the consumer fetches
 * nothing for the new partitions until this returns. */
static void on_assign(void *arg, const int32_t *parts, size_t n, int32_t cnt)
{
    correlator *c = arg;
    cs_err err = {{0}};

    if (c->failed)
        return;
    if (cnt > 0 && cnt != c->want_parts) { /* partitions added meanwhile */
        parts_differ(&err, cnt, c->want_parts);
        stop(c, "rebalance", err.msg);
        return;
    }
    if (same_set(c, parts, n, cnt))
        return;
    free(c->owned);
    c->owned = n ? xmalloc(n * sizeof *parts) : NULL;
    if (n)
        memcpy(c->owned, parts, n * sizeof *parts);
    c->nowned = n;
    c->nparts = cnt;
    c->loaded = 1;
    /* no batch is on its way (the consumer waits for the tickets); the
     * outbox is read again */
    cycle_clear(cur(c));
    cycle_clear(behind(c));
    if (restore(c, &err)) {
        stop(c, "cannot read the state of the partitions assigned", err.msg);
        return;
    }
    if (cur(c)->out.n > 0)
        event_active(c->kick, 0, 0);
}

correlator *corr_start(struct event_base *base, const corr_opts *o,
                       kfk_producer *out, cs_err *err)
{
    correlator *c = calloc(1, sizeof *c);
    struct timeval every = {PRUNE_EVERY_S, 0}, second = {1, 0};
    pb_catalog *rules = o->rules; /* ours until the engine takes it */

    if (!c) {
        cs_err_set(err, "out of memory");
        pb_catalog_free(rules);
        return NULL;
    }
    c->base = base;
    c->opts = *o;
    c->cyc[0].owner = c->cyc[1].owner = c;
    c->fill = cur(c);
    c->opts.rules = NULL;
    crash_setup(c);
    c->mx = cm_new();
    c->out = out;
    c->trk = kfk_tracker_new();
    if (c->trk)
        kfk_tracker_on_done(c->trk, on_delivered, c);
    c->tick = evtimer_new(base, on_tick, c);
    c->kick = evtimer_new(base, on_kick, c);
    c->prune = event_new(base, -1, EV_PERSIST, on_prune, c);
    c->prune_more = evtimer_new(base, on_prune_more, c);
    c->say_held = event_new(base, -1, EV_PERSIST, on_say_held, c);
    c->cap_inc = lcap_new("correlate", LOG_LVL_INFO, "incident lines",
                          LOG_LINES_PER_S);
    c->cap_dead = lcap_new("correlate", LOG_LVL_WARN, "dead letters",
                           LOG_LINES_PER_S);
    if (!c->trk || !c->tick || !c->kick || !c->prune || !c->prune_more ||
        !c->say_held || !c->cap_inc || !c->cap_dead ||
        event_add(c->prune, &every) || event_add(c->say_held, &second)) {
        cs_err_set(err, "out of memory");
        goto fail;
    }
    if (!(c->st = store_new(base, o->redis, "", err)) ||
        !(c->eng = eng_new(store_ops(), c->st, err)))
        goto fail;
    if (o->max_clusters)
        eng_set_max_clusters(c->eng, o->max_clusters);
    eng_set_max_seen(c->eng, o->max_seen);
    if (rules) {
        pb_catalog *r = rules;
        rules = NULL;
        if (eng_set_catalog(c->eng, r, err))
            goto fail;
    }
    /* Redis must answer now; the state itself is read once the group
     * says which clusters are ours (on_assign). */
    if (rconn_check(o->redis, err) || partitions_check(c, err))
        goto fail;
    kfk_consumer_opts co = kfk_consumer_defaults(
        o->brokers, o->group && *o->group ? o->group : KFK_GROUP_CORRELATE,
        KFK_TOPIC_SIGNALS);
    co.props = o->props;
    co.instance_id = o->instance_id;
    co.on_fatal = on_fatal;
    co.max_batch = o->batch ? o->batch : 10000;
    if (o->fetch_wait_ms >= 0)
        co.fetch_wait_ms = o->fetch_wait_ms;
    co.on_batch = on_batch;
    co.arg = c;
    c->cons = kfk_consumer_open(base, &co, err);
    if (!c->cons)
        goto fail;
    kfk_consumer_on_assign(c->cons, on_assign, c);
    return c;
fail:
    pb_catalog_free(rules);
    corr_free(c);
    return NULL;
}

int corr_set_catalog(correlator *c, struct pb_catalog *cat, cs_err *err)
{
    return eng_set_catalog(c->eng, cat, err);
}

int corr_drained(correlator *c)
{
    return c->loaded && cur(c)->phase == PH_IDLE &&
           behind(c)->phase == PH_IDLE && !c->leftover &&
           kfk_consumer_caught_up(c->cons);
}

int corr_commit_wait(correlator *c, int timeout_ms, cs_err *err)
{
    return kfk_consumer_commit_wait(c->cons, timeout_ms, err);
}

void corr_stats(const correlator *c, unsigned long *signals,
                unsigned long *dead, unsigned long *incidents,
                unsigned long long *lost)
{
    *signals = c->signals;
    *dead = c->dead;
    *incidents = c->incidents;
    *lost = c->cons ? kfk_consumer_lost(c->cons) : 0;
}

int corr_failed(const correlator *c)
{
    return c->failed;
}

/* Both clients: signals in, outputs out. */
static int corr_kafka_up(const correlator *c)
{
    return (!c->cons || kfk_consumer_up(c->cons)) &&
           (!c->out || kfk_producer_up(c->out));
}

void corr_metrics(const correlator *c, mx_out *o)
{
    cm_write(c->mx, o, c->eng, c->st, c->cons, corr_kafka_up(c));
}

int corr_ready(const correlator *c, char *why, size_t len)
{
    if (c->failed)
        snprintf(why, len, "stopped on a fault of its own");
    else if (!store_up(c->st))
        snprintf(why, len, "not connected to Redis");
    else if (!corr_kafka_up(c))
        snprintf(why, len, "no connection to a Kafka broker up");
    else if (!kfk_consumer_owned(c->cons))
        snprintf(why, len, "no partition of %s assigned yet",
                 KFK_TOPIC_SIGNALS);
    else if (!c->loaded)
        snprintf(why, len, "state not restored from Redis yet");
    else
        return 1;
    return 0;
}

void corr_free(correlator *c)
{
    if (!c)
        return;
    for (int i = 0; i < 2; i++) {
        kfk_ticket_drop(c->cons, c->cyc[i].ticket);
        outq_free(&c->cyc[i].out);
    }
    kfk_consumer_free(c->cons);
    if (c->tick)
        event_free(c->tick);
    if (c->kick)
        event_free(c->kick);
    free(c->owned);
    if (c->prune)
        event_free(c->prune);
    if (c->prune_more)
        event_free(c->prune_more);
    if (c->say_held)
        event_free(c->say_held);
    if (c->cap_inc) /* what the last second held back */
        lcap_flush(c->cap_inc, INT64_MAX);
    if (c->cap_dead)
        lcap_flush(c->cap_dead, INT64_MAX);
    lcap_free(c->cap_inc);
    lcap_free(c->cap_dead);
    eng_free(c->eng);
    store_free(c->st);
    kfk_tracker_release(c->trk);
    cm_free(c->mx);
    free(c);
}
