/* The follower's insides, shared by its two files: follow.c (the loop,
 * finding files, rotation, the checkpoint) and follow_read.c (reading a
 * file's lines and tracking their delivery), which calls nothing of
 * follow.c. Not for other modules: ingest/follow.h is the interface. */
#ifndef CS_FOLLOW_PRIV_H
#define CS_FOLLOW_PRIV_H

#include <stdint.h>

#include <event2/event.h>

#include "core/kafka.h"
#include "core/strmap.h"
#include "ingest/follow.h"
#include "ingest/fpos.h"
#include "ingest/logline.h"
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
    int dormant;  /* idle: closed, its place kept, woken when it grows */
    int64_t quiet_since; /* ms: a rotated file's last growth */
    int64_t grown_at;    /* ms: when it last gave lines */
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
    strmap *by_id;  /* "dev:ino" -> its fol_file */
    strmap *by_wd;  /* an inotify watch -> its open fol_file */
    fpos_set start; /* the checkpoint read at start */
    char *used;     /* start's entries a file took */
    int first;      /* there was no checkpoint */
    struct timespec saved_at; /* the checkpoint's mtime: when it was saved */
    int initial;    /* the first sweep runs */
    int dirty, stopping;
    int ino_fd;
    struct event *ino_ev, *sweep_ev, *soon_ev, *save_ev, *more_ev;
    char hostname[256];
    int64_t now_us; /* a turn's reading time */
    fol_stats st;
};

int64_t folr_mono_ms(void);
/* Reads again in ms (0: as soon as the loop turns), unless stopping. */
void folr_kick(fol_follower *fw, int ms);
/* Reads what f holds after f->off, up to FOL_TURN bytes; final: the rest
 * without a newline is a line too (a rotated file's last). */
void folr_read_turn(fol_file *f, int final);
/* The more_ev callback: the files that have more to read. */
void folr_on_more(evutil_socket_t fd, short what, void *arg);

#endif
