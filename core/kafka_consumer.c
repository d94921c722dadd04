/* The consumer-group reader (core/kafka.h): driven by libevent without
 * blocking it, one batch held at a time, committed only when the caller
 * says the batch is durable elsewhere; partitions owned, messages found
 * missing, and the drain of a backlog. */
#include "core/kafka.h"
#include "core/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/log.h"
#include "core/mem.h"

/* An idle consumer still has to call into librdkafka now and then, or it
 * exceeds max.poll.interval.ms and is evicted from its group. It is also
 * the safety net of the queue's wake-up pipe: after a quiet spell the
 * first messages were sometimes seen only at this poll (alerts reached
 * their incident up to 1 s late with a 1 s poll; bench/alert_latency.py),
 * so it runs every 20 ms: 50 cheap non-blocking calls a second. */
#define KFK_IDLE_POLL_MS 20

struct kfk_consumer {
    kfk_link link; /* first: the opaque's (kfk_conf_watch) */
    rd_kafka_t *rk;
    rd_kafka_queue_t *q;
    int pipefd[2];
    struct event *wake, *idle;
    rd_kafka_message_t **held;
    size_t nheld, max_batch;
    kfk_batch_fn fn;
    void (*on_fatal)(void *arg, const char *reason);
    void *arg;
    int paused;
    /* Tickets out (kfk_consumer_detach); a rebalance that came meanwhile,
     * its callback not yet run; a batch consumed after it, held back
     * until the callback ran. */
    int ntickets, assign_due, parked;
    int fatal; /* librdkafka's fatal error seen: nothing more is handed out */
    int32_t *owned; /* partitions owned now, sorted */
    size_t nowned;
    int32_t partition_cnt; /* of the topic; 0 until known */
    char *topic;
    kfk_assign_fn on_assign;
    void *assign_arg;
    /* Drain: per owned partition, the offset it must be read up to (the
     * end when the drain began; -1: nothing new), and whether taken. */
    int64_t *target;
    int marked;
    /* A group-less client of its own for the drain's ListOffsets, made at
     * the first drain: a request on the consumer's connection waits
     * behind its pending fetch, which the broker holds up to
     * fetch.wait.max.ms (58-100 ms per request against the embedded
     * broker's 100 ms wait, at the end of every drain). */
    rd_kafka_conf_t *ends_conf;
    rd_kafka_t *ends_rk;
    /* Per partition number, the offset the next message should have (-1:
     * not known yet; forgotten when partitions move), the offset below
     * which every message was read or counted lost (kept across moves,
     * so nothing is counted twice), and how many were found missing. */
    int64_t *next, *acct;
    size_t nnext;
    unsigned long long lost;
};

static void consumer_commit_cb(rd_kafka_t *rk, rd_kafka_resp_err_t e,
                               rd_kafka_topic_partition_list_t *offsets,
                               void *opaque)
{
    (void)rk;
    (void)offsets;
    (void)opaque;
    if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET)
        log_warn("kafka", "offset commit failed: %s", rd_kafka_err2str(e));
}

static void drain_pipe(int fd)
{
    char buf[64];

    while (read(fd, buf, sizeof buf) > 0)
        ;
}

unsigned long long kfk_consumer_lost(const kfk_consumer *c)
{
    return c->lost;
}

/* Forgets where partitions stood: they were assigned or revoked. */
static void gap_reset(kfk_consumer *c, const rd_kafka_topic_partition_list_t *parts)
{
    for (int k = 0; k < parts->cnt; k++) {
        int32_t p = parts->elems[k].partition;
        if (p >= 0 && (size_t)p < c->nnext)
            c->next[p] = -1;
    }
}

/* Makes room for partition p in next[] and acct[]. */
static void gap_slot(kfk_consumer *c, int32_t p)
{
    if ((size_t)p >= c->nnext) {
        size_t n = (size_t)p + 16;
        int64_t *v = xrealloc(c->next, n * sizeof *v);
        int64_t *a = xrealloc(c->acct, n * sizeof *a);
        for (size_t i = c->nnext; i < n; i++) {
            v[i] = -1;
            a[i] = 0;
        }
        c->next = v;
        c->acct = a;
        c->nnext = n;
    }
}

