/* The floor under detection latency: the correlator's cycle with no
 * engine in it. bench_latency then measures the relay as it measures the
 * correlator, and what the correlator adds to this floor is its own.
 *
 * usage: bench_relay --brokers ADDR --redis ADDR [--fetch-wait MS]
 *                    [--linger MS] [--batch N]
 *
 * Each batch goes through the correlator's steps (correlate/correlator.c),
 * with the same consumer (group, batch size, fetch wait) and producer
 * (linger, codec):
 *   one coalesced Redis write for the batch (an HSET with a field per
 *   message), acknowledged -> for each completing signal of bench_latency
 *   (a SLURM job cancel on node latNNNNNN), an incident-shaped record
 *   {"scenario":"peer.xid79_job_cancel","scope":{"node":...}} produced to
 *   cascade.incidents -> all delivered -> a second Redis round trip (the
 *   correlator's outbox clear) -> offsets committed.
 * The Redis writes go to one hash (cascade:bench-relay), so Redis memory
 * stays flat. Runs until SIGINT or SIGTERM. Prints "bench_relay: ready"
 * on stderr once the group assigned it partitions.
 * Exit codes: 0 stopped by a signal, 1 a component failed, 2 usage. */
#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kafka.h"
#include "core/rconn.h"

#define RELAY_KEY "cascade:bench-relay"
#define MAX_ARGS 20002 /* HSET key + 10 000 field/value pairs */

typedef struct relay {
    struct event_base *base;
    struct event *tick, *stop_int, *stop_term;
    redisAsyncContext *ac;
    kfk_consumer *cons;
    kfk_producer *out;
    kfk_tracker *trk;
    rd_kafka_message_t **msgs; /* the held batch */
    size_t n;
    enum { IDLE, STORING, DELIVERING, CLEARING } phase;
    int failed; /* a component failed: exit 1 */
    const char *argv[MAX_ARGS];
    size_t argl[MAX_ARGS];
    char fields[MAX_ARGS / 2][48];
} relay;

static void fail(relay *r, const char *what)
{
    fprintf(stderr, "bench_relay: %s\n", what);
    r->failed = 1;
    event_base_loopbreak(r->base);
}

/* A completing signal's node ("lat000123"), found in the msgpack payload
 * as bench_latency's --hop reader finds it; 0 when m completes nothing. */
static int node_of(const rd_kafka_message_t *m, char node[10])
{
    const char *p = m->payload, *lat;

    if (!p || !memmem(p, m->len, "CANCELLED", 9) ||
        !(lat = memmem(p, m->len, "lat", 3)) ||
        (size_t)(lat - p) + 9 > m->len)
        return 0;
    memcpy(node, lat, 9);
    node[9] = '\0';
    return 1;
}

/* 1 when reply is a reply and no error. */
static int ok(relay *r, const redisReply *reply, const char *what)
{
    char msg[160];

    if (reply && reply->type != REDIS_REPLY_ERROR)
        return 1;
    snprintf(msg, sizeof msg, "redis: %s: %s", what,
             reply ? reply->str : "no reply");
    fail(r, msg);
    return 0;
}

/* The handshake the correlator's link makes (core/rconn.h). */
static void on_hello(redisAsyncContext *ac, void *reply, void *arg)
{
    (void)ac;
    ok(arg, reply, "the handshake");
}

static void on_cleared(redisAsyncContext *ac, void *reply, void *arg)
{
    relay *r = arg;
    cs_err err;

    (void)ac;
    if (!ok(r, reply, "the clear"))
        return;
    r->phase = IDLE;
    if (kfk_consumer_commit_held(r->cons, &err))
        fprintf(stderr, "bench_relay: offsets not committed: %s\n", err.msg);
    r->n = 0;
}

