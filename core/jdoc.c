#include "core/jdoc.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/str.h"

/* jansson's limit (jansson_config.h): a value deeper than this is an
 * error, the top-level one at depth 1. */
#define JD_MAX_DEPTH 2048
/* Objects up to this many members are checked for a repeated key pair by
 * pair; larger ones sort their keys (a hostile object of 100,000 keys
 * must not cost 10^10 comparisons). */
#define JD_PAIRWISE 16

/* One value. The document's values lie in one array in document order:
 * a container's members follow it, and skip jumps over its subtree. */
struct jd_val {
    const char *key; /* a member's key, else NULL */
    union {
        const char *s;
        long long i;
        double d;
    } u;
    uint32_t klen;
    uint32_t len;  /* a string's bytes, a container's members */
    uint32_t skip; /* values in this subtree, itself included */
    uint8_t type;
};

struct jdoc {
    jd_val *v;
    size_t n, cap;
    char *str; /* every string and key, NUL-terminated */
};

typedef struct jp {
    const unsigned char *start, *p, *end;
    jdoc *d;
    char *sp; /* where the next string goes in d->str */
    cs_err *err;
} jp;

/* ---- errors ------------------------------------------------------------- */

static int fail(jp *j, const unsigned char *at, const char *what)
{
    int line = 1, col = 1;

    for (const unsigned char *q = j->start; q < at && q < j->end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else if ((*q & 0xC0) != 0x80) { /* a character, not its bytes */
            col++;
        }
    }
    cs_err_set(j->err, "line %d column %d: %s", line, col, what);
    return -1;
}

/* ---- values ------------------------------------------------------------- */

static size_t add(jp *j, jd_type t, const char *key, size_t klen)
{
    jdoc *d = j->d;
    jd_val *v;

    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 64;
        d->v = xrealloc(d->v, d->cap * sizeof *d->v);
    }
    v = &d->v[d->n];
    memset(v, 0, sizeof *v);
    v->type = (uint8_t)t;
    v->key = key;
    v->klen = (uint32_t)klen;
    v->skip = 1;
    return d->n++;
}

static void ws(jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' ||
                             *j->p == '\t'))
        j->p++;
}

static int hexval(unsigned c)
{
    return c >= '0' && c <= '9'   ? (int)(c - '0')
           : c >= 'a' && c <= 'f' ? (int)(c - 'a' + 10)
           : c >= 'A' && c <= 'F' ? (int)(c - 'A' + 10)
                                  : -1;
}

/* The four hex digits after "\u" at p (p at the backslash), or -1. */
static long hex4(const jp *j, const unsigned char *p)
{
    long v = 0;

    if (j->end - p < 6 || p[1] != 'u')
        return -1;
    for (int i = 2; i < 6; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return -1;
        v = v << 4 | h;
    }
    return v;
}

static char *put_utf8(char *o, unsigned long cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xC0 | cp >> 6);
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xE0 | cp >> 12);
        *o++ = (char)(0x80 | (cp >> 6 & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (char)(0xF0 | cp >> 18);
        *o++ = (char)(0x80 | (cp >> 12 & 0x3F));
        *o++ = (char)(0x80 | (cp >> 6 & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    }
    return o;
}

/* A \u escape at j->p (the backslash), a surrogate pair whole, written at
 * *o. jansson refuses lone surrogates and U+0000. */
static int unicode_escape(jp *j, char **o)
{
    const unsigned char *at = j->p;
    long cp = hex4(j, at), lo;

    if (cp < 0)
        return fail(j, at, "invalid Unicode escape");
    j->p += 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
            return fail(j, at, "invalid Unicode: a lone high surrogate");
        if ((lo = hex4(j, j->p)) < 0)
            return fail(j, j->p, "invalid Unicode escape");
        if (lo < 0xDC00 || lo > 0xDFFF)
            return fail(j, at, "invalid Unicode: a high surrogate without "
                               "its low one");
        j->p += 6;
        cp = ((cp - 0xD800) << 10) + (lo - 0xDC00) + 0x10000;
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        return fail(j, at, "invalid Unicode: a lone low surrogate");
    } else if (cp == 0) {
        return fail(j, at, "\\u0000 is not allowed");
    }
    *o = put_utf8(*o, (unsigned long)cp);
    return 0;
}

static int escape(jp *j, char **o)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *k;

    if (j->end - j->p < 2)
        return fail(j, j->end, "premature end of input in a string");
    if (j->p[1] == 'u')
        return unicode_escape(j, o);
    if (!j->p[1] || !(k = strchr(from, j->p[1])))
        return fail(j, j->p, "invalid escape");
    *(*o)++ = to[k - from];
    j->p += 2;
    return 0;
}

