/* Embedded broker, producer and consumer group under libevent: 1000
 * messages round trip, a held batch blocks the next one, committed offsets
 * keep a second group member from re-reading them, a separate process
 * (kcat, when installed) sees the broker and its data, and messages the
 * broker deleted before the group read them are counted, not lost
 * silently. A topic that does not exist is told at start (and the
 * embedded broker does not make it on being asked), and a static member
 * fenced by another of its instance id stops, once, with the reason.
 * Batches let go for a ticket of their offsets before the commit are all
 * read once, and a rebalance while a ticket is out runs its callback only
 * once the ticket is committed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "check.h"
#include "core/kafka.h"
#include "core/kafka_broker.h"
#include "core/log.h"

#include <librdkafka/rdkafka_mock.h> /* after rdkafka.h (core/kafka.h) */


#define NMSG 1000

typedef struct run {
    struct event_base *base;
    kfk_consumer *c;
    unsigned char seen[NMSG];
    int received, batches, holding, sentinels, others, want;
    struct event *commit_later;
} run;

static void commit_now(evutil_socket_t fd, short what, void *arg)
{
    run *r = arg;
    cs_err err = {{0}};
    struct timeval linger = {1, 0};

    (void)fd;
    (void)what;
    r->holding = 0;
    REQUIRE(kfk_consumer_commit_held(r->c, &err) == 0);
    /* Linger a second so that duplicates or strays would still show. */
    if (r->received >= r->want)
        event_base_loopexit(r->base, &linger);
}

static void count_message(run *r, const rd_kafka_message_t *m)
{
    char val[32];
    int idx;

    REQUIRE(m->len < sizeof val);
    memcpy(val, m->payload, m->len);
    val[m->len] = '\0';
    if (strcmp(val, "sentinel") == 0) {
        r->sentinels++;
    } else if (sscanf(val, "msg-%d", &idx) == 1 && idx >= 0 && idx < NMSG) {
        REQUIRE(!r->seen[idx]);
        r->seen[idx] = 1;
    } else {
        r->others++;
    }
    r->received++;
}

/* Every batch is held for 20 ms before its commit, so a batch delivered
 * while another is held shows up as holding == 1 here. */
static void on_batch(void *arg, rd_kafka_message_t **msgs, size_t n)
{
    run *r = arg;
    struct timeval tv = {0, 20000};

    REQUIRE(!r->holding);
    REQUIRE(n > 0 && n <= 100);
    for (size_t i = 0; i < n; i++)
        count_message(r, msgs[i]);
    r->batches++;
    r->holding = 1;
    REQUIRE(event_add(r->commit_later, &tv) == 0);
}

static void consume(run *r, const char *bootstrap, int timeout_s)
{
    struct timeval tv = {timeout_s, 0};
    cs_err err = {{0}};

    r->commit_later = evtimer_new(r->base, commit_now, r);
    kfk_consumer_opts co = kfk_consumer_defaults(bootstrap, "unit-group",
                                                 KFK_TOPIC_SIGNALS);
    co.max_batch = 100;
    co.on_batch = on_batch;
    co.arg = r;
    r->c = kfk_consumer_open(r->base, &co, &err);
    if (!r->c)
        fprintf(stderr, "consumer: %s\n", err.msg);
    REQUIRE(r->c != NULL);
    /* Up from the start, before its first statistics (KFK_STATS_MS):
     * it was down for two seconds, and /readyz with it. */
    REQUIRE(kfk_consumer_up(r->c));
    event_base_loopexit(r->base, &tv);
    event_base_dispatch(r->base);
    kfk_consumer_free(r->c);
    event_free(r->commit_later);
}

static void produce_all(const char *bootstrap)
{
    kfk_producer *p;
    cs_err err = {{0}};
    char key[16], val[32];

    kfk_producer_opts po = kfk_producer_defaults(bootstrap);
    p = kfk_producer_open(&po, &err);
    REQUIRE(p != NULL);
    for (int i = 0; i < NMSG; i++) {
        int klen = snprintf(key, sizeof key, "k%d", i % 37);
        int vlen = snprintf(val, sizeof val, "msg-%d", i);
        REQUIRE(kfk_produce(p, KFK_TOPIC_SIGNALS, key, (size_t)klen, val,
                          (size_t)vlen, &err) == KFK_OK);
    }
    REQUIRE(kfk_producer_flush(p, 10000) == 0);
    REQUIRE(kfk_producer_failed(p) == 0);
    kfk_producer_free(p);
}

