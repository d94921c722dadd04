// The official MCP client SDK driving `cascade mcp`, as an agent would:
// over stdio (the SDK spawns the command) or streamable HTTP (a URL). It
// calls every tool and prints what each answered as one JSON object, for
// the shell test (tests/integration/mcp.sh) to judge.
//
// usage: node mcp_client.mjs stdio AGENT CASCADE_BIN ARG...
//        node mcp_client.mjs http URL TOKEN
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, ...rest] = process.argv.slice(2);
let transport, agent;
if (mode === "stdio") {
  const [name, bin, ...args] = rest;
  agent = name;
  transport = new StdioClientTransport({ command: bin, args, stderr: "inherit" });
} else if (mode === "http") {
  const [url, token] = rest;
  agent = "http-agent";
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
} else {
  console.error("usage: mcp_client.mjs stdio AGENT BIN ARG... | http URL TOKEN");
  process.exit(2);
}

const client = new Client({ name: agent, version: "1.0.0" });
// the revision the client and server agreed on (the HTTP transport keeps
// it; stdio's is kept here the same way)
const keep = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (v) => { transport.agreed = v; keep?.(v); };
await client.connect(transport);
const out = {
  server: client.getServerVersion(),
  protocol: transport.agreed ?? null,
  tools: (await client.listTools()).tools.map((t) => ({
    name: t.name,
    readOnly: t.annotations?.readOnlyHint ?? null,
  })),
  calls: {},
};

// call NAME ARGS: the structured result, or {error} for a tool error, or
// {thrown} for a protocol error
async function call(name, args) {
  try {
    const r = await client.callTool({ name, arguments: args });
    return r.isError ? { error: r.content?.[0]?.text } : { result: r.structuredContent, text: r.content?.[0]?.text };
  } catch (e) {
    return { thrown: String(e.message ?? e) };
  }
}

const plan = JSON.parse(process.env.MCP_PLAN ?? "[]");
for (const [key, name, args] of plan) out.calls[key] = await call(name, args);
await client.close();
console.log(JSON.stringify(out));
