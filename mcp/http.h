/* The Model Context Protocol's streamable HTTP transport, on the
 * process's event loop (core/hlisten.h): one endpoint, /mcp.
 *
 *   POST /mcp  one JSON-RPC message; a request is answered with its
 *              response as application/json, a notification or a
 *              response with 202. initialize makes a session (its id in
 *              the Mcp-Session-Id header); every later message names it
 *              (400 without, 404 for one not known). A MCP-Protocol-Version
 *              header the server does not serve is 400.
 *   GET /mcp   405: the server sends nothing of its own accord.
 *
 * An Origin header that is not of this machine (localhost, 127.0.0.1,
 * [::1]) is refused with 403 (DNS rebinding), and with a token set every
 * request needs "Authorization: Bearer TOKEN" (401). Tool calls read Kafka
 * and Redis, which blocks: they run on one worker thread, one at a time,
 * and their answers are sent from the loop; everything else is answered
 * at once. */
#ifndef CS_MCP_HTTP_H
#define CS_MCP_HTTP_H

#include "core/err.h"
#include "mcp/tools.h"

struct event_base;

typedef struct mcp_http_opts {
    const char *listen; /* default 127.0.0.1 */
    int port;           /* 0: any free port (mcp_http_port) */
    const char *token;  /* bearer token; NULL or "": none asked */
    const char *agent;  /* the agent's name for every session; NULL: the
                         * client's own (clientInfo.name) */
} mcp_http_opts;

typedef struct mcp_http mcp_http;

/* env must outlive the server. NULL with err. */
mcp_http *mcp_http_start(struct event_base *base, const mcp_env *env,
                         const mcp_http_opts *o, cs_err *err);
int mcp_http_port(const mcp_http *h);
/* Stops the listener; a tool call in progress is waited for and its
 * answer dropped with its connection. NULL is fine. */
void mcp_http_free(mcp_http *h);

#endif
