#!/usr/bin/env bash
# Replay is deterministic and merges files by event time. (Every corpus
# stream scoring exact is replay.fixtures.)
#   usage: replay_scenarios.sh CASCADE_BIN CORPUS_DIR
set -euo pipefail
bin=$1 corpus=$2
. "$(dirname "$0")/corpus.sh"

# Byte-for-byte determinism across separate runs (separate redis-servers).
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
crash=$(corpus_stream "$corpus" cascade_node_crash_xid)
"$bin" replay "$crash" > "$tmp/a"
"$bin" replay "$crash" > "$tmp/b"
cmp "$tmp/a" "$tmp/b"
[ -s "$tmp/a" ]
# Several files merge by event time into the same incidents.
"$bin" replay "$(corpus_stream "$corpus" hw_gpu_off_bus)" \
  "$(corpus_stream "$corpus" oom_batch_size)" > "$tmp/c"
[ "$(wc -l < "$tmp/c")" -eq 2 ]
grep -q '"scenario":"hw.gpu_off_bus"' "$tmp/c"
grep -q '"scenario":"oom.batch_size"' "$tmp/c"
echo "replay scenarios: ok"
