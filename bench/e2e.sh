#!/usr/bin/env bash
# cascade end to end on a raw log: collector, Kafka, correlator with its
# windows in a durable Redis, incidents out, offsets committed.
#
# usage: bench/e2e.sh [--runs N] [--rules DIR] [--batch N] [--stream] LOG BUILD_DIR
#
# Each run starts a fresh `cascade broker` (TCP) and a redis-server with
# appendonly yes / appendfsync everysec. Preload (the default): `cascade
# ingest log` (its edge filter reads the same rules) fills cascade.signals,
# then `cascade correlate --drain` reads it, and exits once every partition
# is read to its end, the outputs delivered and the offsets committed.
# --stream: the correlator runs first; once it has its partitions and has
# read and stored one primer signal of the log's cluster (an NCCL timeout
# of host "primer", at the log's first time stamp: it opens no incident)
# the collector starts, and SIGUSR1 after the collector's exit makes the
# correlator drain what is left and exit. Without the primer a collector
# that filled the partition before the correlator's first fetch left that
# fetch behind the broker's log start: half the dense log lost in some
# runs. `consumed` does not count the primer. (The embedded broker keeps about
# 5 MiB per partition, fixed in librdkafka's mock cluster, and one
# cluster's signals share one partition: a preload larger than that loses
# its oldest messages, which the published/consumed counts show.)
# Incidents are counted from the correlator's incidents hash in Redis and
# mapped to the generator's truth names (bench/rules/peer.yaml).
#
# Prints one JSON object per run: lines, mode, ingest_s (collector start to
# exit, delivery confirmed), join_s (correlator start to its partitions:
# the consumer group join, 3 s as Kafka's group.initial.rebalance.delay.ms),
# process_s (preload: assignment to drained; stream: collector start to
# drained), read_s (preload: the correlator's first batch read to drained,
# as bench_ceilings times its consumer from the first message; stream:
# null), e2e_s (preload: ingest_s + process_s; stream: process_s),
# published, consumed, redis_used_memory, counts.
# E2E_WRAP_CORRELATOR="perf record -g -o FILE" runs the correlator under a
# profiler (or any wrapper that execs its arguments); E2E_WRAP_COLLECTOR
# the collector.
# BENCH_KAFKA=real: a real Apache Kafka (deploy/kafka, one KRaft node, the
# topics made by `cascade kafka init`) instead of `cascade broker`.
# Exit codes: 0 done, 1 a component failed, 2 usage.
set -euo pipefail
runs=1 batch= stream=
root=$(cd "$(dirname "$0")/.." && pwd)
rules=$root/bench/rules
usage() { sed -n '5p' "$0" | sed 's/^# //' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --rules) rules=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --stream) stream=1; shift ;;
    -h|--help) sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || usage
log=$(realpath "$1")
build=$(realpath "$2")
cascade=$build/cascade
[ -x "$cascade" ] || { echo "bench/e2e.sh: no $cascade (build first)" >&2; exit 1; }
work=$(mktemp -d)
. "$root/bench/lib.sh"
trap 'stop_all; [ -n "${E2E_KEEP:-}" ] || rm -rf "$work"' EXIT
say() { echo "e2e: $*" >&2; }
now_ms() { date +%s%3N; }
lines=$(wc -l < "$log")

# log_ms FILE PATTERN: the time (ms) of the first log line matching
log_ms() {
  local t
  t=$(sed -n "s/^\\([^ ]*\\) .*$2.*/\\1/p" "$1" | head -n 1)
  [ -n "$t" ] || { say "no '$2' in $1: $(tail -n 3 "$1")"; exit 1; }
  date -d "$t" +%s%3N
}

# prime DIR: one signal of the log's cluster through the collector, and
# until the correlator has stored it (Redis then holds a key of the
# cluster): its fetcher is then reading that partition at its end.
prime() {
  local ts
  ts=$(head -n 1 "$log" | cut -d ' ' -f 1)
  printf '%s primer job=1 python[1]: [rank0]:[E0501 00:00:00.000000000 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n' \
    "$ts" > "$1/primer.log"
  "$cascade" ingest log --brokers "$brokers" --rules "$rules" "$1/primer.log" 2> "$1/primer.err" ||
    { say "ingest log of the primer failed: $(tail -n 3 "$1/primer.err")"; return 1; }
  for _ in $(seq 1 600); do
    [ -n "$(redis-cli -s "$1/redis.sock" --scan --pattern 'cascade:{default}:*' | head -n 1)" ] && return 0
    sleep 0.05
  done
  say "the correlator did not store the primer signal in 30 s"
  return 1
}