/* cascade's topics are neither compacted nor transactional, so their
 * offsets have no holes: a message past the one expected means the
 * broker deleted what lay between before this consumer read it
 * (retention, or the embedded broker, which keeps about 5 MiB per
 * partition). Those signals are lost; say so, with the count. */
static void gap_check(kfk_consumer *c, const rd_kafka_message_t *m)
{
    int32_t p = m->partition;

    if (p < 0)
        return;
    gap_slot(c, p);
    int64_t from = c->next[p] > c->acct[p] ? c->next[p] : c->acct[p];
    if (c->next[p] >= 0 && m->offset > from) {
        long long missing = (long long)(m->offset - from);
        c->lost += (unsigned long long)missing;
        log_error("kafka", "%s [%d]: offsets %lld to %lld were deleted by the "
                  "broker before they were read: %lld messages lost (%llu in "
                  "all); its retention (the embedded broker keeps about 5 MiB "
                  "per partition) is shorter than this consumer's lag",
                  c->topic, (int)p, (long long)from,
                  (long long)m->offset - 1, missing, c->lost);
    }
    c->next[p] = m->offset + 1;
    if (c->acct[p] < c->next[p])
        c->acct[p] = c->next[p];
}

/* Destroys the error entries of a fresh batch and moves the messages to the
 * front; returns how many messages remain. */
