/* The Model Context Protocol's messages (JSON-RPC 2.0) for a server of
 * tools (mcp/tools.h): initialize (protocol version negotiated, the
 * client's name taken as the agent's), ping, tools/list and tools/call;
 * notifications get no answer. Transport-free: stdio and streamable HTTP
 * (cmd/cmd_mcp.c, mcp/http.h) hand it one message at a time. */
#ifndef CS_MCP_RPC_H
#define CS_MCP_RPC_H

#include <jansson.h>

#include "mcp/tools.h"

/* The newest protocol revision served, and the others answered as such. */
#define MCP_PROTOCOL_LATEST "2025-11-25"
int mcp_version_known(const char *v);

typedef struct mcp_session {
    char version[16]; /* negotiated at initialize */
    char agent[96];   /* "agent:NAME": the initiator the audit names */
    int initialized;
} mcp_session;

/* Before initialize: agent (NULL: from the client's name) */
void mcp_session_init(mcp_session *s, const char *agent);
/* One message: the answer to send (a new reference), or NULL when none
 * is due (a notification, or a response from the client). A message that
 * is not JSON-RPC 2.0 gets its error answer (id null). */
json_t *mcp_handle(const mcp_env *env, mcp_session *s, const json_t *msg);
/* A parse error's answer (-32700). */
json_t *mcp_parse_error(const char *why);

#endif
