#!/usr/bin/env bash
# Detection latency at fixed offered rates: a live `cascade correlate`
# (bench/rules, windows in a Redis with appendonly, the embedded broker
# over TCP) and bench_latency offering signals at each rate, 100 patterns
# a second completing peer.xid79_job_cancel.
#
# usage: bench/latency.sh [--seconds S] [--runs N] [--fetch-wait MS] [--every S] [--jobs N] [--hop|--relay] BUILD_DIR RATE...
#
# --hop: no correlator; the time from producing a signal to reading it back
# from cascade.signals (one hop through the broker; a detection takes two).
# --relay: bench_relay in the correlator's place: its cycle (Redis write
# acked, records produced and delivered, Redis clear, commit) with no
# engine; the floor a detection through this broker and Redis sits on.
# --jobs N: the timeouts' jobs go round N of them (bench_latency --jobs;
# default every timeout a new job: 30M live keys after five minutes at
# 100k/s, the worst case). A fleet's storm repeats its jobs.
# --fetch-wait MS: every consumer's fetch.wait.max.ms (the correlator's
# kafka.fetch_wait_ms, the relay's, the reader's), default 1. The embedded
# broker answers a waiting fetch only when the wait is over (a real broker
# answers when data comes); 0 polls, at the CPU the last column shows.
#
# --every S: a soak's view. After each run's line, one line per S seconds
# of it: "interval RATE START END patterns seen p50 p99 p999 max RSS_KIB
# REDIS_BYTES REWRITES" (the patterns sent in that span and their
# latencies; the correlator's resident memory and Redis's used_memory at
# its end; the AOF rewrites Redis finished in it, 0 or more).
# Prints one line per run and rate:
#   rate offered patterns seen p50_ms p99_ms p999_ms max_ms cores
# (bench_latency's line, then the cores the correlator or relay used while
# bench_latency ran: its CPU seconds over the wall seconds; - for --hop or
# a wrapped correlator). LATENCY_WRAP_CORRELATOR="perf record -o FILE"
# runs the correlator under a profiler (or "/usr/bin/time -f %U+%S": any
# wrapper that runs its arguments; the correlator itself is stopped).
# BENCH_KAFKA=real: a real Apache Kafka (deploy/kafka, one KRaft node, the
# topics made by `cascade kafka init`) instead of `cascade broker`. Each
# run starts a fresh broker, and a JVM's first minute is not the broker a
# cluster runs for months (its code is still being compiled), so the
# broker is warmed first: BENCH_KAFKA_WARM seconds (default 30; 0 measures
# it cold) of the rate (10k/s at most) through one hop on topics of their
# own (prefix "warm."), then half as long of timeouts only (no pattern,
# bench_latency --patterns 0) through the correlator or relay, whose
# group commits that exercises. After each run the broker's collections
# during it go to stderr (count, total and longest pause, from its
# gc.log). The broker runs ZGC here (BENCH_KAFKA_GC=g1 for G1, the
# deploy/kafka default): G1's stop-the-world pauses were the tail of
# every client, the relay's and the correlator's alike (BENCHMARKS.md).
# Exit codes: 0 done, 1 a component failed, 2 usage.
set -euo pipefail
seconds=10 runs=1 hop= relay= wait_ms=1 every= jobs=80000000
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '7p' "$0" | sed 's/^# //' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --hop) hop=--hop; shift ;;
    --relay) relay=1; shift ;;
    --fetch-wait) wait_ms=$2; shift 2 ;;
    --every) every=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,47p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || usage
build=$(realpath "$1"); shift
[ -x "$build/bench/bench_latency" ] || { echo "bench/latency.sh: build first" >&2; exit 1; }
work=$(mktemp -d)
: "${BENCH_KAFKA_GC:=zgc}"
export BENCH_KAFKA_GC
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
tck=$(getconf CLK_TCK)
# cpu_s PID: the CPU seconds (user + system) PID has used, or nothing
cpu_s() {
  [ -n "$1" ] && awk -v t="$tck" '{ printf "%.3f\n", ($14 + $15) / t }' "/proc/$1/stat" 2>/dev/null || true
}

