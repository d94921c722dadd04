/* scontrol's one-line node and job records as the executor reads them
 * back from a controller: both parsers on every input; a refusal must say
 * why, and a node record always yields its state and owner. The same
 * bytes as slurmrestd's answers: a node object and a job's hostlist. */
#include <stdlib.h>
#include <string.h>

#include "actions/slurm.h"
#include "actions/slurmrest.h"

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

    char *list = strndup((const char *)data, size);
    json_t *node = json_loadb((const char *)data, size, 0, NULL);
    f = json_object();
    if (list) {
        srest_hostlist_has(list, "gpu-001");
        srest_hostlist_has(list, "n10");
    }
    err.msg[0] = 0;
    if (srest_node_facts(node, f, &err) ? !err.msg[0]
                                         : !json_object_get(f, "node.state"))
        abort();
    json_decref(node);
    json_decref(f);
    free(list);
    return 0;
}