/* Every record of the batch is reported: the outbox clear, then commit. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    relay *r = arg;

    (void)fd;
    (void)what;
    if (r->phase != DELIVERING)
        return;
    kfk_producer_poll(r->out);
    if (kfk_tracker_pending(r->trk) > 0) {
        struct timeval tv = {0, 1000};
        evtimer_add(r->tick, &tv);
        return;
    }
    if (kfk_tracker_take_failed(r->trk))
        return fail(r, "kafka: a record was not delivered");
    r->phase = CLEARING;
    if (redisAsyncCommand(r->ac, on_cleared, r, "HDEL %s outbox",
                          RELAY_KEY) != REDIS_OK)
        fail(r, "redis: cannot send the clear");
}

static void on_delivered(void *arg)
{
    relay *r = arg;

    event_active(r->tick, EV_TIMEOUT, 0);
}

static void on_stored(redisAsyncContext *ac, void *reply, void *arg)
{
    relay *r = arg;
    char node[10], rec[128];
    cs_err err;

    (void)ac;
    if (!ok(r, reply, "the batch's write"))
        return;
    r->phase = DELIVERING;
    for (size_t i = 0; i < r->n; i++) {
        if (!node_of(r->msgs[i], node))
            continue;
        int len = snprintf(rec, sizeof rec,
                           "{\"scenario\":\"peer.xid79_job_cancel\","
                           "\"scope\":{\"node\":\"%s\"}}", node);
        int rc;
        while ((rc = kfk_produce_tracked(r->out, KFK_TOPIC_INCIDENTS, node, 9,
                                         rec, (size_t)len, r->trk, &err)) ==
               KFK_QUEUE_FULL)
            kfk_producer_poll(r->out);
        if (rc != KFK_OK)
            return fail(r, err.msg);
    }
    on_tick(-1, 0, r);
}

/* One HSET for the whole batch: a field per message (partition:offset),
 * as the correlator coalesces a batch's window changes into a pipeline. */
static void on_batch(void *arg, rd_kafka_message_t **msgs, size_t n)
{
    relay *r = arg;
    size_t argc = 2;

    r->msgs = msgs;
    r->n = n;
    r->phase = STORING;
    r->argv[0] = "HSET";
    r->argl[0] = 4;
    r->argv[1] = RELAY_KEY;
    r->argl[1] = strlen(RELAY_KEY);
    for (size_t i = 0; i < n && argc + 2 <= MAX_ARGS; i++) {
        char *f = r->fields[i];
        int len = snprintf(f, sizeof r->fields[i], "%d:%lld",
                           (int)msgs[i]->partition,
                           (long long)msgs[i]->offset);
        r->argv[argc] = f;
        r->argl[argc++] = (size_t)len;
        r->argv[argc] = "1";
        r->argl[argc++] = 1;
    }
    if (redisAsyncCommandArgv(r->ac, on_stored, r, (int)argc, r->argv,
                              r->argl) != REDIS_OK)
        fail(r, "redis: cannot send the batch's write");
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    relay *r = ac->data;

    (void)status;
    if (!r)
        return; /* our own redisAsyncFree at the end */
    r->ac = NULL; /* hiredis frees it */
    fail(r, "redis: connection lost");
}

/* The correlator's connection: its target (the address given), resolved
 * and greeted as the store's link does it. */
static int connect_redis(relay *r, const char *redis, cs_err *err)
{
    rtarget t;
    rconn_cmd hello[RCONN_HELLO_MAX];
    char addr[256];
    int n;

    rt_init(&t);
    if (rt_set_addr(&t, redis, err) || rconn_resolve(&t, addr, sizeof addr, err))
        return -1;
    r->ac = rconn_async(addr);
    if (!r->ac || r->ac->err) {
        cs_err_set(err, "redis at %s: %s", addr,
                   r->ac ? r->ac->errstr : "out of memory");
        return -1;
    }
    r->ac->data = r;
    redisLibeventAttach(r->ac, r->base);
    redisAsyncSetDisconnectCallback(r->ac, on_disconnect);
    n = rconn_hello(&t, hello);
    for (int i = 0; i < n; i++)
        redisAsyncCommandArgv(r->ac, on_hello, r, hello[i].argc,
                              hello[i].argv, NULL);
    return 0;
}

