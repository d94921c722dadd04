#!/usr/bin/env bash
# Kubernetes API events/s taken by `cascade ingest k8s` (framing the watch
# stream, deriving each object's signals, the rules' edge filter,
# validating and encoding each signal, producing it to `cascade broker`
# over TCP) beside the plain Python watcher a user would write instead
# (bench/peers/k8s_watch_peer.py: http.client, json.loads,
# confluent-kafka). The same streams for both (k8s_stream.py --generate:
# EVENTS Events, half Warnings a rule reads, and EVENTS/4 Pod updates, a
# tenth of them OOMKilled), served by k8s_stream.py over plain HTTP as
# fast as it writes; a run is timed from the first WATCH to the client's
# coming back for more once both streams are read (its signals handed to
# librdkafka by then, for both). Each server and client fresh each run.
#
# usage: bench/k8s.sh [--runs N] [--events N] [--json FILE] [BUILD_DIR]
# Prints one line per figure; --json writes [{name, tool, unit, median,
# min, max, runs, command}].
set -euo pipefail
runs=3 events=100000 json=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --events) events=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "usage: bench/k8s.sh [--runs N] [--events N] [--json FILE] [BUILD_DIR]" >&2; exit 2 ;;
    *) break ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
cascade=$build/cascade
. "$root/bench/lib.sh"
bench_py bench/k8s.sh
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"' EXIT
python3 "$root/bench/k8s_stream.py" --generate "$work" "$events"
total=$((events + events / 4))
echo "k8s: $events Events and $((events / 4)) Pod updates, $(du -sh "$work/events" | cut -f1) and $(du -sh "$work/pods" | cut -f1)" >&2

start_broker "$work" "$cascade" || exit 1

# one CLIENT...: events/s of one run of the client (a command line with
# @PORT for the server's port)
one() {
  local spid cpid port t
  rm -f "$work/port" "$work/times"
  python3 "$root/bench/k8s_stream.py" --port-file "$work/port" --times "$work/times" \
    "events=$work/events" "pods=$work/pods" > "$work/server.out" 2>&1 &
  spid=$!
  for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.05; done
  port=$(cat "$work/port")
  "${@//@PORT/$port}" > "$work/client.out" 2> "$work/client.err" &
  cpid=$!
  for _ in $(seq 1 1200); do
    [ -s "$work/times" ] && [ "$(jq '[.[] | select(.back)] | length' "$work/times")" = 2 ] && break
    kill -0 $cpid 2>/dev/null || { echo "bench/k8s.sh: the client died: $(tail -n 3 "$work/client.err")" >&2; exit 1; }
    sleep 0.05
  done
  t=$(jq '([.[].back] | max) - ([.[].start] | min)' "$work/times")
  kill -TERM $cpid $spid 2>/dev/null; wait $cpid $spid 2>/dev/null || true
  awk -v n="$total" -v t="$t" 'BEGIN { printf "%.0f\n", n / t }'
}

printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: b\n  cluster: {server: "http://127.0.0.1:@PORT"}\ncontexts:\n- name: b\n  context: {cluster: b}\ncurrent-context: b\n' > "$work/kubeconfig.in"
cascade_client() {
  sed "s/@PORT/$1/" "$work/kubeconfig.in" > "$work/kubeconfig"
  exec "$cascade" ingest k8s --brokers "$brokers" --kubeconfig "$work/kubeconfig" \
    --no-workloads --cluster bench --max-age 86400
}
export -f cascade_client
export cascade brokers work

results=$work/results.jsonl
: > "$results"
record() { bench_record "$results" events/s k8s "$@"; }
vals=()
for _ in $(seq 1 "$runs"); do vals+=("$(one bash -c 'cascade_client @PORT')"); done
record k8s.watch cascade "cascade ingest k8s (edge filter, derived signals, msgpack, Kafka)" "${vals[@]}"
vals=()
for _ in $(seq 1 "$runs"); do
  vals+=("$(one $py "$root/bench/peers/k8s_watch_peer.py" --server "http://127.0.0.1:@PORT" \
    --brokers "$brokers" --topic bench.k8s --cluster bench)")
done
record k8s.watch python "k8s_watch_peer.py (json.loads, Warnings and OOMKilled, confluent-kafka)" "${vals[@]}"

if [ -n "$json" ]; then jq -s . "$results" > "$json"; else cat "$results"; fi
