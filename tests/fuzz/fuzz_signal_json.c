/* Signal JSON lines: parse, normalise, re-encode as msgpack and decode it
 * again; the round trip must agree. */
#include <stdlib.h>

#include "core/signal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    sig a, b;
    cs_err err;
    char *buf;
    size_t len;

    if (sig_parse_json(&a, (const char *)data, size, &err))
        return 0;
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