static void on_assign(void *arg, const int32_t *parts, size_t n, int32_t cnt)
{
    (void)arg;
    (void)parts;
    (void)cnt;
    fprintf(stderr, "bench_relay: ready, %zu partitions\n", n);
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    relay *r = arg;

    (void)fd;
    (void)what;
    event_base_loopbreak(r->base);
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_relay --brokers ADDR --redis ADDR "
                    "[--fetch-wait MS] [--linger MS] [--batch N]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *brokers = NULL, *redis = NULL;
    int fetch_wait = 1, linger = 0, batch = 10000, rc = 1;
    relay *r = calloc(1, sizeof *r);
    cs_err err;

    if (argc == 2 && !strcmp(argv[1], "--help")) {
        fprintf(stderr, "bench_relay: the correlator's cycle without its "
                        "engine (bench/bench_relay.c)\n");
        usage();
        return 0;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--brokers"))
            brokers = argv[i + 1];
        else if (!strcmp(argv[i], "--redis"))
            redis = argv[i + 1];
        else if (!strcmp(argv[i], "--fetch-wait"))
            fetch_wait = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--linger"))
            linger = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch"))
            batch = atoi(argv[i + 1]);
        else
            return usage();
    }
    if (!r || !brokers || !redis || argc % 2 == 0 || fetch_wait < 0 ||
        linger < 0 || batch < 1 || batch > (MAX_ARGS - 2) / 2)
        return usage();
    signal(SIGPIPE, SIG_IGN);
    r->base = event_base_new();
    if (!r->base || connect_redis(r, redis, &err)) {
        fprintf(stderr, "bench_relay: %s\n", r->base ? err.msg : "no event loop");
        goto out;
    }
    kfk_producer_opts po = kfk_producer_defaults(brokers);
    kfk_consumer_opts co = kfk_consumer_defaults(brokers, "bench-relay",
                                                 KFK_TOPIC_SIGNALS);
    po.linger_ms = linger;
    co.max_batch = (size_t)batch;
    co.fetch_wait_ms = fetch_wait;
    co.on_batch = on_batch;
    co.arg = r;
    if (!(r->out = kfk_producer_open(&po, &err)) ||
        kfk_producer_attach(r->out, r->base) ||
        !(r->trk = kfk_tracker_new()) ||
        kfk_producer_topics(r->out, (const char *const[]){KFK_TOPIC_INCIDENTS,
                                                          NULL},
                            NULL, 10000, &err) ||
        !(r->cons = kfk_consumer_open(r->base, &co, &err))) {
        fprintf(stderr, "bench_relay: kafka: %s\n", err.msg);
        goto out;
    }
    kfk_tracker_on_done(r->trk, on_delivered, r);
    kfk_consumer_on_assign(r->cons, on_assign, r);
    r->tick = evtimer_new(r->base, on_tick, r);
    r->stop_int = evsignal_new(r->base, SIGINT, on_stop, r);
    r->stop_term = evsignal_new(r->base, SIGTERM, on_stop, r);
    if (!r->tick || !r->stop_int || !r->stop_term ||
        event_add(r->stop_int, NULL) || event_add(r->stop_term, NULL))
        goto out;
    event_base_dispatch(r->base);
    rc = r->failed;
out:
    kfk_consumer_free(r->cons);
    kfk_tracker_release(r->trk);
    kfk_producer_free(r->out);
    if (r->ac) {
        r->ac->data = NULL;
        redisAsyncFree(r->ac);
    }
    if (r->tick)
        event_free(r->tick);
    if (r->stop_int)
        event_free(r->stop_int);
    if (r->stop_term)
        event_free(r->stop_term);
    if (r->base)
        event_base_free(r->base);
    free(r);
    return rc;
}
