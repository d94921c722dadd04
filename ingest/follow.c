#include "ingest/follow.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/hash.h"
#include "core/log.h"
#include "core/str.h"
#include "ingest/fpos.h"
#include "ingest/pathpat.h"

/* One read: a line of SIG_MAX_BYTES and its newline fit. */
#define FOL_BUF (SIG_MAX_BYTES + 1)
/* Bytes one file is read for before the loop serves anything else. */
#define FOL_TURN (4u << 20)
/* A full producer queue is tried again after this long. */
#define FOL_RETRY_MS 100
/* A directory's news (a file created, renamed in) is swept after this
 * long: a burst of them is one sweep. */
#define FOL_SOON_MS 20

typedef struct fol_file fol_file;
typedef struct fol_follower fol_follower;

/* What one read turn handed to the producer: acknowledged when t's last
 * message is; then every line before end is delivered. */
typedef struct fol_mark {
    fol_file *f;
    kfk_tracker *t;
    uint64_t end, line;
    unsigned gen;
    int done;
    struct fol_mark *next;
} fol_mark;

struct fol_file {
    fol_follower *fw;
    char *path;   /* where it is read */
    /* The path its pattern took: path, or for the copy of a truncated
     * file and a file renamed while the follower was down, the path they
     * had. The checkpoint names it: a restart finds the file beside it. */
    char *origin;
    size_t src;  /* its source */
    pp_capture cap;
    int fd, wd;  /* wd: its inotify watch, -1 none */
    uint64_t dev, ino;
    /* A plain line's place is hashed with these: the file's own, or for
     * the copy of a truncated file, the original's (the same line, the
     * same id). */
    uint64_t place_dev, place_ino;
    uint64_t off, line;     /* after the last whole line handed on */
    uint64_t acked, acked_line; /* every line before is delivered */
    unsigned gen;           /* truncations: older marks move nothing */
    uint32_t fp_len;
    uint64_t fp_hash;
    int skipping; /* inside a line over the limit: dropped to its newline */
    int rotated;  /* no longer at path: read to its end, then closed */
    int redo;     /* a mark failed: read again from acked once all settle */
    int more;     /* more to read: a turn ran out, or the queue was full */
    int64_t quiet_since; /* ms: a rotated file's last growth */
    fol_mark *marks, *marks_tail;
    fol_file *next;
};

struct fol_follower {
    struct event_base *base;
    fol_opts o;
    pp_pattern **pats;
    ll_encoder *syslog, *plain;
    kfk_producer *p;
    char *buf;
    fol_file *files;
    fpos_set start; /* the checkpoint read at start */
    char *used;     /* start's entries a file took */
    int first;      /* there was no checkpoint */
    int initial;    /* the first sweep runs */
    int dirty, stopping;
    int ino_fd;
    struct event *ino_ev, *sweep_ev, *soon_ev, *save_ev, *more_ev;
    char hostname[256];
    int64_t now_us; /* a turn's reading time */
    fol_stats st;
};

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void kick(fol_follower *fw, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    if (!fw->stopping && !evtimer_pending(fw->more_ev, NULL))
        evtimer_add(fw->more_ev, &tv);
}

/* ---- delivery ----------------------------------------------------------- */

static void close_file(fol_file *f);
static void read_turn(fol_file *f, int final);

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
        kick(fw, FOL_RETRY_MS);
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

static int produce(fol_file *f, kfk_tracker **t, const char *topic,
                   const char *key, char *val, size_t len, cs_err *err)
{
    if (!*t && !(*t = kfk_tracker_new())) {
        free(val);
        cs_err_set(err, "out of memory");
        return -1;
    }
    (void)f;
    return kfk_produce_take(f->fw->p, topic, key, key ? strlen(key) : 0, val,
                            len, *t, err);
}

