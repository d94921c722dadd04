#include "core/idset.h"

#include <stdlib.h>

#include "core/hash.h"
#include "core/mem.h"

/* A slot is free when its id is 0; the id 0 itself is kept aside. In the
 * table being moved out, a slot already moved (or dropped) keeps its id,
 * so probe chains through it stay whole, and is stamped MOVED. */
typedef struct slot {
    uint64_t id;
    int64_t ts;
} slot;

#define MOVED INT64_MIN
#define MIN_CAP 1024

typedef struct table {
    slot *v;    /* NULL: no table */
    size_t cap; /* a power of two */
} table;

/* Growing and pruning rebuild the table a few slots at each id added, not
 * in one pass: a pass over a million ids held the correlator's batch for
 * 30-70 ms. While a rebuild is under way an id lives in one of the two
 * tables. */
struct idset {
    table cur, old;
    table spare;   /* the next rebuild's table, faulted in ahead of it */
    hash_warm warm; /* the spare's faulting in */
    size_t moved;  /* old's slots before this are moved or dropped */
    size_t step;   /* old's slots moved per id added: hash_move_step */
    int64_t floor; /* the rebuild drops ids stamped before it */
    int64_t next_floor; /* the floor of the next growth (ids_floor) */
    size_t n;      /* ids in both tables (the id 0 not counted) */
    size_t dropped; /* by the rebuild under way or the last one */
    size_t max_cap; /* ids_limit's table size (0: none) */
    int64_t hfloor; /* the rebuild's floor as ids_floor asked it */
    int64_t lfloor; /* the last floor the limit raised (ids_limit) */
    size_t evicted; /* ids the limit dropped, since the start */
    int has_zero;
    int64_t zero_ts;
};

static void table_init(table *t, size_t cap)
{
    t->v = xcalloc(cap, sizeof *t->v);
    t->cap = cap;
}

idset *ids_new(void)
{
    idset *s = xcalloc(1, sizeof *s);

    s->next_floor = INT64_MIN;
    s->hfloor = INT64_MIN;
    s->lfloor = INT64_MIN;
    table_init(&s->cur, MIN_CAP);
    return s;
}

void ids_free(idset *s)
{
    if (s) {
        free(s->cur.v);
        free(s->old.v);
        free(s->spare.v);
        free(s);
    }
}

size_t ids_len(const idset *s)
{
    return s->n + (size_t)s->has_zero;
}

int ids_busy(const idset *s)
{
    return s->old.v != NULL;
}

/* Ids come from FNV-1a or a collector's own hash, but a multiplicative
 * spread keeps clustered ids (counters) from piling up in one run. */
static slot *find(const table *t, uint64_t id)
{
    size_t i = (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 20) & (t->cap - 1);

    while (t->v[i].id && t->v[i].id != id)
        i = (i + 1) & (t->cap - 1);
    return &t->v[i];
}

/* id's slot in either table, or NULL. */
static slot *lookup(const idset *s, uint64_t id)
{
    slot *e = find(&s->cur, id);

    if (e->id)
        return e;
    if (s->old.v) {
        e = find(&s->old, id);
        if (e->id && e->ts != MOVED)
            return e;
    }
    return NULL;
}

/* Moves up to n of the old table's slots into cur, dropping the ids
 * stamped before the floor; frees the old table when done. */
static void move_some(idset *s, size_t n)
{
    for (; s->moved < s->old.cap && n; s->moved++, n--) {
        slot *e = &s->old.v[s->moved];
        if (!e->id || e->ts == MOVED)
            continue;
        if (e->ts < s->floor) {
            s->n--;
            s->dropped++;
            s->evicted += e->ts >= s->hfloor;
        } else {
            *find(&s->cur, e->id) = *e;
        }
        e->ts = MOVED;
    }
    if (s->moved == s->old.cap) {
        free(s->old.v);
        s->old = (table){0};
    }
}

/* The table a rebuild for n ids makes: at most half full. */
static size_t cap_for(size_t n)
{
    size_t cap = MIN_CAP;

    while (cap < 2 * (n + 1))
        cap *= 2;
    return cap;
}

/* Makes a table of cap slots the spare, to be faulted in over the next
 * `adds` additions (a rebuild that comes first faults in the rest as it
 * writes, as without a spare). */
static void prepare(idset *s, size_t cap, size_t adds)
{
    if (s->spare.v && s->spare.cap >= cap && s->spare.cap <= 2 * cap)
        return; /* start takes it (emptier is fine) */
    free(s->spare.v);
    s->spare = (table){0};
    if (cap * sizeof(slot) < HASH_WARM_MIN)
        return;
    table_init(&s->spare, cap);
    s->warm = hash_warm_pace(cap * sizeof(slot), adds);
}

static int at_limit(const idset *s);

/* The next rebuild's table, faulted in over the additions until it is
 * due: a growth's at half full; at the limit, where n still counts the
 * older half a rebuild is dropping, a quarter of the table (the newer
 * ids grow from a quarter to a half). Paced on n there, the whole spare
 * (128 MiB at a limit of 4M ids) was faulted in at one addition. */
static void prepare_next(idset *s)
{
    if (at_limit(s))
        prepare(s, s->cur.cap, s->cur.cap / 4);
    else
        prepare(s, 2 * s->cur.cap,
                s->cur.cap / 2 > s->n ? s->cur.cap / 2 - s->n : 1);
}

