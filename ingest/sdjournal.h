/* The journald collector: `cascade ingest journal`. Reads the systemd
 * journal with libsystemd's sd-journal on the event loop (its inotify
 * descriptor, and a timer for what it does not wake for), and publishes
 * kernel messages, and the messages of chosen units, as signals to
 * cascade.signals:
 *
 * - an entry with _TRANSPORT=kernel is a `kernel` signal; any other is
 *   of its SYSLOG_IDENTIFIER's source as a syslog line's program would be
 *   (slurmctld, slurmd, slurmstepd: slurm; raylet, gcs_server: ray;
 *   others: app); its host is _HOSTNAME, its time __REALTIME_TIMESTAMP,
 *   its line MESSAGE (a binary one with bytes that are not UTF-8
 *   replaced); its id a hash of the entry's cursor, which names it;
 * - the edge filter as the log collector's;
 * - the checkpoint holds the cursor of the last entry Kafka acknowledged,
 *   with every one before it; it is replaced whole at most every
 *   checkpoint_ms and at stop. A restart goes on after it (an entry
 *   vacuumed meanwhile is reported: what it and those before the next
 *   were is lost). A failed delivery reads again from it. Without a
 *   checkpoint it starts at the journal's end (from_start: its start).
 *
 * An sd_journal is used on the loop's thread only. */
#ifndef CS_SDJOURNAL_H
#define CS_SDJOURNAL_H

#include <stddef.h>

#include "core/err.h"
#include "core/kafka.h"

struct event_base;
struct classifier;

typedef struct sdj_opts {
    const char *directory;  /* a journal directory; NULL: the system's */
    const char *const *files; /* journal files (NULL-ended); NULL: none */
    const char *const *units; /* also these units' messages; NULL: none */
    int kernel;             /* kernel messages (default on) */
    const char *checkpoint; /* NULL: none */
    const char *cluster;    /* NULL: default */
    const struct classifier *edge; /* NULL: every entry */
    int from_start;
    int checkpoint_ms;      /* default 200 */
} sdj_opts;

typedef struct sdj_stats {
    unsigned long long entries, published, dropped, rejected;
    unsigned long redeliveries, lost_gaps;
} sdj_stats;

typedef struct sdj_reader sdj_reader;

/* Opens the journal, applies the matches, finds where to start. NULL
 * with err when the journal cannot be opened or the checkpoint read. */
sdj_reader *sdj_start(struct event_base *base, const sdj_opts *o,
                      kfk_producer *p, cs_err *err);
void sdj_get_stats(const sdj_reader *r, sdj_stats *st);
/* Stops reading, waits up to timeout_ms for delivery (blocking: shutdown
 * only), saves the checkpoint. */
int sdj_stop(sdj_reader *r, int timeout_ms, cs_err *err);
void sdj_free(sdj_reader *r);

#endif
