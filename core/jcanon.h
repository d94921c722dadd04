/* A jansson value written as json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS)
 * writes it, byte for byte, into a jw writer (core/jw.h): a canonical text
 * to hash (the webhook names each alert's signal by it). The writer is
 * reused from value to value, so that no text is allocated per value;
 * json_dumps builds a growing buffer and sorts a key array for every
 * call. Strings hold no NUL (jansson's parser refuses "\u0000" unless
 * asked): they are written up to their first one. */
#ifndef CS_JCANON_H
#define CS_JCANON_H

#include <jansson.h>

#include "core/jw.h"

/* Appends v's canonical text to w. */
void jcanon_write(jw *w, const json_t *v);

#endif
