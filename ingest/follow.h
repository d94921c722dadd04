/* The log follower: `cascade ingest log --follow`. Follows the files a
 * set of path patterns (ingest/pathpat.h) names, as they are written,
 * on the event loop without blocking it, and publishes each line as a
 * signal (ingest/logline.h) to cascade.signals.
 *
 * - New lines are read when inotify says a file changed, and by a sweep
 *   (sweep_ms) that also finds files that appeared, and catches what
 *   inotify does not see (network file systems, a full event queue).
 * - Rotation by rename: the old file is read to its end (a writer may
 *   still append until it reopens), closed once quiet for close_after_ms,
 *   and the new file at the path is read from its start.
 * - Rotation by copytruncate: a file that got shorter is read again from
 *   its start; the lines it held that were not yet delivered are read
 *   from the copy (a file beside it whose name begins with its own and
 *   whose first bytes are its first bytes) before that.
 * - The checkpoint (ingest/fpos.h) holds, per file, the offset before
 *   which every line was acknowledged by Kafka; it is saved at most every
 *   checkpoint_ms and at stop. After a kill -9 the lines after it are read
 *   again: their ids (derived from the line, and for a plain line from
 *   its place) are the same, so the redelivery is harmless downstream.
 *   A delivery that fails (message.timeout.ms) makes the file be read
 *   again from its checkpoint.
 * - A file idle for idle_close_ms, every line delivered, is closed (a
 *   job's output files on shared storage number thousands) and its place
 *   kept, in the checkpoint too; the sweep opens it again when it grows,
 *   and forgets it when it is gone from its path.
 * - A file present at the very first start (no checkpoint yet) is read
 *   from its end unless from_start: a kernel log's history is not news.
 *   A file that appears later, or while the follower was down, is read
 *   from its start. */
#ifndef CS_FOLLOW_H
#define CS_FOLLOW_H

#include <stddef.h>

#include "core/err.h"
#include "core/kafka.h"
#include "core/signal.h"
#include "ingest/logline.h"

struct event_base;
struct classifier;

typedef struct fol_source {
    const char *pattern; /* ingest/pathpat.h */
    ll_format format;    /* LL_SYSLOG or LL_PLAIN */
    sig_source source;   /* plain lines' */
    const char *host;    /* plain lines' where the path names none; NULL:
                            this machine's name */
} fol_source;

typedef struct fol_opts {
    const fol_source *sources;
    size_t nsources;
    const char *checkpoint; /* NULL: none (every start is a first) */
    const char *cluster;    /* NULL: default */
    int year;               /* syslog: for traditional times */
    const struct classifier *edge; /* NULL: every line */
    int from_start;
    int sweep_ms;       /* default 1000 */
    int checkpoint_ms;  /* default 200: what a kill -9 makes read again */
    int close_after_ms; /* default 5000 */
    /* A file that gave nothing this long, every line delivered, is
     * closed and its place kept until it grows: default 300000 */
    int idle_close_ms;
} fol_opts;

typedef struct fol_stats {
    unsigned long long lines, published, dropped, rejected, bytes;
    unsigned long files;   /* open now */
    unsigned long dormant; /* idle, closed, their place kept */
    unsigned long idled, woken; /* times a file went idle, woke */
    unsigned long opened, rotations, truncations, redeliveries;
} fol_stats;

typedef struct fol_follower fol_follower;

/* Compiles the patterns, loads the checkpoint, and starts on base (the
 * producer is polled from it). NULL with err naming the pattern or the
 * checkpoint that is wrong. */
fol_follower *fol_start(struct event_base *base, const fol_opts *o,
                        kfk_producer *p, cs_err *err);
void fol_get_stats(const fol_follower *f, fol_stats *st);
/* Stops reading, waits up to timeout_ms for what was published to be
 * acknowledged (blocking: shutdown only), saves the checkpoint. -1 with
 * err when something stayed undelivered or the checkpoint could not be
 * written. */
int fol_stop(fol_follower *f, int timeout_ms, cs_err *err);
void fol_free(fol_follower *f);

#endif
