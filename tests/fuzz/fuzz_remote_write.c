/* libFuzzer target: a Prometheus remote-write body (ingest/rwdecode.c:
 * snappy, then protobuf). The first byte picks the form: even, the rest
 * is the body as sent; odd, the rest is the protobuf, compressed here
 * first, so that the fuzzer reaches the message decoding too; bit 1
 * keeps every name (--all). Every sample is accounted for exactly once
 * (published, filtered, without a host, not finite or invalid), and
 * every signal made reads back as a metric signal. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>

#include "core/signal.h"
#include "ingest/rwdecode.h"

#define NOW_US 1772438400000000LL

static void check(const rwd_result *r)
{
    cs_err err;
    sig s;

    if (r->n + r->filtered + r->nohost + r->nonfinite + r->invalid !=
        r->samples)
        abort();
    if (r->invalid && !r->first_invalid[0])
        abort();
    for (size_t i = 0; i < r->n; i++) {
        if (sig_parse_msgpack(&s, r->msgs[i].val, r->msgs[i].len, &err))
            abort();
        if (s.source != SRC_METRIC || !s.host || !s.name ||
            strcmp(s.cluster, r->msgs[i].key))
            abort();
        sig_free(&s);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rwd *d;
    rwd_result r;
    cs_err err;
    char *body = NULL;
    size_t len;

    if (!size)
        return 0;
    d = rwd_new(&(rwd_opts){.all = data[0] & 2, .max_samples = 5000}, &err);
    if (!d)
        abort();
    if (data[0] & 1) {
        len = snappy_max_compressed_length(size - 1);
        body = malloc(len ? len : 1);
        if (!body || snappy_compress((const char *)data + 1, size - 1, body,
                                     &len) != SNAPPY_OK)
            abort();
    }
    if (rwd_decode(d, body ? body : (const char *)data + 1,
                   body ? len : size - 1, NOW_US, &r, &err) == 0)
        check(&r);
    else if (r.n || !err.msg[0])
        abort();
    rwd_result_free(&r);
    free(body);
    rwd_free(d);
    return 0;
}
