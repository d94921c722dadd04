/* One line a long-running collector read, published: encoded
 * (ingest/logline.h) and produced to cascade.signals through the
 * caller's delivery tracker, or, when it is invalid or too big for Kafka,
 * produced to cascade.deadletter with where it was read (name, lineno)
 * and why. The follower and the journal reader share it; the checkpoint
 * each keeps moves only when the tracker says all of it arrived. */
#ifndef CS_LINEPUB_H
#define CS_LINEPUB_H

#include <stddef.h>

#include "core/err.h"
#include "core/kafka.h"
#include "ingest/logline.h"

typedef enum {
    LP_PUBLISHED, /* a signal */
    LP_REJECTED,  /* a dead letter */
    LP_DROPPED,   /* the edge filter's */
    LP_BLANK,     /* nothing to tell */
} lp_outcome;

/* line: len bytes, writable, room for a NUL at line[len]. *t is made
 * when NULL. KFK_OK with *out when the line was taken, KFK_QUEUE_FULL
 * when it must be tried again later (nothing of it was produced), -1 on
 * a failure (err). who: the log component to warn a rejection under. */
int lp_line(ll_encoder *e, kfk_producer *p, const ll_origin *from, char *line,
            size_t len, const char *name, unsigned long lineno,
            const char *who, kfk_tracker **t, lp_outcome *out, cs_err *err);

#endif
