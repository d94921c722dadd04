/* A JSON document read once and then only looked at: the parse writes
 * every value into one array and every string into one buffer, where
 * jansson allocates each value, string and hash table on its own. Made for
 * a request body that is checked, named and forwarded, not edited (the
 * Alertmanager webhook, ingest/webhook.c): jansson's parse was half of
 * that receiver's time.
 *
 * It accepts what json_loadb(JSON_REJECT_DUPLICATES) accepts, and reads
 * the same values (tests/fuzz/fuzz_jdoc.c holds it to that): an object
 * or an array at the top, UTF-8 throughout, no \u0000, no repeated key
 * in an object, integers that fit in 64 bits, reals that do not
 * overflow, at most 2048 levels of nesting. One difference: a NUL byte
 * is refused wherever it is, where jansson's reader drops one that
 * directly follows a number or a word ("[1\0]" reads as [1] there). */
#ifndef CS_JDOC_H
#define CS_JDOC_H

#include <jansson.h>
#include <msgpack.h>
#include <stddef.h>

#include "core/err.h"
#include "core/jw.h"

typedef struct jdoc jdoc;
typedef struct jd_val jd_val;

typedef enum {
    JD_NULL, JD_FALSE, JD_TRUE, JD_INT, JD_REAL, JD_STR, JD_ARR, JD_OBJ
} jd_type;

/* data[0..len) as a document, or NULL with err naming what is wrong and
 * where ("line 3 column 14: ..."). The document keeps no pointer into
 * data. */
jdoc *jd_parse(const char *data, size_t len, cs_err *err);
void jd_free(jdoc *d);
const jd_val *jd_root(const jdoc *d);

jd_type jd_typeof(const jd_val *v);
/* An object's member named key, NULL when v is not an object or has none. */
const jd_val *jd_get(const jd_val *v, const char *key);
/* The members of an object or the items of an array, in document order:
 * jd_first is NULL when there are none, jd_next after the last is
 * undefined (count with jd_size). */
size_t jd_size(const jd_val *v);
const jd_val *jd_first(const jd_val *v);
const jd_val *jd_next(const jd_val *v);
/* A member's key (NUL-terminated), NULL for an array's item or the root. */
const char *jd_key(const jd_val *v, size_t *len);
/* A string's text, NUL-terminated (no string holds a NUL); NULL when v is
 * not a string. len may be NULL. */
const char *jd_str(const jd_val *v, size_t *len);
long long jd_int(const jd_val *v);  /* 0 when not JD_INT */
double jd_real(const jd_val *v);    /* 0 when not JD_REAL */

/* v as json_dumps(JSON_COMPACT | JSON_SORT_KEYS) writes it, byte for
 * byte: the webhook names an alert by the hash of that text. */
void jd_canon(jw *w, const jd_val *v);
/* v as msgpack, byte for byte what jmp_pack writes for the same value
 * read by jansson (members in document order). */
void jd_pack(msgpack_packer *pk, const jd_val *v);
/* v as a new jansson value (NULL when out of memory). */
json_t *jd_json(const jd_val *v);

#endif
