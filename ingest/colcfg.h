/* The collectors' section of the config file (`collect:`), which the
 * process configuration (core/config.h) leaves to them. Flags given on
 * the command line win over it.
 *
 *   collect:
 *     cluster: prod-a               # the signals' cluster
 *     log:                          # cascade ingest log --follow
 *       checkpoint: /var/lib/cascade/follow.pos
 *       from_start: false
 *       sweep_ms: 1000
 *       files:
 *         - {path: /var/log/kern.log, format: syslog}
 *         - {path: "/shared/jobs/{job}/rank{rank}.log", format: plain,
 *            source: app, host: ""}
 *     journal:                      # cascade ingest journal
 *       checkpoint: /var/lib/cascade/journal.pos
 *       directory: ""               # "": the system journal
 *       kernel: true
 *       units: [slurmd, nvidia-fabricmanager]
 *       from_start: false
 *     slurm:                        # cascade ingest slurm
 *       poll: 10s
 *       state: /var/lib/cascade/slurm.state
 *       bin: /usr/bin
 *       canary_feature: canary
 *       canary_nodes: "gpu-[001-002]"   # canary too, besides the feature
 *     remote_write:                 # cascade ingest remote-write
 *       listen: 127.0.0.1
 *       port: 9097
 *       token: file:/etc/cascade/remote-write.token   # or env:NAME
 *       allow: [DCGM_FI_DEV_XID_ERRORS]   # kept beside the rules' names
 *       all: false                  # true: keep every name
 *       rename: {DCGM_FI_DEV_CLOCKS_EVENT_REASONS: DCGM_FI_DEV_CLOCK_THROTTLE_REASONS}
 *       job_labels: [hpc_job]       # a sample's job, first present
 *       max_body: 1MiB
 *       max_decompressed: 16MiB
 *       max_samples: 50000
 *       ack_timeout_s: 5
 *     k8s:                          # cascade ingest k8s
 *       kubeconfig: /etc/cascade/kubeconfig   # "": in-cluster
 *       context: ""                 # "": its current-context
 *       namespace: ""               # "": every namespace
 *       events_api: core            # or events (events.k8s.io/v1)
 *       state: /var/lib/cascade/k8s.state
 *       pod_selector: batch.kubernetes.io/job-name
 *       workloads: true             # Kueue's, where installed
 *       team_label: cascade.io/team
 *       job_name_label: cascade.io/job-name
 *       rack_label: cascade.io/rack
 *       canary_label: cascade.io/canary
 *       reserved_classes: [training-reserved]  # priority classes
 *       max_age: 2h
 *
 * Every problem is told as FILE:LINE:COL (a pattern's own problem with
 * its column in the file); nothing half-loaded is returned. */
#ifndef CS_COLCFG_H
#define CS_COLCFG_H

#include <limits.h>
#include <stddef.h>

#include "core/err.h"
#include "core/signal.h"
#include "ingest/logline.h"

#define CCF_MAX_FILES 1024
#define CCF_MAX_UNITS 64
#define CCF_MAX_NAMES 256 /* remote_write.allow */
#define CCF_MAX_RENAME 64
#define CCF_MAX_JOB_LABELS 8
#define CCF_NAME_MAX 200 /* a metric or label name */
#define CCF_MAX_CLASSES 16 /* k8s.reserved_classes */

typedef struct ccf_file {
    char path[PATH_MAX];
    ll_format format;  /* LL_SYSLOG (default) or LL_PLAIN */
    sig_source source; /* plain lines': app unless told */
    char host[128];    /* plain lines' where the path names none; "": this
                          machine's name */
} ccf_file;

typedef struct ccf_conf {
    char cluster[128]; /* "": none given */
    struct {
        char checkpoint[PATH_MAX];
        int from_start;
        int sweep_ms; /* 0: none given */
        ccf_file *files; /* malloc'd */
        size_t nfiles;
    } log;
    struct {
        char checkpoint[PATH_MAX];
        char directory[PATH_MAX];
        int kernel; /* -1: none given */
        int from_start;
        char units[CCF_MAX_UNITS][256];
        size_t nunits;
    } journal;
    struct {
        int poll_ms; /* 0: none given */
        char state[PATH_MAX];
        char bindir[PATH_MAX];
        char canary_feature[64];
        char canary_nodes[4096]; /* a hostlist; "": none */
    } slurm;
    struct {
        char listen[64];
        int port; /* -1: none given */
        char token[512]; /* read from its file: or env: reference */
        size_t max_body, max_decompressed, max_samples; /* 0: none given */
        int ack_timeout_s;
        int all;
        char allow[CCF_MAX_NAMES][CCF_NAME_MAX];
        size_t nallow;
        char rename[CCF_MAX_RENAME][2][CCF_NAME_MAX]; /* from, to */
        size_t nrename;
        char job_labels[CCF_MAX_JOB_LABELS][CCF_NAME_MAX];
        size_t njob_labels;
    } remote_write;
    struct {
        char kubeconfig[PATH_MAX], context[254], ns[254], state[PATH_MAX];
        char pod_selector[256];
        int events_api_v1; /* -1: none given */
        int workloads;     /* -1: none given */
        char team_label[CCF_NAME_MAX], job_name_label[CCF_NAME_MAX];
        char rack_label[CCF_NAME_MAX], canary_label[CCF_NAME_MAX];
        char reserved[CCF_MAX_CLASSES][254];
        size_t nreserved;
        int max_age_s; /* 0: none given */
    } k8s;
} ccf_conf;

void ccf_defaults(ccf_conf *c);
/* Reads path's collect section over c (absent: c as it is; a files list
 * replaces c's). -1 with err "FILE:LINE:COL: what", c unchanged. */
int ccf_load(ccf_conf *c, const char *path, cs_err *err);
void ccf_free(ccf_conf *c);

/* The collect section's reference (docs/CONFIG.md), from its key tables. */
void ccf_reference(void *stdio_file);

#endif