static void produce_sentinel(const char *bootstrap)
{
    cs_err err = {{0}};
    kfk_producer_opts po = kfk_producer_defaults(bootstrap);
    kfk_producer *p = kfk_producer_open(&po, &err);

    REQUIRE(p != NULL);
    REQUIRE(kfk_produce(p, KFK_TOPIC_SIGNALS, NULL, 0, "sentinel", 8, &err) ==
          KFK_OK);
    REQUIRE(kfk_producer_flush(p, 10000) == 0);
    REQUIRE(kfk_producer_failed(p) == 0);
    kfk_producer_free(p);
}

/* Counts lines of a command's output that contain `needle`. */
static int count_lines(const char *cmd, const char *needle)
{
    char line[4096];
    int n = 0;
    FILE *f = popen(cmd, "r");

    REQUIRE(f != NULL);
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    REQUIRE(pclose(f) == 0);
    return n;
}

static void check_with_kcat(const char *bootstrap)
{
    char cmd[512];

    if (system("command -v kcat >/dev/null 2>&1") != 0) {
        fprintf(stderr, "kcat not installed: skipping the cross-process check\n");
        return;
    }
    snprintf(cmd, sizeof cmd, "kcat -b %s -L -t %s 2>&1", bootstrap,
             KFK_TOPIC_SIGNALS);
    REQUIRE(count_lines(cmd, "partition ") == 64);
    snprintf(cmd, sizeof cmd,
             "kcat -b %s -t %s -C -e -o beginning -q -f '%%s\\n' 2>/dev/null",
             bootstrap, KFK_TOPIC_SIGNALS);
    REQUIRE(count_lines(cmd, "msg-") == NMSG);
}

/* ---- messages deleted before they were read --------------------------- */

#define STORM 8000 /* of 1000 bytes, on one partition: past the 5 MiB kept */

typedef struct drain {
    struct event_base *base;
    kfk_consumer *c;
    struct event *check;
    long received;
    int live; /* read until all is read or counted, no drain */
} drain;

static void drain_batch(void *arg, rd_kafka_message_t **msgs, size_t n)
{
    drain *d = arg;
    cs_err err = {{0}};

    (void)msgs;
    d->received += (long)n;
    REQUIRE(kfk_consumer_commit_held(d->c, &err) == 0);
}

static void drain_check(evutil_socket_t fd, short what, void *arg)
{
    drain *d = arg;

    (void)fd;
    (void)what;
    if (d->live ? d->received + (long)kfk_consumer_lost(d->c) >= STORM
                : kfk_consumer_caught_up(d->c))
        event_base_loopbreak(d->base);
}

static void produce_storm(const char *bootstrap)
{
    kfk_producer *p;
    cs_err err = {{0}};
    char *val = malloc(1000);

    unsigned x = 12345;

    REQUIRE(val != NULL);
    kfk_producer_opts po = kfk_producer_defaults(bootstrap);
    p = kfk_producer_open(&po, &err);
    REQUIRE(p != NULL);
    for (int i = 0; i < STORM; i++) {
        /* letters that do not compress: lz4 would shrink repeats below
         * what the broker keeps */
        for (int k = 0; k < 1000; k++) {
            x = x * 1103515245u + 12345u;
            val[k] = (char)('a' + (x >> 16) % 26);
        }
        REQUIRE(kfk_produce(p, KFK_TOPIC_SIGNALS, "storm", 5, val, 1000, &err) ==
                KFK_OK);
    }
    REQUIRE(kfk_producer_flush(p, 10000) == 0);
    REQUIRE(kfk_producer_failed(p) == 0);
    kfk_producer_free(p);
    free(val);
}

/* Reads the latest storm as group "gap" (a drain, or live: until all of
 * it is read or counted); returns what it read and puts what the
 * consumer counted as deleted in *lost. */
static long drain_all(const char *bootstrap, int live, unsigned long long *lost)
{
    drain d = {.live = live};
    cs_err err = {{0}};
    struct timeval every = {0, 50000}, limit = {30, 0};

    d.base = event_base_new();
    kfk_consumer_opts co = kfk_consumer_defaults(bootstrap, "gap",
                                                 KFK_TOPIC_SIGNALS);
    co.max_batch = 1000;
    co.on_batch = drain_batch;
    co.arg = &d;
    d.c = kfk_consumer_open(d.base, &co, &err);
    REQUIRE(d.c != NULL);
    d.check = event_new(d.base, -1, EV_PERSIST, drain_check, &d);
    REQUIRE(event_add(d.check, &every) == 0);
    event_base_loopexit(d.base, &limit);
    event_base_dispatch(d.base);
    REQUIRE(live || kfk_consumer_caught_up(d.c));
    REQUIRE(kfk_consumer_commit_wait(d.c, 5000, &err) == 0);
    *lost = kfk_consumer_lost(d.c);
    kfk_consumer_free(d.c);
    event_free(d.check);
    event_base_free(d.base);
    return d.received;
}

