#!/usr/bin/env bash
# The raw-log path end to end: `cascade ingest log` (syslog lines, edge
# filter) -> `cascade broker` over TCP -> `cascade correlate --drain` with
# its windows in a redis-server -> incidents, checked against the truth
# file of the peers' generator; then bad lines (reported as FILE:LINE,
# exit 1; unit.webhook checks the dead letters) and a second drain that
# reads only what is new.
set -euo pipefail
bin=$1 root=$2
tmp=$(mktemp -d)
root=$(cd "$root" && pwd)
. "$root/bench/lib.sh"
trap 'stop_all; rm -rf "$tmp"' EXIT
fail() { echo "ingest_log: $*" >&2; exit 1; }

python3 "$root/bench/peers/gen_log.py" --lines 30000 --seed 11 --out "$tmp/peer.log" > /dev/null
start_stack "$tmp" "$bin" || fail "stack did not start"
printf 'rules:\n  dir: "%s"\nlog:\n  level: info\n' "$root/bench/rules" > "$tmp/c.yaml"

"$bin" ingest log --brokers "$brokers" --rules "$root/bench/rules" "$tmp/peer.log" \
  2> "$tmp/ingest.err" || fail "ingest log: $(cat "$tmp/ingest.err")"
grep -q "30000 lines, .* published, .* dropped by the edge filter, 0 rejected" "$tmp/ingest.err" ||
  fail "summary: $(cat "$tmp/ingest.err")"
published=$(sed -n 's/.* \([0-9]*\) published.*/\1/p' "$tmp/ingest.err")
# The edge keeps exactly what bench/rules' signatures take, and kernel
# NVRM lines that may be pieces of a wrapped driver message (an Xid report
# is one line: the other Xid codes, which these rules do not read, go).
kernel=$(grep -cE ' kernel: .*(NVRM: Xid \(PCI:[^)]*\): 79,|mlx5_core \S+ mlx5_[0-9]+: Port: [0-9]+ Link DOWN)' "$tmp/peer.log" || true)
pieces=$(grep -E ' kernel: .*NVRM: ' "$tmp/peer.log" | grep -vc 'NVRM: Xid (' || true)
watchdog=$(grep -c 'Watchdog caught collective operation timeout' "$tmp/peer.log" || true)
cancel=$(grep -cE ' slurm[a-z]*(\[[0-9]+\])?: .*\*\*\* JOB [0-9]+ ON \S+ CANCELLED' "$tmp/peer.log" || true)
want=$((kernel + pieces + watchdog + cancel))
[ "$published" = "$want" ] && [ "$want" -gt 1000 ] ||
  fail "published $published, want $want ($kernel kernel, $pieces NVRM pieces, $watchdog watchdog, $cancel cancelled)"

"$bin" correlate --brokers "$brokers" --redis "$tmp/redis.sock" --group t1 \
  --config "$tmp/c.yaml" --drain > "$tmp/corr.out" 2> "$tmp/corr.err" ||
  fail "correlate --drain: $(tail -n 5 "$tmp/corr.err")"
grep -q "drained: .* offsets committed" "$tmp/corr.err" || fail "no drain line"
grep -q "correlated $published signals, 0 dead letters" "$tmp/corr.err" ||
  fail "consumed: $(grep correlated "$tmp/corr.err")"
got=$(redis-cli -s "$tmp/redis.sock" --raw hvals 'cascade:{default}:incidents' |
  jq -sc 'map(.scenario) | {threshold: map(select(. == "peer.nccl_timeout_burst")) | length,
    pair: map(select(. == "peer.xid79_job_cancel")) | length,
    eventgroup: map(select(. == "peer.ib_down_nccl_timeout")) | length}')
want=$(jq -c '{threshold, pair, eventgroup}' "$tmp/peer.log.truth.json")
[ "$got" = "$want" ] || fail "incidents $got, truth $want"

# Bad lines: each named as FILE:LINE with the reason, dead-lettered, exit 1;
# the good line among them is still published.
printf '%s\n' "not a log line" \
  "2024-05-01T00:00:00Z n1 kernel: [1.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1" \
  "2024-13-01T00:00:00Z n1 kernel: x" > "$tmp/bad.log"
