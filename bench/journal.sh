#!/usr/bin/env bash
# Journal entries/s read by `cascade ingest journal` (sd-journal, the
# kernel entries of a journal file, the edge filter or --all, published
# to `cascade broker` over TCP) beside the plain reader a user would
# write instead (`journalctl -o json` piped into
# bench/peers/journal_peer.py: json, confluent-kafka). The same file for
# both: gen_log.py's lines as kernel entries of a journal that
# systemd-journal-remote writes from export format (journal_export.py),
# ENTRIES of them. A run is timed until every entry is acknowledged:
# cascade's checkpoint holds the last entry's cursor (it moves only over
# acknowledged entries), the peer's flush returns.
#
# usage: bench/journal.sh [--runs N] [--entries N] [--json FILE] [BUILD_DIR]
set -euo pipefail
runs=3 entries=100000 json=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --entries) entries=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "usage: bench/journal.sh [--runs N] [--entries N] [--json FILE] [BUILD_DIR]" >&2; exit 2 ;;
    *) break ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
cascade=$build/cascade
. "$root/bench/lib.sh"
bench_py bench/journal.sh
jr=$(command -v systemd-journal-remote || echo /lib/systemd/systemd-journal-remote)
[ -x "$jr" ] || { echo "bench/journal.sh: systemd-journal-remote is not installed (deploy/setup.sh)" >&2; exit 1; }
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"' EXIT

python3 "$root/bench/peers/gen_log.py" --lines "$entries" --seed 7 --out "$work/log" > /dev/null
head -n "$entries" "$work/log" | awk '{ host = $2; $1 = ""; $2 = ""; sub(/^ +/, ""); print "kernel " host " " $0 }' |
  python3 "$root/tests/integration/journal_export.py" --start "$(( ($(date +%s) - 3600) * 1000000 ))" |
  "$jr" --output="$work/bench.journal" - 2> "$work/jr.err"
last=$(journalctl --file "$work/bench.journal" -n 1 -o export | sed -n 's/^__CURSOR=//p')
n=$(journalctl --file "$work/bench.journal" -q | wc -l)
echo "journal: $n entries, $(du -sh "$work/bench.journal" | cut -f1)" >&2
# journal-remote starts a new file past its size limit: one file is read
[ "$n" = "$entries" ] || { echo "bench/journal.sh: the journal file holds $n of $entries entries (journal-remote rotated it): fewer --entries" >&2; exit 1; }

start_broker "$work" "$cascade" || exit 1
now_ns() { date +%s%N; }

# one_cascade ARGS...: entries/s of one run
one_cascade() {
  local cp=$work/cp.$RANDOM t0 t1 pid
  t0=$(now_ns)
  "$cascade" ingest journal --brokers "$brokers" --file "$work/bench.journal" \
    --from-start --checkpoint "$cp" "$@" 2> "$work/journal.err" &
  pid=$!
  until [ -s "$cp" ] && [ "$(sed -n 2p "$cp")" = "$last" ]; do
    kill -0 $pid 2>/dev/null || { echo "bench/journal.sh: the reader died: $(tail -n 2 "$work/journal.err")" >&2; exit 1; }
    sleep 0.02
  done
  t1=$(now_ns)
  kill -TERM $pid
  wait $pid || true
  rm -f "$cp"
  awk -v n="$n" -v ns="$((t1 - t0))" 'BEGIN { printf "%.0f\n", n / (ns / 1e9) }'
}

one_peer() {
  local t0 t1 got
  t0=$(now_ns)
  got=$(journalctl --file "$work/bench.journal" -o json --no-pager |
    $py "$root/bench/peers/journal_peer.py" --brokers "$brokers" --topic cascade.signals)
  t1=$(now_ns)
  [ "$got" = "$n" ] || { echo "bench/journal.sh: the peer published $got of $n entries" >&2; exit 1; }
  awk -v n="$n" -v ns="$((t1 - t0))" 'BEGIN { printf "%.0f\n", n / (ns / 1e9) }'
}

results=$work/results.jsonl
: > "$results"
record() { bench_record "$results" entries/s journal "$@"; }
vals=()
for _ in $(seq 1 "$runs"); do vals+=("$(one_cascade --all)"); done
record journal.all cascade "cascade ingest journal --all (every entry published)" "${vals[@]}"
vals=()
for _ in $(seq 1 "$runs"); do vals+=("$(one_cascade)"); done
record journal.edge cascade "cascade ingest journal (the built-in rules' edge filter)" "${vals[@]}"
vals=()
for _ in $(seq 1 "$runs"); do vals+=("$(one_peer)"); done
record journal.all python "journalctl -o json | journal_peer.py (confluent-kafka)" "${vals[@]}"

if [ -n "$json" ]; then jq -s . "$results" > "$json"; else cat "$results"; fi
