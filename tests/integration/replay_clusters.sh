#!/usr/bin/env bash
# Clusters keep their own event time and their own names. Kafka keeps
# each cluster's signals in order on its own partition, but one correlator
# reads many partitions and they interleave at random:
#   - moved: every corpus stream becomes a cluster of its own, hosts and
#     racks renamed and moved i days on; a cluster days ahead of another
#     must not make the other's signals look late (fold windows, crash
#     windows, stall timers, report quiet periods);
#   - collide: the clusters keep the same host and rack names and the
#     same event time, and each numbers its jobs from 100 (SLURM
#     controllers each count their own): c00's job 100 and c01's job 100,
#     or their gpu-001s, must never mix.
# In both, the streams are cut in chunks and dealt round-robin into one
# file, and the replay of that file must equal the streams replayed one by
# one.
set -euo pipefail
bin=$1 corpus=$2
. "$(dirname "$0")/corpus.sh"
mapfile -t streams < <(corpus_streams "$corpus")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

want=0
for f in "${streams[@]}"; do
  want=$((want + $(jq '.incidents | length' "${f%.jsonl}.expect.json")))
done

for mode in moved collide; do
  dir=$tmp/$mode
  mkdir "$dir"
  flag=
  [ "$mode" = collide ] && flag=--collide
  python3 "$(dirname "$0")/clusterize.py" $flag "$dir" 7 "${streams[@]}"
  for f in "$dir"/c*.jsonl; do
    "$bin" replay "$f" >> "$dir/alone.jsonl" 2>> "$dir/replay.err"
  done
  got=$(wc -l < "$dir/alone.jsonl")
  [ "$got" -eq "$want" ] || { echo "FAIL ($mode): the streams alone give $got incidents, their expect files $want"; exit 1; }
  "$bin" replay "$dir/mixed.jsonl" > "$dir/mixed.out" 2>> "$dir/replay.err"
  sort "$dir/alone.jsonl" > "$dir/a"
  sort "$dir/mixed.out" > "$dir/b"
  n=$(ls "$dir"/c*.jsonl | wc -l)
  if ! cmp -s "$dir/a" "$dir/b"; then
    diff "$dir/a" "$dir/b" | cut -c1-300 | head -20 || true
    echo "FAIL ($mode): $n clusters interleaved differ from each replayed alone"
    exit 1
  fi
  echo "replay clusters ($mode): ok ($got incidents of $n clusters interleaved, equal to each cluster alone)"
done
