#!/usr/bin/env bash
# Detection latency at fixed offered rates: a live `cascade correlate`
# (bench/rules, windows in a Redis with appendonly, the embedded broker
# over TCP) and bench_latency offering signals at each rate, 100 patterns
# a second completing peer.xid79_job_cancel.
#
# usage: bench/latency.sh [--seconds S] [--runs N] [--hop] BUILD_DIR RATE...
#
# --hop: no correlator; the time from producing a signal to reading it back
# from cascade.signals (one hop through the broker; a detection takes two).
#
# Prints one line per run and rate:
#   rate offered patterns seen p50_ms p99_ms p999_ms max_ms
# (bench_latency's line). LATENCY_WRAP_CORRELATOR="perf record -o FILE"
# runs the correlator under a profiler (or "/usr/bin/time -f %U+%S": any
# wrapper that runs its arguments; the correlator itself is stopped).
# Exit codes: 0 done, 1 a component failed, 2 usage.
set -euo pipefail
seconds=10 runs=1 hop=
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '7p' "$0" | sed 's/^# //' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --hop) hop=--hop; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || usage
build=$(realpath "$1"); shift
[ -x "$build/bench/bench_latency" ] || { echo "bench/latency.sh: build first" >&2; exit 1; }
work=$(mktemp -d)
. "$root/bench/lib.sh"
# The correlator itself, not a wrapper around it: /usr/bin/time passes no
# signal on, and a correlator left running would share the next run's
# cores. SIGKILL after 10 s (its broker may be gone already).
stop_correlator() {
  [ -n "${brokers:-}" ] || return 0
  local pat="^$build/cascade correlate --brokers $brokers "
  pkill -TERM -f "$pat" 2>/dev/null || return 0
  for _ in $(seq 1 200); do
    pgrep -f "$pat" > /dev/null || return 0
    sleep 0.05
  done
  pkill -KILL -f "$pat" 2>/dev/null || true
}
trap 'stop_correlator; stop_all; [ -n "${LATENCY_KEEP:-}" ] || rm -rf "$work"' EXIT
say() { echo "latency: $*" >&2; }

for rate in "$@"; do
  for r in $(seq 1 "$runs"); do
    d=$work/$rate-$r
    mkdir -p "$d"
    start_stack "$d" "$build/cascade" || exit 1
    # no lingering before a batch's outputs go, and a short fetch wait: the
    # embedded broker answers a waiting fetch only when the wait is over
    printf 'kafka:\n  linger_ms: 0\n  fetch_wait_ms: 1\nrules:\n  dir: "%s"\nlog:\n  level: %s\n' \
      "$root/bench/rules" "${LATENCY_LOG_LEVEL:-info}" > "$d/cascade.yaml"
    if [ -z "$hop" ]; then
      # shellcheck disable=SC2086 # a wrapper command line, split on purpose
      ${LATENCY_WRAP_CORRELATOR:-} "$build/cascade" correlate --brokers "$brokers" --redis "$d/redis.sock" \
        --config "$d/cascade.yaml" > "$d/corr.out" 2> "$d/corr.err" & pids+=($!)
      wait_log "$d/corr.err" restored || exit 1
    fi
    # shellcheck disable=SC2086 # $hop is empty or one word
    "$build/bench/bench_latency" $hop --brokers "$brokers" --rate "$rate" \
      --seconds "$seconds" --patterns "${PATTERNS:-100}" ||
      { say "bench_latency failed at $rate/s"; exit 1; }
    stop_correlator
    stop_all
  done
done
