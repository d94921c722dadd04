#include "core/jmp.h"

#include <string.h>

#include "core/str.h"

#define JMP_MAX_DEPTH 64

void jmp_pack(msgpack_packer *pk, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *e;
        msgpack_pack_map(pk, json_object_size(v));
        json_object_foreach((json_t *)v, k, e) {
            size_t kl = strlen(k);
            msgpack_pack_str(pk, kl);
            msgpack_pack_str_body(pk, k, kl);
            jmp_pack(pk, e);
        }
        break;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *e;
        msgpack_pack_array(pk, json_array_size(v));
        json_array_foreach(v, i, e) jmp_pack(pk, e);
        break;
    }
    case JSON_STRING: {
        size_t l = json_string_length(v);
        msgpack_pack_str(pk, l);
        msgpack_pack_str_body(pk, json_string_value(v), l);
        break;
    }
    case JSON_INTEGER:
        msgpack_pack_int64(pk, json_integer_value(v));
        break;
    case JSON_REAL:
        msgpack_pack_double(pk, json_real_value(v));
        break;
    case JSON_TRUE:
        msgpack_pack_true(pk);
        break;
    case JSON_FALSE:
        msgpack_pack_false(pk);
        break;
    case JSON_NULL:
        msgpack_pack_nil(pk);
        break;
    }
}

/* The decoder reads the bytes itself instead of going through msgpack-c's
 * object tree: msgpack_unpack_next allocates an 8 KiB zone per message and
 * builds a tree that is then copied into jansson, which together were a
 * quarter of the correlator's time on the dense log (docs/PERFORMANCE.md).
 * tests/fuzz/fuzz_signal_msgpack.c keeps msgpack-c's decoder as the oracle
 * this one must agree with. */
typedef struct {
    const unsigned char *p;
    size_t len, pos;
    cs_err *err;
} rd;

static json_t *dec_item(rd *r, int depth);

static int need(rd *r, size_t n)
{
    if (r->len - r->pos >= n)
        return 0;
    cs_err_set(r->err, "msgpack truncated after %zu bytes", r->len);
    return -1;
}

