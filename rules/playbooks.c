#include "rules/playbooks.h"

#include <string.h>

#define STEPS(...) (const pb_step[]){__VA_ARGS__}, \
    (int)(sizeof((const pb_step[]){__VA_ARGS__}) / sizeof(pb_step))

static const pb_scenario catalog[] = {
    {"hw.gpu_off_bus", 1, "a GPU fell off the PCIe bus (Xid 79)",
     "drain the node, resubmit its jobs elsewhere, reset or reboot",
     STEPS({"node.drain", APPR_HITL, PB_TARGET_NODE, PB_FIX_NONE, NULL},
           {"job.resubmit", APPR_AUTO, PB_TARGET_EACH_JOB, PB_FIX_EXCLUDE_NODE,
            NULL},
           {"gpu.reset", APPR_HITL, PB_TARGET_NODE, PB_FIX_NONE, NULL},
           {"node.reboot", APPR_HITL, PB_TARGET_NODE, PB_FIX_NONE, NULL},
           {"ticket.create", APPR_AUTO, PB_TARGET_NODE, PB_FIX_TICKET,
            "hardware"})},
    {"hw.ecc_uncorrectable", 1, "uncorrectable GPU memory (ECC) errors",
     "cancel the affected jobs, drain the node, reset the GPU when idle",
     STEPS({"job.cancel", APPR_AUTO, PB_TARGET_EACH_JOB, PB_FIX_NONE, NULL},
           {"node.drain", APPR_HITL, PB_TARGET_NODE, PB_FIX_NONE, NULL},
           {"gpu.reset", APPR_HITL, PB_TARGET_NODE, PB_FIX_NONE, NULL},
           {"ticket.create", APPR_AUTO, PB_TARGET_NODE, PB_FIX_TICKET,
            "hardware"})},
    {"hw.nvlink", 1, "NVLink errors (Xid 74)",
     "migrate multi-GPU jobs and drain the node for maintenance",
     STEPS({"job.migrate", APPR_HITL, PB_TARGET_EACH_JOB, PB_FIX_NONE, NULL},
           {"node.drain", APPR_HITL, PB_TARGET_NODE, PB_FIX_NONE, NULL})},
    {"node.down", 1, "the scheduler lost the node",
     "probe its health and resubmit its jobs elsewhere",
     STEPS({"diag.health_probe", APPR_AUTO, PB_TARGET_NODE, PB_FIX_NONE, NULL},
           {"node.annotate", APPR_AUTO, PB_TARGET_NODE, PB_FIX_NONE, NULL},
           {"job.resubmit", APPR_AUTO, PB_TARGET_EACH_JOB, PB_FIX_EXCLUDE_NODE,
            NULL})},
    {"cascade.node_crash", 1, "one node failure took down several jobs",
     "resubmit every job elsewhere, drain the node, open a hardware ticket",
     STEPS({"job.resubmit", APPR_AUTO, PB_TARGET_EACH_JOB, PB_FIX_EXCLUDE_NODE,
            NULL},
           {"node.drain", APPR_HITL, PB_TARGET_NODE, PB_FIX_NONE, NULL},
           {"ticket.create", APPR_AUTO, PB_TARGET_NODE, PB_FIX_TICKET,
            "hardware"})},
    {"oom.batch_size", 0, "CUDA OOM in the forward pass: batch too large",
     "resubmit with a smaller batch and gradient checkpointing",
     STEPS({"job.resubmit", APPR_AUTO, PB_TARGET_JOB, PB_FIX_BATCH, NULL})},
    {"oom.activation", 0, "CUDA OOM in the backward pass: activations too large",
     "resubmit with gradient checkpointing and fp16",
     STEPS({"job.resubmit", APPR_AUTO, PB_TARGET_JOB, PB_FIX_ACTIVATION,
            NULL})},
    {"oom.fragmentation", 0,
     "CUDA OOM with enough reserved memory: the allocator is fragmented",
     "resubmit with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
     STEPS({"job.resubmit", APPR_AUTO, PB_TARGET_JOB, PB_FIX_ALLOC_CONF,
            NULL})},
};

const pb_scenario *pb_lookup(const char *scenario)
{
    for (size_t i = 0; i < sizeof catalog / sizeof *catalog; i++)
        if (strcmp(catalog[i].id, scenario) == 0)
            return &catalog[i];
    return NULL;
}

const char *pb_approval_name(pb_approval a)
{
    return a == APPR_AUTO ? "auto" : a == APPR_HITL ? "hitl" : "canary";
}
