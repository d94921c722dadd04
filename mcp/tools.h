/* The operator's tools as an agent calls them (the Model Context
 * Protocol's tools, mcp/rpc.h): list and get incidents with their chains,
 * the playbook catalog, a node's or job's recent signals, the actions
 * waiting for a human, and proposing an action. Read-only tools run
 * alone; proposing goes through the executor's guardrails like any
 * request (a state-changing playbook waits for a human's approval, never
 * runs on the agent's word), and every call is audited on cascade.audit
 * with the agent as its initiator. Blocking (Kafka reads, Redis): called
 * from one worker, never from an event loop. */
#ifndef CS_MCP_TOOLS_H
#define CS_MCP_TOOLS_H

#include <jansson.h>

#include "core/config.h"
#include "core/kafka.h"
#include "rules/playbooks.h"

typedef struct mcp_env {
    const cs_config *cfg;     /* kafka (brokers, properties), redis */
    const pb_catalog *rules;  /* the playbooks and scenarios */
    kfk_producer *prod;       /* audit records and action requests */
    int timeout_ms;           /* a topic read's limit */
} mcp_env;

/* The tools' list as tools/list answers it (a new reference). */
json_t *mcp_tools_list(void);
/* Calls tool name with args for agent ("agent:NAME"): the result object
 * of tools/call ({content, structuredContent, isError}), or NULL when
 * there is no such tool. The call and its outcome are audited. */
json_t *mcp_tools_call(const mcp_env *env, const char *agent,
                       const char *name, const json_t *args);

#endif
