#include "ingest/fpos.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/str.h"

#define FPOS_HEADER "cascade-follow 1"
/* A checkpoint bigger than this is not one of ours. */
#define FPOS_MAX_BYTES (64 << 20)

int fpos_add(fpos_set *s, const fpos_entry *e)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        fpos_entry *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n] = *e;
    if (!(s->v[s->n].path = strdup(e->path)))
        return -1;
    s->n++;
    return 0;
}

void fpos_clear(fpos_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].path);
    free(s->v);
    memset(s, 0, sizeof *s);
}

fpos_entry *fpos_find(const fpos_set *s, uint64_t dev, uint64_t ino)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].dev == dev && s->v[i].ino == ino)
            return &s->v[i];
    return NULL;
}

/* A decimal number and the space after it. */
static int number(const char **p, const char *end, int hex, uint64_t *out)
{
    uint64_t v = 0;
    const char *s = *p;
    int digits = 0;

    for (; s < end && *s != ' '; s++, digits++) {
        int d = *s >= '0' && *s <= '9'               ? *s - '0'
                : hex && *s >= 'a' && *s <= 'f'      ? *s - 'a' + 10
                                                     : -1;
        if (d < 0 || digits >= (hex ? 16 : 19))
            return -1;
        v = v * (hex ? 16 : 10) + (uint64_t)d;
    }
    if (!digits || s == end)
        return -1;
    *p = s + 1;
    *out = v;
    return 0;
}

static int parse_line(const char *s, const char *end, fpos_entry *e)
{
    uint64_t fp_len;
    size_t plen;

    if (number(&s, end, 0, &e->dev) || number(&s, end, 0, &e->ino) ||
        number(&s, end, 0, &e->offset) || number(&s, end, 0, &e->line) ||
        number(&s, end, 0, &fp_len) ||
        fp_len > FPOS_FP_MAX || number(&s, end, 1, &e->fp_hash))
        return -1;
    plen = (size_t)(end - s);
    if (!plen || plen >= PATH_MAX || memchr(s, '\0', plen))
        return -1;
    e->fp_len = (uint32_t)fp_len;
    e->path = (char *)s; /* copied by fpos_add, up to end */
    return 0;
}

int fpos_parse(const char *name, const char *text, size_t len, fpos_set *out,
               cs_err *err)
{
    const char *p = text, *end = text + len;
    fpos_set s = {0};
    unsigned long lineno = 0;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        fpos_entry e;
        char path[PATH_MAX];

        lineno++;
        if (lineno == 1) {
            if ((size_t)(eol - p) != strlen(FPOS_HEADER) ||
                memcmp(p, FPOS_HEADER, strlen(FPOS_HEADER))) {
                cs_err_set(err, "%s:1: not a follower checkpoint (the first "
                           "line is not '%s')", name, FPOS_HEADER);
                goto fail;
            }
        } else if (eol > p) {
            if (parse_line(p, eol, &e)) {
                cs_err_set(err, "%s:%lu: expected 'DEV INO OFFSET LINE "
                           "FPLEN FPHASH PATH'", name, lineno);
                goto fail;
            }
            memcpy(path, e.path, (size_t)(eol - e.path));
            path[eol - e.path] = '\0';
            e.path = path;
            if (fpos_add(&s, &e)) {
                cs_err_set(err, "%s: out of memory", name);
                goto fail;
            }
        }
        p = nl ? nl + 1 : end;
    }
    if (lineno == 0) {
        cs_err_set(err, "%s: empty, not a follower checkpoint", name);
        goto fail;
    }
    *out = s;
    return 0;
fail:
    fpos_clear(&s);
    return -1;
}

int fpos_load(const char *path, fpos_set *out, int *found, cs_err *err)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t got;
    int rc = -1;

    *found = 0;
    memset(out, 0, sizeof *out);
    if (!f && errno == ENOENT)
        return 0;
    if (!f) {
        cs_err_set(err, "checkpoint %s: %s", path, strerror(errno));
        return -1;
    }
    if (!(buf = malloc(FPOS_MAX_BYTES + 1))) {
        cs_err_set(err, "checkpoint %s: out of memory", path);
        goto out;
    }
    got = fread(buf, 1, FPOS_MAX_BYTES + 1, f);
    if (ferror(f) || got > FPOS_MAX_BYTES) {
        cs_err_set(err, "checkpoint %s: %s", path,
                   ferror(f) ? strerror(errno) : "larger than 64 MiB");
        goto out;
    }
    if ((rc = fpos_parse(path, buf, got, out, err)) == 0)
        *found = 1;
out:
    free(buf);
    fclose(f);
    return rc;
}

static int write_set(FILE *f, void *arg)
{
    const fpos_set *s = arg;

    fprintf(f, "%s\n", FPOS_HEADER);
    for (size_t i = 0; i < s->n; i++) {
        const fpos_entry *e = &s->v[i];
        fprintf(f, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                   " %" PRIu32 " %016" PRIx64 " %s\n",
                e->dev, e->ino, e->offset, e->line, e->fp_len, e->fp_hash,
                e->path);
    }
    return ferror(f) ? -1 : 0;
}

/* The rename itself survives a power cut once the directory is synced;
 * a failure here costs at most lines read again. */
static void sync_dir(const char *path)
{
    char dir[PATH_MAX];
    int fd;

    fpos_dir_of(path, dir, sizeof dir);
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        fsync(fd);
        close(fd);
    }
}

