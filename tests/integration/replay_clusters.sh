#!/usr/bin/env bash
# Clusters keep their own event time. Kafka keeps each cluster's signals
# in order on its own partition, but one correlator reads many partitions
# and they interleave at random: a cluster days ahead of another must not
# make the other's signals look late (fold windows, crash windows, stall
# timers, report quiet periods). Every shared stream becomes a cluster of
# its own (hosts and racks renamed, moved i days on), the streams are cut
# in chunks and dealt round-robin into one file, and the replay of that
# file must equal the streams replayed one by one.
set -euo pipefail
bin=$1 shared=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

python3 "$(dirname "$0")/clusterize.py" "$tmp" 7 "$shared"/scenarios/*.jsonl

want=0
for f in "$tmp"/c*.jsonl; do
  "$bin" replay "$f" >> "$tmp/alone.jsonl" 2>> "$tmp/replay.err"
done
for f in "$shared"/scenarios/*.expect.json; do
  want=$((want + $(jq '.incidents | length' "$f")))
done
got=$(wc -l < "$tmp/alone.jsonl")
[ "$got" -eq "$want" ] || { echo "FAIL: the renamed streams alone give $got incidents, their expect files $want"; exit 1; }
"$bin" replay "$tmp/mixed.jsonl" > "$tmp/mixed.out" 2>> "$tmp/replay.err"
sort "$tmp/alone.jsonl" > "$tmp/a"
sort "$tmp/mixed.out" > "$tmp/b"
if ! cmp -s "$tmp/a" "$tmp/b"; then
  diff "$tmp/a" "$tmp/b" | cut -c1-300 | head -20
  echo "FAIL: $(ls "$tmp"/c*.jsonl | wc -l) clusters interleaved differ from each replayed alone"
  exit 1
fi
echo "replay clusters: ok ($got incidents of $(ls "$tmp"/c*.jsonl | wc -l) clusters interleaved, equal to each cluster alone)"
