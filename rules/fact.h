/* The fact: the vocabulary the classifier writes, the rule files name and
 * the engine reasons with. A leaf: it knows nothing of either side. */
#ifndef CS_FACT_H
#define CS_FACT_H

/* Fact kinds. A signature (rules/<family>.yaml) names the kind it makes;
 * what the engine decides from a fact is keyed by its kind. */
typedef enum {
    FACT_XID,        /* GPU fault reported by the driver or an exporter */
    FACT_NODE_DOWN,  /* the scheduler lost a node */
    FACT_CUDA_OOM,   /* PyTorch CUDA OOM, with its traceback context */
    FACT_APP_ERROR,  /* a job's fatal error line (CUDA error, NCCL error) */
    FACT_JOB_STATE,  /* scheduler job lifecycle */
    FACT_INVENTORY,  /* node topology and policy */
    FACT_CHECKPOINT, /* context only: a checkpoint is being written */
    FACT_JOB_FAULT,  /* the text alone names a job-level scenario */
    FACT_NODE_FAULT, /* the text alone names a node-level scenario */
    FACT_MARK,       /* evidence for a later decision: its scenario is the
                      * cause of the job's next collective timeout */
    FACT_NCCL_TIMEOUT, /* a collective timed out: cause from the evidence */
    FACT_SPOT,       /* the cloud is reclaiming a node or its pods */
    FACT_HOST_OOM,   /* the kernel's OOM killer ended a process */
    FACT_PROGRESS,   /* a training step completed (its number in step) */
    FACT_RECOVERY,   /* a node is back (the scheduler or Kubernetes says
                      * so), or an alert resolved (scenario: the fault that
                      * ended) */
    FACT_EVENT,      /* evidence for correlation rules only (rule files'
                      * `correlations:`); opens nothing on its own */
    FACT__COUNT
} fact_kind;

enum oom_pass { OOM_PASS_UNKNOWN, OOM_PASS_FORWARD, OOM_PASS_BACKWARD };

typedef struct fact {
    fact_kind kind;
    /* The scenario this fact signals on its own (catalog id), or NULL. */
    const char *scenario;
    char host[128];
    char job[128];
    char gpu[16];  /* GPU index, when the source says it */
    char pci[32];  /* PCI bus id, when the source says it */
    int xid;
    int rank;
    /* CUDA OOM, bytes; -1 when the message does not say */
    double tried, free_b, capacity, reserved_unalloc;
    enum oom_pass pass;
    char excerpt[160]; /* the line that made the fact, for summaries */
    /* The signature's (?<detail>) field (taint, interface, NIC), or what a
     * report's lines said (the collectives each rank ran). */
    char detail[320];
    /* The signature's (?<named>) field: a node the message is about, not
     * its printer (Ray's GCS naming a dead node). The engine moves the
     * fact there when its inventory knows the name, else leaves it on the
     * line's host. */
    char named[128];
    long step, pid;    /* -1 when the text does not say */
    const char *sig_id; /* the signature that matched (catalog string) */
} fact;

/* Kind names as rule files spell them ("xid", "job_fault", ...). */
const char *fact_name(fact_kind k);
int fact_parse(const char *name); /* -1 when unknown */
/* Whether a signature may make this kind (job_state, inventory: no). */
int fact_from_text(int kind);
/* A CUDA OOM's scenario from what it says: fragmentation when the
 * reserved-but-unallocated memory covered the request, else by pass. */
const char *fact_oom_scenario(const fact *f);

#endif
