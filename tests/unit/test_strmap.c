/* The string map: put, get, delete with tombstones, growth, and the slot
 * lookup that may insert (the correlator keeps its states' names in the
 * map's own key copies, so those must hold through growth). */
#include <stdio.h>
#include <string.h>

#include "check.h"
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

int main(void)
{
    basics();
    slots();
    return check_report();
}
