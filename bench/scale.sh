#!/usr/bin/env bash
# Scale-out on a real Apache Kafka: one, two, three correlators in one
# consumer group on the same signals, and the pause a rebalance costs.
#
# usage: bench/scale.sh [--clusters N] [--runs N] [--json FILE] LOG BUILD_DIR [COUNT...]
#
# One broker of deploy/kafka (KRaft, 64 partitions, as bench/e2e.sh's
# BENCH_KAFKA=real), started once. LOG (bench/peers/gen_log.py's) is cut
# into N pieces (default 32), each published by `cascade ingest log
# --cluster cK` with bench/rules' edge filter: N clusters, each on the
# partition its name hashes to.
#
# Throughput, for each COUNT (default 1 2 3), --runs times: a fresh Redis
# (appendonly everysec) and a fresh group; COUNT `cascade correlate
# --drain` started together, the i-th pinned to core i mod the machine's
# cores (taskset); the time from their start to the last one's exit
# (every partition read to its end, outputs delivered, offsets
# committed), group join included as a scale-out pays it. signals/s is
# the signals published over that time.
#
# Rebalance pause, --runs times for each way of leaving: the pieces are
# published again and again meanwhile (the same lines: their signals are
# read, counted as seen and committed), so that every cluster's partition
# has new signals all along; two correlators (no --drain) in a fresh
# group; once both hold their partitions and the one to go has committed
# a batch, it is stopped (SIGKILL: the group waits for its session
# timeout, 10 s; SIGTERM: it leaves the group); the pause is from that
# moment to the survivor's first batch committed after it took all 64
# partitions, the first in which the moved partitions can be.
#
# Prints the figures on stderr and writes them as JSON (bench_record's
# objects) to FILE (default scale.json). On this 2-core machine the
# correlators share the cores with the broker's JVM and Redis: what is
# measured is what a second process adds here, not a second machine.
# Exit codes: 0 done, 1 a component failed, 2 usage.
set -euo pipefail
clusters=32 runs=1 json=scale.json
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '5p' "$0" | sed 's/^# //' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --clusters) clusters=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || usage
log=$(realpath "$1") build=$(realpath "$2")
shift 2
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1 2 3)
cascade=$build/cascade
[ -x "$cascade" ] || { echo "bench/scale.sh: no $cascade (build first)" >&2; exit 1; }
work=$(mktemp -d)
export BENCH_KAFKA=real
. "$root/bench/lib.sh"
say() { echo "scale: $*" >&2; }
now_ms() { date +%s%3N; }
results=$work/results.jsonl
: > "$results"
corr_pids=()
stop_corr() {
  for p in "${corr_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for p in "${corr_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  corr_pids=()
}
trap 'stop_corr; stop_all; [ -n "${SCALE_KEEP:-}" ] || rm -rf "$work"' EXIT
ncpu=$(nproc)

# log_ms FILE PATTERN [AFTER_MS]: the time (ms) of the first line of FILE
# matching PATTERN at or after AFTER_MS, or nothing
log_ms() {
  local t
  while read -r t; do
    t=$(date -d "$t" +%s%3N)
    [ "$t" -ge "${3:-0}" ] && { echo "$t"; return 0; }
  done < <(sed -n "s/^\\([^ ]*\\) .*$2.*/\\1/p" "$1")
  return 0
}

# redis_up DIR: a fresh redis-server on DIR/redis.sock, once it answers
redis_up() {
  mkdir -p "$1"
  start_redis "$1"
  for _ in $(seq 1 100); do [ -S "$1/redis.sock" ] && return 0; sleep 0.05; done
  say "redis-server did not start in $1"; return 1
}

# correlator DIR NAME GROUP CORE ARGS...: one correlator in the background
correlator() {
  local d=$1 name=$2 group=$3 core=$4
  shift 4
  printf 'rules:\n  dir: "%s"\nlog:\n  level: debug\n' "$root/bench/rules" > "$d/$name.yaml"
  taskset -c "$core" "$cascade" correlate --brokers "$brokers" --redis "$d/redis.sock" \
    --group "$group" --config "$d/$name.yaml" "$@" > "$d/$name.out" 2> "$d/$name.err" &
  corr_pids+=($!)
}

start_kafka "$work" "$cascade" || exit 1
say "publishing $log as $clusters clusters"
lines=$(wc -l < "$log")
split -n "l/$clusters" -d -a 3 "$log" "$work/piece."
published=0 k=0
for piece in "$work"/piece.*; do
  "$cascade" ingest log --brokers "$brokers" --rules "$root/bench/rules" \
    --cluster "c$k" "$piece" 2> "$work/ingest.err" ||
    { say "ingest log failed: $(tail -n 3 "$work/ingest.err")"; exit 1; }
  n=$(sed -n 's/.* \([0-9]*\) published.*/\1/p' "$work/ingest.err" | tail -n 1)
  published=$((published + ${n:-0})) k=$((k + 1))
done
say "$published signals of $lines lines on $clusters clusters"

for count in "${counts[@]}"; do
  vals=()
  for r in $(seq 1 "$runs"); do
    d=$work/n$count-r$r
    redis_up "$d" || exit 1
    t0=$(now_ms)
    for i in $(seq 1 "$count"); do
      correlator "$d" "c$i" "scale-$count-$r" $(( (i - 1) % ncpu )) --drain
    done
    for p in "${corr_pids[@]}"; do
      wait "$p" || { say "a correlator failed to drain: $(tail -n 3 "$d"/c*.err)"; exit 1; }
    done
    corr_pids=()
    t1=$(now_ms)
    consumed=$(cat "$d"/c*.err | sed -n 's/.*correlated \([0-9]*\) signals.*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
    [ "$consumed" -ge "$published" ] ||
      { say "$count correlators read $consumed of $published signals"; exit 1; }
    vals+=("$(awk -v n="$published" -v ms="$((t1 - t0))" 'BEGIN { printf "%.0f", n / (ms / 1000) }')")
    say "$count correlator(s), run $r: $((t1 - t0)) ms, $consumed signals read (re-reads after a rebalance included)"
    kill "${pids[-1]}" 2>/dev/null || true # this run's redis
  done
  bench_record "$results" signals/s scale "scale.real.correlators$count" cascade \
    "bench/scale.sh --clusters $clusters LOG BUILD $count" "${vals[@]}"
done

# feed: the pieces published in a loop until killed
feed() {
  while :; do
    local k=0
    for piece in "$work"/piece.*; do
      "$cascade" ingest log --brokers "$brokers" --rules "$root/bench/rules" \
        --cluster "c$k" "$piece" 2> /dev/null || return 1
      k=$((k + 1))
    done
  done
}

for how in KILL TERM; do
  vals=()
  for r in $(seq 1 "$runs"); do
    d=$work/pause-$how-$r
    redis_up "$d" || exit 1
    feed & fpid=$!
    correlator "$d" survivor "pause-$how-$r" 0
    wait_log "$d/survivor.err" restored || exit 1
    correlator "$d" victim "pause-$how-$r" $(( 1 % ncpu ))
    victim=${corr_pids[-1]}
    wait_log "$d/victim.err" "restored .* for 32 of" || exit 1
    wait_log "$d/victim.err" "batch committed" || exit 1
    t0=$(now_ms)
    kill -"$how" "$victim"
    t1=
    for _ in $(seq 1 1200); do
      took=$(log_ms "$d/survivor.err" "restored .* for 64 of" "$t0")
      [ -n "$took" ] && t1=$(log_ms "$d/survivor.err" "batch committed" "$took")
      [ -n "$t1" ] && break
      sleep 0.05
    done
    [ -n "$t1" ] || { say "the survivor took nothing over in 60 s (SIG$how)"; exit 1; }
    vals+=("$(( t1 - t0 ))")
    say "SIG$how: the survivor's first batch of all 64 partitions $((t1 - t0)) ms after (took them at +$((took - t0)) ms)"
    kill "$fpid" 2>/dev/null; wait "$fpid" 2>/dev/null || true
    stop_corr
    kill "${pids[-1]}" 2>/dev/null || true
  done
  bench_record "$results" ms scale "scale.real.rebalance_pause.sig$(tr 'A-Z' 'a-z' <<< "$how")" cascade \
    "bench/scale.sh --clusters $clusters LOG BUILD" "${vals[@]}"
done
jq -s . "$results" > "$json"
say "results: $json"
