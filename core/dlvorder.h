/* Delivery order: the offsets a producer's delivery reports gave, per
 * topic and partition, to tell a report that is not a new write. An
 * idempotent producer's reports of one partition come in order, each
 * after the last, and with acks=all each has its offset. A report at or
 * before an earlier one's offset is the broker taking the message for a
 * duplicate of a batch it has (the producer's sequence numbers reused)
 * and answering with that batch's offset; a success without an offset is
 * librdkafka's reading of DUPLICATE_SEQUENCE_NUMBER ("treat as success",
 * its source notes it may be a bug when nothing was retried). Either way
 * this message may not be on the topic. Seen as a lost alert on a fresh
 * producer's first writes to a real broker under load (the webhook's
 * kill test); counted as a failed delivery, its sender retries (a
 * duplicate at worst, which the correlator counts once). Prefix dlo_. */
#ifndef CS_DLVORDER_H
#define CS_DLVORDER_H

#include <stdint.h>

typedef struct dlo dlo;

dlo *dlo_new(void);
void dlo_free(dlo *d);
/* Records a successful report of topic's partition at offset; returns 1
 * when offset is not after the last one recorded there or is < 0 (none
 * reported; nothing is recorded then), 0 otherwise, and for a partition
 * < 0. */
int dlo_check(dlo *d, const char *topic, int32_t partition, int64_t offset);
/* The last offset recorded for topic's partition, -1 when none. */
int64_t dlo_last(const dlo *d, const char *topic, int32_t partition);

#endif
