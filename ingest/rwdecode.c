#include "ingest/rwdecode.h"

#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>

#include "core/hash.h"
#include "core/mem.h"
#include "core/signal.h"
#include "core/str.h"
#include "core/strmap.h"
#include "core/ts.h"
#include "prompb.pb-c.h"
#include "rules/mnames.h"

#define RWD_DEFAULT_MAX_DECOMPRESSED (16u << 20)
#define RWD_DEFAULT_MAX_MEMORY (64u << 20)
#define RWD_DEFAULT_MAX_SAMPLES 50000
#define RWD_DEFAULT_MAX_AHEAD_US (10 * 60 * 1000000LL)
/* A label past these is refused: Prometheus' own defaults are unlimited,
 * but nothing the rules read comes near them, and a signal must stay
 * well under Kafka's message limit. */
#define RWD_MAX_LABELS 128
#define RWD_MAX_NAME 256
#define RWD_MAX_VALUE 4096

/* The names exporters use for what the rules read under another name. */
static const char *const default_rename[] = {
    /* DCGM field 112's new name; the old one is deprecated, not gone */
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", M_THROTTLE,
    /* node_exporter's host TCP retransmitted segments (a counter) */
    "node_netstat_Tcp_RetransSegs", M_TCP_RETX,
};
static const char *const default_job_labels[] = {"hpc_job"};
/* dcgm-exporter's host label (renamed hostname after 4.5), then the ones
 * other exporters and relabelling use. */
static const char *const host_labels[] = {"Hostname", "hostname", "node",
                                          "nodename", "host"};

struct rwd {
    char *cluster;
    size_t max_decompressed, max_memory, max_samples;
    int64_t max_ahead_us;
    int all;
    strmap *allow;  /* name -> the rwd (any non-NULL) */
    strmap *rename; /* from -> to (owned) */
    char **job_labels;
    size_t njob;
};

/* ---- configuration -------------------------------------------------------- */

static void free_str(void *v)
{
    free(v);
}

rwd *rwd_new(const rwd_opts *o, cs_err *err)
{
    const char *const *ren = o->nrename ? o->rename : default_rename;
    size_t nren = o->nrename ? o->nrename : sizeof default_rename /
                                                sizeof *default_rename / 2;
    const char *const *jl = o->njob_labels ? o->job_labels
                                           : default_job_labels;
    rwd *d = xcalloc(1, sizeof *d);

    d->cluster = xstrdup(o->cluster && *o->cluster ? o->cluster : "default");
    d->max_decompressed = o->max_decompressed ? o->max_decompressed
                                              : RWD_DEFAULT_MAX_DECOMPRESSED;
    d->max_memory = o->max_memory ? o->max_memory : RWD_DEFAULT_MAX_MEMORY;
    d->max_samples = o->max_samples ? o->max_samples
                                    : RWD_DEFAULT_MAX_SAMPLES;
    d->max_ahead_us = o->max_ahead_us ? o->max_ahead_us
                                      : RWD_DEFAULT_MAX_AHEAD_US;
    d->all = o->all;
    d->allow = strmap_new();
    d->rename = strmap_new();
    for (size_t i = 0; i < o->nallow; i++)
        strmap_put(d->allow, o->allow[i], d); /* any non-NULL value */
    for (size_t i = 0; i < nren; i++) {
        if (!*ren[2 * i] || !*ren[2 * i + 1]) {
            cs_err_set(err, "rename %zu: a name is empty", i + 1);
            rwd_free(d);
            return NULL;
        }
        free(strmap_put(d->rename, ren[2 * i], xstrdup(ren[2 * i + 1])));
    }
    d->njob = o->njob_labels ? o->njob_labels
                             : sizeof default_job_labels /
                                   sizeof *default_job_labels;
    d->job_labels = xcalloc(d->njob, sizeof *d->job_labels);
    for (size_t i = 0; i < d->njob; i++)
        d->job_labels[i] = xstrdup(jl[i]);
    return d;
}

void rwd_free(rwd *d)
{
    if (!d)
        return;
    free(d->cluster);
    strmap_free(d->allow, NULL);
    strmap_free(d->rename, free_str);
    for (size_t i = 0; i < d->njob; i++)
        free(d->job_labels[i]);
    free(d->job_labels);
    free(d);
}