int fpos_replace(const char *path, const char *what,
                 int (*write)(FILE *f, void *arg), void *arg, cs_err *err)
{
    char tmp[PATH_MAX + 8];
    FILE *f;
    int rc;

    if (snprintf(tmp, sizeof tmp, "%s.new", path) >= (int)sizeof tmp) {
        cs_err_set(err, "%s %s: the path is too long", what, path);
        return -1;
    }
    if (!(f = fopen(tmp, "w"))) {
        cs_err_set(err, "%s %s: %s", what, tmp, strerror(errno));
        return -1;
    }
    rc = write(f, arg) || fflush(f) || ferror(f) || fsync(fileno(f)) ? -1 : 0;
    if (fclose(f))
        rc = -1;
    if (rc)
        cs_err_set(err, "%s %s: %s", what, tmp, strerror(errno));
    if (!rc && rename(tmp, path)) {
        cs_err_set(err, "%s %s: %s", what, path, strerror(errno));
        rc = -1;
    }
    if (rc)
        unlink(tmp);
    else
        sync_dir(path);
    return rc;
}

int fpos_save(const char *path, const fpos_set *s, cs_err *err)
{
    return fpos_replace(path, "checkpoint", write_set, (void *)s, err);
}

int fpos_fingerprint(int fd, uint32_t *len, uint64_t *hash)
{
    char buf[FPOS_FP_MAX];
    ssize_t got = pread(fd, buf, sizeof buf, 0);

    if (got < 0)
        return -1;
    *len = (uint32_t)got;
    *hash = hash_fnv1a(HASH_FNV_SEED, buf, (size_t)got);
    return 0;
}

int fpos_same_start(int fd, uint32_t len, uint64_t hash)
{
    char buf[FPOS_FP_MAX];
    ssize_t got;

    if (len > sizeof buf)
        return 0;
    got = pread(fd, buf, len, 0);
    return got == (ssize_t)len && hash_fnv1a(HASH_FNV_SEED, buf, len) == hash;
}

void fpos_dir_of(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');

    if (!slash)
        snprintf(out, cap, ".");
    else
        snprintf(out, cap, "%.*s", (int)(slash > path ? slash - path : 1),
                 path);
}

uint64_t fpos_count_lines(int fd, uint64_t size)
{
    enum { BLOCK = 1 << 20 };
    char *buf = malloc(BLOCK);
    uint64_t lines = 0;

    for (uint64_t at = 0; buf && at < size;) {
        ssize_t n = pread(fd, buf, BLOCK, (off_t)at);
        if (n <= 0)
            break;
        if ((uint64_t)n > size - at)
            n = (ssize_t)(size - at);
        for (char *p = buf; (p = memchr(p, '\n', (size_t)(buf + n - p))); p++)
            lines++;
        at += (uint64_t)n;
    }
    free(buf);
    return lines;
}

/* The entry's file, if it is a regular file (not followed through a
 * link, never a FIFO that would block the open) that matches: by its
 * identity when want_dev/want_ino are given, else by its first bytes. */
int fpos_each_beside(const char *path,
                     int (*fn)(void *arg, const char *copy), void *arg)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t blen = strlen(base);
    char dir[PATH_MAX], copy[PATH_MAX];
    struct dirent *de;
    DIR *d;
    int rc = 0;

    fpos_dir_of(path, dir, sizeof dir);
    if (!(d = opendir(dir)))
        return 0;
    while (!rc && (de = readdir(d))) {
        if (strncmp(de->d_name, base, blen) || !de->d_name[blen] ||
            (size_t)snprintf(copy, sizeof copy, "%s/%s", dir, de->d_name) >= sizeof copy)
            continue;
        rc = fn(arg, copy);
    }
    closedir(d);
    return rc;
}

/* What fpos_find_copy looks for, and what it found. */
typedef struct copy_want {
    uint64_t dev, ino, need, fp_hash;
    uint32_t fp_len;
    char *out;
    size_t cap;
    struct stat *sb;
    int fd;
} copy_want;

/* 1 (w->fd open, w->out its path) when copy is the file w wants. */
static int try_copy(void *arg, const char *copy)
{
    copy_want *w = arg;
    int fd;

    if (strlen(copy) >= w->cap || lstat(copy, w->sb) || !S_ISREG(w->sb->st_mode) ||
        (uint64_t)w->sb->st_size < w->need)
        return 0;
    if (w->ino && ((uint64_t)w->sb->st_dev != w->dev ||
                   (uint64_t)w->sb->st_ino != w->ino))
        return 0;
    if ((fd = open(copy, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)) < 0)
        return 0;
    if (fstat(fd, w->sb) || !S_ISREG(w->sb->st_mode) ||
        !fpos_same_start(fd, w->fp_len, w->fp_hash)) {
        close(fd);
        return 0;
    }
    str_copy(w->out, w->cap, copy);
    w->fd = fd;
    return 1;
}

int fpos_find_copy(const char *path, uint64_t dev, uint64_t ino,
                   uint32_t fp_len, uint64_t fp_hash, uint64_t need, char *out,
                   size_t cap, struct stat *sb)
{
    copy_want w = {dev, ino, need, fp_hash, fp_len, out, cap, sb, -1};

    /* the same file renamed first (exact); then a copy by its first bytes,
     * which an empty fingerprint cannot tell from any other file */
    if (ino)
        fpos_each_beside(path, try_copy, &w);
    w.ino = 0;
    if (w.fd < 0 && fp_len)
        fpos_each_beside(path, try_copy, &w);
    return w.fd;
}

uint64_t fpos_line_start(int fd, uint64_t size)
{
    char buf[64 * 1024];
    uint64_t end = size;

    while (end > 0) {
        size_t n = end < sizeof buf ? (size_t)end : sizeof buf;
        ssize_t got = pread(fd, buf, n, (off_t)(end - n));
        if (got != (ssize_t)n)
            return size; /* cannot tell: where it ends */
        for (size_t i = n; i > 0; i--)
            if (buf[i - 1] == '\n')
                return end - n + i;
        end -= n;
    }
    return 0;
}
