/* FNV-1a 64: stable across runs and machines, which the ids need (the same
 * input must give the same signal and incident ids everywhere). */
#ifndef CS_HASH_H
#define CS_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t hash_fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

#define HASH_FNV_SEED 0xcbf29ce484222325ULL

#endif
