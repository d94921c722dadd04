/* Publishes a signal capture (docs/FORMATS.md JSON Lines) to cascade.signals:
 * how recorded incidents and hand-written signals enter a live pipeline. */
#ifndef CS_FILEIN_H
#define CS_FILEIN_H

#include "core/err.h"
#include "core/kafka.h"
#include "ingest/logline.h"

typedef struct fin_stats {
    unsigned long lines;     /* lines read, blank ones included */
    unsigned long published; /* valid signals handed to the producer */
    unsigned long rejected;  /* invalid lines, each dead-lettered */
    unsigned long dropped;   /* syslog lines the edge filter dropped */
} fin_stats;

/* The format and what goes with it (ingest/logline.h). A plain line is
 * given the time it was read, the source, host, job and rank of origin,
 * and its line number as its place. */
typedef struct fin_opts {
    ll_opts line;
    ll_origin origin; /* plain lines */
} fin_opts;

/* Reads `path` ("-" for standard input) line by line, each line as soon
 * as it is read (a pipe's lines go out as they come). Each valid line is
 * published as msgpack keyed by its cluster (a full producer queue is
 * waited out, never dropped). Each invalid line, or one longer than
 * SIG_MAX_BYTES, is reported on stderr as "<path>:<line>: <reason>" and
 * published to cascade.deadletter as {"source_file", "line", "reason",
 * "raw"} (raw cut to 64 KiB). Blank lines are skipped. Blocks: waits up to
 * 30 s at the end for delivery. Returns 0 when every line was valid and
 * delivered, 1 when some were rejected, -1 on an I/O or delivery failure
 * (err set). st may be NULL. */
int fin_publish(const char *path, kfk_producer *p, fin_stats *st, cs_err *err);
/* The same for any format. A syslog line becomes a signal of its
 * source (ts, source, host, job, line: the text after the tag); one the
 * edge filter drops is counted, not published: it could make no fact. */
int fin_publish_opts(const char *path, const fin_opts *o, kfk_producer *p,
                     fin_stats *st, cs_err *err);

#endif