static void start(idset *s, size_t cap, int64_t floor, int64_t lfloor)
{
    if (s->old.v)
        move_some(s, SIZE_MAX); /* a rebuild outrun: finish it at once */
    s->old = s->cur;
    s->moved = 0;
    s->hfloor = floor;
    s->floor = lfloor > floor ? lfloor : floor;
    s->dropped = 0;
    if (s->spare.v && s->spare.cap >= cap && s->spare.cap <= 2 * cap) {
        s->cur = s->spare; /* a bigger one is only emptier */
        s->spare = (table){0};
    } else {
        free(s->spare.v);
        s->spare = (table){0};
        table_init(&s->cur, cap);
    }
    s->step = hash_move_step(s->old.cap, s->cur.cap, s->n);
}

static int at_limit(const idset *s)
{
    return s->max_cap && s->cur.cap >= s->max_cap;
}

static int cmp_ts(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* The median stamp of up to 1024 ids spread over the table: ids come
 * roughly in time order, so dropping those stamped before it drops about
 * the older half. INT64_MIN when fewer than a quarter of the sample are
 * older than it (stamps too alike to choose by time). */
static int64_t median_stamp(const table *t)
{
    int64_t ts[1024];
    size_t k = 0, stride = t->cap / 1024 ? t->cap / 1024 : 1, older = 0;

    for (size_t i = 0; i < t->cap && k < 1024; i += stride)
        for (size_t j = i; j < i + stride && j < t->cap; j++)
            if (t->v[j].id && t->v[j].ts != MOVED) {
                ts[k++] = t->v[j].ts;
                break;
            }
    if (k < 4)
        return INT64_MIN;
    qsort(ts, k, sizeof *ts, cmp_ts);
    while (older < k && ts[older] < ts[k / 2])
        older++;
    return 4 * older >= k ? ts[k / 2] : INT64_MIN;
}

/* A rebuild for the next additions: a table twice the size, or at the
 * limit one of the same size that keeps the newer half. */
static void grow(idset *s)
{
    int64_t median;

    if (!at_limit(s)) {
        start(s, 2 * s->cur.cap, s->next_floor, INT64_MIN);
        return;
    }
    if (s->old.v)
        move_some(s, SIZE_MAX); /* sample one table, all of it */
    if ((median = median_stamp(&s->cur)) == INT64_MIN) {
        start(s, 2 * s->cur.cap, s->next_floor, INT64_MIN); /* over it */
        return;
    }
    /* a horizon floor above the median drops the older half itself:
     * then the limit raised nothing */
    if (median > s->next_floor && median > s->lfloor)
        s->lfloor = median;
    start(s, s->cur.cap, s->next_floor, median);
}

int ids_get(const idset *s, uint64_t id, int64_t *ts)
{
    const slot *e;

    if (!id) {
        if (s->has_zero && ts)
            *ts = s->zero_ts;
        return s->has_zero;
    }
    if (!(e = lookup(s, id)))
        return 0;
    if (ts)
        *ts = e->ts;
    return 1;
}

void ids_put(idset *s, uint64_t id, int64_t ts)
{
    slot *e;

    if (ts == MOVED)
        ts++; /* the marker is no time any signal has */
    if (!id) {
        s->has_zero = 1;
        s->zero_ts = ts;
        return;
    }
    /* the slot cur's lookup ends on is where a new id goes, unless moves
     * or a new table come between */
    e = find(&s->cur, id);
    if (!e->id && s->old.v) {
        slot *o = find(&s->old, id);
        if (o->id && o->ts != MOVED)
            e = o;
    }
    if (e->id) {
        e->ts = ts;
        return;
    }
    if (s->old.v) {
        move_some(s, s->step);
        e = NULL;
    }
    /* growth at half full, due right after a rebuild that ends past it
     * (an ids_expire sized for the ids it had when it began) */
    if (!s->spare.v && 4 * (s->n + 1) > s->cur.cap)
        prepare_next(s);
    if (s->spare.v)
        hash_prefault(&s->warm, s->spare.v, s->spare.cap * sizeof(slot));
    /* at most half full, or 3/4 while a rebuild is still moving */
    if (4 * (s->n + 1) > 3 * s->cur.cap ||
        (!s->old.v && 2 * (s->n + 1) > s->cur.cap)) {
        grow(s);
        e = NULL;
    }
    if (!e)
        e = find(&s->cur, id);
    e->id = id;
    e->ts = ts;
    s->n++;
}

void ids_floor(idset *s, int64_t before)
{
    s->next_floor = before;
}

void ids_expire(idset *s, int64_t before)
{
    if (s->has_zero && s->zero_ts < before)
        s->has_zero = 0;
    size_t cap = cap_for(s->n);

    if (s->max_cap && cap > s->max_cap)
        cap = s->max_cap;
    start(s, cap, before, INT64_MIN);
    move_some(s, s->step);
}

size_t ids_drop_before(idset *s, int64_t before)
{
    size_t zero = s->has_zero && s->zero_ts < before;

    ids_expire(s, before);
    move_some(s, SIZE_MAX);
    return s->dropped + zero;
}

void ids_limit(idset *s, size_t max)
{
    size_t cap = MIN_CAP;

    while (max && cap < 2 * max)
        cap *= 2;
    s->max_cap = max ? cap : 0;
}

size_t ids_evicted(const idset *s)
{
    return s->evicted;
}

int64_t ids_limit_floor(const idset *s)
{
    return s->lfloor;
}