static size_t keep_messages(kfk_consumer *c, rd_kafka_message_t **m, size_t n)
{
    size_t good = 0;

    for (size_t i = 0; i < n; i++) {
        if (!m[i]->err) {
            gap_check(c, m[i]);
            m[good++] = m[i];
            continue;
        }
        if (m[i]->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            log_warn("kafka", "consumer: %s",
                     rd_kafka_message_errstr(m[i]));
        rd_kafka_message_destroy(m[i]);
    }
    return good;
}

/* librdkafka raises a fatal error (a fenced static member) through the
 * queue this consumer serves; it is checked after each serve, a cheap
 * atomic read. The owner hears of it once and stops. */
static int fatal_seen(kfk_consumer *c)
{
    char why[256], reason[512];
    rd_kafka_resp_err_t e;

    if (c->fatal)
        return 1;
    if (!(e = rd_kafka_fatal_error(c->rk, why, sizeof why)))
        return 0;
    c->fatal = 1;
    if (e == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID)
        snprintf(reason, sizeof reason, "another consumer joined the group "
                 "with this one's instance id (kafka.instance_id, "
                 "--instance-id), and the broker fenced this one: each "
                 "process needs an id of its own");
    else
        snprintf(reason, sizeof reason, "Kafka client failed: %s", why);
    log_error("kafka", "%s: %s", c->topic, reason);
    if (c->on_fatal)
        c->on_fatal(c->arg, reason);
    return 1;
}

static void deliver(kfk_consumer *c)
{
    ssize_t n;
    size_t good = 0;

    while (!good) {
        if (fatal_seen(c))
            return;
        n = rd_kafka_consume_batch_queue(c->q, 0, c->held, c->max_batch);
        if (n > 0 && fatal_seen(c)) {
            for (ssize_t i = 0; i < n; i++)
                rd_kafka_message_destroy(c->held[i]);
            return;
        }
        if (n < 0) {
            log_warn("kafka", "consume: %s",
                     rd_kafka_err2str(rd_kafka_last_error()));
            return;
        }
        if (n == 0)
            return;
        good = keep_messages(c, c->held, (size_t)n);
    }
    c->nheld = good;
    if (c->assign_due) { /* a rebalance in that call, a ticket still out */
        c->parked = 1;
        return;
    }
    c->fn(c->arg, c->held, good);
}

static int32_t partition_count(kfk_consumer *c);

/* The callback of a rebalance that waited for the tickets. */
static void assign_now(kfk_consumer *c)
{
    c->assign_due = 0;
    if (c->on_assign)
        c->on_assign(c->assign_arg, c->owned, c->nowned, partition_count(c));
}

/* A held batch blocks delivery; releasing it re-activates this callback,
 * so wake-ups that arrive meanwhile only need their bytes drained. */
static void consumer_wake(evutil_socket_t fd, short what, void *arg)
{
    kfk_consumer *c = arg;

    (void)what;
    drain_pipe((int)fd);
    if (c->assign_due && !c->ntickets)
        assign_now(c);
    if (c->assign_due || c->paused || fatal_seen(c))
        return;
    if (c->parked) {
        c->parked = 0;
        c->fn(c->arg, c->held, c->nheld);
    } else if (!c->nheld) {
        deliver(c);
    }
}

static void consumer_idle(evutil_socket_t fd, short what, void *arg)
{
    kfk_consumer *c = arg;

    (void)fd;
    (void)what;
    if (!fatal_seen(c) && !c->nheld && !c->paused)
        event_active(c->wake, EV_READ, 0);
}

static int consumer_events(kfk_consumer *c, struct event_base *base,
                           cs_err *err)
{
    struct timeval tv = {KFK_IDLE_POLL_MS / 1000,
                         (KFK_IDLE_POLL_MS % 1000) * 1000};

    if (pipe2(c->pipefd, O_NONBLOCK | O_CLOEXEC)) {
        cs_err_set(err, "consumer wake-up pipe: %s", strerror(errno));
        c->pipefd[0] = c->pipefd[1] = -1;
        return -1;
    }
    c->wake = event_new(base, c->pipefd[0], EV_READ | EV_PERSIST,
                        consumer_wake, c);
    c->idle = event_new(base, -1, EV_PERSIST, consumer_idle, c);
    if (!c->wake || !c->idle || event_add(c->wake, NULL) ||
        event_add(c->idle, &tv)) {
        cs_err_set(err, "consumer: cannot register events");
        return -1;
    }
    rd_kafka_queue_io_event_enable(c->q, c->pipefd[1], "w", 1);
    return 0;
}

/* The topic's partition count, asked once (a rebalance is rare and the
 * consumer is not fetching meanwhile). */
static int32_t partition_count(kfk_consumer *c)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *t;

    if (c->partition_cnt > 0)
        return c->partition_cnt;
    if (!(t = rd_kafka_topic_new(c->rk, c->topic, NULL)))
        return 0;
    if (rd_kafka_metadata(c->rk, 0, t, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        md->topic_cnt == 1 && !md->topics[0].err)
        c->partition_cnt = md->topics[0].partition_cnt;
    else
        log_warn("kafka", "no partition count for %s: rebalances cannot "
                 "tell which clusters moved", c->topic);
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
    return c->partition_cnt;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Owned partitions after an assignment (add) or a revocation (!add); a
 * full assignment replaces them. */
static void owned_update(kfk_consumer *c, const rd_kafka_topic_partition_list_t *parts,
                         int add, int replace)
{
    size_t keep = 0;
    int32_t *o;

    gap_reset(c, parts);
    if (!add) {
        for (size_t i = 0; i < c->nowned; i++)
            if (!rd_kafka_topic_partition_list_find(parts, c->topic,
                                                    c->owned[i]))
                c->owned[keep++] = c->owned[i];
        c->nowned = keep;
        return;
    }
    if (replace)
        c->nowned = 0;
    o = xrealloc(c->owned, (c->nowned + (size_t)parts->cnt + 1) * sizeof *o);
    c->owned = o;
    for (int k = 0; k < parts->cnt; k++)
        c->owned[c->nowned++] = parts->elems[k].partition;
    c->marked = 0; /* a new assignment: its ends are taken again */
    qsort(c->owned, c->nowned, sizeof *c->owned, cmp_i32);
}

static void list_parts(char *buf, size_t len,
                       const rd_kafka_topic_partition_list_t *parts)
{
    size_t off = 0;

    buf[0] = '\0';
    for (int i = 0; i < parts->cnt && off < len - 16; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%d", i ? "," : "",
                                (int)parts->elems[i].partition);
    if (!buf[0])
        snprintf(buf, len, "none");
}

/* Where the group stands on newly assigned partitions: a commit the
 * broker has deleted past then shows as a hole at the first message
 * (gap_check). One OffsetFetch round trip, blocking like the state
 * rebuild from Redis that follows every assignment. */
static void gap_seed(kfk_consumer *c, const rd_kafka_topic_partition_list_t *parts)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_copy(parts);

    if (!rd_kafka_committed(c->rk, l, 5000))
        for (int k = 0; k < l->cnt; k++) {
            int32_t p = l->elems[k].partition;
            if (p < 0 || l->elems[k].err || l->elems[k].offset < 0)
                continue;
            gap_slot(c, p);
            if (c->next[p] < 0)
                c->next[p] = l->elems[k].offset;
        }
    rd_kafka_topic_partition_list_destroy(l);
}

/* Partitions move between the group's members. Whoever consumes a
 * partition owns the state of the clusters keyed to it: on each change
 * the owner of the callback (the correlator) re-reads that state from
 * Redis before it sees a message of them. */
static void consumer_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t e,
                                  rd_kafka_topic_partition_list_t *parts,
                                  void *opaque)
{
    kfk_consumer *c = opaque;
    int cooperative = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    int assign = e == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS;
    char list[256];

    list_parts(list, sizeof list, parts);
    log_info("kafka", "partitions %s: %s", assign ? "assigned" : "revoked",
             list);
    owned_update(c, parts, assign, assign && !cooperative);
    if (assign) {
        gap_seed(c, parts);
        if (cooperative)
            rd_kafka_incremental_assign(rk, parts);
        else
            rd_kafka_assign(rk, parts);
    } else {
        if (cooperative)
            rd_kafka_incremental_unassign(rk, parts);
        else
            rd_kafka_assign(rk, NULL);
    }
    /* Eager: the assignment that follows says what is owned. With a
     * ticket out, the callee still writes that batch's state: the
     * callback waits for its commit (kfk_consumer_commit_ticket). */
    if (assign || cooperative) {
        c->assign_due = 1;
        if (!c->ntickets)
            assign_now(c);
        else
            log_info("kafka", "the new assignment waits for %d batch%s in "
                     "flight", c->ntickets, c->ntickets == 1 ? "" : "es");
    }
}

