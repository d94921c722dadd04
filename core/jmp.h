/* JSON <-> msgpack for the wire format: signals travel on Kafka as msgpack
 * maps with the same keys as their JSON form (REPLAY.md). */
#ifndef CS_JMP_H
#define CS_JMP_H

#include <jansson.h>
#include <msgpack.h>

#include "core/err.h"

/* Appends the msgpack encoding of v to buf. */
void jmp_pack(msgpack_packer *pk, const json_t *v);
/* Decodes exactly one msgpack object filling all of data..data+len.
 * Truncated or trailing bytes, non-string map keys, or nesting deeper than
 * 64 levels are errors. Returns a new reference or NULL. */
json_t *jmp_unpack(const char *data, size_t len, cs_err *err);

#endif
