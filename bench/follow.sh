#!/usr/bin/env bash
# Lines/s followed: `cascade ingest log --follow` beside a plain Python
# follower (bench/peers/follow_peer.py: readline, json, confluent-kafka),
# each reading the same log of gen_log.py lines from its beginning and
# publishing every line to `cascade broker` over TCP. A run is timed from
# the follower's start until every line is acknowledged by the broker:
# cascade's checkpoint reaching the file's end (it moves only over
# acknowledged lines), the peer's flush. cascade also with its edge filter
# (bench/rules), which publishes only what a rule could take.
#
# usage: bench/follow.sh [--runs N] [--lines N] [--json FILE] [BUILD_DIR]
# Prints one line per figure; --json writes [{name, tool, unit, median,
# min, max, runs, command}].
set -euo pipefail
runs=3 lines=1000000 json=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --lines) lines=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "usage: bench/follow.sh [--runs N] [--lines N] [--json FILE] [BUILD_DIR]" >&2; exit 2 ;;
    *) break ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
cascade=$build/cascade
. "$root/bench/lib.sh"
bench_py bench/follow.sh
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"' EXIT

python3 "$root/bench/peers/gen_log.py" --lines "$lines" --seed 7 --out "$work/log" > /dev/null
size=$(stat -c %s "$work/log")
start_broker "$work" "$cascade" || exit 1

now_ns() { date +%s%N; }
results=$work/results.jsonl
: > "$results"

# one_cascade ARGS...: lines/s of one run
one_cascade() {
  local cp=$work/cp.$RANDOM t0 t1 pid
  t0=$(now_ns)
  "$cascade" ingest log --follow --from-start --brokers "$brokers" --checkpoint "$cp" \
    "$@" "$work/log" 2> "$work/follow.err" &
  pid=$!
  until [ -s "$cp" ] && awk -v s="$size" 'NR > 1 && $3 == s { f = 1 } END { exit !f }' "$cp"; do
    kill -0 $pid 2>/dev/null || { echo "bench/follow.sh: the follower died: $(tail -n 2 "$work/follow.err")" >&2; exit 1; }
    sleep 0.02
  done
  t1=$(now_ns)
  kill -TERM $pid
  wait $pid || true
  rm -f "$cp"
  awk -v n="$lines" -v ns="$((t1 - t0))" 'BEGIN { printf "%.0f\n", n / (ns / 1e9) }'
}

one_peer() {
  local t0 t1 n
  t0=$(now_ns)
  n=$($py "$root/bench/peers/follow_peer.py" --brokers "$brokers" --topic cascade.signals \
    --exit-at-eof "$work/log")
  t1=$(now_ns)
  [ "$n" = "$lines" ] || { echo "bench/follow.sh: the peer published $n of $lines lines" >&2; exit 1; }
  awk -v n="$lines" -v ns="$((t1 - t0))" 'BEGIN { printf "%.0f\n", n / (ns / 1e9) }'
}

record() { bench_record "$results" lines/s follow "$@"; }

vals=()
for _ in $(seq 1 "$runs"); do vals+=("$(one_cascade --all)"); done
record follow.all cascade "cascade ingest log --follow --from-start --all FILE" "${vals[@]}"
vals=()
for _ in $(seq 1 "$runs"); do vals+=("$(one_peer)"); done
record follow.all python "follow_peer.py --exit-at-eof FILE" "${vals[@]}"
vals=()
for _ in $(seq 1 "$runs"); do vals+=("$(one_cascade --rules "$root/bench/rules")"); done
record follow.edge cascade "cascade ingest log --follow --from-start --rules bench/rules FILE" "${vals[@]}"

if [ -n "$json" ]; then jq -s . "$results" > "$json"; else cat "$results"; fi