/* ---- the body --------------------------------------------------------------- */

/* protobuf-c allocates the whole message, a struct and two strings a
 * label: one of a few MB on the wire can ask for many times that, in
 * many small pieces. They come from a bump arena, counted and capped, and
 * go all at once with it (protobuf-c's own frees are no-ops). */
#define RWD_CHUNK (64u << 10) /* under malloc's mmap threshold: reused */

typedef struct rwd_chunk {
    struct rwd_chunk *next;
    size_t used, cap;
    max_align_t data[];
} rwd_chunk;

typedef struct rwd_arena {
    rwd_chunk *head;
    size_t used, cap; /* bytes handed out, and their limit */
    int over;         /* an allocation was refused at the limit */
} rwd_arena;

static void *arena_alloc(void *data, size_t size)
{
    rwd_arena *a = data;
    rwd_chunk *c = a->head;
    size_t need = (size + sizeof(max_align_t) - 1) &
                  ~(sizeof(max_align_t) - 1);
    void *p;

    if (need > a->cap - a->used) {
        a->over = 1;
        return NULL;
    }
    if (!c || need > c->cap - c->used) {
        size_t cap = need > RWD_CHUNK ? need : RWD_CHUNK;
        if (!(c = malloc(sizeof *c + cap)))
            return NULL;
        *c = (rwd_chunk){.next = a->head, .used = 0, .cap = cap};
        a->head = c;
    }
    p = (char *)c->data + c->used;
    c->used += need;
    a->used += need;
    return p;
}

static void arena_free(void *data, void *ptr)
{
    (void)data;
    (void)ptr;
}

static void arena_drop(rwd_arena *a)
{
    while (a->head) {
        rwd_chunk *next = a->head->next;
        free(a->head);
        a->head = next;
    }
}

static int unsnap(const rwd *d, const void *body, size_t len, char **out,
                  size_t *outlen, cs_err *err)
{
    size_t n;

    if (snappy_uncompressed_length(body, len, &n) != SNAPPY_OK) {
        cs_err_set(err, "the body is not a snappy block (Content-Encoding: "
                        "snappy, block format)");
        return 400;
    }
    if (n > d->max_decompressed) {
        cs_err_set(err, "the body decompresses to %zu bytes, over "
                   "max_decompressed (%zu): lower queue_config."
                   "max_samples_per_send", n, d->max_decompressed);
        return 413;
    }
    *out = xmalloc(n ? n : 1);
    *outlen = n;
    if (snappy_uncompress(body, len, *out, outlen) != SNAPPY_OK ||
        *outlen != n) {
        cs_err_set(err, "the body is not a valid snappy block");
        free(*out);
        *out = NULL;
        return 400;
    }
    return 0;
}

static Prometheus__WriteRequest *unpack(const rwd *d, const char *buf,
                                        size_t len, rwd_arena *ar,
                                        ProtobufCAllocator *al, int *code,
                                        cs_err *err)
{
    Prometheus__WriteRequest *wr;

    *ar = (rwd_arena){NULL, 0, d->max_memory, 0};
    *al = (ProtobufCAllocator){arena_alloc, arena_free, ar};
    wr = prometheus__write_request__unpack(al, len, (const uint8_t *)buf);
    if (wr)
        return wr;
    /* an allocation refused at the cap fails the unpack the same way as
     * a malformed message: the arena says which it was */
    arena_drop(ar);
    if (ar->over) {
        cs_err_set(err, "the request needs over %zu bytes decoded "
                   "(max_memory): lower queue_config.max_samples_per_send",
                   d->max_memory);
        *code = 413;
    } else {
        cs_err_set(err, "the body is not a prometheus.WriteRequest "
                        "(remote-write 1.0 protobuf)");
        *code = 400;
    }
    return NULL;
}

/* ---- one series ------------------------------------------------------------- */

