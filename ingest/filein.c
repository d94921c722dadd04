#include "ingest/filein.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "core/hash.h"
#include "core/log.h"
#include "core/str.h"
#include "core/signal.h"
#include "ingest/syslog.h"
#include "rules/classify.h"

#define FIN_RAW_MAX (64 * 1024)
#define FIN_PROGRESS_EVERY 100000UL
/* Serve delivery reports this often so they do not pile up in memory. */
#define FIN_POLL_EVERY 1000UL
#define FIN_FLUSH_MS 30000

typedef struct fin_run {
    const char *name; /* for messages: the path, or "<stdin>" */
    const fin_opts *o;
    kfk_producer *p;
    fin_stats *st;
    int progress;
    char *line; /* SIG_MAX_BYTES + 1 bytes */
    /* the last second formatted as RFC 3339 (lines come in time order) */
    time_t stamp_secs;
    char stamp[32];
} fin_run;

/* ---- reading ------------------------------------------------------------ */

/* Input read in large blocks and split at newlines with memchr: a
 * character at a time (getc) was a fifth of the collector's time, and
 * stdio's 4 KiB reads another fifth in the kernel. */
#define FIN_BLOCK (1 << 20)

typedef struct fin_reader {
    FILE *f;
    char *buf; /* FIN_BLOCK bytes */
    size_t pos, end;
} fin_reader;

/* One line without its newline into line (at most cap bytes kept; the
 * rest is consumed and flagged). Returns 1, 0 at end of input, -1 on
 * error. A NUL byte is kept as it is (the caller rejects it). */