void kfk_consumer_on_assign(kfk_consumer *c, kfk_assign_fn fn, void *arg)
{
    c->on_assign = fn;
    c->assign_arg = arg;
}

void kfk_consumer_pause(kfk_consumer *c, int paused)
{
    c->paused = paused;
    if (!paused && c->wake)
        event_active(c->wake, EV_READ, 0);
}

int32_t kfk_partition_of(const char *key, size_t len, int32_t partition_cnt)
{
    return rd_kafka_msg_partitioner_consistent(NULL, key, len, partition_cnt,
                                               NULL, NULL);
}

static int consumer_subscribe(kfk_consumer *c, const char *topic, cs_err *err)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_resp_err_t e;

    rd_kafka_topic_partition_list_add(l, topic, RD_KAFKA_PARTITION_UA);
    e = rd_kafka_subscribe(c->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (e) {
        cs_err_set(err, "subscribing to %s: %s", topic, rd_kafka_err2str(e));
        return -1;
    }
    return 0;
}

/* Session timeouts (kafka.properties may set others). The broker moves a
 * member's partitions once it has not heard from it for
 * session.timeout.ms; librdkafka's heartbeats come from its own thread,
 * so a loop busy reading state back from Redis does not miss them
 * (max.poll.interval.ms, 5 min, bounds that).
 *
 * Dynamic members: 10 s (Kafka's classic value; librdkafka 2.0 has 45 s)
 * and a heartbeat every second. A correlator that dies holds the state of
 * its clusters until its partitions move: 10 s of signals not correlated
 * instead of 45. A member hears of a rebalance only from a heartbeat (a
 * commit refused with "rebalance in progress" does not make it rejoin):
 * a real broker waits for the members to rejoin for the rebalance
 * timeout (max.poll.interval.ms), but the embedded broker only for the
 * session timeout less 1 s, and at 3 s a member that missed one
 * heartbeat's news could miss that window (a joining correlator then
 * waited about 30 s, seen in live.group). 1 s leaves eight chances; the
 * broker takes one small request a second per member.
 *
 * Static members (kafka.instance_id): 45 s, Kafka's default since 3.0.
 * The point of an instance id is that a restarted process (a deploy, a
 * crash and its supervisor's restart) comes back within the session
 * timeout and gets its partitions back without any rebalance; the price
 * is that one that does not come back holds them that long. */
