/* The seen-id set: membership, stamps, growth past many doublings, the id
 * 0, and dropping by stamp (what the correlator's pruning relies on).
 * Growth and expiry move ids a few at a time: every id stays findable
 * while a rebuild is under way, and no single addition does all of it. */
#include "check.h"
#include "core/idset.h"

static void basics(void)
{
    idset *s = ids_new();
    int64_t ts = -1;

    CHECK_INT(ids_len(s), 0);
    CHECK_INT(ids_get(s, 42, &ts), 0);
    ids_put(s, 42, 7);
    CHECK_INT(ids_get(s, 42, &ts), 1);
    CHECK_INT(ts, 7);
    ids_put(s, 42, 9); /* the same id: its stamp moves, no second entry */
    CHECK_INT(ids_len(s), 1);
    CHECK_INT(ids_get(s, 42, &ts), 1);
    CHECK_INT(ts, 9);
    CHECK_INT(ids_get(s, 0, NULL), 0);
    ids_put(s, 0, 3);
    CHECK_INT(ids_get(s, 0, &ts), 1);
    CHECK_INT(ts, 3);
    CHECK_INT(ids_len(s), 2);
    CHECK_INT(ids_drop_before(s, 5), 1); /* the id 0, stamped 3 */
    CHECK_INT(ids_get(s, 0, NULL), 0);
    CHECK_INT(ids_get(s, 42, NULL), 1);
    ids_free(s);
}

/* Consecutive ids (the worst case for a plain modulo) and hashed ones,
 * 200k of them: every one found, none invented, then half dropped. */
static void many(void)
{
    idset *s = ids_new();
    size_t missing = 0, wrong = 0, invented = 0;
    int64_t ts;

    for (uint64_t i = 1; i <= 100000; i++) {
        ids_put(s, i, (int64_t)i);
        ids_put(s, i * 0x100000001b3ULL ^ 0xcbf29ce484222325ULL, (int64_t)i);
    }
    CHECK_INT(ids_len(s), 200000);
    for (uint64_t i = 1; i <= 100000; i++) {
        if (!ids_get(s, i, &ts))
            missing++;
        else if (ts != (int64_t)i)
            wrong++;
        if (!ids_get(s, i * 0x100000001b3ULL ^ 0xcbf29ce484222325ULL, NULL))
            missing++;
        if (ids_get(s, i + 100000, NULL))
            invented++;
    }
    CHECK_INT(missing, 0);
    CHECK_INT(wrong, 0);
    CHECK_INT(invented, 0);
    CHECK_INT(ids_drop_before(s, 50001), 100000);
    CHECK_INT(ids_len(s), 100000);
    missing = invented = 0;
    for (uint64_t i = 1; i <= 100000; i++) {
        int want = i > 50000;
        if (ids_get(s, i, NULL) != want)
            ++*(want ? &missing : &invented);
    }
    CHECK_INT(missing, 0);
    CHECK_INT(invented, 0);
    /* dropping everything leaves a set that still works */
    CHECK_INT(ids_drop_before(s, INT64_MAX), 100000);
    CHECK_INT(ids_len(s), 0);
    ids_put(s, 5, 1);
    CHECK_INT(ids_get(s, 5, NULL), 1);
    ids_free(s);
}

/* Every id of [lo, hi) found with its stamp (the id itself). */
static size_t missing_of(const idset *s, uint64_t lo, uint64_t hi)
{
    size_t missing = 0;
    int64_t ts;

    for (uint64_t i = lo; i < hi; i++)
        missing += !ids_get(s, i, &ts) || ts != (int64_t)i;
    return missing;
}

/* The set starts with 1024 slots and grows past half full: the 513th id
 * starts a rebuild into 2048 slots, which the next additions finish a
 * few slots each (3: its 1024 slots well before the 1536th id). */
static void growth_in_steps(void)
{
    idset *s = ids_new();
    size_t busy_from = 0, busy_to = 0, missing = 0;

    for (uint64_t i = 1; i <= 2000; i++) {
        ids_put(s, i, (int64_t)i);
        if (ids_busy(s) && !busy_from)
            busy_from = i;
        if (!ids_busy(s) && busy_from && !busy_to)
            busy_to = i;
        missing += missing_of(s, 1, i + 1);
    }
    CHECK_INT(busy_from, 513);
    /* paced over the room the new table has, not in a burst of moves */
    CHECK(busy_to > busy_from + 1024 / 8);
    CHECK(busy_to <= busy_from + 1024 / 3 + 1); /* and done in its steps */
    CHECK_INT(missing, 0);
    CHECK_INT(ids_len(s), 2000);
    ids_free(s);
}

/* ids_expire drops the stale ids as the next additions move them; ids
 * restamped while the rebuild runs keep their new stamp. */
