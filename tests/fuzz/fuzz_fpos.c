/* libFuzzer target: the follower's checkpoint file (ingest/fpos.c), read
 * at every start from a disk the follower does not own alone. Whatever
 * parses must hold what the format allows: a path of its own line, a
 * fingerprint no longer than FPOS_FP_MAX. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/fpos.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fpos_set s = {0};
    cs_err err;

    if (fpos_parse("fuzz", (const char *)data, size, &s, &err) == 0) {
        for (size_t i = 0; i < s.n; i++)
            if (!s.v[i].path[0] || strchr(s.v[i].path, '\n') ||
                s.v[i].fp_len > FPOS_FP_MAX)
                abort();
    } else if (s.n || s.v) {
        abort();
    }
    fpos_clear(&s);
    return 0;
}
