#!/usr/bin/env bash
# The project's own fixtures (tests/data/fixtures: three variants of every
# shared stream and of every stream in base/, plus mixed streams) must
# score exact, twice the same, and must still be what the generator makes
# from today's shared streams.
# The cascade_shifting_symptoms variants wait for the cascades work and
# are scored, not required.
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

required=() pending=()
for f in "$fixtures"/*.jsonl "$fixtures"/base/*.jsonl; do
  case $(basename "$f") in
    cascade_shifting_symptoms.*) pending+=("$f") ;;
    *) required+=("$f") ;;
  esac
done
[ "${#required[@]}" -ge 100 ] || { echo "only ${#required[@]} fixtures"; exit 1; }
"$score" --replay "$bin replay" --twice "${required[@]}"
echo "--- pending (cascades work), scored only:"
"$score" --replay "$bin replay" "${pending[@]}" || true
echo "replay fixtures: ok (${#required[@]} required, ${#pending[@]} pending)"
