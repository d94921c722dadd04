#!/usr/bin/env bash
# The project's own fixtures (tests/data/fixtures: three variants of every
# shared stream and of every stream in base/, plus mixed streams) must
# score exact, twice the same, and must still be what the generator makes
# from today's shared streams.
set -euo pipefail
bin=$1 shared=$2 fixtures=$3
score=$shared/tools/score-replay
[ -x "$score" ] || { echo "no $score"; exit 1; }

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/gen"
cp -r "$fixtures/base" "$tmp/gen/base"
"$fixtures/generate" "$shared/scenarios" "$tmp/gen" >/dev/null
diff -rq "$fixtures" "$tmp/gen" | grep -v "Only in $fixtures: generate$" \
  > "$tmp/drift" || true
if [ -s "$tmp/drift" ]; then
  echo "fixtures are stale: run $fixtures/generate $shared/scenarios $fixtures"
  cat "$tmp/drift"
  exit 1
fi

files=("$fixtures"/*.jsonl "$fixtures"/base/*.jsonl)
[ "${#files[@]}" -ge 100 ] || { echo "only ${#files[@]} fixtures"; exit 1; }
"$score" --replay "$bin replay" --twice "${files[@]}"
# Lifecycle: the node crash resolves when the node is back, reopens when
# it fails again within the grace period and resolves again.
"$bin" replay "$fixtures/base/node_down_recovered.jsonl" > "$tmp/life.jsonl"
[ "$(jq -r '[.status, .reopened, .resolution] | @tsv' "$tmp/life.jsonl")" = \
  "$(printf 'resolved\t1\tNodeReady: Node gpu-012 status is now: NodeReady')" ] \
  || { echo "node_down_recovered: wrong lifecycle"; cat "$tmp/life.jsonl"; exit 1; }
# A storm: six nodes of rack-7 down at once are one rack incident, which
# resolves when all six are back; rack-8's node stays its own, open.
"$bin" replay "$fixtures/base/rack_power_storm.jsonl" > "$tmp/storm.jsonl"
[ "$(jq -r '[.scope.rack, .status, (.children | map(select(.node)) | length)] | @tsv' "$tmp/storm.jsonl")" = \
  "$(printf 'rack-7\tresolved\t6\nrack-8\topen\t0')" ] \
  || { echo "rack_power_storm: wrong storm"; cat "$tmp/storm.jsonl"; exit 1; }
echo "replay fixtures: ok (${#files[@]} streams)"
