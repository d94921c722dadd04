#!/usr/bin/env bash
# The tool layer agents use, driven by the official MCP client SDK (npm,
# tests/node) against a running deployment (a correlator and an executor
# in mode on, Redis, the broker) fed a stream of two node crashes:
#   - over stdio: the six tools listed, read-only ones marked so; the
#     incidents, one incident's chain with its actions' states, the
#     playbooks, a node's recent signals, the approvals waiting;
#   - propose_action of a drain (state-changing) becomes a pending
#     approval in the executor's journal, requested by the agent, never
#     run; a notification proposed runs alone; an unknown playbook is a
#     tool error; an approve tool does not exist (a protocol error);
#   - every call is on cascade.audit with the agent as initiator;
#   - over streamable HTTP: the same server answers with its session and
#     a token; without the token 401, a foreign Origin 403, GET 405.
# usage: mcp.sh CASCADE_BIN STREAM
set -uo pipefail
bin=$1 stream=$2
here=$(dirname "$0")
node_dir=$(cd "$here/../node" && pwd)
. "$here/live_lib.sh"
[ -d "$node_dir/node_modules/@modelcontextprotocol/sdk" ] ||
  fail "the MCP SDK is not installed (deploy/setup.sh: npm ci in tests/node)"

start_redis
start_broker 300
echo "alice-secret" > "$tmp/alice.token"
echo "alice file:$tmp/alice.token change,job,recovery,destructive,notify,read_only" > "$tmp/approvers"
"$bin" correlate --brokers "$brokers" --redis "$tmp/redis.sock" --for 250 \
  > "$tmp/correlate.out" 2> "$tmp/correlate.err" & pids+=($!)
start_act_n 1 --brokers "$brokers" --redis "$tmp/redis.sock" --mode on \
  --approvers "$tmp/approvers" --port 0 --for 250
"$bin" ingest file --brokers "$brokers" "$stream" > "$tmp/ingest.out" 2> "$tmp/ingest.err" ||
  fail "ingest failed"
pending() { "$bin" actions list --redis "$tmp/redis.sock" --json 2>/dev/null; }
for _ in $(seq 1 200); do [ "$(pending | grep -c '"node.drain"')" = 2 ] && break; sleep 0.1; done
[ "$(pending | grep -c '"node.drain"')" = 2 ] || fail "the two drains do not wait"
"$bin" incidents list --brokers "$brokers" --json > "$tmp/incs.json" || fail "incidents list"
i453=$(jq -r 'select(.scope.node == "gpu-453") | .id' "$tmp/incs.json")
i451=$(jq -r 'select(.scope.node == "gpu-451") | .id' "$tmp/incs.json")

# ---- stdio, the SDK spawning cascade mcp ----
export MCP_PLAN
MCP_PLAN=$(jq -nc --arg a "$i453" --arg b "$i451" '[
  ["list", "list_incidents", {}],
  ["list_hw", "list_incidents", {"scenario": "hw."}],
  ["get", "get_incident", {"id": $a}],
  ["get_missing", "get_incident", {"id": "inc-0000000000000000"}],
  ["playbooks", "list_playbooks", {}],
  ["signals", "recent_signals", {"node": "gpu-453", "since": "2000-01-01T00:00:00Z"}],
  ["approvals", "list_approvals", {}],
  ["drain", "propose_action", {"playbook": "node.drain", "target": {"node": "gpu-451"},
                               "incident": $b, "reason": "the agent saw gpu-451 crash"}],
  ["recommend", "propose_action", {"playbook": "recommend", "target": {"node": "gpu-451"},
                                   "reason": "tell the team"}],
  ["bad", "propose_action", {"playbook": "node.nuke", "target": {"node": "gpu-451"}, "reason": "x"}],
  ["approve", "approve_action", {"id": "act-0"}]]')
node "$node_dir/mcp_client.mjs" stdio test-agent "$bin" mcp --brokers "$brokers" \
  --redis "$tmp/redis.sock" > "$tmp/stdio.json" 2> "$tmp/stdio.err" ||
  fail "the SDK client failed over stdio: $(tail -5 "$tmp/stdio.err")"
