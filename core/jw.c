/* JSON text writer (jw.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/jw.h"
#include "core/mem.h"
#include "core/str.h"

void jw_init(jw *w)
{
    w->buf = NULL;
    w->len = w->cap = 0;
    w->comma = 0;
}

static void room(jw *w, size_t n)
{
    if (w->len + n + 1 <= w->cap)
        return;
    /* an incident's state record is about 1 KiB: one allocation */
    w->cap = (w->len + n + 1) * 2 < 2048 ? 2048 : (w->len + n + 1) * 2;
    w->buf = xrealloc(w->buf, w->cap);
}

static void put(jw *w, const char *s, size_t n)
{
    room(w, n);
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void sep(jw *w)
{
    if (w->comma)
        put(w, ",", 1);
}

void jw_obj(jw *w)
{
    sep(w);
    put(w, "{", 1);
    w->comma = 0;
}

void jw_arr(jw *w)
{
    sep(w);
    put(w, "[", 1);
    w->comma = 0;
}

void jw_end_obj(jw *w)
{
    put(w, "}", 1);
    w->comma = 1;
}

void jw_end_arr(jw *w)
{
    put(w, "]", 1);
    w->comma = 1;
}

/* Whether any of w's 8 bytes needs a look: a control character, '"',
 * '\\' or a byte of a UTF-8 sequence. Text is mostly plain ASCII: 8
 * bytes a step there. */
static int word_special(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull;

    return (str_word_below(w, 0x20) | str_word_zero(w ^ (ones * '"')) |
            str_word_zero(w ^ (ones * '\\')) | (w & ones * 0x80)) != 0;
}

/* Escapes as jansson's dump does: '"', '\\' and the control characters;
 * everything else, UTF-8 included, as it is. */
static void quoted_n(jw *w, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len,
                        *run = p;

    put(w, "\"", 1);
    while (p < end) {
        char esc[8];
        const char *e = NULL;
        size_t n;
        uint64_t word;

        if (end - p >= 8) {
            memcpy(&word, p, 8);
            if (!word_special(word)) {
                p += 8;
                continue;
            }
        }
        if (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') {
            p++;
            continue;
        }
        if (*p >= 0x80 && (n = str_utf8_seq(p, (size_t)(end - p)))) {
            p += n;
            continue;
        }
        put(w, (const char *)run, (size_t)(p - run));
        switch (*p) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04X", *p);
                e = esc;
            } else {
                e = "\xEF\xBF\xBD"; /* U+FFFD for a byte that is not UTF-8 */
            }
        }
        put(w, e, strlen(e));
        run = ++p;
    }
    put(w, (const char *)run, (size_t)(p - run));
    put(w, "\"", 1);
}

/* Writes the decimal digits of v (any sign) ending at end; returns
 * where they start. */
static char *digits(char *end, long long v)
{
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v
                                 : (unsigned long long)v;

    do
        *--end = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--end = '-';
    return end;
}

/* An object's key of n bytes and its ':'. */
static void key_n(jw *w, const char *k, size_t n)
{
    /* keys are the caller's names: plain ASCII needs no escape pass */
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)k[i] < 0x20 || (unsigned char)k[i] >= 0x80 ||
            k[i] == '"' || k[i] == '\\') {
            sep(w);
            quoted_n(w, k, n);
            put(w, ":", 1);
            w->comma = 0;
            return;
        }
    room(w, n + 4);
    if (w->comma)
        w->buf[w->len++] = ',';
    w->buf[w->len++] = '"';
    memcpy(w->buf + w->len, k, n);
    w->len += n;
    w->buf[w->len++] = '"';
    w->buf[w->len++] = ':';
    w->comma = 0;
}

void jw_key(jw *w, const char *k)
{
    key_n(w, k, strlen(k));
}

void jw_str(jw *w, const char *s)
{
    jw_strn(w, s, strlen(s));
}

void jw_int(jw *w, long long v)
{
    char b[24], *p = digits(b + sizeof b, v);

    sep(w);
    put(w, p, (size_t)(b + sizeof b - p));
    w->comma = 1;
}

/* jansson's form: %.17g, a ".0" when that reads as an integer, and the
 * exponent without '+' or leading zeros. */
