/* What every benchmark tool here needs: a monotonic clock in seconds and
 * a comparator to sort run times for their median. */
#ifndef CS_BENCHUTIL_H
#define CS_BENCHUTIL_H

#include <time.h>

static inline double bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

#endif