static void test_deleted(void)
{
    cs_err err = {{0}};
    kfk_broker *b = kfk_broker_start(4, &err);
    unsigned long long lost;
    long got;

    REQUIRE(b != NULL);
    /* A new group finds the oldest already gone. */
    produce_storm(kfk_broker_bootstrap(b));
    got = drain_all(kfk_broker_bootstrap(b), 0, &lost);
    REQUIRE(lost > 0);
    REQUIRE(got + (long)lost == STORM);
    /* The group read to the end and committed; while it was away the
     * broker deleted past its commit: a hole at its first message, for a
     * drain and for a live consumer alike. */
    produce_storm(kfk_broker_bootstrap(b));
    got = drain_all(kfk_broker_bootstrap(b), 0, &lost);
    REQUIRE(lost > 0);
    REQUIRE(got + (long)lost == STORM);
    produce_storm(kfk_broker_bootstrap(b));
    got = drain_all(kfk_broker_bootstrap(b), 1, &lost);
    REQUIRE(lost > 0);
    REQUIRE(got + (long)lost == STORM);
    kfk_broker_stop(b);
}

/* The topics a process needs are checked at start; asking about a
 * missing one does not make it (the embedded broker used to, with 4
 * partitions, for every topic a client asked about). */
static void test_topics(void)
{
    cs_err err = {{0}};
    kfk_broker *b = kfk_broker_start(6, &err);
    const char *const ours[] = {KFK_TOPIC_SIGNALS, KFK_TOPIC_AUDIT, NULL};
    const char *const missing[] = {KFK_TOPIC_SIGNALS, "unit.nope", NULL};
    int32_t counts[2] = {0, 0};
    kfk_producer *p;

    REQUIRE(b != NULL);
    kfk_producer_opts po = kfk_producer_defaults(kfk_broker_bootstrap(b));
    REQUIRE((p = kfk_producer_open(&po, &err)) != NULL);
    CHECK(kfk_producer_topics(p, ours, counts, 5000, &err) == 0);
    CHECK_INT(counts[0], 6);
    CHECK_INT(counts[1], 6);
    for (int i = 0; i < 2; i++) { /* the second time: still missing */
        CHECK(kfk_producer_topics(p, missing, NULL, 5000, &err) == -1);
        CHECK_STR(err.msg, "topic unit.nope does not exist: create cascade's "
                           "topics with `cascade kafka init` (the same brokers "
                           "and kafka.topic_prefix)");
    }
    kfk_producer_free(p);
    kfk_broker_stop(b);
}

typedef struct fenced {
    struct event_base *base;
    int calls, batches;
    char reason[512];
} fenced;

static void fenced_batch(void *arg, rd_kafka_message_t **msgs, size_t n)
{
    (void)msgs;
    (void)n;
    ((fenced *)arg)->batches++;
}

static void fenced_fatal(void *arg, const char *reason)
{
    fenced *f = arg;

    f->calls++;
    snprintf(f->reason, sizeof f->reason, "%s", reason);
    event_base_loopexit(f->base, &(struct timeval){1, 0}); /* a second call shows */
}

/* The broker answers a member's JoinGroup with FENCED_INSTANCE_ID when
 * another process joined with its group.instance.id (the embedded broker
 * does not fence: the answer is forced here). */
