/* The string map: put, get, delete with tombstones, growth moved a few
 * entries at a time (checked against a plain array), and the slot
 * lookup that may insert (the correlator keeps its states' names in the
 * map's own key copies, so those must hold through growth). Also the
 * bounded string helpers of core/str.h that the map's users cut keys and
 * fields with: a cut keeps whole UTF-8 characters. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/str.h"
#include "core/strmap.h"

static void basics(void)
{
    strmap *m = strmap_new();
    int a = 1, b = 2;

    CHECK(strmap_get(m, "x") == NULL);
    CHECK(strmap_put(m, "x", &a) == NULL);
    CHECK(strmap_get(m, "x") == &a);
    CHECK(strmap_put(m, "x", &b) == &a); /* replaced, no second entry */
    CHECK_INT(strmap_len(m), 1);
    CHECK(strmap_del(m, "x") == &b);
    CHECK(strmap_get(m, "x") == NULL);
    CHECK(strmap_del(m, "x") == NULL);
    CHECK_INT(strmap_len(m), 0);
    strmap_free(m, NULL);
}

static void slots(void)
{
    strmap *m = strmap_new();
    const char *kept[3000], *k2;
    int vals[3000];
    char key[32];
    void **sl;

    sl = strmap_slot(m, "a", &kept[0]);
    CHECK(*sl == NULL); /* added, empty: the caller fills it */
    CHECK_INT(strmap_len(m), 1);
    *sl = &vals[0];
    CHECK(strmap_get(m, "a") == &vals[0]);
    sl = strmap_slot(m, "a", &k2); /* found: the same key copy and value */
    CHECK(*sl == &vals[0]);
    CHECK(k2 == kept[0]);
    CHECK_STR(kept[0], "a");
    /* many more, through many doublings; every key copy handed out stays */
    for (int i = 1; i < 3000; i++) {
        snprintf(key, sizeof key, "state|%d", i);
        sl = strmap_slot(m, key, &kept[i]);
        CHECK(*sl == NULL);
        *sl = &vals[i];
    }
    for (int i = 1; i < 3000; i += 2) {
        snprintf(key, sizeof key, "state|%d", i);
        CHECK(strmap_del(m, key) == &vals[i]);
    }
    CHECK_INT(strmap_len(m), 1500);
    for (int i = 2; i < 3000; i += 2) {
        snprintf(key, sizeof key, "state|%d", i);
        CHECK_STR(kept[i], key);
        sl = strmap_slot(m, key, &k2);
        CHECK(*sl == &vals[i] && k2 == kept[i]);
    }
    /* a deleted key comes back as a new, empty slot */
    sl = strmap_slot(m, "state|1", &k2);
    CHECK(*sl == NULL);
    *sl = &vals[1];
    CHECK_INT(strmap_len(m), 1501);
    strmap_free(m, NULL);
}

/* e-acute (2 bytes), katakana ji (3), an emoji (4) */
#define E2 "\xc3\xa9"
#define E3 "\xe3\x82\xb8"
#define E4 "\xf0\x9f\x98\x80"

/* The first 7 bytes of s, as snprintf into 8 leaves them. */
static void cut7(char *b, const char *s)
{
    memcpy(b, s, 7);
    b[7] = '\0';
}

static void utf8_cuts(void)
{
    char b[8];
    const char *parts[] = {"ab", E3 E3, NULL};

    str_copy(b, sizeof b, "abcdefghij"); /* ASCII: cut at the byte */
    CHECK_STR(b, "abcdefg");
    str_copy(b, sizeof b, "ab" E3 E3); /* 8 bytes into 7: one ji goes */
    CHECK_STR(b, "ab" E3);
    str_copy(b, sizeof b, "abcdef" E2); /* the cut falls inside e-acute */
    CHECK_STR(b, "abcdef");
    str_copy(b, sizeof b, "abc" E4); /* a 4-byte character that fits */
    CHECK_STR(b, "abc" E4);
    str_copy(b, sizeof b, "abcd" E4);
    CHECK_STR(b, "abcd");
    CHECK_INT(str_join(b, sizeof b, parts), 5);
    CHECK_STR(b, "ab" E3);

    CHECK_INT(str_utf8_max("ab" E3 "c", 3), 2);
    CHECK_INT(str_utf8_max("ab" E3 "c", 5), 5);
    CHECK_INT(str_utf8_max("ab" E3, 10), 5); /* shorter than max */
    CHECK_INT(str_utf8_max("abc", 3), 3);

    cut7(b, "ab" E3 E3); /* as snprintf cuts: 7 of 8 bytes */
    str_utf8_trim(b);
    CHECK_STR(b, "ab" E3);
    cut7(b, "abc" E4 "x");
    str_utf8_trim(b); /* whole: untouched */
    CHECK_STR(b, "abc" E4);
    cut7(b, "abcde" E4);
    str_utf8_trim(b); /* 2 of 4 bytes of the emoji */
    CHECK_STR(b, "abcde");
}

/* A fixed pseudo-random sequence: the test is the same every run. */
static unsigned next_rand(unsigned *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* The map against a plain array over 300k random puts, replacements and
 * deletions of 40k keys: the map grows (and sheds tombstones) a few
 * entries at each key added, so most of the run has a move under way.
 * After every step its length matches; every 997 steps every key is
 * looked up and a walk sees each live entry exactly once. */
#define NKEYS 40000
static void moves(void)
{
    strmap *m = strmap_new();
    static int vals[NKEYS], walked[NKEYS];
    static char live[NKEYS];
    size_t n = 0, len_wrong = 0, get_wrong = 0, walk_wrong = 0;
    unsigned x = 2463534242u;
    char key[32];

    for (int step = 0; step < 300000; step++) {
        int k = (int)(next_rand(&x) % NKEYS), op = (int)(next_rand(&x) % 8);
        snprintf(key, sizeof key, "job|%d", k);
        if (op < 5 || (step < 120000 && op < 7)) {
            n += !live[k];
            live[k] = 1;
            strmap_put(m, key, &vals[k]);
        } else if (strmap_del(m, key) != (live[k] ? &vals[k] : NULL)) {
            get_wrong++;
        } else {
            n -= live[k];
            live[k] = 0;
        }
        len_wrong += strmap_len(m) != n;
        if (step % 997)
            continue;
        for (int i = 0; i < NKEYS; i++) {
            snprintf(key, sizeof key, "job|%d", i);
            get_wrong += strmap_get(m, key) != (live[i] ? &vals[i] : NULL);
        }
        memset(walked, 0, sizeof walked);
        size_t pos = 0;
        const char *wk;
        void *wv;
        while (strmap_next(m, &pos, &wk, &wv)) {
            int i = (int)((int *)wv - vals);
            snprintf(key, sizeof key, "job|%d", i);
            walk_wrong += strcmp(wk, key) != 0 || walked[i]++ || !live[i];
        }
        for (int i = 0; i < NKEYS; i++)
            walk_wrong += live[i] && !walked[i];
    }
    CHECK_INT(len_wrong, 0);
    CHECK_INT(get_wrong, 0);
    CHECK_INT(walk_wrong, 0);
    strmap_free(m, NULL);
}

int main(void)
{
    basics();
    slots();
    moves();
    utf8_cuts();
    return check_report();
}
