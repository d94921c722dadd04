/* One line a collector read, made a signal: a signal JSON line
 * (docs/FORMATS.md), a syslog line (ingest/syslog.h), or a plain line of
 * a job's or a host's output that names neither its time nor its host
 * (the collector gives them: the time it was read, the host and job from
 * the file's path). The edge filter is applied here, and the signal's id
 * derived from what was read, so that a redelivery keeps it. Shared by
 * the one-shot readers (filein.h) and the follower (follow.h). */
#ifndef CS_LOGLINE_H
#define CS_LOGLINE_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/signal.h"

struct classifier;

typedef enum {
    LL_JSONL,  /* signals, docs/FORMATS.md */
    LL_SYSLOG, /* "TIME HOST [job=ID] PROGRAM[PID]: TEXT" */
    LL_PLAIN,  /* the text alone: a job's stdout, a Ray worker's log */
} ll_format;

typedef struct ll_opts {
    ll_format format;
    const char *cluster; /* syslog, plain: the signals' cluster; NULL: default */
    int year;            /* syslog: for traditional times, which have none */
    /* syslog, plain: publish only the lines it keeps (cls_edge_keep);
     * NULL: all */
    const struct classifier *edge;
} ll_opts;

/* Where a plain line came from, which the line itself does not say. */
typedef struct ll_origin {
    sig_source source;      /* app unless told */
    const char *host, *job; /* NULL or "": none */
    int rank;               /* -1: none */
    int64_t ts;             /* the time it was read, us since the epoch */
    /* The line's place (its file's device and inode and its offset,
     * hashed): two equal lines of one file, a progress line printed
     * twice, are two signals; the same line read again is one. */
    uint64_t place;
} ll_origin;

typedef struct ll_encoder ll_encoder;

ll_encoder *ll_new(const ll_opts *o);
void ll_free(ll_encoder *e);

/* The signal of one line (len bytes at line, writable, with room for a
 * NUL at line[len]; a trailing CR is cut): 0 with its msgpack in *buf
 * (malloc'd) and its Kafka key (the cluster, valid until the next call)
 * in *key; 1 when the line is invalid (why says what and where in it);
 * 2 when the edge filter drops it; 3 when it is blank. from: a plain
 * line's origin (NULL for the other formats). */
int ll_encode(ll_encoder *e, const ll_origin *from, char *line, size_t len,
              const char **key, char **buf, size_t *blen, cs_err *why);

/* The dead-letter record of a line that was refused:
 * {"source_file", "line", "reason", "raw"} (raw cut to 64 KiB, bytes
 * that are not UTF-8 replaced), malloc'd JSON; NULL when out of memory. */
char *ll_dead_letter(const char *name, unsigned long lineno,
                     const char *reason, const char *raw, size_t len);

#endif
