/* Redis side of the correlator: the engine's window and state writes,
 * queued per batch and sent as one pipeline on the reconnecting link
 * (core/rlink.h) bound to the event loop. A batch is "acknowledged" only
 * when every reply of it has arrived and, with redis.wait_replicas N, the
 * WAIT that ends it says N replicas have it: a failover cannot then take
 * back a batch whose offsets were committed. A lost connection, a refusal
 * or too few replicas resend the whole batch after a back-off (all writes
 * are idempotent). */
#ifndef CS_STORE_H
#define CS_STORE_H

#include <event2/event.h>

#include "core/err.h"
#include "core/rtarget.h"
#include "engine/engine.h"

typedef struct store store;

/* t: where Redis is and how to reach it (copied). prefix: prepended to
 * every key ("" for none). */
store *store_new(struct event_base *base, const rtarget *t, const char *prefix,
                 cs_err *err);
void store_free(store *st);
/* The ops to hand to eng_new, with the store as ctx. */
const eng_store_ops *store_ops(void);

/* Sends everything queued since the last flush as one batch. done(arg)
 * runs from the loop once the batch is acknowledged; it never reports a
 * failure: failures are retried until stopped. Batches may be flushed
 * while earlier ones are in flight (the correlator feeds the next batch
 * while Redis applies the last): they go out in order, and are
 * acknowledged in order, each only after every one before it. A lost
 * connection or a refusal sends every unacknowledged batch again, in
 * order. With nothing queued and nothing in flight, done runs at once. */
typedef void (*store_done_fn)(void *arg);
int store_flush(store *st, store_done_fn done, void *arg);
int store_busy(const store *st);
/* Commands sent to Redis (resends included), and the HSET / HDEL fields
 * queued: consecutive writes to one hash share a command. */
unsigned long store_commands_sent(const store *st);
/* Whether the link to Redis is up (connected and authenticated). */
int store_up(const store *st);
unsigned long store_hash_writes(const store *st);


/* The partition count of topic that the state in Redis was built with
 * (the clusters' state belongs to the partition their key hashes to):
 * recorded as count the first time, in the hash STORE_META field topic
 * (blocking; start-up only). Returns the count on record, or -1 (err
 * set). */
#define STORE_META "cascade:{meta}:partitions"
long store_partitions(const rtarget *t, const char *topic, long count,
                      cs_err *err);

/* Reads back every cascade key under prefix (blocking; start-up only):
 * each sorted-set entry goes to window(), each field of the hashes that
 * wants_hash() accepts (all when NULL) to hash(). Names are passed without
 * the prefix. A callback returns 0 when it took the entry. Returns the
 * entries taken, or -1 when Redis cannot be read (err set). */
typedef struct store_restore_fns {
    int (*window)(void *arg, const char *key, int64_t ts, const char *member);
    int (*wants_hash)(void *arg, const char *key);
    int (*hash)(void *arg, const char *key, const char *field,
                const char *value);
    /* Keys of any type it returns 0 for are not read at all (NULL: all
     * are read). */
    int (*wants_key)(void *arg, const char *key);
} store_restore_fns;
long store_restore(const rtarget *t, const char *prefix,
                   const store_restore_fns *fns, void *arg, cs_err *err);

#endif
