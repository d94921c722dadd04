#include "core/jmp.h"

#include <string.h>

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

static json_t *from_obj(const msgpack_object *o, int depth, cs_err *err)
{
    if (depth > JMP_MAX_DEPTH) {
        cs_err_set(err, "msgpack nested deeper than %d levels", JMP_MAX_DEPTH);
        return NULL;
    }
    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
        return json_null();
    case MSGPACK_OBJECT_BOOLEAN:
        return json_boolean(o->via.boolean);
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        if (o->via.u64 > (uint64_t)INT64_MAX) {
            cs_err_set(err, "msgpack integer %llu out of range",
                       (unsigned long long)o->via.u64);
            return NULL;
        }
        return json_integer((json_int_t)o->via.u64);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return json_integer((json_int_t)o->via.i64);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        return json_real(o->via.f64);
    case MSGPACK_OBJECT_STR: {
        /* msgpack-c may hand an empty string a NULL pointer, which
         * jansson refuses: found by fuzz.signal_json */
        json_t *str = json_stringn(o->via.str.size ? o->via.str.ptr : "",
                                   o->via.str.size);
        if (!str)
            cs_err_set(err, "msgpack string is not valid UTF-8");
        return str;
    }
    case MSGPACK_OBJECT_ARRAY: {
        json_t *a = json_array();
        for (uint32_t i = 0; i < o->via.array.size; i++) {
            json_t *e = from_obj(&o->via.array.ptr[i], depth + 1, err);
            if (!e) {
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, e);
        }
        return a;
    }
    case MSGPACK_OBJECT_MAP: {
        json_t *m = json_object();
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            const msgpack_object_kv *kv = &o->via.map.ptr[i];
            const char *kp = kv->key.via.str.ptr;
            size_t kl = kv->key.via.str.size;
            if (kv->key.type != MSGPACK_OBJECT_STR ||
                (kl && memchr(kp, '\0', kl))) {
                cs_err_set(err, "msgpack map key is not a string without NUL");
                json_decref(m);
                return NULL;
            }
            json_t *e = from_obj(&kv->val, depth + 1, err);
            if (!e) {
                json_decref(m);
                return NULL;
            }
            /* Same rules as JSON keys: any length, valid UTF-8. */
            if (json_object_setn_new(m, kl ? kp : "", kl, e)) {
                cs_err_set(err, "msgpack map key is not valid UTF-8");
                json_decref(m);
                return NULL;
            }
        }
        return m;
    }
    default:
        cs_err_set(err, "msgpack type %d (bin/ext) is not allowed in a signal",
                   (int)o->type);
        return NULL;
    }
}

/* Bytes of the header and fixed payload of the item at p, and how many
 * items it contains (map entries count twice); 0 for a malformed byte. */
static size_t item_size(const unsigned char *p, size_t avail, uint64_t *items)
{
    unsigned char b = p[0];
    static const unsigned char fixed[] = {
        /* 0xc0.. */ 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 5, 9, 2, 3, 5, 9,
        /* 0xd0.. */ 2, 3, 5, 9, 3, 4, 6, 10, 18, 0, 0, 0, 0, 0, 0, 0};
    uint64_t n = 0;
    size_t hdr;

    *items = 0;
    if (b <= 0x7f || b >= 0xe0)
        return 1;
    if (b <= 0x8f) {
        *items = 2u * (b & 0x0f);
        return 1;
    }
    if (b <= 0x9f) {
        *items = b & 0x0f;
        return 1;
    }
    if (b <= 0xbf)
        return 1 + (b & 0x1f);
    if (fixed[b - 0xc0])
        return fixed[b - 0xc0];
    switch (b) {
    case 0xc4: case 0xd9: hdr = 2; break;
    case 0xc5: case 0xda: case 0xdc: case 0xde: hdr = 3; break;
    case 0xc6: case 0xdb: case 0xdd: case 0xdf: hdr = 5; break;
    case 0xc7: hdr = 3; break;
    case 0xc8: hdr = 4; break;
    case 0xc9: hdr = 6; break;
    default: return 0; /* 0xc1 is never used */
    }
    if (avail < hdr)
        return hdr; /* truncated: the decoder reports it */
    size_t lb = (b == 0xc7 || b == 0xc8 || b == 0xc9) ? hdr - 2 : hdr - 1;
    for (size_t i = 1; i <= lb; i++)
        n = (n << 8) | p[i];
    if (b >= 0xdc) {
        *items = b >= 0xde ? 2 * n : n;
        return hdr;
    }
    return hdr + (size_t)n;
}

/* msgpack-c allocates a container's elements as soon as it reads the
 * header, so a forged count (2^32 entries in a 6-byte message) costs
 * gigabytes. Every element takes at least one byte: refuse counts that
 * the remaining bytes cannot hold, before the decoder sees them. */
static int counts_fit(const char *data, size_t len, cs_err *err)
{
    const unsigned char *p = (const unsigned char *)data;
    uint64_t pending = 1, items;
    size_t pos = 0;

    while (pending > 0 && pos < len) {
        size_t sz = item_size(p + pos, len - pos, &items);
        if (sz == 0) {
            cs_err_set(err, "msgpack malformed at byte %zu", pos);
            return -1;
        }
        pending--;
        if (sz > len - pos)
            return 0; /* truncated: the decoder says so */
        pos += sz;
        if (items > len - pos) {
            cs_err_set(err, "msgpack container at byte %zu claims %llu "
                            "elements in %zu remaining bytes", pos - sz,
                       (unsigned long long)items, len - pos);
            return -1;
        }
        pending += items;
    }
    return 0;
}

json_t *jmp_unpack(const char *data, size_t len, cs_err *err)
{
    msgpack_unpacked up;
    size_t off = 0;
    json_t *out = NULL;

    if (counts_fit(data, len, err))
        return NULL;
    msgpack_unpacked_init(&up);
    switch (msgpack_unpack_next(&up, data, len, &off)) {
    case MSGPACK_UNPACK_SUCCESS:
        if (off != len) {
            cs_err_set(err, "msgpack has %zu trailing bytes", len - off);
            break;
        }
        out = from_obj(&up.data, 0, err);
        break;
    case MSGPACK_UNPACK_CONTINUE:
        cs_err_set(err, "msgpack truncated after %zu bytes", len);
        break;
    default:
        cs_err_set(err, "msgpack malformed");
        break;
    }
    msgpack_unpacked_destroy(&up);
    return out;
}