/* The string at j->p (its opening quote), decoded into the document's
 * string buffer: a string's text is never longer than its JSON, quotes
 * included, so the buffer (as long as the input) cannot overflow. */
static int string(jp *j, const char **s, size_t *len)
{
    char *o = j->sp;
    const unsigned char *q;
    size_t k;

    *s = o;
    j->p++;
    for (;;) {
        for (q = j->p; q < j->end && *q >= 0x20 && *q < 0x80 && *q != '"' &&
                       *q != '\\';
             q++)
            ;
        memcpy(o, j->p, (size_t)(q - j->p));
        o += q - j->p;
        j->p = q;
        if (q == j->end)
            return fail(j, q, "premature end of input in a string");
        if (*q == '"')
            break;
        if (*q == '\\') {
            if (escape(j, &o))
                return -1;
        } else if (*q < 0x20) {
            return fail(j, q, "control character in a string");
        } else if (!(k = str_utf8_seq(q, (size_t)(j->end - q)))) {
            return fail(j, q, "invalid UTF-8");
        } else {
            memcpy(o, q, k);
            o += k;
            j->p += k;
        }
    }
    j->p++;
    *len = (size_t)(o - *s);
    *o++ = '\0';
    j->sp = o;
    return 0;
}

static const unsigned char *digits(const unsigned char *p,
                                   const unsigned char *end)
{
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    return p;
}

/* An integer's digits [p, q), at most 2^63 - 1 (2^63 negative), as
 * strtoll reads them; -1 when out of range. */
static int integer(const unsigned char *p, const unsigned char *q, int neg,
                   long long *out)
{
    unsigned long long v = 0, lim = neg ? 9223372036854775808ULL
                                        : 9223372036854775807ULL;

    for (; p < q; p++) {
        unsigned dig = *p - '0';
        if (v > (lim - dig) / 10)
            return -1;
        v = v * 10 + dig;
    }
    *out = !neg || v == 0 ? (long long)v : -(long long)(v - 1) - 1;
    return 0;
}

static int real(jp *j, const unsigned char *at, double *out)
{
    char stack[64], *buf = stack, *end;
    size_t n = (size_t)(j->p - at);

    if (n >= sizeof stack)
        buf = xmalloc(n + 1);
    memcpy(buf, at, n);
    buf[n] = '\0';
    *out = strtod(buf, &end);
    if (buf != stack)
        free(buf);
    return isinf(*out) ? fail(j, at, "real number overflow") : 0;
}

/* JSON's number grammar, as jansson's lexer reads it: an integer when it
 * has neither fraction nor exponent. */
static int number(jp *j, size_t at)
{
    const unsigned char *s = j->p, *p = s, *q;
    jd_val *v = &j->d->v[at];
    int neg = *p == '-';

    p += neg;
    if (p < j->end && *p == '0')
        q = p + 1;
    else if ((q = digits(p, j->end)) == p)
        return fail(j, s, "invalid token");
    if (q < j->end && *q >= '0' && *q <= '9')
        return fail(j, s, "invalid token: a number with a leading zero");
    j->p = q;
    if (q == j->end || (*q != '.' && *q != 'e' && *q != 'E')) {
        v->type = JD_INT;
        if (integer(p, q, neg, &v->u.i))
            return fail(j, s, neg ? "too big negative integer"
                                  : "too big integer");
        return 0;
    }
    if (*j->p == '.') {
        q = digits(j->p + 1, j->end);
        if (q == j->p + 1)
            return fail(j, s, "invalid token: no digit after '.'");
        j->p = q;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        p = j->p + 1;
        p += p < j->end && (*p == '+' || *p == '-');
        if ((q = digits(p, j->end)) == p)
            return fail(j, s, "invalid token: no digit in the exponent");
        j->p = q;
    }
    v->type = JD_REAL;
    return real(j, s, &v->u.d);
}

