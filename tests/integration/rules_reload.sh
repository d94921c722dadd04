#!/usr/bin/env bash
# rules.dir in the config: a folder with a problem stops the correlator at
# start (exit 2, FILE:LINE); SIGHUP swaps the rule set whole, and keeps the
# running one when the new folder has a problem.
set -uo pipefail
bin=$1
src=$2
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; tail -n 20 "$tmp"/*.err; exit 1; }
wait_for() { for _ in $(seq 1 200); do grep -q "$1" "$2" && return 0; sleep 0.05; done; return 1; }

# The correlator needs a broker and Redis: only cascade dev starts its own.
# (append-only: a correlator refuses a Redis that does not persist)
"$bin" broker --for 120 > "$tmp/broker.out" 2> "$tmp/broker.err" & pids+=($!)
redis-server --port 0 --unixsocket "$tmp/redis.sock" --save '' --appendonly yes \
  --dir "$tmp" > "$tmp/redis.out" 2>&1 & pids+=($!)
brokers=
for _ in $(seq 1 100); do
  brokers=$(sed -n 's/^kafka: embedded broker at \([^ ]*\).*/\1/p' "$tmp/broker.out" 2>/dev/null || true)
  [ -n "$brokers" ] && redis-cli -s "$tmp/redis.sock" ping > /dev/null 2>&1 && break
  sleep 0.05
done
[ -n "$brokers" ] || fail "cascade broker printed no address"

cp -r "$src" "$tmp/rules"
printf 'kafka:\n  brokers: "%s"\nredis:\n  address: %s\nrules:\n  dir: %s\n' \
  "$brokers" "$tmp/redis.sock" "$tmp/rules" > "$tmp/cascade.yaml"
"$bin" config check "$tmp/cascade.yaml" > "$tmp/check.out" 2>&1 \
  || fail "config check refused rules.dir"
grep -q "dir: \"$tmp/rules\"" "$tmp/check.out" || fail "config check did not print rules.dir"

# A broken rule file at start: exit 2, the file and line named.
cp "$tmp/rules/memory.yaml" "$tmp/memory.good"
sed -i '0,/approval: auto/s//approval: sometimes/' "$tmp/rules/memory.yaml"
line=$(grep -n 'approval: sometimes' "$tmp/rules/memory.yaml" | cut -d: -f1)
"$bin" correlate --config "$tmp/cascade.yaml" --for 5 > /dev/null 2> "$tmp/start.err"; rc=$?
[ $rc -eq 2 ] || fail "a broken rule folder at start exited $rc, not 2"
grep -q "memory.yaml:$line:[0-9]*: approval 'sometimes' is not auto, hitl or canary" \
  "$tmp/start.err" || fail "the broken rule was not reported with its line"
cp "$tmp/memory.good" "$tmp/rules/memory.yaml"

"$bin" correlate --config "$tmp/cascade.yaml" --for 60 > "$tmp/corr.out" 2> "$tmp/corr.err" &
pid=$!; pids+=($pid)
wait_for 'correlate: consuming' "$tmp/corr.out" || fail "correlate did not start with rules.dir"
n=$("$bin" rules check "$tmp/rules" | sed -n 's/.*: \([0-9]*\) scenarios.*/\1/p')
[ -n "$n" ] || fail "rules check printed no scenario count"

# A new rule file with one more scenario: reloaded, counted.
cat > "$tmp/rules/zz_site.yaml" <<'YAML'
family: site
scenarios:
  - id: site.fan_failure
    node_level: true
    what: a chassis fan failed
    todo: drain the node
    actions:
      - {playbook: node.drain, approval: hitl, target: node}
signatures:
  - id: kernel.fan_failure
    source: kernel
    fact: node_fault
    scenario: site.fan_failure
    match: 'ipmi.*Fan[0-9]+.*(?:failed|Lower Critical)'
    examples:
      - {line: "ipmi_si: Fan3 Lower Critical going low", scenario: site.fan_failure}
YAML
kill -HUP $pid
wait_for "rules reloaded from $tmp/rules: $((n + 1)) scenarios" "$tmp/corr.err" \
  || fail "SIGHUP did not load the new rule file ($((n + 1)) scenarios)"

# A broken file on SIGHUP: reported with its line, the running set kept.
printf 'family: x\nscenarios:\n  - id: x.y\n    actions: [{playbook: a.b, target: moon}]\n' \
  > "$tmp/rules/zz_broken.yaml"
kill -HUP $pid
wait_for 'rules not reloaded, keeping the running set' "$tmp/corr.err" \
  || fail "a broken rule folder on SIGHUP was not refused"
grep -q "zz_broken.yaml:4:[0-9]*: target 'moon'" "$tmp/corr.err" \
  || fail "the broken rule on SIGHUP was not reported with its line"
rm "$tmp/rules/zz_broken.yaml"
kill -HUP $pid
for _ in $(seq 1 200); do
  [ "$(grep -c "rules reloaded from $tmp/rules: $((n + 1)) scenarios" "$tmp/corr.err")" -eq 2 ] && break
  sleep 0.05
done
[ "$(grep -c "rules reloaded from $tmp/rules: $((n + 1)) scenarios" "$tmp/corr.err")" -eq 2 ] \
  || fail "the fixed folder was not reloaded"
kill -0 $pid 2>/dev/null || fail "correlate died on a rule reload"
echo "rules reload: ok"
