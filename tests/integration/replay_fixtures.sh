#!/usr/bin/env bash
# The project's scenario corpus (tests/data/fixtures: three variants of
# every scenario, mixed pairs, and base/, the streams written for this
# project) must score exact and replay twice the same, scored by the
# project's own scorer (tests/tools/score).
#   usage: replay_fixtures.sh CASCADE_BIN FIXTURES_DIR
set -euo pipefail
bin=$1 fixtures=$2
score=$(dirname "$0")/../tools/score
jobs=$(nproc 2>/dev/null || echo 2)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

shopt -s nullglob
files=("$fixtures"/*.jsonl "$fixtures"/base/*.jsonl "$fixtures"/catalog/*.jsonl)
shopt -u nullglob
[ "${#files[@]}" -ge 100 ] || { echo "only ${#files[@]} fixtures"; exit 1; }
"$score" --replay "$bin replay" --twice -j "$jobs" "${files[@]}"
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