rc=0
"$bin" ingest log --brokers "$brokers" "$tmp/bad.log" 2> "$tmp/bad.err" || rc=$?
[ "$rc" = 1 ] || fail "bad lines: exit $rc"
grep -q "bad.log:1: column 1: the line does not start with a time" "$tmp/bad.err" ||
  fail "line 1: $(cat "$tmp/bad.err")"
grep -q "bad.log:3: column 1: '2024-13-01T00:00:00Z' is not an RFC 3339 time" "$tmp/bad.err" ||
  fail "line 3: $(cat "$tmp/bad.err")"
grep -q "3 lines, 1 published, 0 dropped by the edge filter, 2 rejected" "$tmp/bad.err" ||
  fail "bad summary: $(cat "$tmp/bad.err")"

# The same group again: the committed offsets hold, only the new line is
# read (the good one of bad.log), and the incidents stay as they were.
"$bin" correlate --brokers "$brokers" --redis "$tmp/redis.sock" --group t1 \
  --config "$tmp/c.yaml" --drain > "$tmp/corr2.out" 2> "$tmp/corr2.err" ||
  fail "second drain: $(tail -n 5 "$tmp/corr2.err")"
grep -q "correlated 1 signals" "$tmp/corr2.err" || fail "second drain read: $(grep correlated "$tmp/corr2.err")"
# Malformed messages on the signals topic (a producer that is not
# cascade): every one dead-lettered with its place and reason, the good
# signal among them correlated, and the log not flooded: at most 100
# dead-letter lines a second, the rest said as a count ("N more dead
# letters not logged") that adds up with them to every one.
seq 1 250 | sed 's/^/not a signal /' |
  kcat -P -b "$brokers" -t cascade.signals -p 0 2> "$tmp/kcat.err" || fail "kcat: $(cat "$tmp/kcat.err")"
echo "2024-05-01T00:00:09Z n2 kernel: [1.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus." > "$tmp/good.log"
"$bin" ingest log --brokers "$brokers" "$tmp/good.log" 2> "$tmp/good.err" || fail "good line: $(cat "$tmp/good.err")"
"$bin" correlate --brokers "$brokers" --redis "$tmp/redis.sock" --group t1 \
  --config "$tmp/c.yaml" --drain > "$tmp/corr3.out" 2> "$tmp/corr3.err" ||
  fail "third drain: $(tail -n 5 "$tmp/corr3.err")"
grep -q "correlated 1 signals, 250 dead letters" "$tmp/corr3.err" ||
  fail "third drain read: $(grep correlated "$tmp/corr3.err")"
lines=$(grep -c "warn  correlate: dead letter cascade.signals\[0\]@[0-9]*: " "$tmp/corr3.err" || true)
more=$(sed -n 's/.*warn  correlate: \([0-9]*\) more dead letters not logged (at most 100 a second are written)$/\1/p' "$tmp/corr3.err" |
  awk '{n += $1} END {print n + 0}')
[ "$lines" -le 100 ] && [ "$more" -gt 0 ] && [ $((lines + more)) = 250 ] ||
  fail "dead-letter log: $lines lines, $more more said (want <= 100 and 250 in all)"
kcat -C -b "$brokers" -t cascade.deadletter -o beginning -e -q 2> /dev/null |
  jq -c 'select(.topic == "cascade.signals")' > "$tmp/dead.jsonl"
[ "$(wc -l < "$tmp/dead.jsonl")" = 250 ] || fail "$(wc -l < "$tmp/dead.jsonl") dead letters from cascade.signals, not 250"
jq -se 'all(.partition == 0 and (.reason | length) > 0 and .bytes > 0)' "$tmp/dead.jsonl" > /dev/null ||
  fail "dead letter without its place or reason: $(head -n 1 "$tmp/dead.jsonl")"
echo "ingest log: $published of 30000 lines published, incidents $got; 250 malformed messages dead-lettered ($lines logged, $more counted): ok"
