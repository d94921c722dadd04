/* A set of 64-bit ids, each with a time stamp (open addressing, linear
 * probing): the signals a correlator has seen, to count a redelivered one
 * once. No strings and no allocation per id: a strmap of hex ids with a
 * malloc'd stamp each cost about 100 bytes and three allocations per
 * signal. */
#ifndef CS_IDSET_H
#define CS_IDSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct idset idset;

idset *ids_new(void);
void ids_free(idset *s);
size_t ids_len(const idset *s);
/* 1 (and its stamp in *ts, when ts is given) when id is in the set. */
int ids_get(const idset *s, uint64_t id, int64_t *ts);
/* Adds id, or sets the stamp of the one there. */
void ids_put(idset *s, uint64_t id, int64_t ts);
/* Drops the ids stamped before `before` over the next additions (a few
 * slots at each): until then they may still be found. The set's table is
 * sized anew for the ids it holds now, so a set that shrank gives memory
 * back. */
void ids_expire(idset *s, int64_t before);
/* The next growth drops the ids stamped before `before` as it moves them
 * (a growth is when the set is half full: its table was made and faulted
 * in ahead, so this costs no pass and no stall of its own). */
void ids_floor(idset *s, int64_t before);
/* 1 while a rebuild (growth or ids_expire) is still moving ids. */
int ids_busy(const idset *s);
/* ids_expire, finished at once; returns how many went. */
size_t ids_drop_before(idset *s, int64_t before);
/* At most about `max` ids (0: no limit, the default): once the table
 * has the size for them, a growth rebuilds it at that size instead,
 * dropping the ids stamped before the median stamp (about the older
 * half) beside those before the ids_floor. The set then keeps the newest
 * max/2 to max ids (up to 1.5 max while a rebuild still moves the older
 * ones out), in at most three tables of 2*max slots, 16 bytes each. Ids whose stamps are too
 * alike to choose by time (a quarter of a sample not older than its
 * median) grow the set past the limit. */
void ids_limit(idset *s, size_t max);
/* The ids the limit dropped before their ids_floor, since the start. */
size_t ids_evicted(const idset *s);
/* The highest floor the limit raised (INT64_MIN: it never did): ids
 * stamped before it may be gone. */
int64_t ids_limit_floor(const idset *s);

#endif
