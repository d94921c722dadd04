#include "ingest/jsonscan.h"

#include <string.h>

#include "core/str.h"

static int space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The end of the string whose opening quote is at p[0]: the offset
 * after its closing quote; 0 when not whole. A quote is found with
 * memchr (most of a Kubernetes object's bytes are in strings) and is
 * the end unless an odd run of backslashes escapes it. */
static long string_end(const char *p, size_t n)
{
    size_t i = 1;

    while (i < n) {
        const char *q = memchr(p + i, '"', n - i);
        size_t j, k;
        if (!q)
            return 0;
        j = (size_t)(q - p);
        for (k = j; p[k - 1] == '\\'; k--)
            ;
        if ((j - k) % 2 == 0)
            return (long)j + 1;
        i = j + 1;
    }
    return 0;
}

/* The end of the object or array at p[0], by its nesting. */
static long nested_end(const char *p, size_t n, size_t *bad)
{
    long depth = 0;

    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '"') {
            long e = string_end(p + i, n - i);
            if (e <= 0) {
                *bad = i;
                return 0;
            }
            i += (size_t)e - 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth == 0)
                return (long)i + 1;
        }
    }
    return 0;
}

long jsc_object_end(const char *p, size_t n, size_t *bad)
{
    *bad = 0;
    if (!n)
        return 0;
    if (p[0] != '{')
        return -1;
    return nested_end(p, n, bad);
}

/* The end of any value at p[0] (whitespace skipped before): its offset
 * after it, -1 when it is not whole or not JSON (a document is whole
 * when it is scanned). */
static long value_end(const char *p, size_t n)
{
    size_t i = 0, bad;
    long e;

    if (!n)
        return -1;
    if (p[0] == '"')
        e = string_end(p, n);
    else if (p[0] == '{' || p[0] == '[')
        e = nested_end(p, n, &bad);
    else {
        while (i < n && !space(p[i]) && p[i] != ',' && p[i] != '}' && p[i] != ']')
            i++;
        return i ? (long)i : -1;
    }
    return e > 0 ? e : -1;
}

int jsc_fields(const char *p, size_t n, const char *const *keys,
              size_t nkeys, jsc_val *out)
{
    size_t i = 0, found = 0;

    memset(out, 0, nkeys * sizeof *out);
    while (i < n && space(p[i]))
        i++;
    if (i >= n || p[i] != '{')
        return -1;
    i++;
    for (;;) {
        size_t klen;
        const char *key;
        long e;
        while (i < n && space(p[i]))
            i++;
        if (i < n && p[i] == '}')
            return 0;
        if (i >= n || p[i] != '"' || (e = string_end(p + i, n - i)) <= 0)
            return -1;
        key = p + i + 1;
        klen = (size_t)e - 2;
        i += (size_t)e;
        while (i < n && space(p[i]))
            i++;
        if (i >= n || p[i] != ':')
            return -1;
        i++;
        while (i < n && space(p[i]))
            i++;
        if ((e = value_end(p + i, n - i)) < 0)
            return -1;
        for (size_t k = 0; k < nkeys; k++)
            if (!out[k].kind && strlen(keys[k]) == klen && !memcmp(key, keys[k], klen)) {
                int str = p[i] == '"';
                out[k].v = p + i + str;
                out[k].len = (size_t)e - 2 * (size_t)str;
                out[k].kind = str ? 1 : 2;
                if (++found == nkeys)
                    return 0;
            }
        i += (size_t)e;
        while (i < n && space(p[i]))
            i++;
        if (i < n && p[i] == ',')
            i++;
        else if (i < n && p[i] == '}')
            return 0;
        else
            return -1;
    }
}

int jsc_get(const char *p, size_t n, const char *const *path, const char **v,
           size_t *vlen)
{
    jsc_val f;

    if (jsc_fields(p, n, path, 1, &f))
        return -1;
    if (!f.kind)
        return 0;
    if (path[1])
        return f.kind == 2 && f.v[0] == '{' ? jsc_get(f.v, f.len, path + 1, v, vlen) : 0;
    *v = f.v;
    *vlen = f.len;
    return f.kind;
}

static int hex4(const char *s, unsigned *out)
{
    unsigned v = 0;

    for (int k = 0; k < 4; k++) {
        char c = s[k];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

/* A code point as UTF-8 into out at *o (room permitting). */
static void put_utf8(unsigned cp, char *out, size_t cap, size_t *o)
{
    char b[4];
    size_t k = 0;

    if (cp < 0x80) {
        b[k++] = (char)cp;
    } else if (cp < 0x800) {
        b[k++] = (char)(0xC0 | (cp >> 6));
        b[k++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        b[k++] = (char)(0xE0 | (cp >> 12));
        b[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[k++] = (char)(0x80 | (cp & 0x3F));
    } else {
        b[k++] = (char)(0xF0 | (cp >> 18));
        b[k++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[k++] = (char)(0x80 | (cp & 0x3F));
    }
    if (*o + k < cap) {
        memcpy(out + *o, b, k);
        *o += k;
    } else {
        *o = cap; /* full: no part of a character */
    }
}

/* One escape at raw[*i] (the backslash): its code point, *i past it. */
static int escape(const char *raw, size_t len, size_t *i, unsigned *cp)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *f;
    unsigned lo;

    if (*i + 1 >= len)
        return -1;
    if (raw[*i + 1] != 'u') {
        if (!raw[*i + 1] || !(f = strchr(from, raw[*i + 1])))
            return -1;
        *cp = (unsigned char)to[f - from];
        *i += 2;
        return 0;
    }
    if (*i + 6 > len || hex4(raw + *i + 2, cp))
        return -1;
    *i += 6;
    if (*cp >= 0xD800 && *cp < 0xDC00) { /* a surrogate pair's first */
        if (*i + 6 > len || raw[*i] != '\\' || raw[*i + 1] != 'u' ||
            hex4(raw + *i + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
            return -1;
        *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
        *i += 6;
    } else if (*cp >= 0xDC00 && *cp < 0xE000) {
        return -1;
    }
    return 0;
}

int jsc_unescape(const char *raw, size_t len, char *out, size_t cap)
{
    size_t i = 0, o = 0;

    if (!cap)
        return -1;
    while (i < len && o < cap) {
        unsigned cp;
        if (raw[i] != '\\') {
            size_t run = 1;
            while (i + run < len && raw[i + run] != '\\')
                run++;
            if (o + run >= cap)
                run = cap - 1 - o;
            memcpy(out + o, raw + i, run);
            o += run;
            i += run;
            if (o == cap - 1)
                break;
            continue;
        }
        if (escape(raw, len, &i, &cp))
            return -1;
        put_utf8(cp, out, cap, &o);
    }
    if (o >= cap)
        o = cap - 1;
    out[o] = 0;
    str_utf8_trim(out); /* a character the cut left incomplete */
    return 0;
}