j() { jq -r "$1" "$tmp/stdio.json"; }
[ "$(j '.server.name')" = cascade ] || fail "server: $(j .server)"
[ "$(j .protocol)" = 2025-11-25 ] || fail "the revision agreed over stdio: $(j .protocol)"
[ "$(j '[.tools[].name] | sort | join(",")')" = \
  "get_incident,list_approvals,list_incidents,list_playbooks,propose_action,recent_signals" ] ||
  fail "tools: $(j '[.tools[].name]')"
[ "$(j '[.tools[] | select(.readOnly == true) | .name] | length')" = 5 ] ||
  fail "read-only tools: $(j .tools)"
[ "$(j '.calls.list.result.incidents | length')" = 2 ] || fail "list: $(j .calls.list)"
[ "$(j '.calls.list_hw.result.incidents | length')" = 0 ] || fail "list hw.: $(j .calls.list_hw)"
[ "$(j '.calls.get.result.incident.chain[0].role')" = root ] || fail "get: no chain"
[ "$(j '.calls.get.result.actions[] | select(.playbook == "node.drain") | .state')" = waiting ] ||
  fail "get: the drain is not waiting: $(j .calls.get.result.actions)"
j ".calls.get.text" | grep -c "^chain (root -> effects -> symptoms):" > /dev/null || fail "get: no text chain: $(j .calls.get.text | head -5)"
j '.calls.get_missing.error' | grep -c "no incident inc-0000000000000000" > /dev/null ||
  fail "get_missing: $(j .calls.get_missing)"
[ "$(j '.calls.playbooks.result.playbooks[] | select(.id == "node.drain") | .class')" = change ] ||
  fail "playbooks: $(j .calls.playbooks)"
[ "$(j '.calls.signals.result.signals | length')" -ge 2 ] || fail "signals: $(j .calls.signals)"
[ "$(j '[.calls.signals.result.signals[] | select(.host != "gpu-453")] | length')" = 0 ] ||
  fail "signals of another node"
[ "$(j '.calls.approvals.result.approvals | length')" = 2 ] || fail "approvals: $(j .calls.approvals)"
drain=$(j '.calls.drain.result.action')
[[ "$drain" == act-* ]] || fail "drain: $(j .calls.drain)"
j '.calls.drain.result.next' | grep -c "waits for a human's approval" > /dev/null || fail "drain: $(j .calls.drain)"
rec=$(j '.calls.recommend.result.action')
[[ "$rec" == act-* ]] || fail "recommend: $(j .calls.recommend)"
j '.calls.bad.error' | grep -c "no playbook 'node.nuke'" > /dev/null || fail "bad: $(j .calls.bad)"
j '.calls.approve.thrown' | grep -c "Unknown tool: approve_action" > /dev/null || fail "approve: $(j .calls.approve)"

# the agent's drain waits for a human, requested by the agent; never run
for _ in $(seq 1 100); do pending | grep -c "\"$drain\"" > /dev/null && break; sleep 0.1; done
# (jq 1.6's -e judges the last input, not the last output: grep instead)
pending | jq --arg d "$drain" 'select(.id == $d) | .request.requested_by == "agent:test-agent"' | grep -cx true > /dev/null || fail "the agent's drain is not pending, requested by the agent: $(pending)"
# the notification ran alone (started, not waiting)
for _ in $(seq 1 100); do
  audit | jq -c --arg r "$rec" 'select(.action == $r and .event == "started")' 2>/dev/null |
    grep -c . > /dev/null && break
  sleep 0.1
done
audit | jq --arg r "$rec" 'select(.action == $r and .event == "started") | .requested_by == "agent:test-agent"' | grep -cx true > /dev/null || fail "the agent's notification did not run alone: $(audit | grep "$rec")"
! audit | jq -c --arg d "$drain" 'select(.action == $d and (.event == "started" or .event == "step_started"))' |
  grep -c . > /dev/null || fail "the agent's drain ran"
