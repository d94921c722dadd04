/* The correlator's own work per signal, without Kafka: decoding a
 * signal's msgpack, the engine's feed, and once a batch its tick and
 * flush, the state writes queued as Redis commands by the real store.
 * Timed apart from the pipeline's round trip to Redis (each batch's sent
 * and acknowledged before the next, as the correlator does): "feed" is
 * what the correlator does between a batch's arrival and its pipeline
 * going out (the feed of its per-batch debug line), the part of its
 * capacity no broker or Redis tuning changes.
 *
 *   bench_feed --redis ADDR [--runs N] [--batch N] [--rules DIR]
 *              [--cluster NAME] LOG...
 *
 * ADDR: a redis-server (host:port or socket path) this may write to; each
 * run's keys get their own prefix.
 * LOG: syslog lines (bench/peers/gen_log.py's logs), made signals the way
 * `cascade ingest log` makes them (its edge filter with the same rules),
 * outside the timing. Each run feeds every signal to a fresh engine, in
 * batches of --batch (10000, the correlator's default), and the median
 * of the runs is printed as signals/s and microseconds per signal. */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/benchutil.h"
#include "core/log.h"
#include "core/rtarget.h"
#include "core/signal.h"
#include "core/ts.h"
#include "correlate/store.h"
#include "engine/engine.h"
#include "ingest/logline.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

#define MAX_RUNS 64

typedef struct msg {
    char *data;
    size_t len;
} msg;

typedef struct msgs {
    msg *v;
    size_t n, cap;
} msgs;

static int load(const char *path, ll_encoder *enc, msgs *m)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;

    if (!f) {
        perror(path);
        return -1;
    }
    while ((got = getline(&line, &cap, f)) > 0) {
        const char *key;
        char *buf;
        size_t blen;
        cs_err why;
        if (line[got - 1] == '\n')
            line[--got] = '\0';
        if (ll_encode(enc, NULL, line, (size_t)got, &key, &buf, &blen, &why))
            continue; /* dropped at the edge, blank or invalid */
        if (m->n == m->cap) {
            m->cap = m->cap ? m->cap * 2 : 65536;
            m->v = realloc(m->v, m->cap * sizeof *m->v);
            if (!m->v)
                abort();
        }
        m->v[m->n++] = (msg){buf, blen};
    }
    free(line);
    fclose(f);
    return 0;
}

/* What the correlator does with each change, in its cost's main parts:
 * the serialised incident copied for publishing, the actions counted. */
static void on_change(void *arg, const char *id, json_t *inc,
                      const char *text, json_t *acts)
{
    size_t *changes = arg;
    char *copy = strdup(text);

    (void)id;
    (void)inc;
    (void)acts;
    free(copy);
    (*changes)++;
}

static pb_catalog *load_rules(const char *dir)
{
    pb_catalog *cat = pb_catalog_new();

    if (pb_catalog_load_dir(cat, dir, NULL, NULL) != 0) {
        fprintf(stderr, "bench_feed: %s: the rules do not load; run "
                        "`cascade rules check %s`\n", dir, dir);
        exit(1);
    }
    return cat;
}

static void on_stored(void *arg)
{
    event_base_loopbreak(arg);
}

/* One run: a fresh engine and store, every message fed. Returns the
 * seconds the feed took (and in *redis the pipelines'), or -1. */
static double run(const char *dir, const char *addr, int n, const msgs *m,
                  size_t batch, size_t *changes, size_t *fed, double *redis)
{
    struct event_base *base = event_base_new();
    char prefix[64];
    rtarget t;
    cs_err err;
    store *st;
    engine *e;
    double feed = 0, t0;

    rt_init(&t);
    if (!base || rt_set_addr(&t, addr, &err)) {
        fprintf(stderr, "bench_feed: --redis %s: %s\n", addr, err.msg);
        return -1;
    }
    snprintf(prefix, sizeof prefix, "bench_feed:%ld:%d:", (long)getpid(), n);
    st = store_new(base, &t, prefix, &err);
    /* as the correlator does: the built-in set, then rules.dir's, which
     * may leave out scenarios the detectors open by name */
    e = st ? eng_new(store_ops(), st, &err) : NULL;
    if (e && dir && eng_set_catalog(e, load_rules(dir), &err)) {
        eng_free(e);
        e = NULL;
    }
    if (!e) {
        fprintf(stderr, "bench_feed: %s\n", err.msg);
        return -1;
    }
    *changes = *fed = 0;
    *redis = 0;
    for (size_t i = 0; i < m->n;) {
        size_t end = i + batch < m->n ? i + batch : m->n;
        t0 = bench_now();
        eng_set_wall(e, ts_now());
        for (; i < end; i++) {
            sig s;
            if (sig_parse_msgpack(&s, m->v[i].data, m->v[i].len, &err))
                continue;
            if (eng_feed(e, &s) >= 0)
                (*fed)++;
            sig_free(&s);
        }
        eng_tick(e, ts_now());
        eng_flush(e, on_change, changes);
        feed += bench_now() - t0;
        t0 = bench_now();
        store_flush(st, on_stored, base);
        if (store_busy(st))
            event_base_dispatch(base);
        *redis += bench_now() - t0;
    }
    eng_free(e);
    store_free(st);
    event_base_free(base);
    return feed;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_feed --redis ADDR [--runs N] [--batch N] "
                    "[--rules DIR] [--cluster NAME] LOG...\n");
    return 2;
}