#define KFK_SESSION_MS "10000"
#define KFK_STATIC_SESSION_MS "45000"
#define KFK_HEARTBEAT_MS "1000"

static int consumer_client(kfk_consumer *c, const kfk_consumer_opts *o,
                           cs_err *err)
{
    char wait[16];
    int is_static = o->instance_id && o->instance_id[0];
    const char *kv[] = {"bootstrap.servers", o->brokers,
                        "client.id", "cascade-consumer",
                        "socket.nagle.disable", "true",
                        "group.id", o->group,
                        "enable.auto.commit", "false",
                        "enable.auto.offset.store", "false",
                        "auto.offset.reset", "earliest",
                        "session.timeout.ms",
                        is_static ? KFK_STATIC_SESSION_MS : KFK_SESSION_MS,
                        "heartbeat.interval.ms", KFK_HEARTBEAT_MS,
                        "fetch.wait.max.ms", wait,
                        /* last: dropped for a dynamic member */
                        "group.instance.id", o->instance_id, NULL};

    snprintf(wait, sizeof wait, "%d", o->fetch_wait_ms);
    if (!is_static)
        kv[sizeof kv / sizeof *kv - 3] = NULL;
    rd_kafka_conf_t *conf = kfk_conf_new(kv, o->props, err);

    if (!conf)
        return -1;
    kfk_conf_watch(conf);
    rd_kafka_conf_set_offset_commit_cb(conf, consumer_commit_cb);
    rd_kafka_conf_set_rebalance_cb(conf, consumer_rebalance_cb);
    rd_kafka_conf_set_opaque(conf, c);
    if (!(c->rk = kfk_client_new(RD_KAFKA_CONSUMER, conf, err)))
        return -1;
    const char *ends_kv[] = {"bootstrap.servers", o->brokers,
                             "client.id", "cascade-consumer-ends",
                             "socket.nagle.disable", "true", NULL};
    if (!(c->ends_conf = kfk_conf_new(ends_kv, o->props, err)))
        return -1;
    /* Errors and commit results then arrive on the queue we drain. */
    rd_kafka_poll_set_consumer(c->rk);
    c->q = rd_kafka_queue_get_consumer(c->rk);
    return 0;
}

kfk_consumer_opts kfk_consumer_defaults(const char *brokers, const char *group,
                                        const char *topic)
{
    return (kfk_consumer_opts){.brokers = brokers, .group = group,
                               .topic = topic,
                               .fetch_wait_ms = KFK_DEFAULT_FETCH_WAIT_MS};
}

kfk_consumer *kfk_consumer_open(struct event_base *base,
                                const kfk_consumer_opts *o, cs_err *err)
{
    kfk_consumer *c = calloc(1, sizeof *c);
    size_t max_batch = o->max_batch;

    if (!c || !max_batch || !(c->held = calloc(max_batch, sizeof *c->held))) {
        cs_err_set(err, c ? "consumer: max_batch must be at least 1 and fit "
                            "in memory" : "out of memory");
        free(c);
        return NULL;
    }
    c->pipefd[0] = c->pipefd[1] = -1;
    c->max_batch = max_batch;
    if (!(c->topic = strdup(o->topic))) {
        cs_err_set(err, "out of memory");
        goto fail;
    }
    c->fn = o->on_batch;
    c->on_fatal = o->on_fatal;
    c->arg = o->arg;
    if (consumer_client(c, o, err) ||
        consumer_events(c, base, err) || consumer_subscribe(c, o->topic, err))
        goto fail;
    /* Up from the start, as a producer is (kafka.h): the statistics say
     * otherwise only after KFK_STATS_MS. */
    c->link.up = 1;
    return c;
fail:
    kfk_consumer_free(c);
    return NULL;
}