/* true, false and null; jansson reads a run of letters as one token. */
static int literal(jp *j, size_t at)
{
    static const struct {
        const char *word;
        jd_type t;
    } lit[] = {{"true", JD_TRUE}, {"false", JD_FALSE}, {"null", JD_NULL}};
    const unsigned char *q = j->p;
    size_t n;

    while (q < j->end && ((*q | 0x20) >= 'a' && (*q | 0x20) <= 'z'))
        q++;
    n = (size_t)(q - j->p);
    for (size_t i = 0; i < 3; i++)
        if (n == strlen(lit[i].word) && memcmp(j->p, lit[i].word, n) == 0) {
            j->d->v[at].type = (uint8_t)lit[i].t;
            j->p = q;
            return 0;
        }
    return fail(j, j->p, "invalid token");
}

/* ---- containers --------------------------------------------------------- */

static int value(jp *j, const char *key, size_t klen, int depth);

static int cmp_member(const void *a, const void *b)
{
    const jd_val *x = *(const jd_val *const *)a, *y = *(const jd_val *const *)b;

    if (x->klen != y->klen)
        return x->klen < y->klen ? -1 : 1;
    return memcmp(x->key, y->key, x->klen);
}

static int same_key(const jd_val *a, const jd_val *b)
{
    return a->klen == b->klen && memcmp(a->key, b->key, a->klen) == 0;
}

/* A member of the object at index at whose key an earlier one has, or
 * NULL. */
static const jd_val *repeats(const jdoc *d, size_t at)
{
    const jd_val *o = &d->v[at], *a, *b, *rep = NULL;
    const jd_val **m;
    uint32_t i, k;

    if (o->len <= JD_PAIRWISE) {
        for (i = 0, a = o + 1; i < o->len; i++, a += a->skip)
            for (k = i + 1, b = a + a->skip; k < o->len; k++, b += b->skip)
                if (same_key(a, b))
                    return b;
        return NULL;
    }
    m = xmalloc(o->len * sizeof *m);
    for (i = 0, a = o + 1; i < o->len; i++, a += a->skip)
        m[i] = a;
    qsort(m, o->len, sizeof *m, cmp_member);
    for (i = 1; i < o->len && !rep; i++)
        if (same_key(m[i - 1], m[i]))
            rep = m[i];
    free(m);
    return rep;
}

/* One member: its key, ':' and its value. */
static int member(jp *j, int depth)
{
    const char *key;
    size_t klen;

    if (j->p == j->end || *j->p != '"')
        return fail(j, j->p, "string or '}' expected");
    if (string(j, &key, &klen))
        return -1;
    ws(j);
    if (j->p == j->end || *j->p != ':')
        return fail(j, j->p, "':' expected");
    j->p++;
    ws(j);
    return value(j, key, klen, depth + 1);
}

/* The object or array at index at, its opening bracket at j->p. */
static int container(jp *j, size_t at, int depth)
{
    int obj = j->d->v[at].type == JD_OBJ;
    unsigned char close = obj ? '}' : ']';
    const jd_val *dup;
    size_t n = 0;
    char what[100];

    j->p++;
    ws(j);
    if (j->p < j->end && *j->p == close)
        goto done;
    for (;;) {
        if (obj ? member(j, depth) : value(j, NULL, 0, depth + 1))
            return -1;
        n++;
        ws(j);
        if (j->p == j->end || *j->p != ',')
            break;
        j->p++;
        ws(j);
    }
    if (j->p == j->end || *j->p != close)
        return fail(j, j->p, obj ? "'}' expected" : "']' expected");
done:
    j->p++;
    j->d->v[at].len = (uint32_t)n;
    j->d->v[at].skip = (uint32_t)(j->d->n - at);
    if (!obj || !(dup = repeats(j->d, at)))
        return 0;
    snprintf(what, sizeof what, "duplicate object key \"%.*s\"",
             str_utf8_max(dup->key, 64), dup->key);
    return fail(j, j->p - 1, what);
}