static int read_line(fin_reader *rd, char *line, size_t cap, size_t *len,
                     int *too_long)
{
    size_t n = 0;
    int any = 0;

    *too_long = 0;
    for (;;) {
        if (rd->pos == rd->end) {
            rd->pos = 0;
            rd->end = fread(rd->buf, 1, FIN_BLOCK, rd->f);
            if (rd->end == 0) {
                if (ferror(rd->f))
                    return -1;
                if (!any)
                    return 0;
                break; /* a last line without its newline */
            }
        }
        any = 1;
        const char *from = rd->buf + rd->pos;
        const char *nl = memchr(from, '\n', rd->end - rd->pos);
        size_t take = nl ? (size_t)(nl - from) : rd->end - rd->pos;
        size_t keep = take < cap - n ? take : cap - n;
        memcpy(line + n, from, keep);
        n += keep;
        if (keep < take)
            *too_long = 1;
        rd->pos += take + (nl != NULL);
        if (nl)
            break;
    }
    *len = n;
    return 1;
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

/* ---- dead letters ------------------------------------------------------- */

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

static int produce_retry(kfk_producer *p, const char *topic, const char *key,
                         size_t keylen, const void *val, size_t len,
                         cs_err *err)
{
    int rc;

    while ((rc = kfk_produce(p, topic, key, keylen, val, len, err)) ==
           KFK_QUEUE_FULL)
        kfk_producer_wait(p, 100);
    return rc;
}

/* A signal's message: 0 produced; 1 refused as too big (why says so:
 * the line is dead-lettered and the file goes on); -1 failed. */
static int produce_signal(fin_run *r, const char *key, const char *buf,
                          size_t blen, cs_err *why, cs_err *err)
{
    int rc = produce_retry(r->p, KFK_TOPIC_SIGNALS, key, strlen(key), buf,
                           blen, err);

    if (rc == KFK_TOO_BIG) {
        *why = *err;
        err->msg[0] = '\0';
        return 1;
    }
    return rc == KFK_OK ? 0 : -1;
}

static int dead_letter(fin_run *r, unsigned long lineno, const char *reason,
                       size_t len, cs_err *err)
{
    json_t *o = json_pack("{s:o, s:I, s:o, s:o}", "source_file",
                          safe_string(r->name, strlen(r->name)), "line",
                          (json_int_t)lineno, "reason",
                          safe_string(reason, strlen(reason)), "raw",
                          safe_string(r->line, len < FIN_RAW_MAX ? len
                                                                 : FIN_RAW_MAX));
    char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
    int rc = -1;

    if (!txt)
        cs_err_set(err, "%s:%lu: cannot encode the dead-letter record",
                   r->name, lineno);
    else
        rc = produce_retry(r->p, KFK_TOPIC_DEADLETTER, NULL, 0, txt,
                           strlen(txt), err);
    free(txt);
    json_decref(o);
    return rc;
}

/* ---- one line ----------------------------------------------------------- */

static void put_digits(char *p, unsigned v, int width)
{
    for (int i = width - 1; i >= 0; i--, v /= 10)
        p[i] = (char)('0' + v % 10);
}

/* ts (microseconds) as "YYYY-MM-DDTHH:MM:SS.uuuuuuZ" in r->stamp: gmtime
 * and snprintf for every line were a tenth of the collector's time, and a
 * log's lines mostly share their second with the line before. */
static const char *stamp_of(fin_run *r, int64_t ts)
{
    time_t secs = (time_t)(ts / 1000000);
    int us = (int)(ts % 1000000 + 1000000) % 1000000;

    if (ts < 0 && us) /* the second before, as gmtime of ts/1e6 floors */
        secs--;
    if (secs != r->stamp_secs || !r->stamp[0]) {
        struct tm tm;
        char b[64];

        gmtime_r(&secs, &tm);
        snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.000000Z",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec);
        str_copy(r->stamp, sizeof r->stamp, b);
        r->stamp_secs = secs;
    }
    put_digits(r->stamp + strlen(r->stamp) - 7, (unsigned)us, 6);
    return r->stamp;
}

/* The raw line (time and host included) names the signal. */
static void line_id(fin_run *r, size_t len, char id[17])
{
    const char *c = r->o->cluster ? r->o->cluster : "default";
    uint64_t h = hash_fnv1a(HASH_FNV_SEED, c, strlen(c) + 1);

    h = hash_fnv1a(h, r->line, len);
    for (int i = 15; i >= 0; i--, h >>= 4)
        id[i] = "0123456789abcdef"[h & 15];
    id[16] = '\0';
}

/* A syslog line parsed into l, its time and id: 0, or 2 dropped by the
 * edge filter, 1 invalid (reason in why). */
static int syslog_fields(fin_run *r, size_t *len, slg_line *l,
                         const char **stamp, char id[17], cs_err *why)
{
    while (*len && r->line[*len - 1] == '\r')
        (*len)--;
    r->line[*len] = '\0';
    if (memchr(r->line, '\0', *len)) {
        cs_err_set(why, "the line holds a NUL byte");
        return 1;
    }
    if (slg_parse(r->line, r->o->year, l, why))
        return 1;
    if (r->o->edge && !cls_edge_keep(r->o->edge, l->source, l->msg))
        return 2;
    *stamp = stamp_of(r, l->ts);
    line_id(r, *len, id);
    return 0;
}

/* The same signal as a JSON object, for a line whose text is not valid
 * UTF-8 (safe_string replaces the bytes); NULL when it cannot be built. */
static json_t *syslog_object(fin_run *r, const slg_line *l, const char *stamp,
                             const char *id)
{
    json_t *o = json_pack("{s:s, s:s, s:o}", "ts", stamp, "source",
                          sig_source_name(l->source), "line",
                          safe_string(l->msg, strlen(l->msg)));

    if (o && l->host[0])
        json_object_set_new(o, "host", safe_string(l->host, strlen(l->host)));
    if (o && l->job[0])
        json_object_set_new(o, "job", safe_string(l->job, strlen(l->job)));
    if (o && r->o->cluster)
        json_object_set_new(o, "cluster", json_string(r->o->cluster));
    if (o)
        json_object_set_new(o, "id", json_string(id));
    return o;
}

/* 0 published, 1 invalid (reason in why), 2 dropped by the edge filter,
 * -1 producer failure (in err). */
static int publish_line(fin_run *r, size_t len, cs_err *why, cs_err *err)
{
    sig s;
    char *buf;
    size_t blen;
    int rc;

    if (r->o->format == FIN_SYSLOG) {
        const char *stamp;
        char id[17];
        slg_line l;
        json_t *o;

        if ((rc = syslog_fields(r, &len, &l, &stamp, id, why)))
            return rc;
        /* Almost every line: its msgpack written directly, the same bytes
         * the object below gives, without building it. */
        if (!sig_log_msgpack(stamp, l.source, l.msg, l.host, l.job,
                             r->o->cluster, id, &buf, &blen)) {
            const char *c = r->o->cluster ? r->o->cluster : "default";
            rc = produce_signal(r, c, buf, blen, why, err);
            free(buf);
            return rc;
        }
        if (!(o = syslog_object(r, &l, stamp, id))) {
            cs_err_set(why, "cannot encode the signal");
            return 1;
        }
        if (sig_adopt_json(&s, o, why)) /* o is ours: no copy */
            return 1;
    } else if (sig_parse_json(&s, r->line, len, why)) {
        return 1;
    }
    sig_to_msgpack(&s, &buf, &blen);
    rc = produce_signal(r, s.cluster, buf, blen, why, err);
    free(buf);
    sig_free(&s);
    return rc;
}

static int handle_line(fin_run *r, size_t len, int too_long, cs_err *err)
{
    unsigned long lineno = r->st->lines;
    cs_err why = {{0}};
    int rc;

    if (too_long) {
        cs_err_set(&why, "line is longer than the %d byte limit",
                   SIG_MAX_BYTES);
        rc = 1;
    } else if (blank(r->line, len)) {
        return 0;
    } else {
        rc = publish_line(r, len, &why, err);
    }
    if (rc == 0)
        r->st->published++;
    if (rc == 2) {
        r->st->dropped++;
        return 0;
    }
    if (rc != 1)
        return rc;
    r->st->rejected++;
    fprintf(stderr, "%s:%lu: %s\n", r->name, lineno, why.msg);
    return dead_letter(r, lineno, why.msg, len, err) == KFK_OK ? 0 : -1;
}

static void progress(fin_run *r)
{
    const fin_stats *st = r->st;

    if (st->lines % FIN_POLL_EVERY == 0)
        kfk_producer_poll(r->p);
    if (r->progress && st->lines % FIN_PROGRESS_EVERY == 0)
        fprintf(stderr, "%s: %lu lines, %lu published, %lu dropped, %lu "
                "rejected\n", r->name, st->lines, st->published, st->dropped,
                st->rejected);
}

static int read_all(fin_run *r, FILE *f, cs_err *err)
{
    fin_reader rd = {f, malloc(FIN_BLOCK), 0, 0};
    size_t len = 0;
    int too_long, got;

    if (!rd.buf) {
        cs_err_set(err, "out of memory");
        return -1;
    }
    /* a line of SIG_MAX_BYTES is taken, as replay takes it; one byte more
     * is kept for the NUL a syslog line is parsed with */
    while ((got = read_line(&rd, r->line, SIG_MAX_BYTES, &len,
                            &too_long)) > 0) {
        r->st->lines++;
        if (handle_line(r, len, too_long, err)) {
            free(rd.buf);
            return -1;
        }
        progress(r);
    }
    free(rd.buf);
    if (got < 0) {
        cs_err_set(err, "%s: read error: %s", r->name, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- whole file --------------------------------------------------------- */

static int finish(fin_run *r, unsigned long failed_before, cs_err *err)
{
    unsigned long failed;

    if (kfk_producer_flush(r->p, FIN_FLUSH_MS)) {
        cs_err_set(err, "%s: signals still undelivered after %d s", r->name,
                   FIN_FLUSH_MS / 1000);
        return -1;
    }
    failed = kfk_producer_failed(r->p) - failed_before;
    if (failed) {
        cs_err_set(err, "%s: %lu messages failed delivery", r->name, failed);
        return -1;
    }
    return r->st->rejected ? 1 : 0;
}

static FILE *open_input(const char *path, cs_err *err)
{
    FILE *f;

    if (strcmp(path, "-") == 0)
        return stdin;
    f = fopen(path, "r");
    if (!f)
        cs_err_set(err, "%s: %s", path, strerror(errno));
    return f;
}

int fin_publish(const char *path, kfk_producer *p, fin_stats *st, cs_err *err)
{
    static const fin_opts jsonl = {FIN_JSONL, NULL, 0, NULL};

    return fin_publish_opts(path, &jsonl, p, st, err);
}

int fin_publish_opts(const char *path, const fin_opts *o, kfk_producer *p,
                     fin_stats *st, cs_err *err)
{
    fin_stats local = {0};
    fin_run r = {.name = strcmp(path, "-") ? path : "<stdin>",
                 .o = o,
                 .p = p,
                 .st = st ? st : &local,
                 .progress = isatty(STDERR_FILENO) ||
                             log_current_level >= LOG_LVL_DEBUG};
    unsigned long failed_before = kfk_producer_failed(p);
    cs_err flush_err = {{0}};
    FILE *f;
    int rc;

    *r.st = (fin_stats){0};
    if (!(r.line = malloc(SIG_MAX_BYTES + 1))) {
        cs_err_set(err, "out of memory");
        return -1;
    }
    if (!(f = open_input(path, err))) {
        free(r.line);
        return -1;
    }
    rc = read_all(&r, f, err);
    if (f != stdin)
        fclose(f);
    free(r.line);
    /* Deliver what was read even after a read error. */
    if (rc < 0) {
        finish(&r, failed_before, &flush_err);
        return -1;
    }
    return finish(&r, failed_before, err);
}
