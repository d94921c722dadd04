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

python3 - "$shared/scenarios" "$tmp" <<'PY'
import datetime, glob, json, os, re, sys
scen, out = sys.argv[1], sys.argv[2]
streams = []
for i, path in enumerate(sorted(glob.glob(os.path.join(scen, "*.jsonl")))):
    c = "c%02d" % i
    lines = []
    for raw in open(path):
        if not raw.strip():
            continue
        raw = re.sub(r"\bgpu-(?=\d)", c + "gpu-", raw)
        raw = re.sub(r"\brack-(?=\d)", c + "rack-", raw)
        s = json.loads(raw)
        s["cluster"] = c
        t = datetime.datetime.strptime(s["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
        t += datetime.timedelta(days=i)
        s["ts"] = t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)
        lines.append(json.dumps(s, separators=(",", ":")))
    with open(os.path.join(out, "%s.jsonl" % c), "w") as f:
        f.write("\n".join(lines) + "\n")
    streams.append(lines)
with open(os.path.join(out, "mixed.jsonl"), "w") as f:
    pos = [0] * len(streams)
    # later (further ahead) clusters first in each round
    while any(p < len(s) for p, s in zip(pos, streams)):
        for k in reversed(range(len(streams))):
            chunk = streams[k][pos[k]:pos[k] + 7]
            pos[k] += 7
            for l in chunk:
                f.write(l + "\n")
PY

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
