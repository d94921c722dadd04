#include "core/jcanon.h"

#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

/* Keys on the stack up to this many, as Alertmanager's labels are. */
#define JCANON_STACK_KEYS 32

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* jansson sorts an object's keys with strcmp before it dumps them. */
static void write_object(jw *w, const json_t *v)
{
    const char *stack[JCANON_STACK_KEYS], **keys = stack, *k;
    size_t n = json_object_size(v), i = 0;
    json_t *e;

    if (n > JCANON_STACK_KEYS)
        keys = xmalloc(n * sizeof *keys);
    json_object_foreach((json_t *)v, k, e) keys[i++] = k;
    qsort(keys, n, sizeof *keys, cmp_key);
    jw_obj(w);
    for (i = 0; i < n; i++) {
        jw_key(w, keys[i]);
        jcanon_write(w, json_object_get(v, keys[i]));
    }
    jw_end_obj(w);
    if (keys != stack)
        free(keys);
}

void jcanon_write(jw *w, const json_t *v)
{
    size_t i;
    json_t *e;

    switch (json_typeof(v)) {
    case JSON_OBJECT:
        write_object(w, v);
        break;
    case JSON_ARRAY:
        jw_arr(w);
        json_array_foreach((json_t *)v, i, e) jcanon_write(w, e);
        jw_end_arr(w);
        break;
    case JSON_STRING:
        jw_str(w, json_string_value(v));
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