static int dead_letter(fol_file *f, kfk_tracker **t, const char *reason,
                       const char *raw, size_t len, cs_err *err)
{
    char *txt = ll_dead_letter(f->path, (unsigned long)f->line + 1, reason,
                               raw, len);

    if (!txt) {
        cs_err_set(err, "%s: cannot encode a dead-letter record", f->path);
        return -1;
    }
    log_warn("follow", "%s:%llu: %s", f->path,
             (unsigned long long)f->line + 1, reason);
    return produce(f, t, KFK_TOPIC_DEADLETTER, NULL, txt, strlen(txt), err);
}

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
    ll_encoder *enc_of = src->format == LL_PLAIN ? fw->plain : fw->syslog;
    const char *key;
    char *buf;
    size_t blen;
    cs_err why = {{0}};
    /* two answers, kept apart: the encoder's (0 a signal, 1 invalid, 2
     * dropped, 3 blank) and the producer's (KFK_*) */
    int enc = ll_encode(enc_of, &from, line, len, &key, &buf, &blen, &why);
    int rc = KFK_OK;

    if (enc == 0) {
        rc = produce(f, t, KFK_TOPIC_SIGNALS, key, buf, blen, err);
        if (rc == KFK_TOO_BIG) { /* no retry helps: dead-lettered */
            why = *err;
            enc = 1;
        } else if (rc != KFK_OK) {
            return rc; /* queue full: this line again, later */
        }
    }
    if (enc == 1 && (rc = dead_letter(f, t, why.msg, line, len, err)) != KFK_OK)
        return rc == KFK_TOO_BIG ? -1 : rc;
    if (enc == 0)
        fw->st.published++;
    else if (enc == 1)
        fw->st.rejected++;
    else if (enc == 2)
        fw->st.dropped++;
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
    char why[96];
    int rc;

    snprintf(why, sizeof why, "line is longer than the %d byte limit",
             SIG_MAX_BYTES);
    if ((rc = dead_letter(f, t, why, f->fw->buf, n, err)))
        return rc;
    f->fw->st.rejected++;
    f->fw->st.lines++;
    f->skipping = 1;
    f->off += n;
    return KFK_OK;
}

/* Reads what f holds after f->off, up to FOL_TURN bytes. */
static void read_turn(fol_file *f, int final)
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
        kick(fw, rc == KFK_QUEUE_FULL ? FOL_RETRY_MS : 0);
    } else if (rc < 0) {
        log_error("follow", "%s: %s", f->path, err.msg);
        f->more = 1;
        kick(fw, 1000);
    }
    /* a rotated file that still grows is not quiet: its writer has not
     * reopened yet */
    if (f->rotated && f->off != start)
        f->quiet_since = mono_ms();
    /* the first bytes tell this file's copy after a copytruncate */
    if (f->fp_len < FPOS_FP_MAX && f->off > f->fp_len)
        fpos_fingerprint(f->fd, &f->fp_len, &f->fp_hash);
    if (f->off != start || t)
        push_mark(f, t);
}

static void on_more(evutil_socket_t fd, short what, void *arg)
{
    fol_follower *fw = arg;

    (void)fd;
    (void)what;
    for (fol_file *f = fw->files; f; f = f->next)
        if (f->more)
            read_turn(f, 0);
}

/* ---- files -------------------------------------------------------------- */

static void watch_file(fol_file *f)
{
    fol_follower *fw = f->fw;
    char dir[PATH_MAX];

    if (fw->ino_fd < 0)
        return;
    f->wd = inotify_add_watch(fw->ino_fd, f->path, IN_MODIFY);
    if (f->wd < 0)
        log_warn("follow", "%s: no inotify watch (%s): read every sweep",
                 f->path, strerror(errno));
    fpos_dir_of(f->path, dir, sizeof dir);
    inotify_add_watch(fw->ino_fd, dir, IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM |
                                           IN_DELETE | IN_ONLYDIR);
}

static fol_file *new_file(fol_follower *fw, const char *path,
                          const char *origin, size_t src, int fd,
                          const struct stat *sb)
{
    fol_file *f = calloc(1, sizeof *f);

    if (!f || !(f->path = strdup(path)) || !(f->origin = strdup(origin))) {
        if (f)
            free(f->path);
        free(f);
        close(fd);
        log_error("follow", "%s: out of memory", path);
        return NULL;
    }
    f->fw = fw;
    f->src = src;
    f->fd = fd;
    f->wd = -1;
    f->dev = f->place_dev = (uint64_t)sb->st_dev;
    f->ino = f->place_ino = (uint64_t)sb->st_ino;
    pp_match(fw->pats[src], origin, &f->cap);
    fpos_fingerprint(fd, &f->fp_len, &f->fp_hash);
    f->next = fw->files;
    fw->files = f;
    fw->st.files++;
    fw->st.opened++;
    fw->dirty = 1;
    return f;
}

