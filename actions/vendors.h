/* The notification and ticket executors, over HTTP on the loop:
 *
 *   slack.post         Slack incoming webhook: a Block Kit message with
 *                      the incident, its root cause, the proposed actions
 *                      and a link to the action's approval page
 *   jira.upsert        Jira REST v2: one issue per incident, found again by
 *                      its label cascade-INCIDENT and updated; never closed
 *   pagerduty.trigger, pagerduty.acknowledge, pagerduty.resolve
 *                      PagerDuty Events API v2, dedup_key = the incident
 *   webhook.post       a JSON POST of the action request to any endpoint
 *
 * A call whose section is missing from the executor's config fails with
 * "not configured" (a playbook marks such a call optional to skip it). */
#ifndef CS_VENDORS_H
#define CS_VENDORS_H

#include <jansson.h>

#include "actions/excfg.h"
#include "actions/exec.h"
#include "core/httpc.h"
#include "core/err.h"

typedef struct vendors vendors;

/* Borrows h and c; both outlive it. */
vendors *vn_new(httpc *h, const ex_conf *c);
/* Frees calls in flight without calling back: free h first. */
void vn_free(vendors *v);

int vn_knows(const char *op);
/* Whether op's section is configured. */
int vn_ready(const vendors *v, const char *op);
/* req: the action request ({id, incident, scenario, cluster, summary,
 * status, root_cause, proposed, action}); args: the call's arguments,
 * templates filled. -1 (err set) when it cannot start; else fn once. */
int vn_call(vendors *v, const char *op, const json_t *args, const json_t *req,
            exec_done_fn fn, void *arg, cs_err *err);
/* As an executor: it knows the operations whose section is configured
 * (its calls go through the HTTP client: free that first). */
executor vn_executor(vendors *v);

/* The request bodies, for tests. */
json_t *vn_slack_message(const json_t *req, const char *text,
                         const char *approval_url, const char *console_url);
json_t *vn_pagerduty_event(const json_t *req, const char *action,
                           const char *routing_key, const char *severity);
json_t *vn_jira_fields(const json_t *req, const char *summary,
                       const ex_conf *c, int create);

#endif
