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

#include "core/log.h"
#include "core/str.h"
#include "ingest/follow_priv.h"

static void id_key(uint64_t dev, uint64_t ino, char key[48])
{
    snprintf(key, 48, "%llu:%llu", (unsigned long long)dev,
             (unsigned long long)ino);
}

static void wd_key(int wd, char key[16])
{
    snprintf(key, 16, "%d", wd);
}

static fol_file *followed(fol_follower *fw, const struct stat *sb)
{
    char k[48];

    id_key((uint64_t)sb->st_dev, (uint64_t)sb->st_ino, k);
    return strmap_get(fw->by_id, k);
}

static void watch_file(fol_file *f)
{
    fol_follower *fw = f->fw;
    char dir[PATH_MAX];

    if (fw->ino_fd < 0)
        return;
    f->wd = inotify_add_watch(fw->ino_fd, f->path, IN_MODIFY);
    if (f->wd < 0) {
        log_warn("follow", "%s: no inotify watch (%s): read every sweep",
                 f->path, strerror(errno));
    } else {
        char k[16];
        wd_key(f->wd, k);
        strmap_put(fw->by_wd, k, f);
    }
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
    f->grown_at = folr_mono_ms();
    {
        char k[48];
        id_key(f->dev, f->ino, k);
        strmap_put(fw->by_id, k, f);
    }
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
    if ((c = followed(fw, &sb))) { /* already followed at its own path */
        close(fd);
        return;
    }
    if (!(c = new_file(fw, copy, path, src, fd, &sb)))
        return;
    c->rotated = 1;
    c->quiet_since = folr_mono_ms();
    c->place_dev = dev;
    c->place_ino = ino;
    start_at(c, from, line);
    log_info("follow", "%s: reading its copy %s from offset %llu", path, copy,
             (unsigned long long)from);
    watch_file(c);
    folr_read_turn(c, 0);
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
    if (fw->initial && fw->first && !fw->o.from_start) {
        /* after the last whole line: a line being written now is read
         * whole when its newline comes, not its tail alone */
        uint64_t at = fpos_line_start(f->fd, size);
        start_at(f, at, fpos_count_lines(f->fd, at));
    }
}

static void open_file(fol_follower *fw, const char *path, size_t src)
{
    /* no link, never blocked by a FIFO put there since the lstat; the
     * identity is the opened file's own */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat own;
    const struct stat *sb = &own;
    fol_file *f;

    if (fd >= 0 && (fstat(fd, &own) || !S_ISREG(own.st_mode) ||
                    followed(fw, &own))) {
        close(fd); /* not a file, or replaced since by one already followed */
        return;
    }
    if (fd < 0) {
        if (errno != ENOENT && errno != ELOOP)
            log_warn("follow", "%s: %s", path, strerror(errno));
        return;
    }
    if (!(f = new_file(fw, path, path, src, fd, sb)))
        return;
    place_new(fw, f, (uint64_t)sb->st_size);
    log_info("follow", "following %s from offset %llu (line %llu)", path,
             (unsigned long long)f->off, (unsigned long long)f->line + 1);
    watch_file(f);
    folr_read_turn(f, 0);
}

static void unwatch(fol_file *f)
{
    fol_follower *fw = f->fw;
    char k[16];

    if (f->wd < 0)
        return;
    wd_key(f->wd, k);
    if (strmap_get(fw->by_wd, k) == f)
        strmap_del(fw->by_wd, k);
    if (fw->ino_fd >= 0)
        inotify_rm_watch(fw->ino_fd, f->wd);
    f->wd = -1;
}

/* An idle file, every line delivered: its descriptor and watch let go
 * (a job's output files on shared storage number thousands), its place
 * kept; the sweep wakes it when it grows. */
static void go_dormant(fol_file *f)
{
    unwatch(f);
    close(f->fd);
    f->fd = -1;
    f->dormant = 1;
    f->fw->st.files--;
    f->fw->st.dormant++;
    f->fw->st.idled++;
    log_debug("follow", "%s idle: closed at offset %llu until it grows",
              f->path, (unsigned long long)f->off);
}

/* A dormant file that grew (or is found at another path): opened again
 * at its place. 0, or -1 when path is no longer that file. */
static int wake(fol_file *f, const char *path)
{
    fol_follower *fw = f->fw;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    struct stat sb;
    char *p;

    if (fd < 0 || fstat(fd, &sb) || (uint64_t)sb.st_dev != f->dev ||
        (uint64_t)sb.st_ino != f->ino) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (strcmp(path, f->path) && (p = strdup(path))) {
        free(f->path);
        f->path = p;
    }
    f->fd = fd;
    f->dormant = 0;
    fw->st.files++;
    fw->st.dormant--;
    fw->st.woken++;
    f->grown_at = folr_mono_ms();
    watch_file(f);
    return 0;
}