static void start_at(fol_file *f, uint64_t off, uint64_t line)
{
    f->off = f->acked = off;
    f->line = f->acked_line = line;
}

/* The lines of a truncated or renamed file from `from` on, read from
 * the file beside its path that holds them. */
static void read_copy(fol_follower *fw, size_t src, const char *path,
                      uint32_t fp_len, uint64_t fp_hash, uint64_t from,
                      uint64_t line, uint64_t dev, uint64_t ino, int renamed)
{
    char copy[PATH_MAX];
    struct stat sb;
    /* a renamed file keeps its identity; a copy has its own */
    int fd = fpos_find_copy(path, dev, renamed ? ino : 0, fp_len, fp_hash,
                            from, copy, sizeof copy, &sb);
    fol_file *c;

    if (fd < 0) {
        if (from)
            log_warn("follow", "%s: no file beside it holds what it held "
                     "(a copy, the renamed file): lines after offset %llu "
                     "that were not yet read are lost", path,
                     (unsigned long long)from);
        return;
    }
    for (c = fw->files; c; c = c->next)
        if (c->dev == (uint64_t)sb.st_dev && c->ino == (uint64_t)sb.st_ino)
            break;
    if (c) { /* already followed at its own path */
        close(fd);
        return;
    }
    if (!(c = new_file(fw, copy, path, src, fd, &sb)))
        return;
    c->rotated = 1;
    c->quiet_since = mono_ms();
    c->place_dev = dev;
    c->place_ino = ino;
    start_at(c, from, line);
    log_info("follow", "%s: reading its copy %s from offset %llu", path, copy,
             (unsigned long long)from);
    watch_file(c);
    read_turn(c, 0);
}

/* Where a file found now starts: its checkpoint when it has one and its
 * first bytes are the same, else its end at a first start, else its
 * beginning. */
static void place_new(fol_follower *fw, fol_file *f, uint64_t size)
{
    /* the checkpoint speaks for the files found at start, each once: a
     * file made later may have an old file's inode */
    fpos_entry *e = fw->initial ? fpos_find(&fw->start, f->dev, f->ino) : NULL;

    if (e && fw->used[e - fw->start.v])
        e = NULL;
    if (e) {
        fw->used[e - fw->start.v] = 1;
        if (fpos_same_start(f->fd, e->fp_len, e->fp_hash) &&
            size >= e->offset) {
            start_at(f, e->offset, e->line);
            return;
        }
        /* copytruncate while the follower was down (or the inode was
         * reused): what was not read is in the copy, if there is one */
        log_warn("follow", "%s changed while it was not followed (truncated "
                 "or replaced): reading it from its start", f->path);
        fw->st.truncations++;
        read_copy(fw, f->src, f->path, e->fp_len, e->fp_hash, e->offset,
                  e->line, f->dev, f->ino, 0);
        return;
    }
    if (fw->initial && fw->first && !fw->o.from_start)
        start_at(f, size, fpos_count_lines(f->fd, size));
}

static void open_file(fol_follower *fw, const char *path, size_t src,
                      const struct stat *sb)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    fol_file *f;

    if (fd < 0) {
        if (errno != ENOENT)
            log_warn("follow", "%s: %s", path, strerror(errno));
        return;
    }
    if (!(f = new_file(fw, path, path, src, fd, sb)))
        return;
    place_new(fw, f, (uint64_t)sb->st_size);
    log_info("follow", "following %s from offset %llu (line %llu)", path,
             (unsigned long long)f->off, (unsigned long long)f->line + 1);
    watch_file(f);
    read_turn(f, 0);
}

