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
