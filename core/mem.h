/* Allocation that cannot fail: out of memory, the process aborts. A
 * daemon that lost an allocation halfway through a batch could only go on
 * with state it can no longer trust; its successor restarts from Redis and
 * Kafka (the outbox, uncommitted offsets), so dying is the safe answer.
 * Header-only: core/ links nothing for it. */
#ifndef CS_MEM_H
#define CS_MEM_H

#include <stdlib.h>
#include <string.h>

static inline void *cs_oom(void *p)
{
    if (!p)
        abort();
    return p;
}

static inline void *xmalloc(size_t n)
{
    return cs_oom(malloc(n ? n : 1));
}

static inline void *xcalloc(size_t n, size_t size)
{
    return cs_oom(calloc(n ? n : 1, size ? size : 1));
}

static inline void *xrealloc(void *p, size_t n)
{
    return cs_oom(realloc(p, n ? n : 1));
}

static inline char *xstrdup(const char *s)
{
    return cs_oom(strdup(s));
}

static inline char *xstrndup(const char *s, size_t n)
{
    return cs_oom(strndup(s, n));
}

#endif
