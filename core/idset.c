#include "core/idset.h"

#include <stdlib.h>

/* A slot is free when its key is 0; the id 0 itself is kept aside. */
typedef struct slot {
    uint64_t id;
    int64_t ts;
} slot;

struct idset {
    slot *v;
    size_t cap; /* a power of two */
    size_t n;   /* ids in v (the id 0 not counted) */
    int has_zero;
    int64_t zero_ts;
};

static void *xalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);

    if (!p)
        abort(); /* the process's memory is its state: nothing to save */
    return p;
}

idset *ids_new(void)
{
    idset *s = xalloc(1, sizeof *s);

    s->cap = 1024;
    s->v = xalloc(s->cap, sizeof *s->v);
    return s;
}

void ids_free(idset *s)
{
    if (s) {
        free(s->v);
        free(s);
    }
}

size_t ids_len(const idset *s)
{
    return s->n + (size_t)s->has_zero;
}

/* Ids come from FNV-1a or a collector's own hash, but a multiplicative
 * spread keeps clustered ids (counters) from piling up in one run. */
static size_t home(const idset *s, uint64_t id)
{
    return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 20) & (s->cap - 1);
}

static slot *find(const idset *s, uint64_t id)
{
    size_t i = home(s, id);

    while (s->v[i].id && s->v[i].id != id)
        i = (i + 1) & (s->cap - 1);
    return &s->v[i];
}

int ids_get(const idset *s, uint64_t id, int64_t *ts)
{
    const slot *e;

    if (!id) {
        if (s->has_zero && ts)
            *ts = s->zero_ts;
        return s->has_zero;
    }
    e = find(s, id);
    if (!e->id)
        return 0;
    if (ts)
        *ts = e->ts;
    return 1;
}

/* Moves every id of old[0..cap) into s's table. */
static void refill(idset *s, const slot *old, size_t cap, int64_t before,
                   size_t *dropped)
{
    for (size_t i = 0; i < cap; i++) {
        if (!old[i].id)
            continue;
        if (old[i].ts < before) {
            ++*dropped;
            continue;
        }
        *find(s, old[i].id) = old[i];
        s->n++;
    }
}

static void rebuild(idset *s, size_t cap, int64_t before, size_t *dropped)
{
    slot *old = s->v;
    size_t oldcap = s->cap;

    s->v = xalloc(cap, sizeof *s->v);
    s->cap = cap;
    s->n = 0;
    refill(s, old, oldcap, before, dropped);
    free(old);
}

void ids_put(idset *s, uint64_t id, int64_t ts)
{
    slot *e;

    if (!id) {
        s->has_zero = 1;
        s->zero_ts = ts;
        return;
    }
    if (2 * (s->n + 1) > s->cap) { /* keep it at most half full */
        size_t none = 0;
        rebuild(s, 2 * s->cap, INT64_MIN, &none);
    }
    e = find(s, id);
    if (!e->id) {
        e->id = id;
        s->n++;
    }
    e->ts = ts;
}

size_t ids_drop_before(idset *s, int64_t before)
{
    size_t dropped = 0, cap = s->cap;

    if (s->has_zero && s->zero_ts < before) {
        s->has_zero = 0;
        dropped++;
    }
    /* shrink while a quarter full at most after the drop, not below 1024 */
    rebuild(s, cap, before, &dropped);
    while (s->cap > 1024 && 4 * s->n < s->cap) {
        size_t none = 0;
        rebuild(s, s->cap / 2, INT64_MIN, &none);
    }
    return dropped;
}