static void test_fenced(void)
{
    const char *const kv[] = {"test.mock.num.brokers", "1", NULL};
    fenced f = {.base = event_base_new()};
    cs_err err = {{0}};
    rd_kafka_conf_t *conf = kfk_conf_new(kv, NULL, &err);
    rd_kafka_t *host = conf ? kfk_client_new(RD_KAFKA_PRODUCER, conf, &err) : NULL;
    rd_kafka_mock_cluster_t *mc;
    kfk_consumer *c;

    REQUIRE(host && (mc = rd_kafka_handle_mock_cluster(host)));
    REQUIRE(rd_kafka_mock_topic_create(mc, "unit.fence", 1, 1) == 0);
    rd_kafka_mock_push_request_errors(mc, 11 /* JoinGroup */, 1,
                                      RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID);
    kfk_consumer_opts co = kfk_consumer_defaults(
        rd_kafka_mock_cluster_bootstraps(mc), "unit-fence", "unit.fence");
    co.instance_id = "correlate-1";
    co.max_batch = 10;
    co.on_batch = fenced_batch;
    co.on_fatal = fenced_fatal;
    co.arg = &f;
    REQUIRE((c = kfk_consumer_open(f.base, &co, &err)) != NULL);
    event_base_loopexit(f.base, &(struct timeval){20, 0});
    event_base_dispatch(f.base);
    CHECK_INT(f.calls, 1);
    CHECK_INT(f.batches, 0);
    CHECK(strstr(f.reason, "another consumer joined the group with this one's "
                           "instance id (kafka.instance_id, --instance-id)") != NULL);
    kfk_consumer_free(c);
    event_base_free(f.base);
    rd_kafka_destroy(host);
}

/* ---- tickets: a batch let go before its commit ------------------------ */

typedef struct tix {
    struct event_base *base;
    kfk_consumer *c, *c2;
    kfk_ticket *q[64]; /* out, oldest first */
    int nq;
    int received, overlapped, hold; /* hold: keep the tickets out */
    int assigned, assigned2;        /* assignment callbacks */
    int assigned_at_commit;         /* c's, when the last ticket went */
    int rebalanced;                 /* the second member is in */
    struct event *commit_later, *check;
} tix;

static void tix_commit(evutil_socket_t fd, short what, void *arg)
{
    tix *t = arg;
    cs_err err = {{0}};

    (void)fd;
    (void)what;
    if (t->hold)
        return;
    /* in the order taken; after the rebalance storing may fail for the
     * partitions that moved (their new owner reads them again) */
    for (int i = 0; i < t->nq; i++)
        REQUIRE(kfk_consumer_commit_ticket(t->c, t->q[i], &err) == 0 ||
                t->rebalanced);
    t->nq = 0;
}

/* Each batch lets its messages go at once for a ticket committed 20 ms
 * later: the next batch comes while a ticket is out. */
static void tix_batch(void *arg, rd_kafka_message_t **msgs, size_t n)
{
    tix *t = arg;
    struct timeval tv = {0, 20000};

    (void)msgs;
    REQUIRE(t->nq < 64);
    t->overlapped += t->nq > 0;
    t->received += (int)n;
    t->q[t->nq++] = kfk_consumer_detach(t->c);
    if (!evtimer_pending(t->commit_later, NULL))
        REQUIRE(event_add(t->commit_later, &tv) == 0);
}

static void tix_batch2(void *arg, rd_kafka_message_t **msgs, size_t n)
{
    tix *t = arg;

    (void)msgs;
    (void)n;
    kfk_consumer_release(t->c2);
}

static void tix_assign(void *arg, const int32_t *parts, size_t n, int32_t cnt)
{
    (void)parts, (void)n, (void)cnt;
    ((tix *)arg)->assigned++;
}

static void tix_assign2(void *arg, const int32_t *parts, size_t n, int32_t cnt)
{
    (void)parts, (void)n, (void)cnt;
    ((tix *)arg)->assigned2++;
}

static void tix_check(evutil_socket_t fd, short what, void *arg)
{
    tix *t = arg;

    (void)fd;
    (void)what;
    if (t->c2 ? kfk_consumer_assign_waiting(t->c) : t->received >= t->hold)
        event_base_loopbreak(t->base);
}

static kfk_consumer *tix_open(tix *t, const char *bootstrap, kfk_batch_fn fn,
                              kfk_assign_fn on_assign)
{
    cs_err err = {{0}};
    kfk_consumer_opts co = kfk_consumer_defaults(bootstrap, "unit-tickets",
                                                 KFK_TOPIC_SIGNALS);
    kfk_consumer *c;

    co.max_batch = 50;
    co.on_batch = fn;
    co.arg = t;
    c = kfk_consumer_open(t->base, &co, &err);
    REQUIRE(c != NULL);
    kfk_consumer_on_assign(c, on_assign, t);
    return c;
}

static void tix_run(tix *t, int seconds)
{
    struct timeval limit = {seconds, 0};

    event_base_loopexit(t->base, &limit);
    event_base_dispatch(t->base);
}

