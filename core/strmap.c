#include "core/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/mem.h"

#define TOMBSTONE ((char *)&tombstone_marker)
static const char tombstone_marker;

/* The key's hash is kept beside it: a probe compares hashes in the slot
 * array and reads a key (a cache miss of its own in a big map) only when
 * they are equal. With a million keys, reading every key on the probe
 * path was a fifth of the correlator's time. */
struct slot {
    char *key; /* NULL: empty; TOMBSTONE: deleted (or moved) */
    void *val;
    uint64_t hash;
};

struct table {
    struct slot *slots; /* NULL: no table */
    size_t cap, used;   /* used counts live + tombstones */
};

/* Growth moves the entries into a bigger table a few slots at each key
 * added, not all at once: a million entries moved in one go held the
 * correlator's batch for 30-70 ms. While a move is under way a key lives
 * in exactly one of the two tables; the old one's moved slots become
 * tombstones, so its probe chains stay whole. */
struct strmap {
    struct table cur, old; /* old.slots: the table being moved out */
    struct table spare;    /* the next move's table, faulted in ahead */
    hash_warm warm;        /* the spare's faulting in */
    size_t moved;          /* old's slots before this are moved */
    size_t step;           /* slots moved per key added: hash_move_step */
    size_t len;            /* live entries in both */
};

static void table_init(struct table *t, size_t cap)
{
    t->slots = xcalloc(cap, sizeof *t->slots);
    t->cap = cap;
    t->used = 0;
}

/* Why the thresholds hold: a move starts when cur is 3/4 used and makes a
 * table of twice the cap when half of it is live (else the same cap, to
 * shed tombstones). hash_move_step paces the move to end halfway to the
 * next 3/4, whatever the live entries moved take. */
strmap *strmap_new(void)
{
    strmap *m = xcalloc(1, sizeof *m);
    table_init(&m->cur, 16);
    return m;
}

static void table_free_keys(struct table *t, void (*free_val)(void *))
{
    for (size_t i = 0; t->slots && i < t->cap; i++) {
        char *k = t->slots[i].key;
        if (k && k != TOMBSTONE) {
            if (free_val)
                free_val(t->slots[i].val);
            free(k);
        }
    }
    free(t->slots);
}

void strmap_free(strmap *m, void (*free_val)(void *))
{
    if (!m)
        return;
    table_free_keys(&m->cur, free_val);
    table_free_keys(&m->old, free_val);
    free(m->spare.slots);
    free(m);
}

static uint64_t key_hash(const char *key)
{
    return hash_fnv1a(HASH_FNV_SEED, key, strlen(key));
}

/* key's slot in t, or NULL; then *free (when given) is the slot the key
 * would take: the first tombstone on its probe path, or the empty slot
 * that ends it. One walk serves the lookup and the insertion. */
static struct slot *table_find(const struct table *t, const char *key,
                               uint64_t h, struct slot **free)
{
    size_t mask = t->cap - 1;
    struct slot *first = NULL;

    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        struct slot *s = &t->slots[i];
        if (!s->key) {
            if (free)
                *free = first ? first : s;
            return NULL;
        }
        if (s->key == TOMBSTONE) {
            if (!first)
                first = s;
        } else if (s->hash == h && strcmp(s->key, key) == 0) {
            return s;
        }
    }
}

/* The slot for a key t does not hold: the first tombstone or empty one
 * on its probe path (counted as used when it was empty). */
static struct slot *table_free_slot(struct table *t, uint64_t h)
{
    size_t mask = t->cap - 1;

    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        struct slot *s = &t->slots[i];
        if (s->key == TOMBSTONE)
            return s;
        if (!s->key) {
            t->used++;
            return s;
        }
    }
}

static struct slot *find(const strmap *m, const char *key, uint64_t h)
{
    struct slot *s = table_find(&m->cur, key, h, NULL);

    if (!s && m->old.slots)
        s = table_find(&m->old, key, h, NULL);
    return s;
}

