#!/usr/bin/env bash
# The operator's command line, against a running deployment and after it
# stopped (a correlator and an executor in mode on, a Redis, the broker):
#   - cascade incidents list: the incidents of a fed stream as a table and
#     as JSON, selected by node, scenario family, status, time and limit;
#   - cascade incidents show: the chain from the root cause to the jobs it
#     broke, the actions with the executor's ids and their states read
#     from cascade.audit (the drains wait for a human), the audit trail;
#     an unknown id exits 1;
#   - cascade actions list --pending (Redis) and the executor's GET
#     /v1/actions?state=pending (behind a token: 401 without, 400 for a
#     state it does not list) name the same waiting drains; one approved
#     leaves the other;
#   - with every cascade process stopped, both commands still answer.
# usage: view_cli.sh CASCADE_BIN STREAM
set -uo pipefail
bin=$1 stream=$2
here=$(dirname "$0")
. "$here/live_lib.sh"

start_redis
start_broker 300
echo "alice-secret" > "$tmp/alice.token"
echo "alice file:$tmp/alice.token change,job,recovery,destructive,notify,read_only" > "$tmp/approvers"
"$bin" correlate --brokers "$brokers" --redis "$tmp/redis.sock" --for 200 \
  > "$tmp/correlate.out" 2> "$tmp/correlate.err" & corr_pid=$!
pids+=($corr_pid)
start_act_n 1 --brokers "$brokers" --redis "$tmp/redis.sock" --mode on \
  --approvers "$tmp/approvers" --port 0 --for 200
"$bin" ingest file --brokers "$brokers" "$stream" > "$tmp/ingest.out" 2> "$tmp/ingest.err" ||
  fail "ingest failed"

inc() { "$bin" incidents "$@" --brokers "$brokers"; }
# two node crashes, each with two drains... wait for both drains waiting
for _ in $(seq 1 200); do
  [ "$("$bin" actions list --redis "$tmp/redis.sock" --json 2>/dev/null | grep -c '"node.drain"')" = 2 ] && break
  sleep 0.1
done

# ---- incidents list ----
inc list > "$tmp/list.out" 2> "$tmp/list.err" || fail "incidents list failed: $(cat "$tmp/list.err")"
head -1 "$tmp/list.out" | grep -q "^ID  *STATUS  *SCENARIO  *CLUSTER  *WHERE  *OPENED  *ACTIONS  *SUMMARY" ||
  fail "no table header: $(head -1 "$tmp/list.out")"
[ "$(grep -c '^inc-[0-9a-f]\{16\}  *open  *cascade.node_crash  *default  *node gpu-45[13] ' "$tmp/list.out")" = 2 ] ||
  fail "the table lacks the two node crashes: $(cat "$tmp/list.out")"
grep -q "^2 of 2 incident(s)" "$tmp/list.err" || fail "no count: $(cat "$tmp/list.err")"
inc list --json > "$tmp/list.json" || fail "list --json failed"
[ "$(jq -s 'length' "$tmp/list.json")" = 2 ] || fail "list --json: $(cat "$tmp/list.json")"
# newest opened first
[ "$(jq -rs '.[0].scope.node' "$tmp/list.json")" = gpu-451 ] || fail "not newest first"
n() { inc list --json "$@" | grep -c '^{'; }
[ "$(n --node gpu-453)" = 1 ] || fail "--node gpu-453: $(n --node gpu-453)"
[ "$(n --job 760021)" = 1 ] || fail "--job 760021 (an effect of gpu-453's crash)"
[ "$(n --scenario cascade.)" = 2 ] || fail "--scenario cascade."
[ "$(n --scenario hw.)" = 0 ] || fail "--scenario hw."
[ "$(n --status resolved)" = 0 ] || fail "--status resolved"
[ "$(n --since 2026-03-02T08:20:00Z)" = 1 ] || fail "--since 08:20 (only gpu-451's was updated after)"
[ "$(n --limit 1)" = 1 ] || fail "--limit 1"
"$bin" incidents list --status closed --brokers "$brokers" 2> "$tmp/bad.err" && fail "--status closed accepted"
grep -q "status is open, resolved or merged" "$tmp/bad.err" || fail "bad --status: $(cat "$tmp/bad.err")"