static void invalid(rwd_result *r, unsigned long n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void invalid(rwd_result *r, unsigned long n, const char *fmt, ...)
{
    va_list ap;

    if (!r->invalid) {
        va_start(ap, fmt);
        vsnprintf(r->first_invalid, sizeof r->first_invalid, fmt, ap);
        va_end(ap);
        str_utf8_trim(r->first_invalid);
    }
    r->invalid += n;
}

static const char *label(const Prometheus__TimeSeries *ts, const char *name)
{
    for (size_t i = 0; i < ts->n_labels; i++)
        if (strcmp(ts->labels[i]->name, name) == 0)
            return *ts->labels[i]->value ? ts->labels[i]->value : NULL;
    return NULL;
}

/* A series as the fields its samples share; its texts point into the
 * decoded request, or into hostbuf. */
typedef struct rwd_series {
    const char *name, *cluster, *job, *host;
    /* The labels a signal carries (job renamed scrape_job; __name__,
     * cluster and empty values left out), in the request's order. */
    const char *lk[RWD_MAX_LABELS], *lv[RWD_MAX_LABELS];
    size_t nl;
    uint64_t h; /* the hash of cluster, name and labels */
    char hostbuf[RWD_MAX_VALUE + 1];
} rwd_series;

/* The host label's value, or the instance's host part; NULL: none. */
static const char *series_host(const Prometheus__TimeSeries *ts,
                               rwd_series *s)
{
    const char *v;
    size_t len;

    for (size_t i = 0; i < sizeof host_labels / sizeof *host_labels; i++)
        if ((v = label(ts, host_labels[i])))
            return v;
    if (!(v = label(ts, "instance")))
        return NULL;
    v = str_instance_host(v, &len);
    if (!len || len >= sizeof s->hostbuf) /* checked: at most a value */
        return NULL;
    memcpy(s->hostbuf, v, len);
    s->hostbuf[len] = '\0';
    return s->hostbuf;
}

/* The labels a signal carries (job renamed scrape_job); -1 invalid. */
static int series_labels(const Prometheus__TimeSeries *ts, rwd_series *s,
                         rwd_result *r, unsigned long n)
{
    for (size_t i = 0; i < ts->n_labels; i++) {
        const Prometheus__Label *l = ts->labels[i];
        const char *k = strcmp(l->name, "job") ? l->name : "scrape_job";

        if (!*l->value)
            continue;
        if (strlen(l->name) > RWD_MAX_NAME || strlen(l->value) >
            RWD_MAX_VALUE) {
            invalid(r, n, "series %s: label %.60s is over %d bytes (name) "
                    "or %d (value)", s->name, l->name, RWD_MAX_NAME,
                    RWD_MAX_VALUE);
            return -1;
        }
        if (!str_utf8_valid(l->name, strlen(l->name)) ||
            !str_utf8_valid(l->value, strlen(l->value))) {
            invalid(r, n, "series %s: label %.60s is not valid UTF-8",
                    s->name, l->name);
            return -1;
        }
        if (!strcmp(l->name, "__name__") || !strcmp(l->name, "cluster"))
            continue; /* hashed and carried apart */
        s->lk[s->nl] = k;
        s->lv[s->nl++] = l->value;
        s->h = hash_fnv1a(s->h, l->name, strlen(l->name) + 1);
        s->h = hash_fnv1a(s->h, l->value, strlen(l->value) + 1);
    }
    return 0;
}

static const char *renamed(const rwd *d, const char *name)
{
    const char *to = strmap_get(d->rename, name);

    return to ? to : name;
}

static int kept(const rwd *d, const char *name)
{
    return d->all || mn_read(name) || strmap_get(d->allow, name);
}

/* 0: s is ready; 1: its samples are counted and dropped. */
static int series_open(const rwd *d, const Prometheus__TimeSeries *ts,
                       rwd_series *s, rwd_result *r)
{
    unsigned long n = ts->n_samples;
    const char *name = label(ts, "__name__");

    /* not the buffers: 6 KiB a series */
    s->name = s->cluster = s->job = s->host = NULL;
    s->nl = 0;
    s->h = 0;
    if (!name) {
        invalid(r, n, "a series without __name__");
        return 1;
    }
    s->name = renamed(d, name);
    if (!kept(d, s->name)) {
        r->filtered += n;
        return 1;
    }
    if (ts->n_labels > RWD_MAX_LABELS) {
        invalid(r, n, "series %.100s: %zu labels, over %d", s->name,
                ts->n_labels, RWD_MAX_LABELS);
        return 1;
    }
    s->cluster = label(ts, "cluster");
    s->cluster = s->cluster ? s->cluster : d->cluster;
    s->h = hash_fnv1a(HASH_FNV_SEED, s->cluster, strlen(s->cluster) + 1);
    s->h = hash_fnv1a(s->h, s->name, strlen(s->name) + 1);
    if (series_labels(ts, s, r, n)) /* every label valid UTF-8 from here */
        return 1;
    if (!(s->host = series_host(ts, s))) {
        r->nohost += n;
        return 1;
    }
    for (size_t i = 0; i < d->njob && !s->job; i++)
        s->job = label(ts, d->job_labels[i]);
    return 0;
}

/* ---- one sample ------------------------------------------------------------- */

/* The signal, written as msgpack without a JSON object in between: the
 * object, its copy of the labels and their encoding were half of the
 * receiver's time (docs/PERFORMANCE.md). The bytes are those the object
 * path wrote (sig_metric_msgpack; unit.signal compares them). */
static void sample(const rwd *d, const rwd_series *s,
                   const Prometheus__Sample *sm, int64_t now_us,
                   rwd_result *r)
{
    int64_t ms = sm->timestamp;
    uint64_t h = hash_fnv1a(s->h, &ms, sizeof ms);
    char ts[40], id[17];
    pw_msg *m;

    if (!isfinite(sm->value)) {
        r->nonfinite++;
        return;
    }
    if (ms <= 0 || ms > (now_us + d->max_ahead_us) / 1000) {
        invalid(r, 1, "series %.100s on %.60s: time %lld ms is %s",
                s->name, s->host, (long long)ms,
                ms <= 0 ? "not after 1970" : "in the future (the sender's "
                "clock?)");
        return;
    }
    ts_format(ms * 1000, ts, sizeof ts);
    snprintf(id, sizeof id, "%016llx", (unsigned long long)h);
    m = &r->msgs[r->n];
    if (sig_metric_msgpack(ts, id, s->cluster, s->host, s->name, sm->value,
                           s->lk, s->lv, s->nl, s->job, &m->val, &m->len)) {
        invalid(r, 1, "series %.100s: not a valid signal (a name, cluster "
                "or host that is empty or not UTF-8)", s->name);
        return;
    }
    /* msgpack's buffer starts at 8 KiB: held until delivered, its unused
     * tail would outweigh a small signal */
    m->val = xrealloc(m->val, m->len ? m->len : 1);
    m->key = xstrdup(s->cluster);
    r->n++;
}

/* ---- one request ------------------------------------------------------------ */

static size_t count_samples(const Prometheus__WriteRequest *wr)
{
    size_t n = 0;

    for (size_t i = 0; i < wr->n_timeseries; i++)
        n += wr->timeseries[i]->n_samples;
    return n;
}

static void request(const rwd *d, const Prometheus__WriteRequest *wr,
                    int64_t now_us, rwd_result *r)
{
    rwd_series s;

    r->msgs = xcalloc(r->samples ? r->samples : 1, sizeof *r->msgs);
    for (size_t i = 0; i < wr->n_timeseries; i++) {
        const Prometheus__TimeSeries *ts = wr->timeseries[i];

        if (series_open(d, ts, &s, r) == 0)
            for (size_t j = 0; j < ts->n_samples; j++)
                sample(d, &s, ts->samples[j], now_us, r);
    }
}

int rwd_decode(const rwd *d, const void *body, size_t len, int64_t now_us,
               rwd_result *r, cs_err *err)
{
    Prometheus__WriteRequest *wr = NULL;
    ProtobufCAllocator al;
    rwd_arena ar = {NULL, 0, 0, 0};
    char *buf = NULL;
    size_t n = 0;
    int code;

    memset(r, 0, sizeof *r);
    if ((code = unsnap(d, body, len, &buf, &n, err)))
        return code;
    if (!(wr = unpack(d, buf, n, &ar, &al, &code, err)))
        goto out;
    r->series = wr->n_timeseries;
    r->samples = count_samples(wr);
    if (r->samples > d->max_samples) {
        cs_err_set(err, "the request has %lu samples, over max_samples "
                   "(%zu): lower queue_config.max_samples_per_send",
                   r->samples, d->max_samples);
        code = 413;
        goto out;
    }
    request(d, wr, now_us, r);
out:
    arena_drop(&ar); /* the whole message at once */
    free(buf);
    return code;
}

void rwd_result_free(rwd_result *r)
{
    pw_msgs_free(r->msgs, r->n);
    memset(r, 0, sizeof *r);
}
