/* FNV-1a 64 and a word-at-a-time hash: stable across runs and machines,
 * which the ids need (the same input must give the same signal and
 * incident ids everywhere). */
#ifndef CS_HASH_H
#define CS_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t hash_fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

#define HASH_FNV_SEED 0xcbf29ce484222325ULL

/* Eight bytes, little-endian whatever the machine (one load on x86). */
static inline uint64_t hash_le64(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
           (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
           (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

/* A word at a time, for ids of long inputs read at line rate (a log
 * line's): FNV-1a's byte-by-byte chain of multiplies took 11 % of the
 * log collector's time. Each step is a bijection of the state for a
 * given word, so inputs of one length that differ in one word differ
 * here; stable across machines as FNV-1a is. Not a replacement for it
 * where ids already derive from FNV-1a. */
static inline uint64_t hash_words(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    const uint64_t m = 0x9e3779b97f4a7c15ULL;
    unsigned char tail[8] = {0};

    h ^= (uint64_t)len * m;
    for (; len >= 8; p += 8, len -= 8) {
        h = (h ^ hash_le64(p)) * m;
        h ^= h >> 29;
    }
    for (size_t i = 0; i < len; i++)
        tail[i] = p[i];
    h = (h ^ hash_le64(tail)) * m;
    h ^= h >> 32;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 31);
}

/* Slots of an old table to move per key added while strmap or idset
 * rebuild (both at most 3/4 full): twice what empties the old table
 * before the new one, given n live keys, reaches 3/4 (where the next
 * rebuild starts), at least 2, and no more: each key moved is a write to
 * a random place of the new table, a cache miss in a big one. A fixed 64
 * (idset) and 16 (strmap) made the additions of a rebuild 3-5x as costly
 * while it lasted: at 100k signals/s the correlator fed 8-10 us a signal
 * instead of 2 for a tenth of a second at each doubling, and the backlog
 * set the p99. A doubling gets 2 or 3. */
static inline size_t hash_move_step(size_t old_cap, size_t cap, size_t n)
{
    size_t room = cap / 4 * 3 > n + 1 ? cap / 4 * 3 - n - 1 : 1;
    size_t step = (2 * old_cap + room - 1) / room;

    return step < 2 ? 2 : step;
}

/* A big table is written at random places, so nearly every write of a
 * new one's first few thousand is a page fault (2-3 us each on this VM):
 * the doubling of a million-entry table put 20 ms of faults into a tenth
 * of a second. strmap and idset make the next table ahead of need and
 * fault it in a few pages at each addition. Tables below this are left
 * to fault as they are used. */
#define HASH_WARM_MIN ((size_t)256 << 10)
#define HASH_PAGE ((size_t)4096)

/* A spare table being faulted in: `pages` pages every `every` additions,
 * so that the whole is in after the additions it was given. One page an
 * addition at the least made the first 65 536 additions after a 256 MiB
 * table was made fault one page each: 0.6 s of signals at 2.5 us more. */
typedef struct hash_warm {
    size_t done;  /* bytes faulted in */
    size_t pages; /* per turn */
    size_t every; /* additions per turn */
    size_t count; /* additions since the last turn */
} hash_warm;

static inline hash_warm hash_warm_pace(size_t bytes, size_t adds)
{
    size_t pages = (bytes + HASH_PAGE - 1) / HASH_PAGE;
    hash_warm w = {0, 1, 1, 0};

    if (!adds)
        adds = 1;
    if (pages >= adds)
        w.pages = (pages + adds - 1) / adds;
    else
        w.every = adds / pages;
    return w;
}

/* One addition's share: writes a zero into the next pages of mem
 * (calloc'd, so already zero) when its turn has come. */
static inline void hash_prefault(hash_warm *w, void *mem, size_t bytes)
{
    volatile char *p = mem;

    if (w->done >= bytes || ++w->count < w->every)
        return;
    w->count = 0;
    for (size_t n = w->pages; w->done < bytes && n; n--, w->done += HASH_PAGE)
        p[w->done] = 0;
}

#endif
