/* Detection latency under load: signals offered at a fixed rate to
 * cascade.signals, some of them completing a pattern, and the time from
 * producing each completing signal to the first incident about it on
 * cascade.incidents.
 *
 * usage: bench_latency [--hop] --brokers ADDR --rate R [--seconds S]
 *                      [--patterns P] [--fetch-wait MS] [--topic-prefix P]
 *                      [--jobs N]
 *
 * The stream is what a collector publishes (msgpack signals with their own
 * id, cluster "default", event time = now): every 1/P s a fresh node gets
 * an Xid 79 and, right after it, a SLURM job cancel, which completes
 * peer.xid79_job_cancel (bench/rules); the rest of the R signals/s are NCCL
 * watchdog timeouts of distinct jobs, which the correlator must read,
 * window and store but which complete nothing. A correlator with
 * bench/rules must be consuming. The incidents are read by a consumer
 * assigned to the end of cascade.incidents before the first signal.
 *
 * --jobs N: the timeouts' jobs go round N of them (default 80,000,000:
 * every timeout a new job within any run, the worst case of live keys).
 * A fleet's storm repeats its jobs: with N jobs each times out every
 * N/R s, the threshold rule fires for each once and holds it for its
 * window, and the live keys stay N.
 *
 * --patterns 0 offers the timeouts only (a load of live window keys: each
 * job is a key of the threshold rule) and measures nothing.
 *
 * --hop measures the floor instead: no correlator runs, and the time is
 * from producing each completing signal to reading that signal back from
 * cascade.signals (one Kafka hop, the same producer and consumer settings).
 * A detection crosses two such hops (signal in, incident out).
 *
 * --fetch-wait: the reader's fetch.wait.max.ms (default 1). The embedded
 * broker answers a waiting fetch only when the wait is over, so the
 * reader's own wait is part of what it measures; 0 polls (a core's worth
 * of CPU between the reader and the broker while nothing comes).
 *
 * --topic-prefix: the topics' prefix (kafka.topic_prefix), so that a run
 * can warm a broker on topics of its own before the measured one.
 *
 * --every S --intervals FILE: the same figures for each S seconds of the
 * run (by when each pattern's completing signal went out), one line each
 * in FILE: start_s end_s patterns seen p50_ms p99_ms p999_ms max_ms. A
 * soak's minutes: the whole run's percentiles hide a bad minute.
 *
 * Prints one line: rate offered patterns seen p50_ms p99_ms p999_ms max_ms
 * (offered: the rate achieved; seen: patterns whose incident arrived within
 * 10 s of the last signal). Exit 1 when none arrived. */
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/benchutil.h"
#include "core/kafka.h"
#include "core/signal.h"
#include "core/topics.h"

#define MAX_PATTERNS 200000

typedef struct run {
    const char *brokers;
    double rate, seconds, patterns;
    long jobs;      /* the timeouts' distinct jobs, in turn (--jobs) */
    double *sent;   /* per pattern: when its completing signal went out */
    double *lat;    /* per pattern: latency (s), < 0 until seen */
    int npat;
    atomic_int stop;
    atomic_int seen;
    atomic_int ready;
    int hop; /* --hop: read the signals back, not the incidents */
    char fetch_wait[16]; /* the reader's fetch.wait.max.ms */
} run;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void set(rd_kafka_conf_t *c, const char *k, const char *v)
{
    char err[256];

    if (rd_kafka_conf_set(c, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "bench_latency: %s=%s: %s\n", k, v, err);
        exit(2);
    }
}

/* A signal as msgpack; text fields are the caller's. */
static char *encode(const char *json, size_t *len)
{
    sig s;
    cs_err err;
    char *out;

    if (sig_parse_json(&s, json, strlen(json), &err)) {
        fprintf(stderr, "bench_latency: %s: %s\n", json, err.msg);
        exit(2);
    }
    sig_to_msgpack(&s, &out, len);
    sig_free(&s);
    return out;
}

/* Fixed-width decimal and hex fields, written in place: snprintf and
 * gmtime for every message cost the generator more than a quarter of a
 * core at 100k/s, CPU the correlator it measures then lacks. */
