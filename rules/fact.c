/* The fact vocabulary (rules/fact.h). */
#include "rules/fact.h"

#include <string.h>

static const char *const fact_names[FACT__COUNT] = {
    [FACT_XID] = "xid",
    [FACT_NODE_DOWN] = "node_down",
    [FACT_CUDA_OOM] = "cuda_oom",
    [FACT_APP_ERROR] = "app_error",
    [FACT_JOB_STATE] = "job_state",
    [FACT_INVENTORY] = "inventory",
    [FACT_CHECKPOINT] = "checkpoint",
    [FACT_JOB_FAULT] = "job_fault",
    [FACT_NODE_FAULT] = "node_fault",
    [FACT_MARK] = "mark",
    [FACT_NCCL_TIMEOUT] = "nccl_timeout",
    [FACT_SPOT] = "spot",
    [FACT_HOST_OOM] = "host_oom",
    [FACT_PROGRESS] = "progress",
    [FACT_RECOVERY] = "recovery",
    [FACT_EVENT] = "event",
};

const char *fact_name(fact_kind k)
{
    return (unsigned)k < FACT__COUNT ? fact_names[k] : "?";
}

int fact_parse(const char *name)
{
    for (int i = 0; name && i < FACT__COUNT; i++)
        if (!strcmp(name, fact_names[i]))
            return i;
    return -1;
}

int fact_from_text(int kind)
{
    return kind >= 0 && kind < FACT__COUNT && kind != FACT_JOB_STATE &&
           kind != FACT_INVENTORY;
}

/* Fragmentation is decided from numbers, not from the advice text that
 * every 2.x message carries: reserved-but-unallocated memory that would
 * have covered the request means the memory exists but is fragmented. */
const char *fact_oom_scenario(const fact *f)
{
    if (f->tried > 0 && f->reserved_unalloc >= f->tried)
        return "oom.fragmentation";
    if (f->pass == OOM_PASS_BACKWARD)
        return "oom.activation";
    return "oom.batch_size";
}
