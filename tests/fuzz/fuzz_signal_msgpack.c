/* Signals as they arrive from Kafka: arbitrary bytes must be rejected
 * with a reason or accepted as a valid signal, never crash. The decoder
 * (core/jmp.c) reads the bytes itself; msgpack-c's decoder is the oracle
 * it must agree with: whatever msgpack-c accepts, jmp_unpack accepts as
 * the same value, and what it adds is only nesting past msgpack-c's
 * 32-level stack (msgpack-c then fails with MSGPACK_UNPACK_NOMEM_ERROR;
 * the depth of the value alone cannot tell, since a later duplicate key
 * may replace the deep part). */
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "core/jmp.h"
#include "core/signal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* The decoder cascade used before its own: msgpack-c's object tree copied
 * into jansson, with the same rules (string keys without NUL, UTF-8,
 * integers that fit int64, no bin/ext). */
static json_t *oracle_obj(const msgpack_object *o)
{
    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
        return json_null();
    case MSGPACK_OBJECT_BOOLEAN:
        return json_boolean(o->via.boolean);
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        return o->via.u64 > (uint64_t)INT64_MAX
                   ? NULL
                   : json_integer((json_int_t)o->via.u64);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return json_integer((json_int_t)o->via.i64);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        return json_real(o->via.f64);
    case MSGPACK_OBJECT_STR:
        return json_stringn(o->via.str.size ? o->via.str.ptr : "",
                            o->via.str.size);
    case MSGPACK_OBJECT_ARRAY: {
        json_t *a = json_array();
        for (uint32_t i = 0; i < o->via.array.size; i++) {
            json_t *e = oracle_obj(&o->via.array.ptr[i]);
            if (!e || json_array_append_new(a, e)) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    case MSGPACK_OBJECT_MAP: {
        json_t *m = json_object();
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            const msgpack_object_kv *kv = &o->via.map.ptr[i];
            size_t kl = kv->key.via.str.size;
            json_t *e;
            if (kv->key.type != MSGPACK_OBJECT_STR ||
                (kl && memchr(kv->key.via.str.ptr, '\0', kl)) ||
                !(e = oracle_obj(&kv->val)) ||
                json_object_setn_new(m, kl ? kv->key.via.str.ptr : "", kl, e)) {
                json_decref(m);
                return NULL;
            }
        }
        return m;
    }
    default:
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
 * gigabytes: the oracle only sees counts the bytes can hold. */
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

static json_t *oracle(const unsigned char *data, size_t size, int *too_deep)
{
    msgpack_unpacked up;
    size_t off = 0;
    json_t *out = NULL;
    int rc;

    cs_err err;

    if (counts_fit((const char *)data, size, &err))
        return NULL;
    msgpack_unpacked_init(&up);
    rc = msgpack_unpack_next(&up, (const char *)data, size, &off);
    *too_deep = rc == MSGPACK_UNPACK_NOMEM_ERROR;
    if (rc == MSGPACK_UNPACK_SUCCESS && off == size)
        out = oracle_obj(&up.data);
    msgpack_unpacked_destroy(&up);
    return out;
}

static int same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* The same text, key order included: an open report's head is stored
 * as its dump. */
static int same_dump(json_t *a, json_t *b)
{
    char *x = json_dumps(a, JSON_COMPACT), *y = json_dumps(b, JSON_COMPACT);
    int same = x && y && strcmp(x, y) == 0;

    free(x);
    free(y);
    return same;
}

static int same_json(json_t *a, json_t *b)
{
    return a == b || (a && b && json_equal(a, b));
}

/* sig_parse_msgpack reads a plain line signal without a JSON object;
 * whatever path it takes, it must give what the general one (decode,
 * then normalise the object) gives, and fail where that fails. */
static void check_paths(const unsigned char *data, size_t size)
{
    sig s, g;
    cs_err err = {{0}}, gerr = {{0}};
    json_t *o = jmp_unpack((const char *)data, size, &gerr), *j;
    /* decoded from a copy that is then overwritten: nothing of the
     * signal may point into the message it came from */
    char *copy = malloc(size ? size : 1);
    int rc, grc = o ? sig_adopt_json(&g, o, &gerr) : -1;

    if (!copy)
        abort();
    memcpy(copy, data, size);
    rc = sig_parse_msgpack(&s, copy, size, &err);
    memset(copy, 0xc1, size);
    free(copy);

    if (size > SIG_MAX_BYTES) { /* refused before either path looks */
        if (rc == 0)
            abort();
        if (grc == 0)
            sig_free(&g);
        return;
    }

    if (rc != grc)
        abort();
    if (rc) {
        if (!err.msg[0] || strcmp(err.msg, gerr.msg))
            abort(); /* a rejection must say why, in the same words */
        return;
    }
    j = sig_json(&s);
    if (s.ts != g.ts || s.id != g.id || s.source != g.source ||
        s.rank != g.rank || !same_str(s.cluster, g.cluster) ||
        !same_str(s.host, g.host) || !same_str(s.job, g.job) ||
        !same_str(s.job_name, g.job_name) || !same_str(s.line, g.line) ||
        !same_str(s.name, g.name) || !same_str(s.state, g.state) ||
        s.value != g.value || !same_json(s.labels, g.labels) ||
        !same_json(s.nodes, g.nodes) || !same_json(s.config, g.config) ||
        !same_json(s.body, g.body) || !j || !json_equal(j, g.obj) ||
        !same_dump(j, g.obj))
        abort();
    json_decref(j);
    sig_free(&s);
    sig_free(&g);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    cs_err err = {{0}};
    json_t *mine, *theirs;
    int too_deep = 0;

    check_paths(data, size);

    mine = jmp_unpack((const char *)data, size, &err);
    theirs = oracle(data, size, &too_deep);
    if (theirs && (!mine || !json_equal(mine, theirs)))
        abort();
    if (mine && !theirs && !too_deep)
        abort();
    json_decref(mine);
    json_decref(theirs);
    return 0;
}
