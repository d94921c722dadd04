/* Bounded string copy: truncation is the intent (ids and names in fixed
 * fields), and NULL copies as "". */
#ifndef CS_STR_H
#define CS_STR_H

#include <stddef.h>
#include <string.h>

static inline void str_copy(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;

    if (cap == 0)
        return;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Joins the strings of a NULL-terminated list into dst, cut to cap like
 * snprintf("%s%s..."), and returns the length written: names built per
 * signal, where snprintf's format parsing was a measurable share. */
static inline size_t str_join(char *dst, size_t cap, const char *const *parts)
{
    size_t o = 0;

    if (cap == 0)
        return 0;
    for (; *parts && o < cap - 1; parts++) {
        size_t n = strlen(*parts);
        if (n > cap - 1 - o)
            n = cap - 1 - o;
        memcpy(dst + o, *parts, n);
        o += n;
    }
    dst[o] = '\0';
    return o;
}

/* Time depends on the length of what the client sent, never on how much of
 * the secret it got right. */
static inline int str_secret_equal(const char *given, size_t glen,
                                   const char *want, size_t wlen)
{
    unsigned char diff = glen != wlen || !wlen;

    for (size_t i = 0; i < glen && wlen; i++)
        diff |= (unsigned char)(given[i] ^ want[i % wlen]);
    return diff == 0;
}

#endif