int main(int argc, char **argv)
{
    int runs = 5, first = 1;
    size_t batch = 10000, changes = 0, fed = 0;
    const char *dir = NULL, *cluster = NULL, *addr = NULL;
    double secs[MAX_RUNS], redis[MAX_RUNS];
    pb_catalog *cat;
    classifier *cls;
    ll_encoder *enc;
    msgs m = {0};
    cs_err err;

    for (; first < argc && argv[first][0] == '-'; first += 2) {
        if (!strcmp(argv[first], "--help") || !strcmp(argv[first], "-h")) {
            printf("usage: bench_feed --redis ADDR [--runs N] [--batch N] "
                   "[--rules DIR] [--cluster NAME] LOG...\n\n"
                   "The correlator's own work per signal, without Kafka: "
                   "LOG's syslog lines made\nsignals as `cascade ingest log` "
                   "makes them, then decoded, fed and flushed into\nthe "
                   "store in batches of --batch (10000), each batch's "
                   "pipeline to the Redis at\nADDR timed apart. Prints the "
                   "median of --runs (5) as signals/s and us a signal.\n");
            return 0;
        }
        if (first + 1 >= argc)
            return usage();
        if (!strcmp(argv[first], "--runs"))
            runs = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "--batch"))
            batch = (size_t)atol(argv[first + 1]);
        else if (!strcmp(argv[first], "--rules"))
            dir = argv[first + 1];
        else if (!strcmp(argv[first], "--redis"))
            addr = argv[first + 1];
        else if (!strcmp(argv[first], "--cluster"))
            cluster = argv[first + 1];
        else
            return usage();
    }
    if (first >= argc || !addr || runs < 1 || runs > MAX_RUNS || batch == 0)
        return usage();
    log_set_level(LOG_LVL_WARN);
    cat = dir ? load_rules(dir) : pb_catalog_embedded();
    if (!(cls = cls_new(cat, &err))) {
        fprintf(stderr, "bench_feed: %s\n", err.msg);
        return 1;
    }
    enc = ll_new(&(ll_opts){.format = LL_SYSLOG, .cluster = cluster,
                            .year = 2024, .edge = cls});
    for (int i = first; i < argc; i++)
        if (load(argv[i], enc, &m))
            return 1;
    ll_free(enc);
    for (int r = 0; r < runs; r++)
        if ((secs[r] = run(dir, addr, r, &m, batch, &changes, &fed,
                           &redis[r])) < 0)
            return 1;
    qsort(secs, (size_t)runs, sizeof *secs, bench_cmp_double);
    qsort(redis, (size_t)runs, sizeof *redis, bench_cmp_double);
    printf("signals %zu, fed %zu, changes %zu, batch %zu, runs %d\n", m.n,
           fed, changes, batch, runs);
    printf("feed: %.0f signals/s (median; min %.0f, max %.0f), %.2f us a "
           "signal\n", (double)m.n / secs[runs / 2],
           (double)m.n / secs[runs - 1], (double)m.n / secs[0],
           secs[runs / 2] * 1e6 / (double)m.n);
    printf("redis: %.2f us a signal (median; pipelines sent and "
           "acknowledged, one per batch)\n", redis[runs / 2] * 1e6 / (double)m.n);
    for (size_t i = 0; i < m.n; i++)
        free(m.v[i].data);
    free(m.v);
    cls_free(cls);
    pb_catalog_free(cat);
    return 0;
}
