/* JSON <-> msgpack for the wire format: signals travel on Kafka as msgpack
 * maps with the same keys as their JSON form (docs/FORMATS.md). */
#ifndef CS_JMP_H
#define CS_JMP_H

#include <jansson.h>
#include <msgpack.h>
#include <stdint.h>

#include "core/err.h"

/* Appends the msgpack encoding of v to buf. */
void jmp_pack(msgpack_packer *pk, const json_t *v);
/* Decodes exactly one msgpack object filling all of data..data+len.
 * Truncated or trailing bytes, non-string map keys, or nesting deeper than
 * 64 levels are errors. Returns a new reference or NULL. */
json_t *jmp_unpack(const char *data, size_t len, cs_err *err);

/* One entry of a flat map, read in place by jmp_flat. */
typedef struct jmp_kv {
    const char *key, *str; /* str: a string value, else NULL */
    size_t klen, slen;
    uint64_t u; /* an unsigned integer value (str NULL) */
} jmp_kv;

/* Reads data as one map of at most max entries whose keys and string
 * values hold only ASCII from 0x01 to 0x7f and whose other values are
 * unsigned integers, in wire order, pointing into data. Returns the
 * number of entries, or -1 when data is anything else (other types,
 * more entries, truncated, trailing bytes): jmp_unpack then decides,
 * and names what is wrong. */
int jmp_flat(const char *data, size_t len, jmp_kv *kv, size_t max);

#endif