static void put_dec(char *p, unsigned long v, int width)
{
    for (int i = width - 1; i >= 0; i--, v /= 10)
        p[i] = (char)('0' + v % 10);
}

static void put_hex(char *p, unsigned long v)
{
    for (int i = 15; i >= 0; i--, v >>= 4)
        p[i] = "0123456789abcdef"[v & 15];
}

/* RFC 3339 with microseconds; the date and time part is formatted again
 * only when the second changes. */
typedef struct stamper {
    time_t secs;
    char buf[80]; /* room for any int in each field */
} stamper;

static const char *stamp(stamper *s, double t)
{
    time_t secs = (time_t)t;

    if (secs != s->secs || !s->buf[0]) {
        struct tm tm;

        gmtime_r(&secs, &tm);
        snprintf(s->buf, sizeof s->buf, "%04d-%02d-%02dT%02d:%02d:%02d.000000Z",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec);
        s->secs = secs;
    }
    put_dec(s->buf + 20, (unsigned long)((t - (double)secs) * 1e6) % 1000000,
            6);
    return s->buf;
}

/* A message built once and re-stamped for each send: its fields are
 * fixed-width placeholders whose places in the msgpack bytes are found
 * once, so a send is a copy and a few overwrites and the generator's own
 * cost stays far below what it measures. */
#define TMPL_PLACES 8

typedef struct tmpl {
    char *buf;
    size_t len;
    int n; /* places */
    struct {
        size_t off, len;
        int field; /* index into the values send_as is given */
    } at[TMPL_PLACES];
} tmpl;

#define PH_TS "2000-01-01T00:00:00.000000Z"
#define PH_ID "0123456789abcdef"

/* json's signal as msgpack, and every place of each placeholder in it
 * (fields: NULL-ended). Places may not overlap. */
static tmpl template_of(const char *json, const char *const *fields)
{
    tmpl t = {0};

    t.buf = encode(json, &t.len);
    for (int f = 0; fields[f]; f++) {
        size_t n = strlen(fields[f]);
        const char *p = t.buf, *end = t.buf + t.len;

        while ((p = memmem(p, (size_t)(end - p), fields[f], n))) {
            size_t off = (size_t)(p - t.buf);

            for (int k = 0; k < t.n; k++)
                if (off < t.at[k].off + t.at[k].len && t.at[k].off < off + n) {
                    fprintf(stderr, "bench_latency: placeholders overlap in %s\n",
                            json);
                    exit(2);
                }
            if (t.n == TMPL_PLACES) {
                fprintf(stderr, "bench_latency: too many placeholders in %s\n",
                        json);
                exit(2);
            }
            t.at[t.n].off = off;
            t.at[t.n].len = n;
            t.at[t.n].field = f;
            t.n++;
            p += n;
        }
    }
    return t;
}

/* Sends t with its fields set to vals (each as long as its placeholder);
 * librdkafka copies the bytes into the message it allocates anyway. */
