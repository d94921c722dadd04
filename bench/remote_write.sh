#!/usr/bin/env bash
# Samples/s taken over remote-write: `cascade ingest remote-write`
# (decoding every sample, publishing those the rules read to `cascade
# broker` over TCP and answering 204 only once Kafka acknowledged them;
# and with --all, publishing every one) beside Prometheus 2.42's own
# receiver (--web.enable-remote-write-receiver, appending to its TSDB),
# Debian's. The same bodies for each (bench_rwgen: dcgm-exporter's shape,
# 25 fields a GPU of which 5 are read by the rules, SAMPLES a request,
# snappy protobuf), posted as Prometheus posts them: 8 shards at once,
# each one curl sending its own series' requests in order on one
# connection; each receiver fresh each run. A run is timed from the first
# request to the last answer; every answer must be 204.
# RW_WRAP_CASCADE="perf record -g -o FILE" runs the receiver under a
# profiler (any wrapper that execs its arguments and passes SIGTERM on).
#
# usage: bench/remote_write.sh [--runs N] [--requests N] [--samples N]
#                              [--json FILE] [BUILD_DIR]
# Prints one line per figure; --json writes [{name, tool, unit, median,
# min, max, runs, command}].
set -euo pipefail
runs=3 requests=400 samples=500 json=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "usage: bench/remote_write.sh [--runs N] [--requests N] [--samples N] [--json FILE] [BUILD_DIR]" >&2; exit 2 ;;
    *) break ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
cascade=$build/cascade
command -v prometheus > /dev/null || { echo "bench/remote_write.sh: prometheus is not installed (deploy/setup.sh)" >&2; exit 1; }
. "$root/bench/lib.sh"
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"' EXIT
token=bench-$$
printf '%s\n' "$token" > "$work/token"
mkdir "$work/bodies"
"$build/bench/bench_rwgen" "$work/bodies" "$requests" "$samples" 8 >&2
total=$((requests * samples))

start_broker "$work" "$cascade" || exit 1

# curl's config for shard K: one transfer a body, in order, to PORT
curl_config() {
  local first=1
  for f in "$work"/bodies/shard.$2/body.*; do
    [ $first = 1 ] || echo next
    first=0
    printf 'url = "http://127.0.0.1:%s/api/v1/write"\ndata-binary = "@%s"\n' "$1" "$f"
    printf 'header = "Authorization: Bearer %s"\nheader = "Content-Encoding: snappy"\n' "$token"
    printf 'header = "Content-Type: application/x-protobuf"\nheader = "X-Prometheus-Remote-Write-Version: 0.1.0"\n'
    printf 'output = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n'
  done > "$work/curl.$1.$2"
}
now_ns() { date +%s%N; }
# post PORT: samples/s of one pass over the bodies
post() {
  local t0 t1 bad k cpids=()
  for k in $(seq 0 7); do curl_config "$1" $k; done
  t0=$(now_ns)
  for k in $(seq 0 7); do
    curl -sS -K "$work/curl.$1.$k" > "$work/codes.$k" 2> "$work/curl.err.$k" & cpids+=($!)
  done
  wait "${cpids[@]}" || true
  t1=$(now_ns)
  cat "$work"/codes.* > "$work/codes"
  cat "$work"/curl.err.* > "$work/curl.err"
  bad=$(grep -cv '^204$' "$work/codes" || true)
  [ "$bad" = 0 ] || { echo "bench/remote_write.sh: $bad answers not 204: $(sort "$work/codes" | uniq -c | tr '\n' ' '); $(sort -u "$work/curl.err" | head -n 3)" >&2; exit 1; }
  awk -v n="$total" -v ns="$((t1 - t0))" 'BEGIN { printf "%.0f\n", n / (ns / 1e9) }'
}
wait_http() {
  for _ in $(seq 1 200); do
    curl -fsS "http://127.0.0.1:$1$2" > /dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "bench/remote_write.sh: nothing answers on port $1" >&2; exit 1
}

one_cascade() {
  local port pid v
  port=$(free_port)
  CASCADE_REMOTE_WRITE_TOKEN=$token ${RW_WRAP_CASCADE:-} "$cascade" ingest remote-write --brokers "$brokers" \
    --port "$port" "$@" --for 3600 > "$work/rw.out" 2> "$work/rw.err" &
  pid=$!
  wait_http "$port" /healthz
  v=$(post "$port")
  kill -TERM $pid; wait $pid || true
  echo "$v"
}
one_prometheus() {
  local port pid v
  port=$(free_port)
  rm -rf "$work/tsdb"
  printf 'global: {scrape_interval: 1h}\n' > "$work/prom.yml"
  prometheus --config.file="$work/prom.yml" --storage.tsdb.path="$work/tsdb" \
    --web.enable-remote-write-receiver --web.listen-address="127.0.0.1:$port" \
    > "$work/prom.out" 2> "$work/prom.err" &
  pid=$!
  wait_http "$port" /-/ready
  v=$(post "$port")
  kill -TERM $pid; wait $pid || true
  echo "$v"
}

results=$work/results.jsonl
: > "$results"
record() { bench_record "$results" samples/s remote_write "$@"; }

vals=()
for _ in $(seq 1 "$runs"); do vals+=("$(one_cascade)"); done
record remote_write.rules cascade "cascade ingest remote-write (the rules' names published)" "${vals[@]}"
vals=()
for _ in $(seq 1 "$runs"); do vals+=("$(one_cascade --all)"); done
record remote_write.all cascade "cascade ingest remote-write --all (every sample published)" "${vals[@]}"
vals=()
for _ in $(seq 1 "$runs"); do vals+=("$(one_prometheus)"); done
record remote_write.all prometheus "prometheus --web.enable-remote-write-receiver (TSDB)" "${vals[@]}"

if [ -n "$json" ]; then jq -s . "$results" > "$json"; else cat "$results"; fi
