#include <stddef.h>
#include <string.h>

#include "rules/mnames.h"

/* M_STEP last: mn_series is every name before it. */
static const char *const names[] = {
    M_UTIL,     M_POWER,  M_TEMP,    M_CLOCK,   M_THROTTLE, M_STEP_TIME,
    M_RETX,     M_ACK,    M_TCP_RETX, M_SBE_VOL, M_SBE_AGG, M_RAS_CE,
    M_HW_POWER, M_SCRAPE, M_DMESG,   M_CPU,     M_IO,       M_MEM_RAY,
    M_MEM_HW,   M_RANK_COMPUTE, M_STEP};
#define N_NAMES (sizeof names / sizeof *names)

static size_t find(const char *name)
{
    size_t i = 0;

    while (i < N_NAMES && strcmp(name, names[i]) != 0)
        i++;
    return i;
}

int mn_series(const char *name)
{
    return find(name) < N_NAMES - 1;
}

int mn_read(const char *name)
{
    return find(name) < N_NAMES;
}

const char *const *mn_names(size_t *n)
{
    *n = N_NAMES;
    return names;
}