void jw_real(jw *w, double v)
{
    char b[40], *e;
    int n;

    /* A whole number below 1e15 prints as its digits under %.17g: the
     * common case (a size, -1 for unknown) without the float formatter. */
    if (v > -1e15 && v < 1e15 && v == (double)(long long)v) {
        char *p = digits(b + sizeof b - 2, (long long)v);
        if ((long long)v == 0 && signbit(v))
            *--p = '-';
        memcpy(b + sizeof b - 2, ".0", 2);
        sep(w);
        put(w, p, (size_t)(b + sizeof b - p));
        w->comma = 1;
        return;
    }
    n = snprintf(b, sizeof b, "%.17g", v);

    if (!strchr(b, '.') && !strchr(b, 'e')) {
        memcpy(b + n, ".0", 3);
        n += 2;
    }
    if ((e = strchr(b, 'e'))) {
        char *from = e + 1, *to = e + 1;
        if (*from == '-')
            from++, to++;
        else if (*from == '+')
            from++;
        while (*from == '0' && from[1])
            from++;
        memmove(to, from, strlen(from) + 1);
        n = (int)strlen(b);
    }
    sep(w);
    put(w, b, (size_t)n);
    w->comma = 1;
}

void jw_raw(jw *w, const char *json)
{
    sep(w);
    put(w, json, strlen(json));
    w->comma = 1;
}

char *jw_take(jw *w)
{
    char *t;

    room(w, 0);
    w->buf[w->len] = '\0';
    t = w->buf;
    jw_init(w);
    return t;
}

void jw_clear(jw *w)
{
    w->len = 0;
    w->comma = 0;
}

const char *jw_text(const jw *w, size_t *len)
{
    *len = w->len;
    return w->buf ? w->buf : "";
}

void jw_strn(jw *w, const char *s, size_t n)
{
    sep(w);
    quoted_n(w, s, n);
    w->comma = 1;
}

/* ---- a jansson value ---------------------------------------------------- */

typedef struct member {
    const char *key;
    size_t len;
    const json_t *v;
} member;

/* jansson's order for JSON_SORT_KEYS: the bytes, then the length. */
static int cmp_member(const void *a, const void *b)
{
    const member *x = a, *y = b;
    int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);

    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Keys on the stack up to this many: an incident has about fifteen. */
#define JW_STACK_KEYS 32

static void json_object_out(jw *w, const json_t *v, int sort)
{
    member stack[JW_STACK_KEYS], *m = stack;
    size_t n = json_object_size(v), i = 0;
    void *it;

    if (n > JW_STACK_KEYS)
        m = xmalloc(n * sizeof *m);
    for (it = json_object_iter((json_t *)v); it && i < n;
         it = json_object_iter_next((json_t *)v, it), i++)
        m[i] = (member){json_object_iter_key(it),
                        json_object_iter_key_len(it),
                        json_object_iter_value(it)};
    if (sort)
        qsort(m, i, sizeof *m, cmp_member);
    jw_obj(w);
    for (size_t k = 0; k < i; k++) {
        key_n(w, m[k].key, m[k].len);
        jw_json(w, m[k].v, sort);
    }
    jw_end_obj(w);
    if (m != stack)
        free(m);
}

void jw_json(jw *w, const json_t *v, int sort_keys)
{
    size_t i;

    switch (json_typeof(v)) {
    case JSON_OBJECT:
        json_object_out(w, v, sort_keys);
        break;
    case JSON_ARRAY:
        jw_arr(w);
        for (i = 0; i < json_array_size(v); i++)
            jw_json(w, json_array_get(v, i), sort_keys);
        jw_end_arr(w);
        break;
    case JSON_STRING:
        jw_strn(w, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        jw_int(w, (long long)json_integer_value(v));
        break;
    case JSON_REAL:
        jw_real(w, json_real_value(v));
        break;
    case JSON_TRUE:
        jw_raw(w, "true");
        break;
    case JSON_FALSE:
        jw_raw(w, "false");
        break;
    case JSON_NULL:
        jw_raw(w, "null");
        break;
    }
}

char *jw_dumps(const json_t *v, int sort_keys)
{
    jw w;

    jw_init(&w);
    jw_json(&w, v, sort_keys);
    return jw_take(&w);
}
