#include "core/logcap.h"

#include <stdlib.h>

#include "core/ts.h"

struct lcap {
    const char *component, *what;
    enum log_level lvl;
    unsigned per_second;
    int64_t start; /* of the window; INT64_MIN: none open */
    unsigned taken;
    size_t held, held_total;
};

lcap *lcap_new(const char *component, enum log_level lvl, const char *what,
               unsigned per_second)
{
    lcap *l = calloc(1, sizeof *l);

    if (!l)
        return NULL;
    l->component = component;
    l->what = what;
    l->lvl = lvl;
    l->per_second = per_second;
    l->start = INT64_MIN;
    return l;
}

void lcap_free(lcap *l)
{
    free(l);
}

size_t lcap_flush(lcap *l, int64_t now)
{
    size_t n = l->held;

    if (l->start == INT64_MIN || now - l->start < TS_SEC)
        return 0;
    l->start = INT64_MIN;
    l->taken = 0;
    l->held = 0;
    if (n)
        LOG_AT(l->lvl, l->component,
               "%zu more %s not logged (at most %u a second are written)",
               n, l->what, l->per_second);
    return n;
}

int lcap_take(lcap *l, int64_t now)
{
    lcap_flush(l, now);
    if (l->start == INT64_MIN)
        l->start = now;
    if (l->taken < l->per_second) {
        l->taken++;
        return 1;
    }
    l->held++;
    l->held_total++;
    return 0;
}

size_t lcap_held(const lcap *l)
{
    return l->held_total;
}
