/* The Kubernetes executor, on the API server's REST paths (the verbs
 * kubectl uses), over HTTP on the loop:
 *
 *   k8s.cordon          PATCH node spec.unschedulable=true, annotated
 *                       cascade.io/cordoned-by with the incident
 *   k8s.uncordon        GET node, PATCH unschedulable=false without
 *                       cascade's taints and annotation
 *   k8s.taint           GET node, PATCH its taints (key, value, effect)
 *   k8s.annotate        PATCH node metadata.annotations (key, value)
 *   k8s.delete_pod      DELETE the target's pod, or its Job's pods
 *   k8s.delete_job      DELETE the Job (propagationPolicy Background)
 *   k8s.recreate_job    GET the Job, POST a copy under a new name with the
 *                       incident's patch: env, nodes to avoid (node
 *                       affinity), CASCADE_PATCH_<NAME> for the rest
 *
 * Facts: node.state (CORDONED, NOT_READY, SCHEDULABLE), node.drained_by
 * (cascade when its annotation is there, human for any other cordon,
 * none), node.reason, node.jobs (running pods that are not DaemonSet's),
 * job.state (PENDING, RUNNING, COMPLETED, FAILED, DELETED). */
#ifndef CS_K8S_H
#define CS_K8S_H

#include <jansson.h>

#include "actions/excfg.h"
#include "actions/exec.h"
#include "core/httpc.h"
#include "core/err.h"

typedef struct k8s k8s;

/* Borrows h and c (its kubernetes section must be set). */
k8s *k8s_new(httpc *h, const ex_conf *c);
/* Frees calls in flight without calling back: free h first. */
void k8s_free(k8s *k);

int k8s_knows(const char *op);
/* target: {node, job, pod, namespace}; params: the action's patch;
 * incident and id: for annotations and the new Job's name. */
int k8s_call(k8s *k, const char *op, const json_t *args, const json_t *target,
             const json_t *params, const char *incident, const char *id,
             exec_done_fn fn, void *arg, cs_err *err);
int k8s_facts(k8s *k, const char *node, const char *job, const char *ns,
              json_t *facts, exec_done_fn fn, void *arg, cs_err *err);
/* As an executor (its calls go through h: free h first). */
executor k8s_executor(k8s *k);

/* Exposed for tests: the facts a Node and a Job object give, and the Job
 * a recreation posts. */
void k8s_node_facts(const json_t *node, json_t *facts);
void k8s_job_facts(const json_t *job, json_t *facts);
json_t *k8s_job_copy(const json_t *job, const json_t *params,
                     const char *incident, const char *id);

#endif
