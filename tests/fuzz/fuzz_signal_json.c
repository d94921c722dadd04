/* Signal JSON lines: parse, normalise, re-encode as msgpack and decode it
 * again; the round trip must agree. The line, any valid UTF-8, also goes
 * through core/jw.h's string writer, which must write it as jansson does
 * (incident state records are written with it). */
#include <stdlib.h>
#include <string.h>

#include "core/jw.h"
#include "core/signal.h"

static void same_as_jansson(const char *s)
{
    json_t *v = json_string(s);
    char *want = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT), *got;
    jw w;

    jw_init(&w);
    jw_str(&w, s);
    got = jw_take(&w);
    if (!want || strcmp(want, got))
        abort();
    free(want);
    free(got);
    json_decref(v);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    sig a, b;
    cs_err err;
    char *buf;
    size_t len;

    if (sig_parse_json(&a, (const char *)data, size, &err))
        return 0;
    if (a.line)
        same_as_jansson(a.line);
    sig_to_msgpack(&a, &buf, &len);
    if (sig_parse_msgpack(&b, buf, len, &err))
        abort();
    json_t *o = sig_json(&b);
    if (!json_equal(a.obj, o))
        abort();
    json_decref(o);
    sig_free(&b);
    free(buf);
    sig_free(&a);
    return 0;
}
