/* The seen-id set: membership, stamps, growth past many doublings, the id
 * 0, and dropping by stamp (what the correlator's pruning relies on). */
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

int main(void)
{
    basics();
    many();
    return check_report();
}