static void close_file(fol_file *f)
{
    fol_follower *fw = f->fw;

    for (fol_file **pp = &fw->files; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    if (f->wd >= 0 && fw->ino_fd >= 0)
        inotify_rm_watch(fw->ino_fd, f->wd);
    if (f->fd >= 0)
        close(f->fd);
    fw->st.files--;
    fw->dirty = 1;
    log_info("follow", "closed %s at offset %llu", f->path,
             (unsigned long long)f->acked);
    free(f->path);
    free(f->origin);
    free(f);
}

/* copytruncate: the lines not yet delivered are in the copy; the file
 * starts again. */
static void truncated(fol_file *f)
{
    fol_follower *fw = f->fw;

    fw->st.truncations++;
    log_warn("follow", "%s was truncated: reading it again from its start",
             f->path);
    read_copy(fw, f->src, f->path, f->fp_len, f->fp_hash, f->acked,
              f->acked_line, f->place_dev, f->place_ino, 0);
    f->gen++;
    start_at(f, 0, 0);
    f->skipping = 0;
    f->place_dev = f->dev;
    f->place_ino = f->ino;
    fpos_fingerprint(f->fd, &f->fp_len, &f->fp_hash);
    fw->dirty = 1;
}

/* ---- sweeps ------------------------------------------------------------- */

/* A file already followed: still at its path? grown, truncated, quiet? */
static void check_file(fol_file *f, int64_t now)
{
    fol_follower *fw = f->fw;
    struct stat sb, fsb;

    if (!f->rotated && (stat(f->path, &sb) || (uint64_t)sb.st_ino != f->ino ||
                        (uint64_t)sb.st_dev != f->dev)) {
        f->rotated = 1;
        f->quiet_since = now;
        fw->st.rotations++;
        log_info("follow", "%s was rotated (renamed or removed): reading the "
                 "old file to its end", f->path);
    }
    if (fstat(f->fd, &fsb))
        return;
    if ((uint64_t)fsb.st_size < f->off) {
        truncated(f);
        read_turn(f, 0);
    } else if ((uint64_t)fsb.st_size > f->off) {
        if (f->rotated && now - f->quiet_since >= fw->o.close_after_ms &&
            !f->marks) {
            read_turn(f, 1); /* its last line may lack a newline */
            return;
        }
        read_turn(f, 0);
        f->quiet_since = now;
    } else if (f->rotated && !f->marks &&
               now - f->quiet_since >= fw->o.close_after_ms) {
        close_file(f);
    }
}

static fol_file *followed(fol_follower *fw, const struct stat *sb)
{
    for (fol_file *f = fw->files; f; f = f->next)
        if (f->dev == (uint64_t)sb->st_dev && f->ino == (uint64_t)sb->st_ino)
            return f;
    return NULL;
}

/* The files of one source: new ones opened, a rotated one found again
 * under a name the pattern takes followed at that name. */
static void discover(fol_follower *fw, size_t src)
{
    glob_t g;
    struct stat sb;

    if (glob(pp_glob(fw->pats[src]), GLOB_NOSORT, NULL, &g))
        return;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *path = g.gl_pathv[i];
        fol_file *f;
        char *p;
        if (stat(path, &sb) || !S_ISREG(sb.st_mode) ||
            !pp_match(fw->pats[src], path, NULL))
            continue;
        if (!(f = followed(fw, &sb))) {
            open_file(fw, path, src, &sb);
        } else if (f->rotated && f->src == src && strcmp(f->path, path) &&
                   (p = strdup(path))) {
            log_info("follow", "%s is now %s: followed there", f->path, path);
            free(f->path);
            f->path = p;
            if ((p = strdup(path))) {
                free(f->origin);
                f->origin = p;
            }
            f->rotated = 0;
            pp_match(fw->pats[src], path, &f->cap);
        }
    }
    globfree(&g);
}

/* Checkpointed files not found at their paths at start: rotated while
 * the follower was down? The file beside the old path that begins as it
 * began (kern.log.1, kern.log-20240501) is read from the checkpoint. */
static void find_moved(fol_follower *fw)
{
    for (size_t i = 0; i < fw->start.n; i++) {
        fpos_entry *e = &fw->start.v[i];
        size_t src = 0;
        if (fw->used[i])
            continue;
        fw->used[i] = 1;
        while (src < fw->o.nsources && !pp_match(fw->pats[src], e->path, NULL))
            src++;
        if (src == fw->o.nsources) {
            log_info("follow", "%s is in the checkpoint but no pattern takes "
                     "it now: left", e->path);
            continue;
        }
        read_copy(fw, src, e->path, e->fp_len, e->fp_hash, e->offset, e->line,
                  e->dev, e->ino, 1);
    }
}

static void sweep(fol_follower *fw)
{
    int64_t now = mono_ms();
    fol_file *next;

    for (fol_file *f = fw->files; f; f = next) {
        next = f->next; /* check_file may close f */
        check_file(f, now);
    }
    for (size_t i = 0; i < fw->o.nsources; i++)
        discover(fw, i);
    if (fw->initial) {
        fw->initial = 0;
        find_moved(fw);
    }
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sweep(arg);
}

