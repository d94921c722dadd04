#!/usr/bin/env bash
# Every shared stream must score exact (and twice the same bytes); the
# negative streams must open nothing.
set -euo pipefail
bin=$1 shared=$2
scen=$shared/scenarios
[ -x "$shared/tools/score-replay" ] || { echo "no $shared/tools/score-replay"; exit 1; }
files=("$scen"/*.jsonl)
[ "${#files[@]}" -ge 30 ] || { echo "only ${#files[@]} shared streams"; exit 1; }
"$shared/tools/score-replay" --replay "$bin replay" --twice "${files[@]}"

# Byte-for-byte determinism across separate runs (separate redis-servers).
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$bin" replay "$scen/cascade_node_crash_xid.jsonl" > "$tmp/a"
"$bin" replay "$scen/cascade_node_crash_xid.jsonl" > "$tmp/b"
cmp "$tmp/a" "$tmp/b"
[ -s "$tmp/a" ]
# Several files merge by event time into the same incidents.
"$bin" replay "$scen/hw_gpu_off_bus.jsonl" "$scen/oom_batch_size.jsonl" > "$tmp/c"
[ "$(wc -l < "$tmp/c")" -eq 2 ]
grep -q '"scenario":"hw.gpu_off_bus"' "$tmp/c"
grep -q '"scenario":"oom.batch_size"' "$tmp/c"
echo "replay scenarios: ok"
