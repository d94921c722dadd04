/* The read-only JSON document (core/jdoc.h) against jansson, its oracle:
 * for any input the two accept the same texts (json_loadb with
 * JSON_REJECT_DUPLICATES; a NUL byte is the one documented difference),
 * and of an accepted one they read the same
 * values: the same canonical dump (sorted keys), the same msgpack bytes
 * (members in document order) and an equal jansson value; and jw_json
 * writes jansson's value as json_dumps does. */
#include <stdlib.h>
#include <string.h>

#include "core/jdoc.h"
#include "core/jmp.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void same_canon(const json_t *a, const jd_val *v)
{
    char *want = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
    const char *got;
    size_t len;
    jw w;

    jw_init(&w);
    jd_canon(&w, v);
    got = jw_text(&w, &len);
    if (!want || len != strlen(want) || memcmp(got, want, len))
        abort();
    free(want);
    free(jw_take(&w));
}

/* jw_json (core/jw.h) writes a jansson value as json_dumps does, keys in
 * their order or sorted. */
static void same_dump(const json_t *a)
{
    for (int sort = 0; sort <= 1; sort++) {
        char *want = json_dumps(a, JSON_COMPACT | (sort ? JSON_SORT_KEYS : 0));
        char *got = jw_dumps(a, sort);
        if (!want || strcmp(want, got))
            abort();
        free(want);
        free(got);
    }
}

static void same_msgpack(const json_t *a, const jd_val *v)
{
    msgpack_sbuffer x, y;
    msgpack_packer px, py;

    msgpack_sbuffer_init(&x);
    msgpack_sbuffer_init(&y);
    msgpack_packer_init(&px, &x, msgpack_sbuffer_write);
    msgpack_packer_init(&py, &y, msgpack_sbuffer_write);
    jmp_pack(&px, a);
    jd_pack(&py, v);
    if (x.size != y.size || memcmp(x.data, y.data, x.size))
        abort();
    msgpack_sbuffer_destroy(&x);
    msgpack_sbuffer_destroy(&y);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    cs_err err = {{0}};
    json_t *a = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES,
                           NULL);
    jdoc *d = jd_parse((const char *)data, size, &err);
    json_t *b;

    /* jansson drops a NUL byte after a number or a word; jdoc refuses
     * every NUL byte (core/jdoc.h) */
    if (memchr(data, 0, size) ? d != NULL : !a != !d)
        abort();
    if (!d) {
        if (!err.msg[0]) /* a refusal must say why */
            abort();
        json_decref(a);
        return 0;
    }
    same_canon(a, jd_root(d));
    same_dump(a);
    same_msgpack(a, jd_root(d));
    b = jd_json(jd_root(d));
    if (!b || !json_equal(a, b))
        abort();
    json_decref(b);
    json_decref(a);
    jd_free(d);
    return 0;
}
