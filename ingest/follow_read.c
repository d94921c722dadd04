#include "ingest/follow_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/log.h"
#include "ingest/linepub.h"

int64_t folr_mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
void folr_kick(fol_follower *fw, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    if (!fw->stopping && !evtimer_pending(fw->more_ev, NULL))
        evtimer_add(fw->more_ev, &tv);
}

/* ---- delivery ----------------------------------------------------------- */


/* Pops the settled marks in order: the checkpoint moves only over lines
 * all delivered; a failure makes the file be read again from there. */
static void settle(fol_file *f)
{
    fol_follower *fw = f->fw;
    fol_mark *m;

    while ((m = f->marks) && m->done) {
        unsigned long failed = m->t ? kfk_tracker_take_failed(m->t) : 0;
        if (failed && !f->redo) {
            f->redo = 1;
            fw->st.redeliveries++;
            log_warn("follow", "%s: %lu signals were not delivered: reading "
                     "again from offset %llu", f->path, failed,
                     (unsigned long long)f->acked);
        } else if (!failed && !f->redo && m->gen == f->gen) {
            f->acked = m->end;
            f->acked_line = m->line;
            fw->dirty = 1;
        }
        f->marks = m->next;
        if (!f->marks)
            f->marks_tail = NULL;
        kfk_tracker_release(m->t);
        free(m);
    }
    if (!f->marks && f->redo) {
        f->redo = 0;
        f->off = f->acked;
        f->line = f->acked_line;
        f->skipping = 0;
        f->more = 1;
        folr_kick(fw, FOL_RETRY_MS);
    }
}

static void mark_done(void *arg)
{
    fol_mark *m = arg;

    m->done = 1;
    settle(m->f);
}

static void push_mark(fol_file *f, kfk_tracker *t)
{
    fol_mark *m = calloc(1, sizeof *m);

    if (!m) { /* not acknowledged: read again after a restart */
        log_error("follow", "%s: out of memory", f->path);
        kfk_tracker_release(t);
        return;
    }
    *m = (fol_mark){f, t, f->off, f->line, f->gen, 0, NULL};
    if (f->marks_tail)
        f->marks_tail->next = m;
    else
        f->marks = m;
    f->marks_tail = m;
    if (!t || !kfk_tracker_pending(t)) {
        m->done = 1;
        settle(f);
    } else {
        kfk_tracker_on_done(t, mark_done, m);
    }
}

/* ---- lines -------------------------------------------------------------- */

/* One line (writable, with room for a NUL at line[len]) at offset at:
 * KFK_OK when taken, KFK_QUEUE_FULL to try again later, -1 on failure. */
static int one_line(fol_file *f, char *line, size_t len, uint64_t at,
                    kfk_tracker **t, cs_err *err)
{
    fol_follower *fw = f->fw;
    const fol_source *src = &fw->o.sources[f->src];
    uint64_t place[3] = {f->place_dev, f->place_ino, at};
    ll_origin from = {src->source,
                      f->cap.host[0] ? f->cap.host
                                     : src->host ? src->host : fw->hostname,
                      f->cap.job, f->cap.rank, fw->now_us,
                      hash_fnv1a(HASH_FNV_SEED, place, sizeof place)};
    lp_outcome out;
    int rc = lp_line(src->format == LL_PLAIN ? fw->plain : fw->syslog, fw->p,
                     &from, line, len, f->path, (unsigned long)f->line + 1,
                     "follow", t, &out, err);

    if (rc != KFK_OK)
        return rc;
    fw->st.published += out == LP_PUBLISHED;
    fw->st.rejected += out == LP_REJECTED;
    fw->st.dropped += out == LP_DROPPED;
    fw->st.lines++;
    fw->st.bytes += len + 1;
    return KFK_OK;
}

/* The whole lines of buf[0, n) from f->off: *used the bytes taken.
 * final: the rest without a newline is a line too (a rotated file's
 * last). */
