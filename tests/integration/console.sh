#!/usr/bin/env bash
# The operator's console end to end, in headless Chromium (Debian's,
# driven by playwright-core from npm: tests/node/console_e2e.mjs), over a
# real deployment: a SLURM controller, a correlator and an executor in
# mode on (each with its metrics port), Redis, the broker, and cascade
# console watching them:
#   - a wrong token is refused; the right one signs in, as alice;
#   - the incidents of a fed stream are listed, cascade's processes shown
#     up, the drains waiting for a human listed;
#   - incidents fed while the page is open appear without a reload;
#   - an incident's chain is drawn (its root, the jobs it broke);
#   - Approve on its drain: the executor drains the node in SLURM, and the
#     audit trail on the page says approved by human:alice, then done;
#   - the page asks nothing of any other host; each page's screenshot is
#     written to SHOTS (docs/ keeps them).
# usage: console.sh CASCADE_BIN STREAM [SHOTS]
set -uo pipefail
bin=$1 stream=$2
here=$(dirname "$0")
node_dir=$(cd "$here/../node" && pwd)
. "$here/live_lib.sh"
. "$here/slurm_lib.sh"
shots=${3:-$tmp/shots}
mkdir -p "$shots"
[ -d "$node_dir/node_modules/playwright-core" ] ||
  fail "playwright-core is not installed (deploy/setup.sh: npm ci in tests/node)"
command -v chromium > /dev/null || fail "chromium is not installed (deploy/setup.sh)"

start_redis
start_broker 300
start_slurm 3
logged_slurm_tools
echo "alice-secret" > "$tmp/alice.token"
echo "alice file:$tmp/alice.token change,job,recovery,destructive,notify,read_only" > "$tmp/approvers"
read -r mport aport cport < <(p=$(free_ports 3); echo "$p $((p + 1)) $((p + 2))")
printf 'metrics:\n  listen: 127.0.0.1\n  correlate: %s\n  act: %s\n' "$mport" "$aport" > "$tmp/m.yaml"
"$bin" correlate --brokers "$brokers" --redis "$tmp/redis.sock" --config "$tmp/m.yaml" \
  --for 250 > "$tmp/correlate.out" 2> "$tmp/correlate.err" & pids+=($!)
start_act_n 1 --brokers "$brokers" --redis "$tmp/redis.sock" --mode on \
  --scheduler slurm --slurm-bin "$tmp/bin" --approvers "$tmp/approvers" --port 0 \
  --cascade-config "$tmp/m.yaml" --verify-poll-ms 200 --for 250
# the field capture's two crashes, on nodes of the test's SLURM cluster,
# yesterday (the report shows the last days)
sed "s/gpu-453/gpu-002/g; s/gpu-451/gpu-003/g; s/2026-03-02T/$(date -u -d yesterday +%F)T/g" \
  "$stream" > "$tmp/first.jsonl"
"$bin" ingest file --brokers "$brokers" "$tmp/first.jsonl" > "$tmp/ingest.out" 2> "$tmp/ingest.err" ||
  fail "ingest failed"
"$bin" console --approvers "$tmp/approvers" --act-url "$api" --port "$cport" \
  --watch "http://127.0.0.1:$mport" --watch "http://127.0.0.1:$aport" \
  --brokers "$brokers" --for 240 > "$tmp/console.out" 2> "$tmp/console.err" & pids+=($!)
for _ in $(seq 1 100); do grep -q "^console: http" "$tmp/console.out" 2>/dev/null && break; sleep 0.05; done
grep -q "^console: http://127.0.0.1:$cport/" "$tmp/console.out" || fail "cascade console did not start"
for _ in $(seq 1 200); do
  [ "$("$bin" actions list --redis "$tmp/redis.sock" --json 2>/dev/null | grep -c '"node.drain"')" = 2 ] && break
  sleep 0.1
done

# fed while the page is open: a rack storm of other nodes, an hour after
# the crashes (the cluster's clock has moved on to them)
sed "s/2026-03-02T08:/$(date -u -d yesterday +%F)T09:/g" \
  "$here/../data/fixtures/base/rack_power_storm.jsonl" > "$tmp/more.jsonl"
more=$tmp/more.jsonl
node "$node_dir/console_e2e.mjs" "http://127.0.0.1:$cport/" alice-secret "$shots" gpu-002 -- \
  "$bin" ingest file --brokers "$brokers" "$more" > "$tmp/e2e.json" 2> "$tmp/e2e.err" ||
  fail "the browser test failed: $(tail -20 "$tmp/e2e.err")"
j() { jq -r "$1" "$tmp/e2e.json"; }
j .refused | grep -c "not known" > /dev/null || fail "a wrong token: $(j .refused)"
[ "$(j .who)" = "signed in as alice" ] || fail "who: $(j .who)"
[ "$(j .before)" = 2 ] || fail "listed before: $(j .before)"
[ "$(j .health)" = 2 ] || fail "processes shown: $(j .health)"
[ "$(j .waiting)" = 2 ] || fail "waiting drains shown: $(j .waiting)"
[ "$(j .after)" -gt 2 ] || fail "listed after more were fed: $(j .after)"
[ "$(j .notReloaded)" = true ] || fail "the page reloaded"
[ "$(j .fresh)" -ge 1 ] || fail "the new incidents are not marked"
[ "$(j .graph.root)" = cascade.node_crash ] || fail "graph root: $(j .graph)"
[ "$(j .graph.effects)" = 2 ] && [ "$(j .graph.edges)" = 2 ] || fail "graph: $(j .graph)"
[ "$(j .drainBefore)" = waiting ] || fail "the drain was $(j .drainBefore) before the click"
[ "$(j .decision)" = "approved by alice" ] || fail "decision: $(j .decision)"
j .drainAfter | grep -c "^done (human:alice)$" > /dev/null || fail "the drain ended $(j .drainAfter)"
j '.auditEvents | join(" ")' | grep -c "approved/human:alice.*done/human:alice" > /dev/null ||
  fail "the page's audit: $(j .auditEvents)"
[ "$(j '.report.charts')" -ge 3 ] && [ "$(j '.report.approved')" = 1 ] &&
  [ "$(j '.report.incidents')" -ge 2 ] || fail "the console's report: $(j .report)"
[ "$(j '.errors | length')" = 0 ] || fail "the page: $(j .errors)"
# what the executor did, outside the page
[ "$(node_state gpu-002)" = drained ] || fail "gpu-002 is $(node_state gpu-002), not drained"
audit | jq -c --arg d "$(j .drain)" 'select(.action == $d and .event == "approved" and .who == "human:alice")' |
  grep -c . > /dev/null || fail "the executor's audit does not name alice"
grep -q "alice: actions/$(j .drain)/approve" "$tmp/console.err" || fail "the console did not log the decision"
for s in console-incidents console-incident console-approved console-report; do
  [ -s "$shots/$s.png" ] || fail "no screenshot $s.png"
done
kill -TERM "${pids[-1]}" 2>/dev/null; wait "${pids[-1]}" 2>/dev/null
if grep -E "ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:" "$tmp/console.err"; then
  fail "sanitizer report"
fi
echo "ok: console in Chromium: signed in, live list, chain drawn, drain approved by alice and done"
