/* A JSON text writer: values appended to a growing buffer, in the order
 * given, with the separators and string escapes JSON needs. For records
 * written on the hot path (an incident's state on every update), where
 * building a jansson object and dumping it cost about 150 instructions a
 * byte. The text reads back with jansson as the same values: strings
 * escaped as jansson escapes them (a byte that is not valid UTF-8 becomes
 * U+FFFD, so the text always reads back), reals printed as jansson prints
 * them. The fields are the writer's own; use only the functions. */
#ifndef CS_JW_H
#define CS_JW_H

#include <stddef.h>

typedef struct jw {
    char *buf;
    size_t len, cap;
    int comma; /* a value was written at this level: the next needs ',' */
} jw;

void jw_init(jw *w);
void jw_obj(jw *w);    /* { */
void jw_arr(jw *w);    /* [ */
void jw_end_obj(jw *w); /* } */
void jw_end_arr(jw *w); /* ] */
/* An object's key; its value comes next. */
void jw_key(jw *w, const char *k);
void jw_str(jw *w, const char *s);
void jw_int(jw *w, long long v);
/* Finite values only, as jansson holds only those. */
void jw_real(jw *w, double v);
/* A value already encoded as JSON, written as it is. */
void jw_raw(jw *w, const char *json);
/* A string of n bytes (NUL bytes written as \u0000, as jansson does). */
void jw_strn(jw *w, const char *s, size_t n);
/* A jansson value, as json_dumps(v, JSON_COMPACT) writes it, or with
 * JSON_SORT_KEYS when sort_keys: the same bytes (tests/unit/test_jw.c,
 * tests/fuzz/fuzz_jdoc.c), for about a quarter of the instructions
 * (an 850-byte incident: 83k under json_dumps, 23k here). Objects and
 * arrays nest as deep as the value does. */
struct json_t;
void jw_json(jw *w, const struct json_t *v, int sort_keys);
/* The same as a text of its own, the caller's to free(); aborts when out
 * of memory (json_dumps returned NULL there, and every caller aborted). */
char *jw_dumps(const struct json_t *v, int sort_keys);
/* Empty again, keeping its buffer for the next text. */
void jw_clear(jw *w);
/* The text so far (not NUL-terminated) and its length in *len; valid
 * until the next write. */
const char *jw_text(const jw *w, size_t *len);
/* The text, NUL-terminated, the caller's to free(); the writer is empty
 * again. Aborts when out of memory, as the engine does everywhere. */
char *jw_take(jw *w);

#endif
