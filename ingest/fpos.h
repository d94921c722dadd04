/* A follower's checkpoint: for each file it follows, how far every line
 * was delivered. A text file, replaced whole (written beside, synced,
 * renamed) so that a crash leaves the old one or the new one:
 *
 *   cascade-follow 1
 *   DEV INO OFFSET LINE FPLEN FPHASH PATH
 *
 * DEV, INO: the file's identity (a renamed file keeps it); OFFSET: where
 * its undelivered lines start, LINE: how many lines are before it (for
 * messages that name a line); FPLEN, FPHASH: the length and FNV-1a hash
 * (16 hex digits) of its first bytes, which tell a reused inode or a
 * truncated and rewritten file from the one that was read; PATH: where it
 * was found (the rest of the line). */
#ifndef CS_FPOS_H
#define CS_FPOS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "core/err.h"

/* The bytes a fingerprint covers at most. */
#define FPOS_FP_MAX 1024

typedef struct fpos_entry {
    uint64_t dev, ino, offset, line;
    uint32_t fp_len;
    uint64_t fp_hash;
    char *path;
} fpos_entry;

typedef struct fpos_set {
    fpos_entry *v;
    size_t n, cap;
} fpos_set;

/* Parses a checkpoint's text (name for messages): -1 with err
 * "NAME:LINE: what" on the first bad line; nothing is kept then. */
int fpos_parse(const char *name, const char *text, size_t len, fpos_set *out,
               cs_err *err);
/* Reads path: 0 (with *found 0 and no entries when there is none yet), or
 * -1 when it cannot be read or parsed. */
int fpos_load(const char *path, fpos_set *out, int *found, cs_err *err);
/* Adds a copy of e (its path copied). */
int fpos_add(fpos_set *s, const fpos_entry *e);
/* Replaces path whole: write(f, arg) fills PATH.new, which is synced and
 * renamed over path (and the directory synced), so that a crash leaves
 * the old file or the new one. -1 with err "WHAT PATH: why". For every
 * file a collector keeps its place in. */
int fpos_replace(const char *path, const char *what,
                 int (*write)(FILE *f, void *arg), void *arg, cs_err *err);
/* Replaces path with s: -1 with err when it cannot be written. */
int fpos_save(const char *path, const fpos_set *s, cs_err *err);
/* The entry of (dev, ino), or NULL. */
fpos_entry *fpos_find(const fpos_set *s, uint64_t dev, uint64_t ino);
void fpos_clear(fpos_set *s);

/* The fingerprint of the first up to FPOS_FP_MAX bytes of fd: 0, or -1
 * on a read error. */
int fpos_fingerprint(int fd, uint32_t *len, uint64_t *hash);
/* Whether fd's first len bytes hash to hash (a file shorter than len
 * does not). */
int fpos_same_start(int fd, uint32_t len, uint64_t hash);

/* path's directory ("." for a bare name, "/" for one at the root). */
void fpos_dir_of(const char *path, char *out, size_t cap);
/* Where the line that holds byte size - 1 starts: just after the last
 * newline before size (0 when there is none; size when it cannot be
 * read). */
uint64_t fpos_line_start(int fd, uint64_t size);
/* Newlines in fd's first size bytes: the line a file read from its end
 * starts at. */
uint64_t fpos_count_lines(int fd, uint64_t size);
/* fn(arg, COPY) for each entry beside path whose name begins with
 * path's name (path itself left out): its rotated copies, kern.log.1,
 * kern.log-20240501. A nonzero return of fn stops the walk and is
 * returned; 0 when it went to the end (or the folder cannot be read). */
int fpos_each_beside(const char *path,
                     int (*fn)(void *arg, const char *copy), void *arg);
/* The regular file (not a link) beside path whose name begins with
 * path's name and that holds at least `need` bytes: the one of identity
 * (dev, ino) when there is one (path's file renamed by a rotation; ino 0:
 * none asked), else one whose first fp_len bytes (fp_len > 0) hash to
 * fp_hash (the copy copytruncate made). Its descriptor, its path in out
 * and its stat in sb; -1 when there is none. */
int fpos_find_copy(const char *path, uint64_t dev, uint64_t ino,
                   uint32_t fp_len, uint64_t fp_hash, uint64_t need, char *out,
                   size_t cap, struct stat *sb);

#endif
