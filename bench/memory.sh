#!/usr/bin/env bash
# Memory per live window entry, and time per signal as live keys grow: a
# live `cascade correlate` (bench/rules, Redis with appendonly, the
# embedded broker) fed K NCCL watchdog timeouts of K distinct jobs (each a
# live key of the threshold rule holding one entry) by bench_latency at a
# steady rate, then drained (SIGUSR1) and measured.
#
# usage: bench/memory.sh [--rate R] BUILD_DIR K...
#
# Each timeout is held by two windows of bench/rules: its job's (threshold)
# and its host's (group; the generator spreads them over 1000 hosts): K
# signals are 2K live window entries under K + min(K, 1000) live keys.
# Prints one JSON object per K: keys, consumed, redis_used_memory (after),
# redis_baseline (before the first signal), rss_kib (at the drain's end),
# cpu_s (the correlator's user+system time), and per unit: redis_per_entry
# and redis_per_key ((after - baseline) / 2K and / keys) and, given a K=0
# run first, rss_per_entry and cpu_us per signal.
# Exit codes: 0 done, 1 a component failed, 2 usage.
set -euo pipefail
rate=10000
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '8p' "$0" | sed 's/^# //' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --rate) rate=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || usage
build=$(realpath "$1"); shift
work=$(mktemp -d)
. "$root/bench/lib.sh"
trap 'stop_all; rm -rf "$work"' EXIT
say() { echo "memory: $*" >&2; }
base_rss=

for k in "$@"; do
  d=$work/$k
  mkdir -p "$d"
  start_stack "$d" "$build/cascade" || exit 1
  printf 'rules:\n  dir: "%s"\nlog:\n  level: info\n' "$root/bench/rules" > "$d/cascade.yaml"
  "$build/cascade" correlate \
    --brokers "$brokers" --redis "$d/redis.sock" --config "$d/cascade.yaml" \
    > "$d/corr.out" 2> "$d/corr.err" & cpid=$!
  wait_log "$d/corr.err" restored || exit 1
  before=$(redis-cli -s "$d/redis.sock" info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
  if [ "$k" -gt 0 ]; then
    "$build/bench/bench_latency" --brokers "$brokers" --rate "$rate" \
      --seconds "$(awk -v k="$k" -v r="$rate" 'BEGIN { print k / r }')" --patterns 0 > "$d/offer" ||
      { say "bench_latency failed"; exit 1; }
  fi
  kill -USR1 "$cpid"
  wait "$cpid" || { say "the correlator did not drain: $(tail -n 3 "$d/corr.err")"; exit 1; }
  after=$(redis-cli -s "$d/redis.sock" info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
  rss=$(sed -n 's/.*(rss \([0-9]*\) KiB, .*/\1/p' "$d/corr.err" | tail -n 1)
  consumed=$(sed -n 's/.*correlated \([0-9]*\) signals.*/\1/p' "$d/corr.err" | tail -n 1)
  cpu=$(sed -n 's/.*(rss [0-9]* KiB, cpu \([0-9.]*\) s).*/\1/p' "$d/corr.err" | tail -n 1)
  [ -n "$base_rss" ] || base_rss=$rss base_cpu=$cpu
  jq -cn --argjson k "$k" --argjson c "${consumed:-0}" --argjson a "$after" \
    --argjson b "$before" --argjson rss "$rss" --argjson cpu "$cpu" \
    --argjson brss "$base_rss" --argjson bcpu "$base_cpu" \
    '{keys: $k, consumed: $c, redis_used_memory: $a, redis_baseline: $b, rss_kib: $rss,
      cpu_s: $cpu} + (if $k > 0 then {redis_per_entry: ((($a - $b) / (2 * $k)) | round),
      redis_per_key: ((($a - $b) / ($k + ([$k, 1000] | min))) | round),
      rss_per_entry: (((($rss - $brss) * 1024) / (2 * $k)) | round),
      cpu_us: (((($cpu - $bcpu) * 1e6) / $k) * 10 | round / 10)} else {} end)'
  stop_all
done
