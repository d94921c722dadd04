/* libFuzzer target: a followed file's path pattern (ingest/pathpat.c),
 * from the operator's flags or config, and the paths a glob returns. The
 * input is a pattern, a newline, a path. Where the pattern compiles, a
 * path it matches must be one glob(3)'s form of it matches too (fnmatch
 * with FNM_PATHNAME reads it the same way): the matcher and the finder
 * may not disagree on which files are followed. */
#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/pathpat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1), *nl;
    pp_capture c;
    cs_err err;
    pp_pattern *p;

    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    nl = strchr(buf, '\n');
    if (nl)
        *nl = '\0';
    p = pp_compile(buf, &err);
    if (p && nl) {
        int m = pp_match(p, nl + 1, &c);
        if (m && fnmatch(pp_glob(p), nl + 1, FNM_PATHNAME) != 0)
            abort();
        if (m && (strlen(c.job) >= sizeof c.job || c.rank < -1))
            abort();
        if (!m && (c.job[0] || c.host[0] || c.rank != -1))
            abort();
    }
    pp_free(p);
    free(buf);
    return 0;
}
