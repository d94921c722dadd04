/* What the Kubernetes API server answers, as the executor reads it: a
 * Node or a Job read back as facts, and a Job copied for a resubmission.
 * Any JSON must give facts with a known state, and a copy must be a Job
 * without the old one's identity, or NULL. */
#include <stdlib.h>
#include <string.h>

#include "actions/k8s.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static const char *const node_states[] = {"CORDONED", "SCHEDULABLE", "NOT_READY"};
static const char *const job_states[] = {"PENDING", "RUNNING", "COMPLETED", "FAILED"};

static int one_of(const json_t *v, const char *const *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (json_string_value(v) && !strcmp(json_string_value(v), set[i]))
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    json_t *obj = json_loadb((const char *)data, size, 0, NULL);
    json_t *facts = json_object(), *params, *copy;

    k8s_node_facts(obj, facts);
    k8s_job_facts(obj, facts);
    if (!one_of(json_object_get(facts, "node.state"), node_states, 3) ||
        !one_of(json_object_get(facts, "job.state"), job_states, 4))
        abort();
    params = json_pack("{s:{s:s}, s:[s], s:i}", "env", "A", "1", "exclude_nodes",
                       "gpu-1", "batch", 8);
    copy = k8s_job_copy(obj, params, "inc-1", "act-0011223344556677");
    if (copy) {
        const json_t *md = json_object_get(copy, "metadata");
        if (json_object_get(md, "uid") || json_object_get(copy, "status") ||
            json_object_get(json_object_get(copy, "spec"), "selector") ||
            strlen(json_string_value(json_object_get(md, "name"))) > 63)
            abort();
        json_decref(copy);
    }
    json_decref(params);
    json_decref(facts);
    json_decref(obj);
    return 0;
}