# warm_topics DIR RATE: the fresh broker's produce and fetch paths run
# (and compiled) before the clock starts; see BENCH_KAFKA above.
warm_topics() {
  local s=${BENCH_KAFKA_WARM:-30} r=$(( $2 < 10000 ? $2 : 10000 ))
  [ "$s" -gt 0 ] || return 0
  printf 'kafka:\n  topic_prefix: "warm."\n' > "$1/warm.yaml"
  "$build/cascade" kafka init --config "$1/warm.yaml" --brokers "$brokers" \
    --partitions "${BENCH_KAFKA_PARTITIONS:-64}" --replication 1 > "$1/warm-init.out" 2>&1 ||
    { say "warm-up topics: $(tail -n 2 "$1/warm-init.out")"; return 1; }
  say "warming the broker: ${s} s at $r/s, one hop"
  "$build/bench/bench_latency" --hop --topic-prefix warm. --brokers "$brokers" \
    --rate "$r" --seconds "$s" --fetch-wait "$wait_ms" > "$1/warm.out" 2>&1 ||
    { say "warm-up failed: $(tail -n 2 "$1/warm.out")"; return 1; }
}
# warm_load RATE: then timeouts only through the running correlator/relay
warm_load() {
  local s=$(( ${BENCH_KAFKA_WARM:-30} / 2 )) r=$(( $1 < 10000 ? $1 : 10000 ))
  [ "$s" -gt 0 ] || return 0
  say "warming the broker: ${s} s at $r/s through the consumer group"
  "$build/bench/bench_latency" --patterns 0 --brokers "$brokers" \
    --rate "$r" --seconds "$s" > /dev/null ||
    { say "warm-up load failed"; return 1; }
}
# sample_memory DIR PID: every $every s from now, the correlator's RSS
# (KiB), Redis's used_memory and its AOF rewrites finished since the last
# sample, one line each to DIR/memory, until killed.
sample_memory() {
  local last now rss mem
  last=$(redis_rewrites "$1")
  : > "$1/memory"
  while sleep "$every"; do
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$2/status" 2>/dev/null || echo -)
    mem=$(redis-cli -s "$1/redis.sock" info memory 2>/dev/null |
      sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
    now=$(redis_rewrites "$1")
    echo "${rss:--} ${mem:--} $(( ${now:-0} - ${last:-0} ))" >> "$1/memory"
    last=$now
  done
}
# redis_rewrites DIR: AOF rewrites Redis has finished (INFO's aof_rewrites,
# Redis 7), counting one under way as not yet
redis_rewrites() {
  redis-cli -s "$1/redis.sock" info persistence 2>/dev/null |
    sed -n 's/^aof_rewrites:\([0-9]*\).*/\1/p'
}
# gc_pauses DIR: the broker's stop-the-world pauses so far, in ms, one a line
gc_pauses() {
  sed -n 's/.*\] GC([0-9]*) Pause .* \([0-9.]*\)ms$/\1/p' "$1/kafka/node-1/gc.log" 2>/dev/null || true
}

for rate in "$@"; do
  for r in $(seq 1 "$runs"); do
    d=$work/$rate-$r
    mkdir -p "$d"
    start_stack "$d" "$build/cascade" || exit 1
    [ "$(kafka_kind)" != real ] || warm_topics "$d" "$rate" || exit 1
    # no lingering before a batch's outputs go, and a short fetch wait: the
    # embedded broker answers a waiting fetch only when the wait is over
    printf 'kafka:\n  linger_ms: 0\n  fetch_wait_ms: %s\nrules:\n  dir: "%s"\nlog:\n  level: %s\n' \
      "$wait_ms" "$root/bench/rules" "${LATENCY_LOG_LEVEL:-info}" > "$d/cascade.yaml"
    cpid=
    if [ -n "$relay" ]; then
      "$build/bench/bench_relay" --brokers "$brokers" --redis "$d/redis.sock" \
        --fetch-wait "$wait_ms" > "$d/relay.out" 2> "$d/relay.err" & pids+=($!)
      cpid=$!
      wait_log "$d/relay.err" ready || exit 1
    elif [ -z "$hop" ]; then
      # shellcheck disable=SC2086 # a wrapper command line, split on purpose
      ${LATENCY_WRAP_CORRELATOR:-} "$build/cascade" correlate --brokers "$brokers" --redis "$d/redis.sock" \
        --config "$d/cascade.yaml" > "$d/corr.out" 2> "$d/corr.err" & pids+=($!)
      [ -n "${LATENCY_WRAP_CORRELATOR:-}" ] || cpid=$!
      wait_log "$d/corr.err" restored || exit 1
    fi
    [ "$(kafka_kind)" != real ] || [ -n "$hop" ] || warm_load "$rate" || exit 1
    g0=$(gc_pauses "$d" | wc -l)
    c0=$(cpu_s "$cpid") t0=$(date +%s.%N)
    soak=() mpid=
    if [ -n "$every" ]; then
      soak=(--every "$every" --intervals "$d/intervals")
      sample_memory "$d" "$cpid" & mpid=$!
    fi
    # shellcheck disable=SC2086 # $hop is empty or one word
    line=$("$build/bench/bench_latency" $hop --brokers "$brokers" --rate "$rate" \
      --seconds "$seconds" --patterns "${PATTERNS:-100}" --fetch-wait "$wait_ms" \
      --jobs "$jobs" "${soak[@]}") ||
      { say "bench_latency failed at $rate/s"; exit 1; }
    c1=$(cpu_s "$cpid") t1=$(date +%s.%N)
    [ -z "$mpid" ] || { kill "$mpid" 2>/dev/null; wait "$mpid" 2>/dev/null || true; }
    [ "$(kafka_kind)" = real ] && gc_pauses "$d" | tail -n +$((g0 + 1)) |
      awk -v r="$rate" '{ n++; s += $1; if ($1 > m) m = $1 }
        END { printf "latency: %s/s: the broker paused %d times, %.0f ms in all, longest %.0f ms\n", r, n, s, m }' >&2
    if [ -n "$c0" ] && [ -n "$c1" ]; then
      echo "$line $(awk -v a="$c0" -v b="$c1" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.2f", (b - a) / (e - s) }')"
    else
      echo "$line -"
    fi
    if [ -n "$every" ]; then
      # the k-th interval beside the k-th memory sample
      awk -v r="$rate" 'NR == FNR { m[FNR] = $1 " " $2 " " $3; next }
        { print "interval", r, $0, (FNR in m ? m[FNR] : "- - -") }' \
        "$d/memory" "$d/intervals"
    fi
    stop_correlator
    stop_all
  done
done