static int value(jp *j, const char *key, size_t klen, int depth)
{
    size_t at;
    unsigned c;

    if (depth > JD_MAX_DEPTH)
        return fail(j, j->p, "maximum parsing depth reached");
    if (j->p == j->end)
        return fail(j, j->p, "premature end of input");
    c = *j->p;
    at = add(j, JD_NULL, key, klen);
    switch (c) {
    case '{':
    case '[':
        j->d->v[at].type = c == '{' ? JD_OBJ : JD_ARR;
        return container(j, at, depth);
    case '"': {
        const char *s;
        size_t len;
        if (string(j, &s, &len))
            return -1;
        j->d->v[at].type = JD_STR;
        j->d->v[at].u.s = s;
        j->d->v[at].len = (uint32_t)len;
        return 0;
    }
    case '-': case '0': case '1': case '2': case '3': case '4': case '5':
    case '6': case '7': case '8': case '9':
        return number(j, at);
    default:
        if (((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
            return literal(j, at);
        return fail(j, j->p, c == ']' || c == '}' || c == ',' || c == ':'
                                 ? "unexpected token"
                                 : "invalid token");
    }
}

jdoc *jd_parse(const char *data, size_t len, cs_err *err)
{
    jdoc *d = xcalloc(1, sizeof *d);
    jp j = {.start = (const unsigned char *)data,
            .p = (const unsigned char *)data,
            .end = (const unsigned char *)data + len,
            .d = d,
            .err = err};

    /* the string buffer's bound (string()) holds only below 4 GiB, where
     * the values' 32-bit lengths hold too */
    if (len >= UINT32_MAX) {
        cs_err_set(err, "a JSON text of %zu bytes is over 4 GiB", len);
        goto fail;
    }
    d->str = xmalloc(len + 1);
    j.sp = d->str;
    ws(&j);
    if (j.p == j.end || (*j.p != '{' && *j.p != '[')) {
        fail(&j, j.p, "'[' or '{' expected");
        goto fail;
    }
    if (value(&j, NULL, 0, 1))
        goto fail;
    ws(&j);
    if (j.p != j.end) {
        fail(&j, j.p, "end of file expected");
        goto fail;
    }
    return d;
fail:
    jd_free(d);
    return NULL;
}

void jd_free(jdoc *d)
{
    if (!d)
        return;
    free(d->v);
    free(d->str);
    free(d);
}

/* ---- reading ------------------------------------------------------------ */

const jd_val *jd_root(const jdoc *d)
{
    return d->v;
}

jd_type jd_typeof(const jd_val *v)
{
    return (jd_type)v->type;
}

size_t jd_size(const jd_val *v)
{
    return v->type == JD_OBJ || v->type == JD_ARR ? v->len : 0;
}

const jd_val *jd_first(const jd_val *v)
{
    return jd_size(v) ? v + 1 : NULL;
}

const jd_val *jd_next(const jd_val *v)
{
    return v + v->skip;
}

const jd_val *jd_get(const jd_val *v, const char *key)
{
    size_t klen = strlen(key);
    const jd_val *m = v + 1;

    if (v->type != JD_OBJ)
        return NULL;
    for (uint32_t i = 0; i < v->len; i++, m += m->skip)
        if (m->klen == klen && memcmp(m->key, key, klen) == 0)
            return m;
    return NULL;
}

const char *jd_key(const jd_val *v, size_t *len)
{
    if (len)
        *len = v->klen;
    return v->key;
}

const char *jd_str(const jd_val *v, size_t *len)
{
    if (v->type != JD_STR)
        return NULL;
    if (len)
        *len = v->len;
    return v->u.s;
}

long long jd_int(const jd_val *v)
{
    return v->type == JD_INT ? v->u.i : 0;
}

double jd_real(const jd_val *v)
{
    return v->type == JD_REAL ? v->u.d : 0;
}

/* ---- writing ------------------------------------------------------------ */

/* Keys on the stack up to this many, as Alertmanager's labels are. */
#define JD_STACK_KEYS 32

/* jansson sorts an object's keys with strcmp before it dumps them; no key
 * holds a NUL, so strcmp orders them as their bytes do. */
static int cmp_key(const void *a, const void *b)
{
    return strcmp((*(const jd_val *const *)a)->key,
                  (*(const jd_val *const *)b)->key);
}

static void canon_object(jw *w, const jd_val *v)
{
    const jd_val *stack[JD_STACK_KEYS], **m = stack, *e = v + 1;

    if (v->len > JD_STACK_KEYS)
        m = xmalloc(v->len * sizeof *m);
    for (uint32_t i = 0; i < v->len; i++, e += e->skip)
        m[i] = e;
    qsort(m, v->len, sizeof *m, cmp_key);
    jw_obj(w);
    for (uint32_t i = 0; i < v->len; i++) {
        jw_key(w, m[i]->key);
        jd_canon(w, m[i]);
    }
    jw_end_obj(w);
    if (m != stack)
        free(m);
}

void jd_canon(jw *w, const jd_val *v)
{
    const jd_val *e = v + 1;

    switch ((jd_type)v->type) {
    case JD_OBJ:
        canon_object(w, v);
        break;
    case JD_ARR:
        jw_arr(w);
        for (uint32_t i = 0; i < v->len; i++, e += e->skip)
            jd_canon(w, e);
        jw_end_arr(w);
        break;
    case JD_STR:
        jw_str(w, v->u.s);
        break;
    case JD_INT:
        jw_int(w, v->u.i);
        break;
    case JD_REAL:
        jw_real(w, v->u.d);
        break;
    case JD_TRUE:
        jw_raw(w, "true");
        break;
    case JD_FALSE:
        jw_raw(w, "false");
        break;
    case JD_NULL:
        jw_raw(w, "null");
        break;
    }
}

void jd_pack(msgpack_packer *pk, const jd_val *v)
{
    const jd_val *e = v + 1;

    switch ((jd_type)v->type) {
    case JD_OBJ:
        msgpack_pack_map(pk, v->len);
        for (uint32_t i = 0; i < v->len; i++, e += e->skip) {
            msgpack_pack_str(pk, e->klen);
            msgpack_pack_str_body(pk, e->key, e->klen);
            jd_pack(pk, e);
        }
        break;
    case JD_ARR:
        msgpack_pack_array(pk, v->len);
        for (uint32_t i = 0; i < v->len; i++, e += e->skip)
            jd_pack(pk, e);
        break;
    case JD_STR:
        msgpack_pack_str(pk, v->len);
        msgpack_pack_str_body(pk, v->u.s, v->len);
        break;
    case JD_INT:
        msgpack_pack_int64(pk, v->u.i);
        break;
    case JD_REAL:
        msgpack_pack_double(pk, v->u.d);
        break;
    case JD_TRUE:
        msgpack_pack_true(pk);
        break;
    case JD_FALSE:
        msgpack_pack_false(pk);
        break;
    case JD_NULL:
        msgpack_pack_nil(pk);
        break;
    }
}

json_t *jd_json(const jd_val *v)
{
    const jd_val *e = v + 1;
    json_t *o = NULL;

    switch ((jd_type)v->type) {
    case JD_OBJ:
        o = json_object();
        for (uint32_t i = 0; o && i < v->len; i++, e += e->skip)
            if (json_object_setn_new_nocheck(o, e->key, e->klen, jd_json(e))) {
                json_decref(o);
                o = NULL;
            }
        break;
    case JD_ARR:
        o = json_array();
        for (uint32_t i = 0; o && i < v->len; i++, e += e->skip)
            if (json_array_append_new(o, jd_json(e))) {
                json_decref(o);
                o = NULL;
            }
        break;
    case JD_STR:
        o = json_stringn_nocheck(v->u.s, v->len);
        break;
    case JD_INT:
        o = json_integer(v->u.i);
        break;
    case JD_REAL:
        o = json_real(v->u.d);
        break;
    case JD_TRUE:
        o = json_true();
        break;
    case JD_FALSE:
        o = json_false();
        break;
    case JD_NULL:
        o = json_null();
        break;
    }
    return o;
}