static void send_as(rd_kafka_t *rk, const tmpl *t, const char *const *vals)
{
    char m[1024];

    if (t->len > sizeof m)
        exit(2);
    memcpy(m, t->buf, t->len);
    for (int k = 0; k < t->n; k++)
        memcpy(m + t->at[k].off, vals[t->at[k].field], t->at[k].len);
    while (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(KFK_TOPIC_SIGNALS),
                             RD_KAFKA_V_KEY("default", 7),
                             RD_KAFKA_V_VALUE(m, t->len),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                             RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
        rd_kafka_poll(rk, 1);
}

/* ---- incidents ------------------------------------------------------- */

static void on_incident(run *r, const rd_kafka_message_t *m)
{
    json_error_t je;
    json_t *o = json_loadb(m->payload, m->len, 0, &je);
    const char *sc = json_string_value(json_object_get(o, "scenario"));
    const char *node = json_string_value(
        json_object_get(json_object_get(o, "scope"), "node"));
    int i;

    if (sc && node && !strcmp(sc, "peer.xid79_job_cancel") &&
        sscanf(node, "lat%d", &i) == 1 && i >= 0 && i < r->npat &&
        r->sent[i] > 0 && r->lat[i] < 0) {
        r->lat[i] = now_s() - r->sent[i];
        atomic_fetch_add(&r->seen, 1);
    }
    json_decref(o);
}

/* --hop: a completing signal (the job cancel) read back from the topic;
 * its node name ("lat000123") is in the msgpack payload as text. */
static void on_signal(run *r, const rd_kafka_message_t *m)
{
    const char *p = m->payload;
    const char *lat;
    int i;

    if (!memmem(p, m->len, "CANCELLED", 9) ||
        !(lat = memmem(p, m->len, "lat", 3)) ||
        (size_t)(lat - p) + 9 > m->len)
        return;
    char node[10];
    memcpy(node, lat, 9);
    node[9] = '\0';
    if (sscanf(node, "lat%d", &i) == 1 && i >= 0 && i < r->npat &&
        r->sent[i] > 0 && r->lat[i] < 0) {
        r->lat[i] = now_s() - r->sent[i];
        atomic_fetch_add(&r->seen, 1);
    }
}

static void *reader(void *arg)
{
    run *r = arg;
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(64);
    const struct rd_kafka_metadata *md;
    rd_kafka_topic_t *t;
    char err[256];
    rd_kafka_t *rk;

    set(c, "bootstrap.servers", r->brokers);
    set(c, "group.id", "bench-latency");
    set(c, "enable.auto.commit", "false");
    set(c, "socket.nagle.disable", "true");
    set(c, "fetch.wait.max.ms", r->fetch_wait);
    if (!(rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof err))) {
        fprintf(stderr, "bench_latency: %s\n", err);
        exit(2);
    }
    const char *topic = r->hop ? KFK_TOPIC_SIGNALS : KFK_TOPIC_INCIDENTS;
    t = rd_kafka_topic_new(rk, topic, NULL);
    if (rd_kafka_metadata(rk, 0, t, &md, 10000) || md->topic_cnt != 1) {
        fprintf(stderr, "bench_latency: no metadata for %s\n", topic);
        exit(1);
    }
    for (int i = 0; i < md->topics[0].partition_cnt; i++)
        rd_kafka_topic_partition_list_add(l, topic, i)->offset =
            RD_KAFKA_OFFSET_END;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
    rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    /* let the end offsets resolve before the first signal goes out */
    for (double until = now_s() + 1.0; now_s() < until;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 50);
        if (m)
            rd_kafka_message_destroy(m);
    }
    atomic_store(&r->ready, 1);
    while (!atomic_load(&r->stop)) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 20);
        if (!m)
            continue;
        if (!m->err && r->hop)
            on_signal(r, m);
        else if (!m->err)
            on_incident(r, m);
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return NULL;
}

/* ---- signals --------------------------------------------------------- */

static rd_kafka_t *writer(const char *brokers)
{
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    char err[256];
    rd_kafka_t *rk;

    /* as a collector publishes: cascade's producer settings */
    set(c, "bootstrap.servers", brokers);
    set(c, "enable.idempotence", "true");
    set(c, "socket.nagle.disable", "true");
    set(c, "compression.codec", "zstd");
    set(c, "compression.level", "1"); /* core/kafka.c's: the default (3)
                                         costs the generator more CPU */
    set(c, "linger.ms", "1");
    if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err))) {
        fprintf(stderr, "bench_latency: %s\n", err);
        exit(2);
    }
    return rk;
}

/* The writer's metadata and producer id, before the clock starts. */
static void warm(rd_kafka_t *rk)
{
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, KFK_TOPIC_SIGNALS, NULL);
    const struct rd_kafka_metadata *md = NULL;

    if (rd_kafka_metadata(rk, 0, t, &md, 10000) == 0)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
    for (double until = now_s() + 0.5; now_s() < until;)
        rd_kafka_poll(rk, 50);
}

