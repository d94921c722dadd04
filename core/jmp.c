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
        json_t *str = json_stringn(o->via.str.ptr, o->via.str.size);
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
            char key[256];
            if (kv->key.type != MSGPACK_OBJECT_STR ||
                kv->key.via.str.size >= sizeof key) {
                cs_err_set(err, "msgpack map key is not a short string");
                json_decref(m);
                return NULL;
            }
            memcpy(key, kv->key.via.str.ptr, kv->key.via.str.size);
            key[kv->key.via.str.size] = '\0';
            if (strlen(key) != kv->key.via.str.size) {
                cs_err_set(err, "msgpack map key contains a NUL byte");
                json_decref(m);
                return NULL;
            }
            json_t *e = from_obj(&kv->val, depth + 1, err);
            if (!e) {
                json_decref(m);
                return NULL;
            }
            json_object_set_new_nocheck(m, key, e);
        }
        return m;
    }
    default:
        cs_err_set(err, "msgpack type %d (bin/ext) is not allowed in a signal",
                   (int)o->type);
        return NULL;
    }
}

json_t *jmp_unpack(const char *data, size_t len, cs_err *err)
{
    msgpack_unpacked up;
    size_t off = 0;
    json_t *out = NULL;

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
