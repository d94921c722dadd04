#!/usr/bin/env bash
# Executor throughput: how many actions one `cascade act` carries through,
# end to end, against a local HTTP server (tests/integration/vendor_server.py,
# plain HTTP, checking every request's shape as in the tests): N notify
# requests preloaded on cascade.actions, each journaled in Redis (appendfsync
# always), audited on cascade.audit with Kafka's confirmation before and after
# its steps, posted to Slack and to the webhook, and committed.
#
# usage: bench/act_throughput.sh [--actions N] [--runs R] [--json FILE] BUILD_DIR
# The figure is actions/s from the first request taken to the last done,
# read from the executor's own log timestamps (the consumer group's join
# time is left out). Prints each run and the median; --json writes
# {name, median, min, max, runs, unit, command}.
set -euo pipefail
n=2000 runs=3 json=
while [ $# -gt 1 ]; do
  case $1 in
    --actions) n=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    *) echo "usage: $0 [--actions N] [--runs R] [--json FILE] BUILD_DIR" >&2; exit 2 ;;
  esac
done
[ $# = 1 ] || { echo "usage: $0 [--actions N] [--runs R] [--json FILE] BUILD_DIR" >&2; exit 2; }
bin=$(realpath "$1/cascade")
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/integration/live_lib.sh"

# ms since the epoch of a log line's timestamp
ms_of() { date -d "$(cut -d' ' -f1 <<< "$1")" +%s%3N; }

one_run() {
  local r=$1 dir="$tmp/run$r"
  local first=${#pids[@]}
  mkdir -p "$dir"
  redis-server --port 0 --unixsocket "$dir/redis.sock" --dir "$dir" \
    --appendonly yes --appendfsync always --save '' > "$dir/redis.out" 2>&1 & pids+=($!)
  for _ in $(seq 1 100); do redis-cli -s "$dir/redis.sock" ping >/dev/null 2>&1 && break; sleep 0.05; done
  "$bin" broker --for 900 > "$dir/broker.out" 2> "$dir/broker.err" & pids+=($!)
  local brokers=
  for _ in $(seq 1 100); do
    brokers=$(sed -n 's/^kafka: embedded broker at \([^ ]*\).*/\1/p' "$dir/broker.out" 2>/dev/null || true)
    [ -n "$brokers" ] && break; sleep 0.05
  done
  echo "bench-hook-token" > "$dir/hook.token"
  python3 "$root/tests/integration/vendor_server.py" --port-file "$dir/vport" \
    --log "$dir/vendor.log" --webhook-token bench-hook-token > /dev/null 2>&1 & pids+=($!)
  for _ in $(seq 1 100); do [ -s "$dir/vport" ] && break; sleep 0.05; done
  local base="http://127.0.0.1:$(cat "$dir/vport")"
  echo "$base/services/T000/B000/XXXX" > "$dir/slack.url"
  printf 'slack: {url: file:%s}\nwebhook: {url: %s/hook, token: file:%s}\n' \
    "$dir/slack.url" "$base" "$dir/hook.token" > "$dir/act.yaml"
  for i in $(seq 1 "$n"); do
    printf 'inc-%d\t{"id":"act-%016x","incident":"inc-%d","scenario":"hw.ecc_uncorrectable","cluster":"c1","rack":"r1","summary":"bench %d","action":{"playbook":"notify","approval":"auto","target":{},"params":{},"state":"proposed"}}\n' \
      "$i" "$i" "$i" "$i"
  done | kcat -b "$brokers" -P -t cascade.actions -K '\t' 2>/dev/null
  "$bin" act --brokers "$brokers" --redis "$dir/redis.sock" --mode on \
    --config "$dir/act.yaml" > "$dir/act.out" 2> "$dir/act.err" &
  local act=$!; pids+=($act)
  for _ in $(seq 1 "${BENCH_WAIT_POLLS:-6000}"); do
    [ "$(grep -cE ' notify (done|failed): ' "$dir/act.err" || true)" -ge "$n" ] && break
    sleep 0.05
  done
  # the executor's own CPU (user + system, clock ticks) for the whole run
  local ticks; ticks=$(awk '{print $14 + $15}' "/proc/$act/stat")
  kill -TERM "$act"; wait "$act" || true
  [ -n "${BENCH_KEEP:-}" ] && cp -r "$dir" "$BENCH_KEEP"
  [ "$(grep -c ' notify done: ' "$dir/act.err" || true)" -ge "$n" ] || {
    grep ' failed: ' "$dir/act.err" | head -n 3 >&2
    echo "run $r: not all actions done" >&2; exit 1; }
  [ "$(grep -c '"violation"' "$dir/vendor.log" || true)" = 0 ] || { echo "run $r: requests broke the documented shape" >&2; exit 1; }
  # this run's daemons go now (live_lib.sh's EXIT trap has the rest)
  for p in "${pids[@]:$first}"; do kill "$p" 2>/dev/null || true; done
  local t0 t1
  t0=$(ms_of "$(grep -m1 ' request: ' "$dir/act.err")")
  t1=$(ms_of "$(grep ' notify done: ' "$dir/act.err" | tail -n 1)")
  awk -v n="$n" -v ms="$((t1 - t0))" -v t="$ticks" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.1f %.2f\n", n * 1000 / (ms > 0 ? ms : 1), t * 1000 / hz / n }'
}

rates=() cpus=()
for r in $(seq 1 "$runs"); do
  # not in $(...): its daemons must stay in this shell's pids
  one_run "$r" > "$tmp/result$r"
  read -r v c < "$tmp/result$r"
  echo "run $r: $n actions, $v actions/s, executor CPU $c ms/action" >&2
  rates+=("$v"); cpus+=("$c")
done
cmd="bench/act_throughput.sh --actions $n --runs $runs $1"
# stats NAME UNIT VALUES...: a table row, and the JSON object
stats() {
  local name=$1 unit=$2; shift 2
  local sorted; sorted=$(printf '%s\n' "$@" | sort -n)
  local med min max
  med=$(sed -n "$(( (runs + 1) / 2 ))p" <<< "$sorted")
  min=$(head -n 1 <<< "$sorted"); max=$(tail -n 1 <<< "$sorted")
  printf '%-38s %10s %10s %10s %5s\n' "$name ($unit)" "$med" "$min" "$max" "$runs" >&2
  jq -cn --arg n "$name" --arg u "$unit" --arg cmd "$cmd" --argjson med "$med" \
    --argjson min "$min" --argjson max "$max" --argjson runs "$runs" \
    '{name: $n, unit: $u, median: $med, min: $min, max: $max, runs: $runs, command: $cmd}'
}
printf '%-38s %10s %10s %10s %5s\n' figure median min max runs >&2
{ stats act.notify_throughput actions/s "${rates[@]}"
  stats act.cpu_per_action ms "${cpus[@]}"; } > "$tmp/figures.json"
[ -z "$json" ] || jq -s . "$tmp/figures.json" > "$json"