/* Moves up to n of the old table's slots into cur; frees it when done. */
static void move_some(strmap *m, size_t n)
{
    struct table *old = &m->old;

    for (; m->moved < old->cap && n; m->moved++, n--) {
        struct slot *s = &old->slots[m->moved];
        if (s->key && s->key != TOMBSTONE) {
            *table_free_slot(&m->cur, s->hash) = *s;
            s->key = TOMBSTONE;
        }
    }
    if (m->moved == old->cap) {
        free(old->slots);
        *old = (struct table){0};
    }
}

/* The cap of the next move's table: twice when half of cur is live. */
static size_t next_cap(const strmap *m)
{
    return m->len * 2 >= m->cur.cap ? 2 * m->cur.cap : m->cur.cap;
}

/* From 1/2 used on, the next move's table is made and faulted in over the
 * additions until the move starts at 3/4 (hash_prefault). */
static void warm_spare(strmap *m)
{
    size_t cap = next_cap(m);

    if (!m->spare.slots && !m->old.slots && m->cur.used * 2 >= m->cur.cap &&
        cap * sizeof(struct slot) >= HASH_WARM_MIN) {
        table_init(&m->spare, cap);
        m->warm = hash_warm_pace(cap * sizeof(struct slot), m->cur.cap / 4);
    }
    if (m->spare.slots)
        hash_prefault(&m->warm, m->spare.slots,
                      m->spare.cap * sizeof(struct slot));
}

static void start_move(strmap *m)
{
    size_t cap = next_cap(m);

    if (m->old.slots)
        move_some(m, SIZE_MAX); /* not reached with the thresholds above */
    m->old = m->cur;
    m->moved = 0;
    if (m->spare.slots && m->spare.cap == cap) {
        m->cur = m->spare;
        m->spare = (struct table){0};
    } else {
        free(m->spare.slots); /* deletions since changed the cap */
        m->spare = (struct table){0};
        table_init(&m->cur, cap);
    }
    m->step = hash_move_step(m->old.cap, cap, m->len);
}

void *strmap_get(const strmap *m, const char *key)
{
    struct slot *s = find(m, key, key_hash(key));

    return s ? s->val : NULL;
}

/* The slot of key, added (value NULL) when absent. Only an addition moves
 * entries, so lookups and deletions leave a walk's positions alone. */
static struct slot *slot_of(strmap *m, const char *key)
{
    uint64_t h = key_hash(key);
    struct slot *free_slot, *s = table_find(&m->cur, key, h, &free_slot);

    if (s || (m->old.slots && (s = table_find(&m->old, key, h, NULL))))
        return s;
    warm_spare(m);
    if ((m->cur.used + 1) * 4 >= m->cur.cap * 3) {
        start_move(m);
        free_slot = NULL;
    }
    if (m->old.slots) {
        move_some(m, m->step);
        free_slot = NULL; /* the moves may have taken it */
    }
    if (!free_slot)
        s = table_free_slot(&m->cur, h);
    else if (!(s = free_slot)->key)
        m->cur.used++;
    s->key = xstrdup(key);
    s->val = NULL;
    s->hash = h;
    m->len++;
    return s;
}

void *strmap_put(strmap *m, const char *key, void *val)
{
    struct slot *sl = slot_of(m, key);
    void *prev = sl->val;

    sl->val = val;
    return prev;
}

void **strmap_slot(strmap *m, const char *key, const char **key_copy)
{
    struct slot *sl = slot_of(m, key);

    if (key_copy)
        *key_copy = sl->key;
    return &sl->val;
}

void *strmap_del(strmap *m, const char *key)
{
    struct slot *s = find(m, key, key_hash(key));
    void *val;

    if (!s)
        return NULL;
    val = s->val;
    free(s->key);
    s->key = TOMBSTONE;
    s->val = NULL;
    m->len--;
    return val;
}

size_t strmap_len(const strmap *m)
{
    return m->len;
}

/* Positions run over cur's slots, then the old table's. */
int strmap_next(const strmap *m, size_t *pos, const char **key, void **val)
{
    for (;;) {
        const struct table *t = &m->cur;
        size_t i = *pos;
        if (i >= t->cap) {
            t = &m->old;
            i -= m->cur.cap;
            if (!t->slots || i >= t->cap)
                return 0;
        }
        ++*pos;
        struct slot *s = &t->slots[i];
        if (s->key && s->key != TOMBSTONE) {
            *key = s->key;
            *val = s->val;
            return 1;
        }
    }
}