# every call audited with the agent as initiator (the unknown tool is no call)
[ "$(audit | jq -c 'select(.event == "tool_call" and .who == "agent:test-agent")' | grep -c .)" = 10 ] ||
  fail "tool calls audited: $(audit | jq -c 'select(.event == "tool_call") | [.who, .tool, .outcome]')"
audit | jq -c --arg d "$drain" 'select(.event == "tool_call" and .tool == "propose_action" and .action == $d)' |
  grep -c . > /dev/null || fail "the proposal's audit record lacks its action id"

# ---- streamable HTTP ----
echo "mcp-token-$RANDOM$RANDOM" > "$tmp/mcp.token"
"$bin" mcp --http --port 0 --token-file "$tmp/mcp.token" --brokers "$brokers" \
  --redis "$tmp/redis.sock" --for 120 > "$tmp/http.out" 2> "$tmp/http.err" & pids+=($!)
for _ in $(seq 1 100); do
  url=$(sed -n 's/^mcp: streamable HTTP on \(http[^ ]*\)$/\1/p' "$tmp/http.out" 2>/dev/null || true)
  [ -n "$url" ] && break
  sleep 0.05
done
[ -n "$url" ] || fail "cascade mcp --http did not start"
MCP_PLAN='[["approvals", "list_approvals", {}], ["list", "list_incidents", {"node": "gpu-453"}]]'
node "$node_dir/mcp_client.mjs" http "$url" "$(cat "$tmp/mcp.token")" > "$tmp/http.json" \
  2> "$tmp/client.err" || fail "the SDK client failed over HTTP: $(tail -5 "$tmp/client.err")"
[ "$(jq -r .protocol "$tmp/http.json")" = 2025-11-25 ] ||
  fail "the revision agreed over HTTP: $(jq -r .protocol "$tmp/http.json")"
[ "$(jq -r '.calls.approvals.result.approvals | length' "$tmp/http.json")" = 3 ] ||
  fail "HTTP approvals: $(jq -c .calls.approvals "$tmp/http.json")"
[ "$(jq -r '.calls.list.result.incidents | length' "$tmp/http.json")" = 1 ] ||
  fail "HTTP list: $(jq -c .calls.list "$tmp/http.json")"
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[ "$(code -X POST -H 'Content-Type: application/json' -d "$init" "$url")" = 401 ] ||
  fail "no token: not 401"
auth=(-H "Authorization: Bearer $(cat "$tmp/mcp.token")" -H 'Content-Type: application/json'
      -H 'Accept: application/json, text/event-stream')
[ "$(code -X POST "${auth[@]}" -H 'Origin: http://evil.example' -d "$init" "$url")" = 403 ] ||
  fail "a foreign Origin: not 403"
[ "$(code "${auth[@]}" "$url")" = 405 ] || fail "GET: not 405"
# an older client keeps its revision, and gets a session
curl -s -D "$tmp/init.head" -o "$tmp/init.json" -X POST "${auth[@]}" -d "$init" "$url"
[ "$(jq -r .result.protocolVersion "$tmp/init.json")" = 2025-06-18 ] ||
  fail "a 2025-06-18 client got: $(cat "$tmp/init.json")"
grep -qi "^Mcp-Session-Id: [0-9a-f]\{32\}" "$tmp/init.head" || fail "no session id: $(cat "$tmp/init.head")"
[ "$(code -X POST "${auth[@]}" -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' "$url")" = 400 ] ||
  fail "no session: not 400"
[ "$(code -X POST "${auth[@]}" -H 'Mcp-Session-Id: nosuch' -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' "$url")" = 404 ] ||
  fail "an unknown session: not 404"
audit | jq -c 'select(.event == "tool_call" and .who == "agent:http-agent")' | grep -c . > /dev/null ||
  fail "the HTTP calls are not audited"
kill -TERM "${pids[-1]}" 2>/dev/null; wait "${pids[-1]}" 2>/dev/null
if grep -E "ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:" "$tmp"/stdio.err "$tmp"/http.err; then
  fail "sanitizer report"
fi
echo "ok: the MCP SDK over stdio and HTTP: six tools, a drain pending for a human, a notification run alone, every call audited"