static void on_inotify(evutil_socket_t fd, short what, void *arg)
{
    fol_follower *fw = arg;
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;

    (void)what;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *ev = (struct inotify_event *)p;
            fol_file *f = NULL;
            p += sizeof *ev + ev->len;
            if (ev->mask & IN_MODIFY)
                for (f = fw->files; f && f->wd != ev->wd; f = f->next)
                    ;
            if (f) {
                read_turn(f, 0);
            } else if (!evtimer_pending(fw->soon_ev, NULL)) {
                struct timeval tv = {0, FOL_SOON_MS * 1000};
                evtimer_add(fw->soon_ev, &tv);
            }
        }
    }
}

/* ---- the checkpoint ----------------------------------------------------- */

static int save(fol_follower *fw, cs_err *err)
{
    fpos_set s = {0};
    int rc = 0;

    if (!fw->o.checkpoint)
        return 0;
    for (fol_file *f = fw->files; f && !rc; f = f->next) {
        fpos_entry e = {f->dev, f->ino, f->acked, f->acked_line, f->fp_len,
                        f->fp_hash, f->origin};
        if (strchr(f->origin, '\n'))
            continue; /* cannot be written: read again after a restart */
        rc = fpos_add(&s, &e);
    }
    if (rc)
        cs_err_set(err, "checkpoint: out of memory");
    else
        rc = fpos_save(fw->o.checkpoint, &s, err);
    fpos_clear(&s);
    if (!rc)
        fw->dirty = 0;
    return rc;
}

static void on_save(evutil_socket_t fd, short what, void *arg)
{
    fol_follower *fw = arg;
    cs_err err;

    (void)fd;
    (void)what;
    if (fw->dirty && save(fw, &err))
        log_error("follow", "%s", err.msg);
}

/* ---- the follower ------------------------------------------------------- */

static int compile(fol_follower *fw, cs_err *err)
{
    cs_err why;

    if (!(fw->pats = calloc(fw->o.nsources ? fw->o.nsources : 1,
                            sizeof *fw->pats)))
        goto oom;
    for (size_t i = 0; i < fw->o.nsources; i++) {
        const fol_source *s = &fw->o.sources[i];
        if (!(fw->pats[i] = pp_compile(s->pattern, &why))) {
            cs_err_set(err, "pattern '%s': %s", s->pattern, why.msg);
            return -1;
        }
        if (s->format != LL_SYSLOG && s->format != LL_PLAIN) {
            cs_err_set(err, "pattern '%s': a followed file is syslog or "
                       "plain lines", s->pattern);
            return -1;
        }
    }
    return 0;
oom:
    cs_err_set(err, "out of memory");
    return -1;
}

static int encoders(fol_follower *fw, cs_err *err)
{
    ll_opts lo = {LL_SYSLOG, fw->o.cluster, fw->o.year, fw->o.edge};

    fw->syslog = ll_new(&lo);
    lo.format = LL_PLAIN;
    fw->plain = ll_new(&lo);
    fw->buf = malloc(FOL_BUF + 1); /* + the NUL a last line gets */
    if (!fw->syslog || !fw->plain || !fw->buf) {
        cs_err_set(err, "out of memory");
        return -1;
    }
    return 0;
}

static int events(fol_follower *fw, cs_err *err)
{
    struct timeval sweep = {fw->o.sweep_ms / 1000,
                            (fw->o.sweep_ms % 1000) * 1000};
    struct timeval save_tv = {fw->o.checkpoint_ms / 1000,
                              (fw->o.checkpoint_ms % 1000) * 1000};

    fw->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fw->ino_fd < 0)
        log_warn("follow", "no inotify (%s): files are read every %d ms",
                 strerror(errno), fw->o.sweep_ms);
    fw->sweep_ev = event_new(fw->base, -1, EV_PERSIST, on_sweep, fw);
    fw->soon_ev = evtimer_new(fw->base, on_sweep, fw);
    fw->save_ev = event_new(fw->base, -1, EV_PERSIST, on_save, fw);
    fw->more_ev = evtimer_new(fw->base, on_more, fw);
    if (fw->ino_fd >= 0)
        fw->ino_ev = event_new(fw->base, fw->ino_fd, EV_READ | EV_PERSIST,
                               on_inotify, fw);
    if (!fw->sweep_ev || !fw->soon_ev || !fw->save_ev || !fw->more_ev ||
        (fw->ino_fd >= 0 && (!fw->ino_ev || event_add(fw->ino_ev, NULL))) ||
        event_add(fw->sweep_ev, &sweep) || event_add(fw->save_ev, &save_tv)) {
        cs_err_set(err, "cannot set up the follower's events");
        return -1;
    }
    for (size_t i = 0; i < fw->o.nsources && fw->ino_fd >= 0; i++)
        inotify_add_watch(fw->ino_fd, pp_root(fw->pats[i]),
                          IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
    return 0;
}