# ---- incidents show ----
id=$(jq -rs '.[] | select(.scope.node == "gpu-453") | .id' "$tmp/list.json")
inc show "$id" > "$tmp/show.out" 2> "$tmp/show.err" || fail "show failed: $(cat "$tmp/show.err")"
grep -q "^chain (root -> effects -> symptoms):" "$tmp/show.out" || fail "no chain"
grep -q "^  root .*cascade.node_crash  node gpu-453" "$tmp/show.out" || fail "no root: $(cat "$tmp/show.out")"
grep -q "^  effect .*job 760021  FAILED" "$tmp/show.out" || fail "no effect job 760021"
inc show "$id" --json > "$tmp/show.json" || fail "show --json failed"
drain=$(jq -r '.actions[] | select(.playbook == "node.drain") | .id' "$tmp/show.json")
[ "$(jq -r '.actions[] | select(.playbook == "node.drain") | .state' "$tmp/show.json")" = waiting ] ||
  fail "the drain is not waiting in show: $(jq -c .actions "$tmp/show.json")"
grep -q "^  $drain  node.drain .* waiting" "$tmp/show.out" || fail "show's table lacks the waiting drain $drain"
jq -e --arg d "$drain" '[.audit[] | select(.action == $d) | .event] | index("waiting") != null' \
  "$tmp/show.json" > /dev/null || fail "the audit trail lacks $drain's waiting"
"$bin" incidents show inc-0000000000000000 --brokers "$brokers" > /dev/null 2>&1
[ $? = 1 ] || fail "an unknown incident does not exit 1"

# ---- actions list and the approvals API ----
"$bin" actions list --redis "$tmp/redis.sock" > "$tmp/acts.out" 2> "$tmp/acts.err" ||
  fail "actions list failed: $(cat "$tmp/acts.err")"
grep -q "^$drain  node.drain .*$id" "$tmp/acts.out" || fail "actions list lacks $drain: $(cat "$tmp/acts.out")"
grep -q "^2 action(s) waiting for a decision" "$tmp/acts.err" || fail "count: $(cat "$tmp/acts.err")"
code=$(curl -s -o "$tmp/api.json" -w '%{http_code}' "$api/v1/actions?state=pending")
[ "$code" = 401 ] || fail "the list answers $code without a token"
code=$(curl -s -o "$tmp/api.json" -w '%{http_code}' -H "Authorization: Bearer alice-secret" \
  "$api/v1/actions?state=pending")
[ "$code" = 200 ] || fail "the list answers $code: $(cat "$tmp/api.json")"
[ "$(jq -r '[.actions[].id] | sort | join(" ")' "$tmp/api.json")" = \
  "$("$bin" actions list --redis "$tmp/redis.sock" --json | jq -rs '[.[].id] | sort | join(" ")')" ] ||
  fail "the API and the command line list different actions"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer alice-secret" \
  "$api/v1/actions?state=done")
[ "$code" = 400 ] || fail "state=done answers $code"
"$bin" approve "$drain" --url "$api" --token-file "$tmp/alice.token" > "$tmp/approve.out" 2>&1 ||
  fail "alice could not approve: $(cat "$tmp/approve.out")"
for _ in $(seq 1 100); do
  [ "$("$bin" actions list --redis "$tmp/redis.sock" --json | grep -c .)" = 1 ] && break
  sleep 0.1
done
[ "$("$bin" actions list --redis "$tmp/redis.sock" --json | jq -r .id)" != "$drain" ] ||
  fail "the approved drain still waits"

# ---- after everything stopped ----
kill -TERM "$act_pid" "$corr_pid"
wait "$act_pid" "$corr_pid" 2>/dev/null
[ "$(inc list --json | grep -c '^{')" = 2 ] || fail "incidents list fails once cascade stopped"
"$bin" actions list --redis "$tmp/redis.sock" --json | grep -q '"node.drain"' ||
  fail "actions list fails once cascade stopped"
echo "ok: incidents list/show and actions list, live and after stopping; the API lists the same"