static int take_lines(fol_file *f, char *buf, size_t n, int final,
                      kfk_tracker **t, size_t *used, cs_err *err)
{
    size_t pos = 0;
    int rc = KFK_OK;

    while (pos < n) {
        char *nl = memchr(buf + pos, '\n', n - pos);
        size_t len = nl ? (size_t)(nl - (buf + pos)) : n - pos;
        if (f->skipping) {
            pos += len + (nl != NULL);
            f->skipping = !nl;
            f->line += nl != NULL;
            continue;
        }
        if (!nl && !final)
            break;
        if ((rc = one_line(f, buf + pos, len, f->off + pos, t, err)))
            break;
        pos += len + (nl != NULL);
        f->line++;
    }
    *used = pos;
    return rc;
}

/* A line longer than the limit: dead-lettered (its start), and the
 * rest of it skipped. */
static int too_long(fol_file *f, size_t n, kfk_tracker **t, cs_err *err)
{
    char why[96], *dl;
    int rc;

    snprintf(why, sizeof why, "line is longer than the %d byte limit",
             SIG_MAX_BYTES);
    if (!*t && !(*t = kfk_tracker_new()))
        return -1;
    if (!(dl = ll_dead_letter(f->path, (unsigned long)f->line + 1, why,
                              f->fw->buf, n))) {
        cs_err_set(err, "%s: cannot encode a dead-letter record", f->path);
        return -1;
    }
    if ((rc = kfk_produce_take(f->fw->p, KFK_TOPIC_DEADLETTER, NULL, 0, dl,
                               strlen(dl), *t, err)) != KFK_OK)
        return rc == KFK_QUEUE_FULL ? rc : -1;
    log_warn("follow", "%s:%llu: %s", f->path, (unsigned long long)f->line + 1,
             why);
    f->fw->st.rejected++;
    f->fw->st.lines++;
    f->skipping = 1;
    f->off += n;
    return KFK_OK;
}

void folr_read_turn(fol_file *f, int final)
{
    fol_follower *fw = f->fw;
    kfk_tracker *t = NULL;
    uint64_t start = f->off;
    size_t budget = FOL_TURN;
    struct timespec now;
    cs_err err = {{0}};
    int rc = KFK_OK;

    if (f->fd < 0 || f->redo || fw->stopping)
        return;
    f->more = 0;
    clock_gettime(CLOCK_REALTIME, &now);
    fw->now_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    while (budget > 0 && rc == KFK_OK) {
        ssize_t n = pread(f->fd, fw->buf, FOL_BUF, (off_t)f->off);
        size_t used;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            log_error("follow", "%s: read: %s", f->path, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        /* "the rest is a line" only at the end of a rotated file, never at
         * a read's edge */
        rc = take_lines(f, fw->buf, (size_t)n, final && (size_t)n < FOL_BUF,
                        &t, &used, &err);
        f->off += used;
        budget -= used < budget ? used : budget;
        if (rc == KFK_OK && !used && (size_t)n == FOL_BUF)
            rc = too_long(f, (size_t)n, &t, &err);
        else if (rc == KFK_OK && (size_t)n < FOL_BUF && used == (size_t)n)
            continue; /* maybe more was written meanwhile */
        else if (rc == KFK_OK && (size_t)n < FOL_BUF)
            break; /* the rest is a line still being written */
    }
    if (rc == KFK_QUEUE_FULL || budget == 0) {
        f->more = 1;
        folr_kick(fw, rc == KFK_QUEUE_FULL ? FOL_RETRY_MS : 0);
    } else if (rc < 0) {
        log_error("follow", "%s: %s", f->path, err.msg);
        f->more = 1;
        folr_kick(fw, 1000);
    }
    /* a rotated file that still grows is not quiet: its writer has not
     * reopened yet */
    if (f->off != start)
        f->grown_at = folr_mono_ms();
    if (f->rotated && f->off != start)
        f->quiet_since = f->grown_at;
    /* the first bytes tell this file's copy after a copytruncate */
    if (f->fp_len < FPOS_FP_MAX && f->off > f->fp_len)
        fpos_fingerprint(f->fd, &f->fp_len, &f->fp_hash);
    if (f->off != start || t)
        push_mark(f, t);
}

void folr_on_more(evutil_socket_t fd, short what, void *arg)
{
    fol_follower *fw = arg;

    (void)fd;
    (void)what;
    for (fol_file *f = fw->files; f; f = f->next)
        if (f->more)
            folr_read_turn(f, 0);
}

/* ---- files -------------------------------------------------------------- */
