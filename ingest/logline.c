#include "ingest/logline.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "core/hash.h"
#include "core/str.h"
#include "ingest/syslog.h"
#include "rules/classify.h"

#define LL_RAW_MAX (64 * 1024)

struct ll_encoder {
    ll_opts o;
    char *key; /* the last signal's cluster, when it is not o.cluster */
    /* the last second formatted as RFC 3339 (lines come in time order) */
    time_t stamp_secs;
    char stamp[32];
};

ll_encoder *ll_new(const ll_opts *o)
{
    ll_encoder *e = calloc(1, sizeof *e);

    if (e)
        e->o = *o;
    return e;
}

void ll_free(ll_encoder *e)
{
    if (e)
        free(e->key);
    free(e);
}

/* The key of a signal whose cluster came from the line: a copy, as the
 * signal it is in goes. NULL when out of memory. */
static const char *keep_key(ll_encoder *e, const char *cluster)
{
    free(e->key);
    e->key = strdup(cluster);
    return e->key;
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

/* A JSON string of arbitrary bytes: invalid UTF-8 (including a character
 * cut by truncation) becomes U+FFFD, so the record stays valid JSON. */
static json_t *safe_string(const char *s, size_t n)
{
    json_t *o = json_stringn(s, n);
    char *out;
    size_t k, w = 0;

    if (o || !(out = malloc(n * 3 + 1)))
        return o;
    for (size_t i = 0; i < n; i += k ? k : 1) {
        k = str_utf8_seq((const unsigned char *)s + i, n - i);
        if (k) {
            memcpy(out + w, s + i, k);
            w += k;
        } else {
            memcpy(out + w, "\xEF\xBF\xBD", 3);
            w += 3;
        }
    }
    o = json_stringn(out, w);
    free(out);
    return o;
}

char *ll_dead_letter(const char *name, unsigned long lineno,
                     const char *reason, const char *raw, size_t len)
{
    json_t *o = json_pack("{s:o, s:I, s:o, s:o}", "source_file",
                          safe_string(name, strlen(name)), "line",
                          (json_int_t)lineno, "reason",
                          safe_string(reason, strlen(reason)), "raw",
                          safe_string(raw, len < LL_RAW_MAX ? len : LL_RAW_MAX));
    char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;

    json_decref(o);
    return txt;
}

static void put_digits(char *p, unsigned v, int width)
{
    for (int i = width - 1; i >= 0; i--, v /= 10)
        p[i] = (char)('0' + v % 10);
}

/* ts (microseconds) as "YYYY-MM-DDTHH:MM:SS.uuuuuuZ": gmtime and snprintf
 * for every line were a tenth of the collector's time, and a log's lines
 * mostly share their second with the line before. */
static const char *stamp_of(ll_encoder *e, int64_t ts)
{
    time_t secs = (time_t)(ts / 1000000);
    int us = (int)(ts % 1000000 + 1000000) % 1000000;

    if (ts < 0 && us) /* the second before, as gmtime of ts/1e6 floors */
        secs--;
    if (secs != e->stamp_secs || !e->stamp[0]) {
        struct tm tm;
        char b[64];

        gmtime_r(&secs, &tm);
        snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.000000Z",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec);
        str_copy(e->stamp, sizeof e->stamp, b);
        e->stamp_secs = secs;
    }
    put_digits(e->stamp + strlen(e->stamp) - 7, (unsigned)us, 6);
    return e->stamp;
}

static const char *cluster_of(const ll_encoder *e)
{
    return e->o.cluster ? e->o.cluster : "default";
}

/* The raw line (time and host included: a syslog line says when and
 * where) names the signal; a plain line says neither, and its place
 * joins it. */
static void line_id(const ll_encoder *e, const ll_origin *from,
                    const char *line, size_t len, char id[17])
{
    const char *c = cluster_of(e);
    uint64_t h = hash_fnv1a(HASH_FNV_SEED, c, strlen(c) + 1);

    if (from)
        h = hash_fnv1a(h, &from->place, sizeof from->place);
    h = hash_words(h, line, len);
    for (int i = 15; i >= 0; i--, h >>= 4)
        id[i] = "0123456789abcdef"[h & 15];
    id[16] = '\0';
}

/* The signal as a JSON object, for what the direct msgpack path does not
 * write (a rank; text that is not valid UTF-8, which safe_string
 * replaces); NULL when it cannot be built. */
static json_t *log_object(const ll_encoder *e, const char *stamp,
                          sig_source src, const char *msg, const char *host,
                          const char *job, int rank, const char *id)
{
    json_t *o = json_pack("{s:s, s:s, s:o}", "ts", stamp, "source",
                          sig_source_name(src), "line",
                          safe_string(msg, strlen(msg)));

    if (o && host && host[0])
        json_object_set_new(o, "host", safe_string(host, strlen(host)));
    if (o && job && job[0])
        json_object_set_new(o, "job", safe_string(job, strlen(job)));
    if (o && rank >= 0)
        json_object_set_new(o, "rank", json_integer(rank));
    if (o && e->o.cluster)
        json_object_set_new(o, "cluster", json_string(e->o.cluster));
    if (o)
        json_object_set_new(o, "id", json_string(id));
    return o;
}

/* A parsed signal's msgpack and key; the signal is freed. */
static int packed(ll_encoder *e, sig *s, const char **key, char **buf,
                  size_t *blen, cs_err *why)
{
    sig_to_msgpack(s, buf, blen);
    *key = keep_key(e, s->cluster);
    sig_free(s);
    if (!*key) {
        free(*buf);
        cs_err_set(why, "out of memory");
        return 1;
    }
    return 0;
}

static int from_object(ll_encoder *e, json_t *o, const char **key, char **buf,
                       size_t *blen, cs_err *why)
{
    sig s;

    if (!o) {
        cs_err_set(why, "cannot encode the signal");
        return 1;
    }
    if (sig_adopt_json(&s, o, why)) /* o is ours: no copy */
        return 1;
    return packed(e, &s, key, buf, blen, why);
}

/* A log line's fields made a signal: almost always its msgpack written
 * directly, the same bytes the object gives, without building it. */
static int log_signal(ll_encoder *e, const char *stamp, sig_source src,
                      const char *msg, const char *host, const char *job,
                      int rank, const char *id, const char **key, char **buf,
                      size_t *blen, cs_err *why)
{
    if (rank < 0 && !sig_log_msgpack(stamp, src, msg, host, job, e->o.cluster,
                                     id, buf, blen)) {
        *key = cluster_of(e);
        return 0;
    }
    return from_object(e, log_object(e, stamp, src, msg, host, job, rank, id),
                       key, buf, blen, why);
}

static int syslog_line(ll_encoder *e, char *line, size_t len,
                       const char **key, char **buf, size_t *blen, cs_err *why)
{
    slg_line l;
    char id[17];

    if (slg_parse(line, e->o.year, &l, why))
        return 1;
    if (e->o.edge && !cls_edge_keep(e->o.edge, l.source, l.msg))
        return 2;
    line_id(e, NULL, line, len, id);
    return log_signal(e, stamp_of(e, l.ts), l.source, l.msg, l.host, l.job,
                      -1, id, key, buf, blen, why);
}

static int plain_line(ll_encoder *e, const ll_origin *from, char *line,
                      size_t len, const char **key, char **buf, size_t *blen,
                      cs_err *why)
{
    char id[17];

    if (e->o.edge && !cls_edge_keep(e->o.edge, from->source, line))
        return 2;
    line_id(e, from, line, len, id);
    return log_signal(e, stamp_of(e, from->ts), from->source, line,
                      from->host, from->job, from->rank, id, key, buf, blen,
                      why);
}

int ll_encode(ll_encoder *e, const ll_origin *from, char *line, size_t len,
              const char **key, char **buf, size_t *blen, cs_err *why)
{
    sig s;

    if (blank(line, len))
        return 3;
    if (e->o.format == LL_JSONL) {
        if (sig_parse_json(&s, line, len, why))
            return 1;
        return packed(e, &s, key, buf, blen, why);
    }
    while (len && line[len - 1] == '\r')
        len--;
    line[len] = '\0';
    if (memchr(line, '\0', len)) {
        cs_err_set(why, "the line holds a NUL byte");
        return 1;
    }
    if (e->o.format == LL_SYSLOG)
        return syslog_line(e, line, len, key, buf, blen, why);
    if (!from) {
        cs_err_set(why, "a plain line needs its origin");
        return 1;
    }
    return plain_line(e, from, line, len, key, buf, blen, why);
}
