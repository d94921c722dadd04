/* libFuzzer target: the SLURM controller's JSON (ingest/slurmjson.c), a
 * job's batch script (ingest/jobconf.c) and `scontrol show topology`
 * (ingest/slurmtopo.c), all written by others: the first byte picks the
 * reader ('T': the topology). Whatever a reader keeps must be
 * NUL-terminated within its fields, a config must be an object, a rack a
 * name. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/jobconf.h"
#include "ingest/slurmjson.h"
#include "ingest/slurmtopo.h"

static void rack(void *arg, const char *node, const char *sw)
{
    (void)arg;
    if (!node[0] || strnlen(node, 128) == 128 || !sw[0] ||
        strnlen(sw, 128) == 128)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data + 1;
    size_t len = size ? size - 1 : 0;
    cs_err err;

    if (!size)
        return 0;
    if (data[0] == 'T') { /* one byte value, so the corpus keeps its meaning */
        if (stopo_parse(text, len, rack, NULL, &err) < -1)
            abort();
    } else if (data[0] % 3 == 0) {
        sj_job *v;
        size_t n;
        if (sj_parse_jobs(text, len, &v, &n, &err) == 0) {
            for (size_t i = 0; i < n; i++)
                if (strnlen(v[i].id, sizeof v[i].id) == sizeof v[i].id ||
                    !v[i].nodes || !v[i].id[0])
                    abort();
            sj_free_jobs(v, n);
        }
    } else if (data[0] % 3 == 1) {
        sj_node *v;
        size_t n;
        if (sj_parse_nodes(text, len, &v, &n, &err) == 0) {
            for (size_t i = 0; i < n; i++)
                if (strnlen(v[i].flags, sizeof v[i].flags) == sizeof v[i].flags ||
                    v[i].gpus < 0)
                    abort();
            free(v);
        }
    } else {
        json_t *c = jc_parse(text, len);
        if (c && !json_is_object(c))
            abort();
        json_decref(c);
    }
    return 0;
}