static void expire_in_steps(void)
{
    idset *s = ids_new();
    size_t stale = 0, adds = 0, wrong = 0;
    int64_t ts;

    for (uint64_t i = 1; i <= 10000; i++)
        ids_put(s, i, (int64_t)i);
    ids_expire(s, 5001);
    CHECK(ids_busy(s));
    CHECK_INT(missing_of(s, 5001, 10001), 0);
    ids_put(s, 9999, 20000); /* restamped where it is */
    ids_put(s, 10, 20000);   /* stale, but restamped: it stays */
    CHECK(ids_len(s) > 5001 && ids_len(s) <= 10000); /* some stale go at once */
    for (uint64_t i = 20001; ids_busy(s); i++, adds++) {
        ids_put(s, i, (int64_t)i);
        wrong += missing_of(s, 5001, 9999) + missing_of(s, 20001, i + 1);
    }
    CHECK(adds > 8);
    CHECK_INT(wrong, 0);
    for (uint64_t i = 1; i <= 5000; i++)
        stale += ids_get(s, i, NULL) && i != 10;
    CHECK_INT(stale, 0);
    CHECK(ids_get(s, 10, &ts) && ts == 20000);
    CHECK(ids_get(s, 9999, &ts) && ts == 20000);
    CHECK_INT(ids_len(s), 5001 + adds);
    ids_free(s);
}

/* A set past a quarter full has the next growth's table made ahead (a
 * spare); an ids_expire then takes it when it is no more than twice the
 * size the expiry wants, or makes its own. Either way every id it must
 * keep stays and the stale ones go. */
static void prepared_rebuilds(void)
{
    static const uint64_t sizes[] = {100000, 150000, 300000};

    for (int k = 0; k < 3; k++) {
        uint64_t n = sizes[k], i;
        idset *s = ids_new();
        size_t stale = 0;

        for (i = 1; i <= n; i++)
            ids_put(s, i, (int64_t)i);
        ids_expire(s, 50001);
        for (; ids_busy(s); i++)
            ids_put(s, i, (int64_t)i);
        for (uint64_t k2 = 1; k2 <= 50000; k2++)
            stale += ids_get(s, k2, NULL);
        CHECK_INT(stale, 0);
        CHECK_INT(missing_of(s, 50001, i), 0);
        ids_free(s);
    }
}

/* ids_floor: the next growth drops the ids stamped before the floor as
 * it moves them, and keeps the rest. */
static void floor_at_growth(void)
{
    idset *s = ids_new();
    int grew = 0;
    uint64_t i;
    size_t stale = 0;

    for (i = 1; i <= 400; i++)
        ids_put(s, i, (int64_t)i);
    ids_floor(s, 201);
    for (; !grew || ids_busy(s); i++) {
        ids_put(s, i, (int64_t)i);
        grew |= ids_busy(s);
    }
    for (uint64_t k = 1; k <= 200; k++)
        stale += ids_get(s, k, NULL);
    CHECK_INT(stale, 0);
    CHECK_INT(missing_of(s, 201, i), 0);
    CHECK_INT(ids_len(s), i - 201);
    ids_free(s);
}

/* The limit: ids in time order, ten times the limit of them. The set
 * stays within it, the newest half is all there, the oldest are gone and
 * counted; the horizon's floor drops what it drops without counting.
 * Ids that all carry one stamp cannot be chosen by time: the set grows
 * past the limit rather than lose any. */
static void limited(void)
{
    idset *s = ids_new();
    size_t most = 0, stale = 0;
    uint64_t i;

    ids_limit(s, 4096);
    for (i = 1; i <= 40960; i++) {
        ids_put(s, i, (int64_t)i);
        if (ids_len(s) > most)
            most = ids_len(s);
    }
    CHECK(most <= 4096 / 2 * 3); /* 3/4 of 8192 slots, while moving */
    CHECK(ids_len(s) >= 2048);
    CHECK_INT(missing_of(s, 40960 - 2047, 40961), 0);
    for (uint64_t k = 1; k <= 20000; k++)
        stale += ids_get(s, k, NULL);
    CHECK_INT(stale, 0);
    CHECK(ids_evicted(s) >= 40960 - 4096);
    CHECK_INT(ids_evicted(s), 40960 - ids_len(s));
    CHECK(ids_limit_floor(s) > 20000 && ids_limit_floor(s) <= 40960);
    ids_free(s);
    stale = 0;

    /* the horizon's floor above the limit's: nothing counted evicted */
    s = ids_new();
    ids_limit(s, 4096);
    for (i = 1; i <= 40960; i++) {
        ids_floor(s, (int64_t)i - 100);
        ids_put(s, i, (int64_t)i);
    }
    CHECK_INT(ids_evicted(s), 0);
    CHECK_INT(ids_limit_floor(s), INT64_MIN);
    ids_free(s);

    s = ids_new();
    ids_limit(s, 1024);
    for (i = 1; i <= 10000; i++)
        ids_put(s, i, 5);
    CHECK_INT(ids_len(s), 10000);
    for (i = 1; i <= 10000; i++)
        stale += !ids_get(s, i, NULL);
    CHECK_INT(stale, 0); /* none missing */
    CHECK_INT(ids_evicted(s), 0);
    ids_free(s);
}

int main(void)
{
    basics();
    many();
    growth_in_steps();
    expire_in_steps();
    prepared_rebuilds();
    floor_at_growth();
    limited();
    return check_report();
}