static void offer(run *r, rd_kafka_t *rk, double *achieved)
{
    long total = (long)(r->rate * r->seconds), every, done = 0;
    double t0 = now_s(), ts;
    char id[] = PH_ID, id2[] = PH_ID, host[] = "node0000",
         job[] = "10000000", node[] = "lat000000", pjob[] = "900000";
    stamper clock = {0};
    int pat = 0;
    tmpl xid = template_of(
        "{\"ts\":\"" PH_TS "\",\"source\":\"kernel\",\"host\":\"lat000000\","
        "\"id\":\"" PH_ID "\",\"line\":\"[100.0] NVRM: Xid (PCI:0000:3b:00): "
        "79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\"}",
        (const char *const[]){PH_TS, PH_ID, "lat000000", NULL});
    tmpl cancel = template_of(
        "{\"ts\":\"" PH_TS "\",\"source\":\"slurm\",\"host\":\"lat000000\","
        "\"id\":\"" PH_ID "\",\"line\":\"error: *** JOB 900000 ON lat000000 "
        "CANCELLED AT 2026-01-01T00:00:00 DUE TO NODE FAILURE ***\"}",
        (const char *const[]){PH_TS, PH_ID, "lat000000", "900000", NULL});
    tmpl timeout = template_of(
        "{\"ts\":\"" PH_TS "\",\"source\":\"app\",\"host\":\"node0000\","
        "\"job\":\"10000000\",\"id\":\"" PH_ID "\",\"line\":\"[rank3]:[E0501 "
        "ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600100 milliseconds before "
        "timing out.\"}",
        (const char *const[]){PH_TS, PH_ID, "node0000", "10000000", NULL});

    /* ids unique across runs on one broker (a warm-up before the measured
     * run): the correlator drops a signal whose id it has seen. The start
     * in ms above 32 bits of sequence. */
    unsigned long base = ((unsigned long)(t0 * 1000) & 0xffffffffUL) << 32;

    every = r->patterns > 0 ? (long)(r->rate / r->patterns) : total + 1;
    if (every < 2)
        every = 2;
    for (long i = 0; i < total; i++) {
        double due = t0 + (double)i / r->rate;
        const char *at;
        /* everything due goes now; ahead of time, sleep (a collector
         * sends in bursts too) */
        if ((ts = now_s()) < due) {
            struct timespec d = {0, (long)((due - ts) * 1e9)};
            nanosleep(&d, NULL);
            ts = now_s();
        }
        at = stamp(&clock, ts);
        put_hex(id, base + (unsigned long)i * 2 + 1);
        if (i % every == 0 && pat < r->npat) {
            put_dec(node + 3, (unsigned long)pat % 1000000, 6);
            put_dec(pjob, 900000 + (unsigned long)pat % 100000, 6);
            put_hex(id2, base + (unsigned long)i * 2 + 2);
            send_as(rk, &xid, (const char *const[]){at, id, node});
            r->sent[pat] = now_s();
            send_as(rk, &cancel, (const char *const[]){at, id2, node, pjob});
            pat++;
            i++;
            done += 2;
            continue;
        }
        put_dec(host + 4, (unsigned long)i % 1000, 4);
        put_dec(job, 10000000 + (unsigned long)i % (unsigned long)r->jobs, 8);
        send_as(rk, &timeout, (const char *const[]){at, id, host, job});
        done++;
        if ((i & 255) == 0)
            rd_kafka_poll(rk, 0);
    }
    *achieved = (double)done / (now_s() - t0);
    r->npat = pat;
    free(xid.buf);
    free(cancel.buf);
    free(timeout.buf);
}


/* Percentiles of the patterns sent in [from, to) seconds after the first
 * one, as a line of FILE; v is scratch of npat doubles. */
static void interval_line(FILE *f, const run *r, double from, double to,
                          double *v)
{
    int n = 0, sent = 0;

    for (int i = 0; i < r->npat; i++) {
        double at = r->sent[i] - r->sent[0];
        if (r->sent[i] <= 0 || at < from || at >= to)
            continue;
        sent++;
        if (r->lat[i] >= 0)
            v[n++] = r->lat[i] * 1000;
    }
    if (n == 0) {
        fprintf(f, "%.0f %.0f %d 0 - - - -\n", from, to, sent);
        return;
    }
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    fprintf(f, "%.0f %.0f %d %d %.2f %.2f %.2f %.2f\n", from, to, sent, n,
            v[n / 2], v[(size_t)((double)n * 0.99)],
            v[(size_t)((double)n * 0.999)], v[n - 1]);
}