/* One entry per partition, holding the next offset to read. */
static rd_kafka_topic_partition_list_t *held_offsets(const kfk_consumer *c)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    rd_kafka_topic_partition_t *tp;
    const rd_kafka_message_t *m;

    for (size_t i = 0; i < c->nheld; i++) {
        m = c->held[i];
        tp = rd_kafka_topic_partition_list_find(
            l, rd_kafka_topic_name(m->rkt), m->partition);
        if (!tp)
            tp = rd_kafka_topic_partition_list_add(
                l, rd_kafka_topic_name(m->rkt), m->partition);
        if (m->offset + 1 > tp->offset)
            tp->offset = m->offset + 1;
    }
    return l;
}

int kfk_consumer_commit_held(kfk_consumer *c, cs_err *err)
{
    if (!c->nheld)
        return 0;
    return kfk_consumer_commit_ticket(c, kfk_consumer_detach(c), err);
}

struct kfk_ticket {
    rd_kafka_topic_partition_list_t *offsets;
};

kfk_ticket *kfk_consumer_detach(kfk_consumer *c)
{
    kfk_ticket *t = xmalloc(sizeof *t);

    t->offsets = held_offsets(c);
    c->ntickets++;
    kfk_consumer_release(c);
    return t;
}

/* The last ticket in: a rebalance that waited for it runs now. */
static void ticket_done(kfk_consumer *c, kfk_ticket *t)
{
    rd_kafka_topic_partition_list_destroy(t->offsets);
    free(t);
    if (--c->ntickets == 0 && c->assign_due && c->wake)
        event_active(c->wake, EV_READ, 0);
}

/* Stores the offsets and commits them (asynchronously). */
int kfk_consumer_commit_ticket(kfk_consumer *c, kfk_ticket *t, cs_err *err)
{
    rd_kafka_resp_err_t e;
    int rc = 0;

    /* Storing fails for partitions revoked since the batch was read: their
     * new owner re-reads them, which at-least-once allows. */
    e = rd_kafka_offsets_store(c->rk, t->offsets);
    if (e) {
        cs_err_set(err, "storing offsets: %s", rd_kafka_err2str(e));
        rc = -1;
    } else if ((e = rd_kafka_commit(c->rk, NULL, 1)) &&
               e != RD_KAFKA_RESP_ERR__NO_OFFSET) {
        cs_err_set(err, "committing offsets: %s", rd_kafka_err2str(e));
        rc = -1;
    }
    ticket_done(c, t);
    return rc;
}

void kfk_ticket_drop(kfk_consumer *c, kfk_ticket *t)
{
    if (t)
        ticket_done(c, t);
}

void kfk_consumer_release(kfk_consumer *c)
{
    for (size_t i = 0; i < c->nheld; i++)
        rd_kafka_message_destroy(c->held[i]);
    c->nheld = 0;
    /* More may already be queued: librdkafka only signals the pipe when
     * its queue turns non-empty. */
    if (c->wake)
        event_active(c->wake, EV_READ, 0);
}

/* The offsets of every owned partition at time stamp `when` (-1: the
 * end, -2: the start), in one ListOffsets request per leader: asking
 * partition by partition (rd_kafka_query_watermark_offsets) took a round
 * trip each, 3.5 s for 64 partitions against the embedded broker. */
