#include "core/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"

#define TOMBSTONE ((char *)&tombstone_marker)
static const char tombstone_marker;

/* The key's hash is kept beside it: a probe compares hashes in the slot
 * array and reads a key (a cache miss of its own in a big map) only when
 * they are equal. With a million keys, reading every key on the probe
 * path was a fifth of the correlator's time. */
struct slot {
    char *key; /* NULL: empty; TOMBSTONE: deleted */
    void *val;
    uint64_t hash;
};

struct strmap {
    struct slot *slots;
    size_t cap, len, used; /* used counts live + tombstones */
};

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n, sz);
    if (!p)
        abort(); /* allocation failure in the engine is not recoverable */
    return p;
}

strmap *strmap_new(void)
{
    strmap *m = xcalloc(1, sizeof *m);
    m->cap = 16;
    m->slots = xcalloc(m->cap, sizeof *m->slots);
    return m;
}

void strmap_free(strmap *m, void (*free_val)(void *))
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++) {
        char *k = m->slots[i].key;
        if (k && k != TOMBSTONE) {
            if (free_val)
                free_val(m->slots[i].val);
            free(k);
        }
    }
    free(m->slots);
    free(m);
}

static uint64_t key_hash(const char *key)
{
    return hash_fnv1a(HASH_FNV_SEED, key, strlen(key));
}

static size_t probe(const strmap *m, const char *key, uint64_t h, int *found)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)h & mask;
    size_t first_free = (size_t)-1;

    for (;;) {
        char *k = m->slots[i].key;
        if (!k) {
            *found = 0;
            return first_free != (size_t)-1 ? first_free : i;
        }
        if (k == TOMBSTONE) {
            if (first_free == (size_t)-1)
                first_free = i;
        } else if (m->slots[i].hash == h && strcmp(k, key) == 0) {
            *found = 1;
            return i;
        }
        i = (i + 1) & mask;
    }
}

static void grow(strmap *m)
{
    struct slot *old = m->slots;
    size_t oldcap = m->cap;

    if (m->len * 2 >= m->cap)
        m->cap *= 2;
    m->slots = xcalloc(m->cap, sizeof *m->slots);
    m->used = m->len;
    for (size_t i = 0; i < oldcap; i++) {
        if (old[i].key && old[i].key != TOMBSTONE) {
            int found;
            size_t j = probe(m, old[i].key, old[i].hash, &found);
            m->slots[j] = old[i];
        }
    }
    free(old);
}

void *strmap_get(const strmap *m, const char *key)
{
    int found;
    size_t i = probe(m, key, key_hash(key), &found);
    return found ? m->slots[i].val : NULL;
}

/* The slot of key, added (value NULL) when absent. */
static struct slot *slot_of(strmap *m, const char *key)
{
    int found;
    uint64_t h = key_hash(key);
    size_t i;

    if ((m->used + 1) * 4 >= m->cap * 3)
        grow(m);
    i = probe(m, key, h, &found);
    if (!found) {
        if (!m->slots[i].key)
            m->used++;
        m->slots[i].key = strdup(key);
        if (!m->slots[i].key)
            abort();
        m->slots[i].val = NULL;
        m->slots[i].hash = h;
        m->len++;
    }
    return &m->slots[i];
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

    *key_copy = sl->key;
    return &sl->val;
}

void *strmap_del(strmap *m, const char *key)
{
    int found;
    size_t i = probe(m, key, key_hash(key), &found);
    void *val;

    if (!found)
        return NULL;
    val = m->slots[i].val;
    free(m->slots[i].key);
    m->slots[i].key = TOMBSTONE;
    m->slots[i].val = NULL;
    m->len--;
    return val;
}

size_t strmap_len(const strmap *m)
{
    return m->len;
}

int strmap_next(const strmap *m, size_t *pos, const char **key, void **val)
{
    while (*pos < m->cap) {
        struct slot *s = &m->slots[(*pos)++];
        if (s->key && s->key != TOMBSTONE) {
            *key = s->key;
            *val = s->val;
            return 1;
        }
    }
    return 0;
}