int main(int argc, char **argv)
{
    run r = {.seconds = 10, .patterns = 100, .jobs = 80000000,
             .fetch_wait = "1"};
    const char *intervals = NULL;
    double every = 0;
    int bad = 0;
    pthread_t th;
    rd_kafka_t *rk;
    double achieved, *v;
    int n = 0;

    for (int i = 1; i < argc && !strcmp(argv[i], "--hop"); i++) {
        r.hop = 1;
        memmove(&argv[i], &argv[i + 1], (size_t)(argc - i) * sizeof *argv);
        argc--;
        i--;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--brokers"))
            r.brokers = argv[i + 1];
        else if (!strcmp(argv[i], "--rate"))
            r.rate = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds"))
            r.seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--patterns"))
            r.patterns = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--every"))
            every = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--jobs"))
            r.jobs = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--intervals"))
            intervals = argv[i + 1];
        else if (!strcmp(argv[i], "--topic-prefix"))
            bad |= topic_set_prefix(argv[i + 1], NULL) != 0;
        else if (!strcmp(argv[i], "--fetch-wait") && atoi(argv[i + 1]) >= 0)
            snprintf(r.fetch_wait, sizeof r.fetch_wait, "%d",
                     atoi(argv[i + 1]));
        else
            bad = 1;
    }
    if (bad || argc % 2 == 0 || !r.brokers || r.rate <= 0 || r.seconds <= 0 ||
        r.jobs < 1 || r.jobs > 80000000 ||
        r.patterns < 0 || r.patterns > r.rate / 2 || every < 0 ||
        !every != !intervals) {
        fprintf(stderr, "usage: bench_latency [--hop] --brokers ADDR --rate R "
                        "[--seconds S] [--patterns P (<= R/2)] "
                        "[--fetch-wait MS] [--topic-prefix P] "
                        "[--every S --intervals FILE] [--jobs N]\n");
        return 2;
    }
    r.npat = (int)(r.patterns * r.seconds) + 1;
    if (r.npat > MAX_PATTERNS)
        r.npat = MAX_PATTERNS;
    r.sent = calloc((size_t)r.npat, sizeof *r.sent);
    r.lat = malloc((size_t)r.npat * sizeof *r.lat);
    v = malloc((size_t)r.npat * sizeof *v);
    if (!r.sent || !r.lat || !v)
        return 2;
    for (int i = 0; i < r.npat; i++)
        r.lat[i] = -1;
    rk = writer(r.brokers);
    warm(rk);
    if (r.patterns == 0) { /* --patterns 0: load only (live keys) */
        offer(&r, rk, &achieved);
        rd_kafka_flush(rk, 30000);
        printf("%.0f %.0f 0 0 - - - -\n", r.rate, achieved);
        rd_kafka_destroy(rk);
        return 0;
    }
    pthread_create(&th, NULL, reader, &r);
    while (!atomic_load(&r.ready))
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    offer(&r, rk, &achieved);
    rd_kafka_flush(rk, 10000);
    for (double until = now_s() + 10; now_s() < until &&
                                      atomic_load(&r.seen) < r.npat;)
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    atomic_store(&r.stop, 1);
    pthread_join(th, NULL);
    rd_kafka_destroy(rk);
    for (int i = 0; i < r.npat; i++)
        if (r.lat[i] >= 0)
            v[n++] = r.lat[i] * 1000;
    if (n == 0) {
        fprintf(stderr, "bench_latency: no incident arrived for %d patterns\n",
                r.npat);
        return 1;
    }
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    printf("%.0f %.0f %d %d %.2f %.2f %.2f %.2f\n", r.rate, achieved, r.npat, n,
           v[n / 2], v[(size_t)((double)n * 0.99)],
           v[(size_t)((double)n * 0.999)], v[n - 1]);
    fflush(stdout);
    if (intervals) { /* v is scratch now */
        FILE *f = fopen(intervals, "w");
        if (!f) {
            perror(intervals);
            return 1;
        }
        for (double t = 0; t < r.seconds; t += every)
            interval_line(f, &r, t, t + every, v);
        fclose(f);
    }
    free(r.sent);
    free(r.lat);
    free(v);
    return 0;
}