static void close_file(fol_file *f)
{
    fol_follower *fw = f->fw;

    for (fol_file **pp = &fw->files; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    unwatch(f);
    {
        char k[48];
        id_key(f->dev, f->ino, k);
        if (strmap_get(fw->by_id, k) == f)
            strmap_del(fw->by_id, k);
    }
    if (f->fd >= 0) {
        close(f->fd);
        fw->st.files--;
    }
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

    if (f->dormant) {
        if (stat(f->path, &sb) || (uint64_t)sb.st_ino != f->ino ||
            (uint64_t)sb.st_dev != f->dev) {
            close_file(f); /* gone from its path: forgotten */
            return;
        }
        if ((uint64_t)sb.st_size == f->off || wake(f, f->path))
            return;
    }
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
    /* shorter, or its first bytes changed: copytruncate (a quick writer
     * may have filled it past the old offset within a sweep) */
    if ((uint64_t)fsb.st_size < f->off ||
        (f->fp_len && !fpos_same_start(f->fd, f->fp_len, f->fp_hash))) {
        truncated(f);
        folr_read_turn(f, 0);
    } else if ((uint64_t)fsb.st_size > f->off) {
        if (f->rotated && now - f->quiet_since >= fw->o.close_after_ms &&
            !f->marks) {
            folr_read_turn(f, 1); /* its last line may lack a newline */
            return;
        }
        folr_read_turn(f, 0);
        f->quiet_since = now;
    } else if (f->rotated && !f->marks &&
               now - f->quiet_since >= fw->o.close_after_ms) {
        close_file(f);
    } else if (!f->rotated && !f->marks && f->acked == f->off &&
               now - f->grown_at >= fw->o.idle_close_ms) {
        go_dormant(f);
    }
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
        /* lstat: a link is not followed (whoever can write a followed
         * directory could point one at any file this process can read) */
        if (lstat(path, &sb) || !S_ISREG(sb.st_mode) ||
            !pp_match(fw->pats[src], path, NULL))
            continue;
        if (!(f = followed(fw, &sb))) {
            open_file(fw, path, src);
        } else if (f->dormant && strcmp(f->path, path) && f->src == src) {
            wake(f, path); /* renamed while idle, to a name still taken */
        } else if (f->rotated && f->src == src && !strcmp(f->path, path)) {
            f->rotated = 0; /* a stat that failed once: it is where it was */
        } else if (f->rotated && f->src == src && (p = strdup(path))) {
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

/* 1 when sb is a file the checkpoint names (same identity, same first
 * bytes: not an inode reused since). */
static int in_checkpoint(fol_follower *fw, int fd, const struct stat *sb)
{
    fpos_entry *e = fpos_find(&fw->start, (uint64_t)sb->st_dev,
                              (uint64_t)sb->st_ino);

    return e && fpos_same_start(fd, e->fp_len, e->fp_hash);
}

/* a no older than b. File times come from the kernel's coarse clock
 * (a few ms a tick): a file written in the tick of the save is one the
 * save may not have seen. */
static int not_older(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec > b->tv_sec ||
           (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
}

/* What a walk beside one followed path needs. */
typedef struct unseen_walk {
    fol_follower *fw;
    size_t src;
    const char *origin;
} unseen_walk;

/* One file beside origin's path the follower never saw: read whole. */
static int read_unseen(void *arg, const char *path)
{
    unseen_walk *u = arg;
    fol_follower *fw = u->fw;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat sb;
    fol_file *c;

    if (fd < 0)
        return 0;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || followed(fw, &sb) ||
        !not_older(&sb.st_mtim, &fw->saved_at) || in_checkpoint(fw, fd, &sb) ||
        !(c = new_file(fw, path, u->origin, u->src, fd, &sb))) {
        close(fd);
        return 0;
    }
    c->rotated = 1;
    c->quiet_since = folr_mono_ms();
    c->place_dev = c->dev;
    c->place_ino = c->ino;
    start_at(c, 0, 0);
    fw->st.rotations++;
    log_warn("follow", "%s: %s was written after the last checkpoint and "
             "rotated away while the follower was down: reading it whole",
             u->origin, path);
    watch_file(c);
    folr_read_turn(c, 0);
    return 0;
}

/* The files beside origin (its name and more: origin.1, origin-2024...)
 * that neither the checkpoint nor the follower knows and that were
 * written after the checkpoint was saved. Two rotations in one outage
 * leave one: born after the last save, renamed away before the restart
 * (or copytruncate's middle copy). Files rotated and read before the
 * save are older than it (closed 5 s after their last write), and in no
 * checkpoint: they are left. */
static void scan_beside(fol_follower *fw, const char *origin, strmap *seen)
{
    unseen_walk u = {fw, 0, origin};

    if (strmap_get(seen, origin))
        return;
    strmap_put(seen, origin, seen);
    while (u.src < fw->o.nsources && !pp_match(fw->pats[u.src], origin, NULL))
        u.src++;
    if (u.src < fw->o.nsources)
        fpos_each_beside(origin, read_unseen, &u);
}

static void find_unseen(fol_follower *fw)
{
    strmap *seen;

    if (fw->first || !(seen = strmap_new()))
        return;
    for (size_t i = 0; i < fw->start.n; i++)
        scan_beside(fw, fw->start.v[i].path, seen);
    for (fol_file *f = fw->files; f; f = f->next)
        if (!f->rotated && f->origin)
            scan_beside(fw, f->origin, seen);
    strmap_free(seen, NULL);
}

static void sweep(fol_follower *fw)
{
    int64_t now = folr_mono_ms();
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
        find_unseen(fw);
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
            if (ev->mask & IN_MODIFY) {
                char k[16];
                wd_key(ev->wd, k);
                f = strmap_get(fw->by_wd, k);
            }
            if (f) {
                folr_read_turn(f, 0);
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
    fw->more_ev = evtimer_new(fw->base, folr_on_more, fw);
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

    struct stat sb;

    if (fw->o.checkpoint &&
        fpos_load(fw->o.checkpoint, &fw->start, &found, err))
        return -1;
    fw->first = !found;
    if (found && !stat(fw->o.checkpoint, &sb))
        fw->saved_at = sb.st_mtim;
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
    if (fw->o.idle_close_ms <= 0)
        fw->o.idle_close_ms = 5 * 60 * 1000;
    if (!(fw->by_id = strmap_new()) || !(fw->by_wd = strmap_new())) {
        cs_err_set(err, "out of memory");
        fol_free(fw);
        return NULL;
    }
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
    if (fw->by_id)
        strmap_free(fw->by_id, NULL);
    if (fw->by_wd)
        strmap_free(fw->by_wd, NULL);
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