static uint64_t be(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Nearly every string on the wire is ASCII, which needs no UTF-8 check. */
static int is_ascii(const unsigned char *p, size_t n)
{
    return str_ascii_span(p, n) == n;
}

/* For a string's type byte b (already read): its length, from the bytes
 * that follow for str8/16/32. 0; -1 when b is not a string type; -2 when
 * the length is truncated (the error is set). */
static int str_len(rd *r, unsigned char b, size_t *n)
{
    size_t lb;

    if (b >= 0xa0 && b <= 0xbf) {
        *n = b & 0x1f;
        return 0;
    }
    if (b == 0xd9)
        lb = 1;
    else if (b == 0xda)
        lb = 2;
    else if (b == 0xdb)
        lb = 4;
    else
        return -1;
    if (need(r, lb))
        return -2;
    *n = (size_t)be(r->p + r->pos, lb);
    r->pos += lb;
    return 0;
}

static json_t *dec_str(rd *r, size_t n)
{
    const char *s = (const char *)r->p + r->pos;
    json_t *v;

    if (need(r, n))
        return NULL;
    r->pos += n;
    v = is_ascii((const unsigned char *)s, n) ? json_stringn_nocheck(s, n)
                                               : json_stringn(s, n);
    if (!v)
        cs_err_set(r->err, "msgpack string is not valid UTF-8");
    return v;
}

/* Every element takes at least one byte: a count the remaining bytes
 * cannot hold is forged, and is refused before the loop that reads it. */
static int count_fits(rd *r, size_t at, uint64_t items)
{
    if (items <= r->len - r->pos)
        return 0;
    cs_err_set(r->err, "msgpack container at byte %zu claims %llu elements "
                       "in %zu remaining bytes", at, (unsigned long long)items,
               r->len - r->pos);
    return -1;
}

static json_t *dec_array(rd *r, size_t at, uint64_t n, int depth)
{
    json_t *a;

    if (count_fits(r, at, n))
        return NULL;
    a = json_array();
    for (uint64_t i = 0; i < n; i++) {
        json_t *e = dec_item(r, depth + 1);
        if (!e || json_array_append_new(a, e)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *dec_map(rd *r, size_t at, uint64_t n, int depth)
{
    json_t *m;

    if (count_fits(r, at, 2 * n))
        return NULL;
    m = json_object();
    for (uint64_t i = 0; i < n; i++) {
        size_t kl, kat = r->pos;
        const char *kp;
        json_t *e;
        int rc;

        if (need(r, 1))
            goto fail;
        rc = str_len(r, r->p[r->pos++], &kl);
        if (rc == -2 || (rc == 0 && need(r, kl)))
            goto fail;
        kp = (const char *)r->p + r->pos;
        if (rc == -1 || memchr(kp, '\0', kl)) {
            cs_err_set(r->err, "msgpack map key at byte %zu is not a string "
                               "without NUL", kat);
            goto fail;
        }
        r->pos += kl;
        if (!(e = dec_item(r, depth + 1)))
            goto fail;
        /* Same rules as JSON keys: any length, valid UTF-8. */
        if (is_ascii((const unsigned char *)kp, kl)
                ? json_object_setn_new_nocheck(m, kp, kl, e)
                : json_object_setn_new(m, kp, kl, e)) {
            cs_err_set(r->err, "msgpack map key at byte %zu is not valid UTF-8",
                       kat);
            goto fail;
        }
    }
    return m;
fail:
    json_decref(m);
    return NULL;
}

static json_t *dec_number(rd *r, unsigned char b)
{
    static const unsigned char width[] = {
        /* 0xca.. */ 4, 8, 1, 2, 4, 8, 1, 2, 4, 8};
    size_t w = width[b - 0xca];
    const unsigned char *p = r->p + r->pos;
    uint64_t u;

    if (need(r, w))
        return NULL;
    r->pos += w;
    u = be(p, w);
    if (b == 0xca || b == 0xcb) {
        double d;
        if (b == 0xca) {
            uint32_t u32 = (uint32_t)u;
            float f;
            memcpy(&f, &u32, 4);
            d = f;
        } else {
            memcpy(&d, &u, 8);
        }
        json_t *v = json_real(d);
        if (!v)
            cs_err_set(r->err, "msgpack float at byte %zu is not finite",
                       r->pos - w - 1);
        return v;
    }
    if (b <= 0xcf) {
        if (u > (uint64_t)INT64_MAX) {
            cs_err_set(r->err, "msgpack integer %llu out of range",
                       (unsigned long long)u);
            return NULL;
        }
        return json_integer((json_int_t)u);
    }
    /* Signed: sign-extend from the width read. */
    if (w < 8 && (u >> (8 * w - 1)))
        u |= ~(uint64_t)0 << (8 * w);
    return json_integer((json_int_t)u);
}

static json_t *dec_item(rd *r, int depth)
{
    size_t at = r->pos, n;
    unsigned char b;

    if (depth > JMP_MAX_DEPTH) {
        cs_err_set(r->err, "msgpack nested deeper than %d levels", JMP_MAX_DEPTH);
        return NULL;
    }
    if (need(r, 1))
        return NULL;
    b = r->p[r->pos++];
    if (b <= 0x7f)
        return json_integer(b);
    if (b >= 0xe0)
        return json_integer((json_int_t)b - 256);
    if (b <= 0x8f)
        return dec_map(r, at, b & 0x0f, depth);
    if (b <= 0x9f)
        return dec_array(r, at, b & 0x0f, depth);
    switch (b) {
    case 0xc0:
        return json_null();
    case 0xc2:
        return json_false();
    case 0xc3:
        return json_true();
    case 0xdc: case 0xdd: case 0xde: case 0xdf: {
        size_t lb = (b == 0xdc || b == 0xde) ? 2 : 4;
        if (need(r, lb))
            return NULL;
        uint64_t cnt = be(r->p + r->pos, lb);
        r->pos += lb;
        return b <= 0xdd ? dec_array(r, at, cnt, depth)
                         : dec_map(r, at, cnt, depth);
    }
    default:
        break;
    }
    if (b >= 0xca && b <= 0xd3)
        return dec_number(r, b);
    switch (str_len(r, b, &n)) {
    case 0:
        return dec_str(r, n);
    case -2:
        return NULL;
    default:
        break;
    }
    if (b == 0xc1)
        cs_err_set(r->err, "msgpack malformed at byte %zu", at);
    else
        cs_err_set(r->err, "msgpack bin/ext (0x%02x) at byte %zu is not "
                           "allowed in a signal", b, at);
    return NULL;
}

json_t *jmp_unpack(const char *data, size_t len, cs_err *err)
{
    rd r = {(const unsigned char *)data, len, 0, err};
    json_t *out = dec_item(&r, 0);

    if (out && r.pos != len) {
        cs_err_set(err, "msgpack has %zu trailing bytes", len - r.pos);
        json_decref(out);
        return NULL;
    }
    return out;
}

/* ---- flat maps ------------------------------------------------------- */

/* ASCII without NUL: what the flat reader hands out as C text. One pass,
 * 8 bytes a step (two passes, is_ascii then memchr, were a sixth of the
 * correlator's decoding). */
static int plain(const unsigned char *p, size_t n)
{
    uint64_t acc = 0, w;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        acc |= w | str_word_zero(w);
    }
    for (; i < n; i++)
        acc |= p[i] ? p[i] : 0x80u;
    return !(acc & 0x8080808080808080ull);
}

/* A string at r's position (type byte included): 0, or -1. */
static int flat_str(rd *r, const char **s, size_t *n)
{
    if (need(r, 1) || str_len(r, r->p[r->pos++], n) || need(r, *n) ||
        !plain(r->p + r->pos, *n))
        return -1;
    *s = (const char *)r->p + r->pos;
    r->pos += *n;
    return 0;
}

static int flat_value(rd *r, jmp_kv *kv)
{
    unsigned char b;
    size_t w;

    if (need(r, 1))
        return -1;
    b = r->p[r->pos];
    kv->str = NULL;
    kv->slen = 0;
    if (b <= 0x7f) {
        kv->u = b;
        r->pos++;
        return 0;
    }
    if (b >= 0xcc && b <= 0xcf) {
        w = (size_t)1 << (b - 0xcc);
        r->pos++;
        if (need(r, w))
            return -1;
        kv->u = be(r->p + r->pos, w);
        r->pos += w;
        return 0;
    }
    return flat_str(r, &kv->str, &kv->slen);
}

int jmp_flat(const char *data, size_t len, jmp_kv *kv, size_t max)
{
    cs_err ignored;
    rd r = {(const unsigned char *)data, len, 0, &ignored};
    size_t n;
    unsigned char b;

    if (need(&r, 1))
        return -1;
    b = r.p[r.pos++];
    if (b >= 0x80 && b <= 0x8f) {
        n = b & 0x0f;
    } else if (b == 0xde) {
        if (need(&r, 2))
            return -1;
        n = (size_t)be(r.p + r.pos, 2);
        r.pos += 2;
    } else {
        return -1;
    }
    if (n > max)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (flat_str(&r, &kv[i].key, &kv[i].klen) || flat_value(&r, &kv[i]))
            return -1;
    return r.pos == len ? (int)n : -1;
}