for r in $(seq 1 "$runs"); do
  d=$work/run$r
  mkdir -p "$d"
  start_stack "$d" "$cascade" || exit 1
  printf 'rules:\n  dir: "%s"\nlog:\n  level: %s\n'"${E2E_EXTRA_CONF:-}" "$rules" "${E2E_LOG_LEVEL:-info}" > "$d/cascade.yaml"
  # shellcheck disable=SC2206 # a wrapper is words: "perf record -g -o F"
  corr=(${E2E_WRAP_CORRELATOR:-} "$cascade" correlate --brokers "$brokers" --redis "$d/redis.sock"
        --group "bench-$r" --config "$d/cascade.yaml" ${batch:+--batch "$batch"})
  # shellcheck disable=SC2206
  ingest=(${E2E_WRAP_COLLECTOR:-} "$cascade" ingest log --brokers "$brokers" --rules "$rules" "$log")

  if [ -z "$stream" ]; then
    t0=$(now_ms)
    "${ingest[@]}" 2> "$d/ingest.err" ||
      { say "ingest log failed: $(tail -n 3 "$d/ingest.err")"; exit 1; }
    t1=$(now_ms)
    "${corr[@]}" --drain > "$d/corr.out" 2> "$d/corr.err" ||
      { say "correlate --drain failed: $(tail -n 3 "$d/corr.err")"; exit 1; }
    start=$t1
    assigned=$(log_ms "$d/corr.err" "partitions assigned")
    first=$(log_ms "$d/corr.err" "first batch read")
    drained=$(log_ms "$d/corr.err" "drained:")
    ingest_ms=$((t1 - t0)) process_ms=$((drained - assigned))
    read_ms=$((drained - first))
    e2e_ms=$((ingest_ms + process_ms)) mode=preload
  else
    start=$(now_ms)
    "${corr[@]}" > "$d/corr.out" 2> "$d/corr.err" & cpid=$!
    wait_log "$d/corr.err" restored || { kill "$cpid"; exit 1; }
    prime "$d" || { kill "$cpid"; exit 1; }
    t0=$(now_ms)
    "${ingest[@]}" 2> "$d/ingest.err" ||
      { say "ingest log failed: $(tail -n 3 "$d/ingest.err")"; kill "$cpid"; exit 1; }
    t1=$(now_ms)
    # the correlator itself, not a wrapper around it (perf would die of it)
    kill -USR1 "$(pgrep -f "^$cascade correlate .*--group bench-$r( |\$)" | head -n 1)"
    wait "$cpid" || { say "correlate failed to drain: $(tail -n 3 "$d/corr.err")"; exit 1; }
    assigned=$(log_ms "$d/corr.err" "partitions assigned")
    drained=$(log_ms "$d/corr.err" "drained:")
    ingest_ms=$((t1 - t0)) process_ms=$((drained - t0))
    read_ms=null # the first batch is the primer, read before the collector
    e2e_ms=$process_ms mode=stream
  fi
  published=$(sed -n 's/.* \([0-9]*\) published.*/\1/p' "$d/ingest.err" | tail -n 1)
  consumed=$(sed -n 's/.*correlated \([0-9]*\) signals.*/\1/p' "$d/corr.err" | tail -n 1)
  [ -z "$stream" ] || consumed=$((${consumed:-1} - 1)) # the primer
  bytes=$(redis-cli -s "$d/redis.sock" info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
  counts=$(redis-cli -s "$d/redis.sock" --raw hvals 'cascade:{default}:incidents' |
    jq -sc 'map(.scenario) | {threshold: map(select(. == "peer.nccl_timeout_burst")) | length,
      pair: map(select(. == "peer.xid79_job_cancel")) | length,
      eventgroup: map(select(. == "peer.ib_down_nccl_timeout")) | length}')
  jq -cn --argjson lines "$lines" --arg mode "$mode" --argjson ingest "$ingest_ms" \
    --argjson join "$((assigned - start))" --argjson process "$process_ms" \
    --argjson read "$read_ms" --argjson e2e "$e2e_ms" --argjson pub "${published:-0}" --argjson con "${consumed:-0}" \
    --argjson mem "${bytes:-0}" --argjson counts "$counts" \
    '{lines: $lines, mode: $mode, ingest_s: ($ingest / 1000), join_s: ($join / 1000),
      process_s: ($process / 1000), read_s: (if $read == null then null else $read / 1000 end),
      e2e_s: ($e2e / 1000), published: $pub, consumed: $con,
      redis_used_memory: $mem, counts: $counts}'
  stop_all
done
