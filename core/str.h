/* Bounded string copy: truncation is the intent (ids and names in fixed
 * fields), and NULL copies as "". A cut never splits a UTF-8 character:
 * the text is written as JSON later, and half a character there is an
 * error (an incident whose cause excerpt ended in one could not be
 * saved). */
#ifndef CS_STR_H
#define CS_STR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 when it is
 * not one: no overlong forms, no surrogates, nothing past U+10FFFF (what
 * jansson accepts). */
static inline size_t str_utf8_seq(const unsigned char *s, size_t n)
{
    size_t need = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2
                                   : (s[0] & 0xF0) == 0xE0 ? 3
                                   : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    static const unsigned mins[] = {0, 0, 0x80, 0x800, 0x10000};
    unsigned cp;

    if (need <= 1 || need > n)
        return need == 1;
    cp = s[0] & (0x7Fu >> need);
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3Fu);
    }
    if (cp < mins[need] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return need;
}

/* Eight bytes at a time (w read with memcpy): the high bit set in every
 * byte of w below n (n <= 0x80), and maybe in bytes above such a one, so
 * exact as to whether there is any. str_word_zero: the zero bytes. */
static inline uint64_t str_word_below(uint64_t w, unsigned n)
{
    const uint64_t ones = 0x0101010101010101ull;

    return (w - ones * n) & ~w & (ones * 0x80);
}

static inline uint64_t str_word_zero(uint64_t w)
{
    return str_word_below(w, 1);
}

/* The length of the ASCII run p[0..n) starts with: 32 bytes a step while
 * they are all ASCII, then 8, then one. Log text is nearly all ASCII, and
 * a byte at a time this was a fifth of a collector's work per line. */
static inline size_t str_ascii_span(const unsigned char *p, size_t n)
{
    const uint64_t hi = 0x8080808080808080ull;
    uint64_t w[4];
    size_t i = 0;

    for (; i + 32 <= n; i += 32) {
        memcpy(w, p + i, 32);
        if ((w[0] | w[1] | w[2] | w[3]) & hi)
            break;
    }
    for (; i + 8 <= n; i += 8) {
        memcpy(w, p + i, 8);
        if (w[0] & hi)
            break;
    }
    while (i < n && p[i] < 0x80)
        i++;
    return i;
}

/* Whether s[0..n) is valid UTF-8. */
static inline int str_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;

    for (size_t i = 0, k; i < n; i += k)
        if (p[i] < 0x80)
            k = str_ascii_span(p + i, n - i);
        else if (!(k = str_utf8_seq(p + i, n - i)))
            return 0;
    return 1;
}

/* n, or less so that s[0..n) ends on a character boundary, s being valid
 * UTF-8 that may go on past n (s[n] readable when n < its length). */
static inline size_t str_utf8_cut(const char *s, size_t n)
{
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* Drops a character that a cut (snprintf into a fixed buffer) left
 * incomplete at the end of s. */
static inline void str_utf8_trim(char *s)
{
    size_t n = strlen(s), i = n, k = 0;

    while (i > 0 && k < 3 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
        i--, k++;
    if (i == 0)
        return;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t want = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
    if (lead >= 0xC0 && k < want)
        s[i - 1] = '\0';
}

/* The precision for printing s as "%.*s" with at most max bytes, cut on
 * a character boundary. */
static inline int str_utf8_max(const char *s, size_t max)
{
    size_t n = 0;

    while (n < max && s[n])
        n++;
    return (int)(n == max && s[n] ? str_utf8_cut(s, n) : n);
}

static inline void str_copy(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;

    if (cap == 0)
        return;
    if (n >= cap)
        n = str_utf8_cut(src, cap - 1);
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Joins the strings of a NULL-terminated list into dst, cut to cap like
 * snprintf("%s%s..."), and returns the length written: names built per
 * signal, where snprintf's format parsing was a measurable share. */
static inline size_t str_join(char *dst, size_t cap, const char *const *parts)
{
    size_t o = 0;

    if (cap == 0)
        return 0;
    for (; *parts && o < cap - 1; parts++) {
        size_t n = strlen(*parts);
        if (n > cap - 1 - o)
            n = str_utf8_cut(*parts, cap - 1 - o);
        memcpy(dst + o, *parts, n);
        o += n;
    }
    dst[o] = '\0';
    return o;
}

/* Time depends on the length of what the client sent, never on how much of
 * the secret it got right. */
static inline int str_secret_equal(const char *given, size_t glen,
                                   const char *want, size_t wlen)
{
    unsigned char diff = glen != wlen || !wlen;

    for (size_t i = 0; i < glen && wlen; i++)
        diff |= (unsigned char)(given[i] ^ want[i % wlen]);
    return diff == 0;
}

/* The host of a Prometheus `instance` label: host:port, [v6addr]:port or
 * a bare host (a bare IPv6 address keeps its colons). Its start, its
 * length in *len. */
static inline const char *str_instance_host(const char *inst, size_t *len)
{
    const char *colon = strrchr(inst, ':'), *end, *p;
    int digits = colon && colon[1] != '\0';

    if (inst[0] == '[' && (end = strchr(inst, ']')) && end > inst + 1) {
        *len = (size_t)(end - inst - 1);
        return inst + 1;
    }
    for (p = colon ? colon + 1 : ""; *p; p++)
        digits &= *p >= '0' && *p <= '9';
    *len = colon && colon > inst && strchr(inst, ':') == colon && digits
               ? (size_t)(colon - inst) : strlen(inst);
    return inst;
}

#endif
