#include "ingest/filein.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/log.h"
#include "core/signal.h"
#define FIN_PROGRESS_EVERY 100000UL
/* Serve delivery reports this often so they do not pile up in memory. */
#define FIN_POLL_EVERY 1000UL
#define FIN_FLUSH_MS 30000

typedef struct fin_run {
    const char *name; /* for messages: the path, or "<stdin>" */
    const fin_opts *o;
    ll_encoder *enc;
    kfk_producer *p;
    fin_stats *st;
    int progress;
    char *line; /* SIG_MAX_BYTES + 1 bytes */
    dev_t dev;  /* the input's, for a plain line's place */
    ino_t ino;
    uint64_t offset; /* where the line being handled starts */
} fin_run;

/* ---- reading ------------------------------------------------------------ */

/* Input read in large blocks and split at newlines with memchr: a
 * character at a time (getc) was a fifth of the collector's time. read(2)
 * rather than stdio: it returns what a pipe holds at once, so a line
 * written to standard input is published then, not when a block fills. */
#define FIN_BLOCK (1 << 20)

typedef struct fin_reader {
    int fd;
    char *buf; /* FIN_BLOCK bytes */
    size_t pos, end;
} fin_reader;

/* One line without its newline into line (at most cap bytes kept; the
 * rest is consumed and flagged), *used the bytes it took with the
 * newline. Returns 1, 0 at end of input, -1 on error (errno). A NUL byte
 * is kept as it is (the caller rejects it). */
static int read_line(fin_reader *rd, char *line, size_t cap, size_t *len,
                     size_t *used, int *too_long)
{
    size_t n = 0;
    int any = 0;

    *too_long = 0;
    *used = 0;
    for (;;) {
        if (rd->pos == rd->end) {
            ssize_t got = read(rd->fd, rd->buf, FIN_BLOCK);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0)
                return -1;
            rd->pos = 0;
            rd->end = (size_t)got;
            if (got == 0) {
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
        *used += take + (nl != NULL);
        if (nl)
            break;
    }
    *len = n;
    return 1;
}

/* ---- dead letters ------------------------------------------------------- */

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

static int dead_letter(fin_run *r, unsigned long lineno, const char *reason,
                       size_t len, cs_err *err)
{
    char *txt = ll_dead_letter(r->name, lineno, reason, r->line, len);
    int rc = -1;

    if (!txt)
        cs_err_set(err, "%s:%lu: cannot encode the dead-letter record",
                   r->name, lineno);
    else
        rc = produce_retry(r->p, KFK_TOPIC_DEADLETTER, NULL, 0, txt,
                           strlen(txt), err);
    free(txt);
    return rc;
}

/* ---- one line ----------------------------------------------------------- */

/* 0 published, 1 invalid (reason in why), 2 dropped by the edge filter,
 * 3 blank, -1 producer failure (in err). */
static int publish_line(fin_run *r, size_t len, cs_err *why, cs_err *err)
{
    ll_origin from = r->o->origin;
    const char *key;
    char *buf;
    size_t blen;
    int rc;

    if (r->o->line.format == LL_PLAIN) {
        struct timespec now;
        uint64_t at[3] = {(uint64_t)r->dev, (uint64_t)r->ino, r->offset};

        clock_gettime(CLOCK_REALTIME, &now);
        from.ts = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
        from.place = hash_fnv1a(HASH_FNV_SEED, at, sizeof at);
    }
    if ((rc = ll_encode(r->enc, &from, r->line, len, &key, &buf, &blen, why)))
        return rc;
    rc = produce_retry(r->p, KFK_TOPIC_SIGNALS, key, strlen(key), buf, blen,
                       err);
    free(buf);
    if (rc == KFK_TOO_BIG) { /* no retry can help: dead-lettered */
        *why = *err;
        err->msg[0] = '\0';
        return 1;
    }
    return rc == KFK_OK ? 0 : -1;
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
    } else {
        rc = publish_line(r, len, &why, err);
    }
    if (rc == 0)
        r->st->published++;
    if (rc == 2)
        r->st->dropped++;
    if (rc != 1)
        return rc < 0 ? -1 : 0;
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

static int read_all(fin_run *r, int fd, cs_err *err)
{
    fin_reader rd = {fd, malloc(FIN_BLOCK), 0, 0};
    size_t len = 0, used;
    int too_long, got;

    if (!rd.buf) {
        cs_err_set(err, "out of memory");
        return -1;
    }
    /* a line of SIG_MAX_BYTES is taken, as replay takes it; one byte more
     * is kept for the NUL a log line is parsed with */
    while ((got = read_line(&rd, r->line, SIG_MAX_BYTES, &len, &used,
                            &too_long)) > 0) {
        r->st->lines++;
        if (handle_line(r, len, too_long, err)) {
            free(rd.buf);
            return -1;
        }
        r->offset += used;
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

static int open_input(fin_run *r, const char *path, cs_err *err)
{
    struct stat sb;
    int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC)
                               : STDIN_FILENO;

    if (fd < 0) {
        cs_err_set(err, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &sb) == 0) {
        r->dev = sb.st_dev;
        r->ino = sb.st_ino;
    }
    return fd;
}

int fin_publish(const char *path, kfk_producer *p, fin_stats *st, cs_err *err)
{
    const fin_opts jsonl = {.line = {.format = LL_JSONL},
                            .origin = {.source = SRC_APP, .rank = -1}};

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
    int fd = -1, rc = -1, opened = 0;

    *r.st = (fin_stats){0};
    r.line = malloc(SIG_MAX_BYTES + 1);
    r.enc = ll_new(&o->line);
    if (!r.line || !r.enc) {
        cs_err_set(err, "out of memory");
        goto out;
    }
    if ((fd = open_input(&r, path, err)) < 0)
        goto out;
    opened = 1;
    rc = read_all(&r, fd, err);
    if (fd != STDIN_FILENO)
        close(fd);
out:
    free(r.line);
    ll_free(r.enc);
    if (!opened)
        return -1;
    /* Deliver what was read even after a read error. */
    if (rc < 0) {
        finish(&r, failed_before, &flush_err);
        return -1;
    }
    return finish(&r, failed_before, err);
}