/* The 1001 messages in batches of 50, each let go before its commit: all
 * read once, batches overlapping tickets, nothing caught up while a
 * ticket is out. Then, a ticket held, a second member joins: the
 * rebalance's callback waits for the ticket's commit. */
static void test_tickets(const char *bootstrap, int want)
{
    tix t = {0};
    struct timeval every = {0, 20000};
    cs_err err = {{0}};

    t.base = event_base_new();
    t.commit_later = evtimer_new(t.base, tix_commit, &t);
    t.check = event_new(t.base, -1, EV_PERSIST, tix_check, &t);
    REQUIRE(event_add(t.check, &every) == 0);
    t.c = tix_open(&t, bootstrap, tix_batch, tix_assign);
    t.hold = want;
    tix_run(&t, 30); /* until all read */
    CHECK_INT(t.received, want);
    CHECK(t.overlapped > 0);
    CHECK_INT(t.assigned, 1);
    REQUIRE(t.nq > 0); /* the last batch's ticket, held */
    CHECK(!kfk_consumer_caught_up(t.c));

    kfk_consumer *c2 = t.c2 = tix_open(&t, bootstrap, tix_batch2, tix_assign2);
    /* Until the group's rebalance gave c its new assignment. Not until
     * the second member has its own: while c's callback waits, c serves
     * no other group event, and when the group needs a second round (as
     * the mock coordinator sometimes does for a slow joiner) that round
     * waits for the ticket too. */
    tix_run(&t, 30);
    REQUIRE(kfk_consumer_assign_waiting(t.c));
    CHECK_INT(t.assigned, 1); /* c's callback waits for the ticket */
    t.hold = 0;
    t.rebalanced = 1;
    event_active(t.commit_later, EV_TIMEOUT, 0);
    t.assigned_at_commit = t.assigned;
    t.c2 = NULL; /* the check now waits for c's callback */
    for (int i = 0; i < 100 && t.assigned == t.assigned_at_commit; i++) {
        struct timeval tick = {0, 50000};
        event_base_loopexit(t.base, &tick);
        event_base_dispatch(t.base);
    }
    CHECK_INT(t.assigned, 2); /* once the ticket was committed */
    CHECK(!kfk_consumer_assign_waiting(t.c));
    /* and the group settles: the second member gets its partitions */
    for (time_t end = time(NULL) + 20; !t.assigned2 && time(NULL) < end;) {
        struct timeval tick = {0, 50000};
        event_base_loopexit(t.base, &tick);
        event_base_dispatch(t.base);
    }
    CHECK(t.assigned2 > 0);
    tix_commit(-1, 0, &t); /* what came meanwhile */
    REQUIRE(kfk_consumer_commit_wait(t.c, 5000, &err) == 0);
    kfk_consumer_free(c2);
    kfk_consumer_free(t.c);
    event_free(t.commit_later);
    event_free(t.check);
    event_base_free(t.base);
}

int main(void)
{
    cs_err err = {{0}};
    kfk_broker *b;
    run *r1 = calloc(1, sizeof *r1), *r2 = calloc(1, sizeof *r2);
    int seen = 0, batches;

    REQUIRE(r1 && r2);
    b = kfk_broker_start(0, &err);
    REQUIRE(b != NULL);
    REQUIRE(strncmp(kfk_broker_bootstrap(b), "127.0.0.1:", 10) == 0);
    produce_all(kfk_broker_bootstrap(b));
    check_with_kcat(kfk_broker_bootstrap(b));

    r1->base = event_base_new();
    r1->want = NMSG;
    consume(r1, kfk_broker_bootstrap(b), 30);
    for (int i = 0; i < NMSG; i++)
        seen += r1->seen[i];
    REQUIRE(seen == NMSG && r1->received == NMSG && r1->others == 0);
    REQUIRE(r1->batches >= NMSG / 100);
    batches = r1->batches;

    /* After the commit a new member of the group starts past the 1000. */
    produce_sentinel(kfk_broker_bootstrap(b));
    r2->base = event_base_new();
    r2->want = 1;
    consume(r2, kfk_broker_bootstrap(b), 30);
    REQUIRE(r2->sentinels == 1);
    REQUIRE(r2->received == 1);
    test_tickets(kfk_broker_bootstrap(b), NMSG + 1);

    event_base_free(r1->base);
    event_base_free(r2->base);
    free(r1);
    free(r2);
    kfk_broker_stop(b);
    test_deleted();
    test_topics();
    test_fenced();
    printf("unit.kafka: %d messages in %d batches\n", NMSG, batches);
    return check_report();
}