static rd_kafka_topic_partition_list_t *ends(kfk_consumer *c, int64_t when,
                                             int timeout_ms)
{
    rd_kafka_topic_partition_list_t *l;
    rd_kafka_t *rk = c->rk;
    cs_err err;

    if (!c->ends_rk && c->ends_conf) {
        rd_kafka_conf_t *conf = c->ends_conf;
        c->ends_conf = NULL; /* taken by the client, or freed */
        if (!(c->ends_rk = kfk_client_new(RD_KAFKA_CONSUMER, conf, &err)))
            log_warn("kafka", "%s: asking on the consumer's connection",
                     err.msg);
    }
    if (c->ends_rk)
        rk = c->ends_rk;
    l = rd_kafka_topic_partition_list_new((int)c->nowned);
    for (size_t i = 0; i < c->nowned; i++)
        rd_kafka_topic_partition_list_add(l, c->topic, c->owned[i])->offset =
            when;
    if (rd_kafka_offsets_for_times(rk, l, timeout_ms)) {
        rd_kafka_topic_partition_list_destroy(l);
        return NULL;
    }
    for (int i = 0; i < l->cnt; i++)
        if (l->elems[i].err) {
            rd_kafka_topic_partition_list_destroy(l);
            return NULL;
        }
    return l;
}

/* The ends of the owned partitions now, and where the group stands:
 * what a drain must read. Blocking (three requests). */
static int drain_mark(kfk_consumer *c, int timeout_ms)
{
    rd_kafka_topic_partition_list_t *l =
        rd_kafka_topic_partition_list_new((int)c->nowned);
    rd_kafka_topic_partition_list_t *hi = NULL, *lo = NULL;
    long long unread = 0;
    int nunread = 0, rc = -1;

    for (size_t i = 0; i < c->nowned; i++)
        rd_kafka_topic_partition_list_add(l, c->topic, c->owned[i]);
    if (rd_kafka_committed(c->rk, l, timeout_ms) ||
        !(hi = ends(c, RD_KAFKA_OFFSET_END, timeout_ms)) ||
        !(lo = ends(c, RD_KAFKA_OFFSET_BEGINNING, timeout_ms)))
        goto out;
    free(c->target);
    c->target = xcalloc(c->nowned + 1, sizeof *c->target);
    /* All three lists hold the owned partitions in the same order. */
    for (int i = 0; i < l->cnt; i++) {
        int64_t from = l->elems[i].offset, end = hi->elems[i].offset;
        int32_t p = l->elems[i].partition;
        gap_slot(c, p);
        if (from < 0) {
            from = lo->elems[i].offset; /* no commit: auto.offset.reset is
                                         * earliest */
            if (from > c->acct[p]) {
                unread += from - c->acct[p];
                nunread++;
                c->acct[p] = from;
            }
        }
        c->target[i] = from < end ? end : -1;
        /* A commit the broker has deleted past shows as a hole at the
         * first message read (gap_check); where this consumer already
         * reads, it knows better than the commit. */
        if (from >= 0 && c->next[p] < 0)
            c->next[p] = from;
    }
    if (unread) {
        c->lost += (unsigned long long)unread;
        log_error("kafka", "%s: %lld messages on %d partitions were deleted by "
                  "the broker before this group read any of them: its log "
                  "starts past them (retention; the embedded broker keeps "
                  "about 5 MiB per partition)", c->topic, unread, nunread);
    }
    rc = 0;
out:
    rd_kafka_topic_partition_list_destroy(l);
    if (hi)
        rd_kafka_topic_partition_list_destroy(hi);
    if (lo)
        rd_kafka_topic_partition_list_destroy(lo);
    c->marked = rc == 0;
    return rc;
}

int kfk_consumer_caught_up(kfk_consumer *c)
{
    rd_kafka_topic_partition_list_t *l;
    int done = 1;

    if (c->nheld || c->ntickets || c->assign_due || !c->nowned)
        return 0;
    if (!c->marked && drain_mark(c, 5000))
        return 0;
    l = rd_kafka_topic_partition_list_new((int)c->nowned);
    for (size_t i = 0; i < c->nowned; i++)
        rd_kafka_topic_partition_list_add(l, c->topic, c->owned[i]);
    rd_kafka_position(c->rk, l);
    for (int i = 0; i < l->cnt && done; i++)
        if (c->target[i] >= 0 && l->elems[i].offset < c->target[i])
            done = 0;
    rd_kafka_topic_partition_list_destroy(l);
    return done;
}

