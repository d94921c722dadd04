#!/usr/bin/env bash
# `cascade shadow`: a corpus stream replayed, its proposals scored
# against a log of what operators did (tests/fixtures/shadow): the counts,
# the match rate and coverage, the unmatched on both sides, the JSON form,
# the window, and a bad operator line named by FILE:LINE (exit 1).
# usage: shadow_score.sh CASCADE_BIN CORPUS_DIR
set -euo pipefail
bin=$(realpath "$1")
corpus=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/live_lib.sh"
ops="$here/../fixtures/shadow/node_crash_xid.operators.jsonl"
stream="$corpus/cascade_node_crash_xid.versions.jsonl"

"$bin" shadow --operators "$ops" "$stream" > "$tmp/text" 2> "$tmp/shadow.err" ||
  fail "cascade shadow failed: $(cat "$tmp/text")"
grep -qx "proposals 5, operator actions 6, matched 4" "$tmp/text" || fail "counts: $(cat "$tmp/text")"
grep -qx "match rate 80.0% (proposals an operator also took)" "$tmp/text" || fail "match rate: $(cat "$tmp/text")"
grep -qx "coverage   66.7% (operator actions cascade proposed)" "$tmp/text" || fail "coverage: $(cat "$tmp/text")"
grep -q "^proposed, not taken: job.resubmit job 151056 (inc-" "$tmp/text" || fail "the untaken resubmission is not listed"
grep -q "^taken, not proposed: node.reboot node a100-020 (2026-03-02T09:00:00.000Z by alice)" "$tmp/text" ||
  fail "the reboot cascade did not propose is not listed: $(cat "$tmp/text")"
grep -q "^taken, not proposed: node.drain node a100-031" "$tmp/text" || fail "the unrelated drain is not listed"

# the same from replay's own output, as JSON, with a window too short for
# the 09:00 reboot and the 08:20 resubmissions alike
"$bin" replay "$stream" > "$tmp/incidents" 2>>"$tmp/shadow.err"
"$bin" shadow --operators "$ops" --incidents "$tmp/incidents" --window 5m --json > "$tmp/json"
jq -e '.proposals == 5 and .operator_actions == 6 and .matched == 2 and
  (.missed_operator_actions | map(.playbook) | sort == ["job.resubmit", "job.resubmit", "node.drain", "node.reboot"])' \
  "$tmp/json" >/dev/null || fail "the 5-minute window scored wrong: $(cat "$tmp/json")"

# a bad line is named, the rest still scored, exit 1
{ cat "$ops"; echo '{"ts": "yesterday", "playbook": "node.drain"}'; echo 'not json'; } > "$tmp/bad.jsonl"
set +e
"$bin" shadow --operators "$tmp/bad.jsonl" --incidents "$tmp/incidents" > "$tmp/bad.out" 2> "$tmp/bad.err"; rc=$?
set -e
[ "$rc" = 1 ] || fail "a bad operator line exited $rc, not 1"
grep -q "bad.jsonl:10: \"ts\" is missing or not RFC 3339" "$tmp/bad.err" || fail "no FILE:LINE for the bad ts: $(cat "$tmp/bad.err")"
grep -q "bad.jsonl:11: not a JSON object" "$tmp/bad.err" || fail "no FILE:LINE for the non-JSON line"
grep -qx "proposals 5, operator actions 6, matched 4" "$tmp/bad.out" || fail "the good lines were not scored"
set +e
"$bin" shadow "$stream" > /dev/null 2>&1; rc=$?
set -e
[ "$rc" = 2 ] || fail "a missing --operators exited $rc, not 2"
echo "shadow_score: match rate, coverage and misses as expected"