static int load(fol_follower *fw, cs_err *err)
{
    int found = 0;

    if (fw->o.checkpoint &&
        fpos_load(fw->o.checkpoint, &fw->start, &found, err))
        return -1;
    fw->first = !found;
    if (!(fw->used = calloc(fw->start.n + 1, 1))) {
        cs_err_set(err, "out of memory");
        return -1;
    }
    return 0;
}

fol_follower *fol_start(struct event_base *base, const fol_opts *o,
                        kfk_producer *p, cs_err *err)
{
    fol_follower *fw = calloc(1, sizeof *fw);

    if (!fw) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    fw->base = base;
    fw->o = *o;
    fw->p = p;
    fw->ino_fd = -1;
    fw->initial = 1;
    if (fw->o.sweep_ms <= 0)
        fw->o.sweep_ms = 1000;
    if (fw->o.checkpoint_ms <= 0)
        fw->o.checkpoint_ms = 200;
    if (fw->o.close_after_ms <= 0)
        fw->o.close_after_ms = 5000;
    if (gethostname(fw->hostname, sizeof fw->hostname - 1))
        str_copy(fw->hostname, sizeof fw->hostname, "localhost");
    if (compile(fw, err) || encoders(fw, err) || load(fw, err) ||
        events(fw, err)) {
        fol_free(fw);
        return NULL;
    }
    sweep(fw);
    return fw;
}

void fol_get_stats(const fol_follower *fw, fol_stats *st)
{
    *st = fw->st;
}

int fol_stop(fol_follower *fw, int timeout_ms, cs_err *err)
{
    unsigned long pending = 0;
    int rc;

    fw->stopping = 1;
    event_del(fw->sweep_ev);
    event_del(fw->soon_ev);
    event_del(fw->more_ev);
    event_del(fw->save_ev);
    if (fw->ino_ev)
        event_del(fw->ino_ev);
    kfk_producer_flush(fw->p, timeout_ms); /* serves the delivery reports */
    for (fol_file *f = fw->files; f; f = f->next)
        for (fol_mark *m = f->marks; m; m = m->next)
            pending += m->t ? kfk_tracker_pending(m->t) : 0;
    rc = save(fw, err);
    if (!rc && pending) {
        cs_err_set(err, "%lu signals still undelivered after %d ms: read "
                   "again at the next start", pending, timeout_ms);
        rc = -1;
    }
    return rc;
}

void fol_free(fol_follower *fw)
{
    if (!fw)
        return;
    while (fw->files) {
        fol_file *f = fw->files;
        fol_mark *m;
        while ((m = f->marks)) { /* released, a tracker calls nobody */
            f->marks = m->next;
            kfk_tracker_release(m->t);
            free(m);
        }
        fw->files = f->next;
        if (f->fd >= 0)
            close(f->fd);
        free(f->path);
        free(f->origin);
        free(f);
    }
    if (fw->ino_ev)
        event_free(fw->ino_ev);
    if (fw->sweep_ev)
        event_free(fw->sweep_ev);
    if (fw->soon_ev)
        event_free(fw->soon_ev);
    if (fw->save_ev)
        event_free(fw->save_ev);
    if (fw->more_ev)
        event_free(fw->more_ev);
    if (fw->ino_fd >= 0)
        close(fw->ino_fd);
    for (size_t i = 0; fw->pats && i < fw->o.nsources; i++)
        pp_free(fw->pats[i]);
    free(fw->pats);
    ll_free(fw->syslog);
    ll_free(fw->plain);
    free(fw->buf);
    free(fw->used);
    fpos_clear(&fw->start);
    free(fw);
}
