/* scontrol's one-line node and job records as the executor reads them
 * back from a controller: both parsers on every input; a refusal must say
 * why, and a node record always yields its state and owner. */
#include <stdlib.h>

#include "actions/slurm.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    json_t *f = json_object();
    cs_err err = {{0}};

    if (slurm_parse_node((const char *)data, size, f, &err)) {
        if (!err.msg[0])
            abort();
    } else if (!json_object_get(f, "node.state") ||
               !json_object_get(f, "node.drained_by")) {
        abort();
    }
    err.msg[0] = 0;
    if (slurm_parse_job((const char *)data, size, f, &err) && !err.msg[0])
        abort();
    json_decref(f);
    return 0;
}