int kfk_consumer_commit_wait(kfk_consumer *c, int timeout_ms, cs_err *err)
{
    rd_kafka_queue_t *q = rd_kafka_queue_new(c->rk);
    rd_kafka_event_t *ev;
    rd_kafka_resp_err_t e;
    int rc = 0;

    e = rd_kafka_commit_queue(c->rk, NULL, q, NULL, NULL);
    if (e == RD_KAFKA_RESP_ERR__NO_OFFSET) {
        rd_kafka_queue_destroy(q);
        return 0;
    }
    if (!e) {
        ev = rd_kafka_queue_poll(q, timeout_ms);
        e = ev ? rd_kafka_event_error(ev) : RD_KAFKA_RESP_ERR__TIMED_OUT;
        rd_kafka_event_destroy(ev);
    }
    if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET) {
        cs_err_set(err, "committing offsets: %s", rd_kafka_err2str(e));
        rc = -1;
    }
    rd_kafka_queue_destroy(q);
    return rc;
}

static void consumer_close(kfk_consumer *c)
{
    rd_kafka_resp_err_t e;

    if (c->q) {
        rd_kafka_queue_io_event_enable(c->q, -1, NULL, 0);
        rd_kafka_queue_destroy(c->q);
    }
    e = rd_kafka_consumer_close(c->rk);
    if (e)
        log_warn("kafka", "consumer close: %s", rd_kafka_err2str(e));
    rd_kafka_destroy(c->rk);
}

void kfk_consumer_free(kfk_consumer *c)
{
    if (!c)
        return;
    if (c->wake)
        event_free(c->wake);
    if (c->idle)
        event_free(c->idle);
    c->wake = NULL;
    kfk_consumer_release(c);
    if (c->rk)
        consumer_close(c);
    if (c->ends_rk)
        rd_kafka_destroy(c->ends_rk);
    if (c->ends_conf)
        rd_kafka_conf_destroy(c->ends_conf);
    for (int i = 0; i < 2; i++)
        if (c->pipefd[i] >= 0)
            close(c->pipefd[i]);
    free(c->held);
    free(c->owned);
    free(c->target);
    free(c->next);
    free(c->acct);
    free(c->topic);
    free(c);
}

static void kfk_consumer_lag(const kfk_consumer *c,
                             void (*fn)(void *arg, int32_t partition,
                                        int64_t lag),
                             void *arg)
{
    for (size_t i = 0; i < c->nowned; i++) {
        int32_t p = c->owned[i];
        int64_t lo = -1, hi = -1, next = -1;

        if (p >= 0 && (size_t)p < c->nnext)
            next = c->next[p];
        if (rd_kafka_get_watermark_offsets(c->rk, c->topic, p, &lo, &hi) !=
                RD_KAFKA_RESP_ERR_NO_ERROR || hi < 0 || next < 0)
            fn(arg, p, -1);
        else
            fn(arg, p, hi > next ? hi - next : 0);
    }
}

struct lag_out {
    mx_out *o;
    const mx_family *f;
};

static void lag_sample(void *arg, int32_t partition, int64_t lag)
{
    struct lag_out *w = arg;
    char p[16];
    const char *v[] = {p};

    if (lag < 0)
        return;
    snprintf(p, sizeof p, "%d", (int)partition);
    mx_sample(w->o, w->f, v, (double)lag);
}

void kfk_consumer_lag_write(const kfk_consumer *c, mx_out *o,
                            const mx_family *f)
{
    struct lag_out w = {o, f};

    mx_family_begin(o, f);
    kfk_consumer_lag(c, lag_sample, &w);
}

int kfk_consumer_up(const kfk_consumer *c)
{
    return c->link.up;
}

size_t kfk_consumer_owned(const kfk_consumer *c)
{
    return c->nowned;
}

int kfk_consumer_assign_waiting(const kfk_consumer *c)
{
    return c->assign_due;
}
