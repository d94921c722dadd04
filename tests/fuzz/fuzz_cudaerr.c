/* libFuzzer target: the CUDA error reader (rules/cudaerr.c) on a job's
 * line. What it finds must be a code of its table, with a name, and its
 * one-line form must fit any buffer it claims to have filled. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rules/cudaerr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size + 1), out[256];
    ce_error e;
    size_t n;

    if (!line)
        return 0;
    memcpy(line, data, size);
    line[size] = '\0';
    if (ce_find(line, &e)) {
        if (e.code <= 0 || (!e.rt && !e.drv) || !e.text || !*e.text)
            abort();
        n = ce_canon(line, out, sizeof out);
        if (n != strlen(out) || !strstr(out, e.text))
            abort();
        if (ce_canon(line, out, 8) != 0) /* too small: nothing claimed */
            abort();
    } else if (ce_canon(line, out, sizeof out) != 0) {
        abort();
    }
    free(line);
    return 0;
}
