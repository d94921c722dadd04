#!/usr/bin/env bash
# A bad line is reported with its line number and reason, the run goes on,
# the incidents from the good lines still come out, and the exit code is 1.
set -uo pipefail
bin=$1 corpus=$2
. "$(dirname "$0")/corpus.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
src=$(corpus_stream "$corpus" hw_gpu_off_bus)
{ head -n 3 "$src"
  echo '{"ts":"2026-03-02T08:00:00Z","source":"syslog","line":"x"}'
  echo '{"ts":"2026-03-02T08:00:00Z", "source": '
  echo '{"source":"kernel","line":"no time"}'
  tail -n +4 "$src"; } > "$tmp/in.jsonl"
"$bin" replay "$tmp/in.jsonl" > "$tmp/out" 2> "$tmp/err"
rc=$?
fail=0
[ "$rc" -eq 1 ] || { echo "exit $rc, want 1"; fail=1; }
grep -q 'in.jsonl:4: field .source.: unknown source "syslog"' "$tmp/err" || { echo "line 4 not reported"; fail=1; }
grep -q 'in.jsonl:5: invalid JSON' "$tmp/err" || { echo "line 5 not reported"; fail=1; }
grep -q "in.jsonl:6: field 'ts' is required" "$tmp/err" || { echo "line 6 not reported"; fail=1; }
grep -q '"scenario":"hw.gpu_off_bus"' "$tmp/out" || { echo "incident lost"; fail=1; }
"$bin" replay /nonexistent.jsonl > /dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || { echo "missing file: exit $rc, want 2"; fail=1; }
# A signal later than the allowed lateness (2 h behind its cluster) is
# reported with its line and changes nothing; one 1 h late still counts.
last=$(wc -l < "$src")
{ cat "$src"
  echo '{"ts":"2026-03-02T05:00:00Z","source":"kernel","host":"gpu-777","line":"NVRM: Xid (PCI:0000:3a:00): 79, pid=1, name=python3, GPU has fallen off the bus."}'
  echo '{"ts":"2026-03-02T07:40:00Z","source":"kernel","host":"gpu-778","line":"NVRM: Xid (PCI:0000:3a:00): 79, pid=1, name=python3, GPU has fallen off the bus."}'
} > "$tmp/late.jsonl"
"$bin" replay "$tmp/late.jsonl" > "$tmp/late.out" 2> "$tmp/late.err"; rc=$?
[ "$rc" -eq 1 ] || { echo "late: exit $rc, want 1"; fail=1; }
grep -q "late.jsonl:$((last + 1)): late: event time 2026-03-02T05:00:00.000Z is [0-9]* min behind cluster default" "$tmp/late.err" \
  || { echo "the late line not reported"; cat "$tmp/late.err"; fail=1; }
grep -q '"node":"gpu-777"' "$tmp/late.out" && { echo "the late signal opened an incident"; fail=1; }
grep -q '"node":"gpu-778"' "$tmp/late.out" || { echo "a signal within the allowed lateness was lost"; fail=1; }
# A signal from the future (a fast clock, local time written as Z, year
# 9999) is refused with its line and moves no clock: the real signals
# after it are not "late" (before, each was, by 179 min, for good).
{ head -n -1 "$src"
  echo '{"ts":"2026-03-02T11:00:00Z","source":"kernel","host":"gpu-901","line":"NVRM: Xid (PCI:0000:3a:00): 79, pid=1, name=python3, GPU has fallen off the bus."}'
  echo '{"ts":"9999-12-31T23:59:59Z","source":"kernel","host":"gpu-902","line":"NVRM: Xid (PCI:0000:3a:00): 79, pid=1, name=python3, GPU has fallen off the bus."}'
  tail -n 1 "$src"
  echo '{"ts":"2026-03-02T08:30:00Z","source":"kernel","host":"gpu-903","line":"NVRM: Xid (PCI:0000:3a:00): 79, pid=1, name=python3, GPU has fallen off the bus."}'
} > "$tmp/future.jsonl"
"$bin" replay --now 2026-03-02T08:40:00Z "$tmp/future.jsonl" > "$tmp/future.out" 2> "$tmp/future.err"; rc=$?
[ "$rc" -eq 1 ] || { echo "future: exit $rc, want 1"; fail=1; }
grep -q "future.jsonl:$last: future: event time 2026-03-02T11:00:00.000Z is 140 min ahead of the wall clock" "$tmp/future.err" \
  || { echo "the future line not reported"; cat "$tmp/future.err"; fail=1; }
grep -q "future.jsonl:$((last + 1)): future: event time 9999-12-31" "$tmp/future.err" \
  || { echo "the year-9999 line not reported"; cat "$tmp/future.err"; fail=1; }
grep -q "late:" "$tmp/future.err" && { echo "real signals after a future one were late"; cat "$tmp/future.err"; fail=1; }
grep -q '"node":"gpu-901"' "$tmp/future.out" && { echo "the future signal opened an incident"; fail=1; }
grep -q '"node":"gpu-903"' "$tmp/future.out" || { echo "a real signal after the future ones was lost"; fail=1; }
[ $fail -eq 0 ] && echo "replay bad input: ok"
cat "$tmp/err"
exit $fail
