/* The Model Context Protocol's messages (mcp/rpc.h). */
#include "mcp/rpc.h"

#include <stdio.h>
#include <string.h>

#include "core/str.h"

#ifndef CASCADE_VERSION
#define CASCADE_VERSION "0"
#endif

/* 2025-11-25 changed nothing a tools-only server with JSON answers says
 * (serverInfo, tools, structuredContent beside a text block, argument
 * problems as isError, an unknown tool -32602): the same answers serve
 * every revision here. */
static const char *const VERSIONS[] = {MCP_PROTOCOL_LATEST, "2025-06-18",
                                       "2025-03-26", "2024-11-05"};

int mcp_version_known(const char *v)
{
    for (size_t i = 0; v && i < sizeof VERSIONS / sizeof *VERSIONS; i++)
        if (!strcmp(v, VERSIONS[i]))
            return 1;
    return 0;
}

void mcp_session_init(mcp_session *s, const char *agent)
{
    memset(s, 0, sizeof *s);
    if (agent && *agent)
        snprintf(s->agent, sizeof s->agent, "agent:%s", agent);
}

static json_t *error(const json_t *id, int code, const char *msg)
{
    return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
                     id ? id : json_null(), "error", "code", code, "message",
                     msg);
}

static json_t *result(const json_t *id, json_t *res)
{
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result",
                     res);
}

json_t *mcp_parse_error(const char *why)
{
    return error(NULL, -32700, why);
}

static json_t *initialize(mcp_session *s, const json_t *id, const json_t *params)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    const char *name = json_string_value(
        json_object_get(json_object_get(params, "clientInfo"), "name"));

    /* the client's revision when served, else the newest: the client
     * then decides whether it can go on */
    str_copy(s->version, sizeof s->version,
             mcp_version_known(asked) ? asked : MCP_PROTOCOL_LATEST);
    if (!s->agent[0])
        snprintf(s->agent, sizeof s->agent, "agent:%.80s",
                 name && *name ? name : "unknown");
    return result(id, json_pack(
        "{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion",
        s->version, "capabilities", "tools", "listChanged", 0, "serverInfo",
        "name", "cascade", "title", "cascade incident correlation", "version",
        CASCADE_VERSION, "instructions",
        "cascade correlates GPU-fleet failures into incidents, each with its "
        "root cause, the chain of what it broke, and proposed actions. Start "
        "with list_incidents, then get_incident for the chain and the "
        "actions' states. propose_action asks the executor for a playbook: "
        "anything that changes state waits for a human's approval."));
}

static json_t *call(const mcp_env *env, mcp_session *s, const json_t *id,
                    const json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments"), *res;
    char msg[160];

    if (!name)
        return error(id, -32602, "tools/call needs params.name");
    if (args && !json_is_object(args))
        return error(id, -32602, "params.arguments must be an object");
    if (!(res = mcp_tools_call(env, s->agent[0] ? s->agent : "agent:unknown",
                               name, args))) {
        snprintf(msg, sizeof msg, "Unknown tool: %.100s", name);
        return error(id, -32602, msg);
    }
    return result(id, res);
}

json_t *mcp_handle(const mcp_env *env, mcp_session *s, const json_t *msg)
{
    const json_t *id = json_object_get(msg, "id");
    const char *method = json_string_value(json_object_get(msg, "method"));
    const json_t *params = json_object_get(msg, "params");
    char why[160];

    if (json_is_array(msg))
        return error(NULL, -32600, "batches are not supported (protocol "
                                   MCP_PROTOCOL_LATEST ")");
    if (!json_is_object(msg) ||
        !json_is_string(json_object_get(msg, "jsonrpc")) ||
        strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0"))
        return error(NULL, -32600, "not a JSON-RPC 2.0 message");
    if (!method) /* a response to us: we ask nothing, nothing to answer */
        return NULL;
    if (id && !json_is_string(id) && !json_is_integer(id))
        return error(NULL, -32600, "id must be a string or an integer");
    if (!id) { /* a notification */
        if (!strcmp(method, "notifications/initialized"))
            s->initialized = 1;
        return NULL;
    }
    if (!strcmp(method, "initialize"))
        return initialize(s, id, params);
    if (!strcmp(method, "ping"))
        return result(id, json_object());
    if (!strcmp(method, "tools/list"))
        return result(id, mcp_tools_list());
    if (!strcmp(method, "tools/call"))
        return call(env, s, id, params);
    snprintf(why, sizeof why, "Method not found: %.100s", method);
    return error(id, -32601, why);
}
