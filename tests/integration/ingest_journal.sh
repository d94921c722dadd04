#!/usr/bin/env bash
# The journald collector on real journal files: systemd-journal-remote
# writes them from export format (journal_export.py), as it does for a
# journal forwarded from another host; `cascade ingest journal
# --directory` reads them. What it publishes is read back from
# cascade.signals (kcat, topic_dump.py):
#
#  - a kernel entry is a kernel signal with its host and time; a chosen
#    unit's entry (slurmd) a slurm signal; another unit's is not read; a
#    binary MESSAGE is published with its bytes replaced, not dropped;
#  - entries written while it runs (to a new file of the directory) are
#    read as they come;
#  - killed with SIGKILL, entries written while it is down, restarted on
#    its checkpoint: every entry on the topic, an entry read twice with
#    the same id;
#  - a checkpoint that is not one is refused with its name and line.
set -uo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/live_lib.sh"
command -v kcat >/dev/null || fail "kcat not installed (deploy/setup.sh installs it)"
jr=$(command -v systemd-journal-remote || echo /lib/systemd/systemd-journal-remote)
[ -x "$jr" ] || fail "systemd-journal-remote not installed (deploy/setup.sh installs it)"
start_broker 300
mkdir -p "$tmp/j"
now=$(( $(date +%s) * 1000000 ))
run=jr$$x$RANDOM

# write FILE START: stdin's entries as $tmp/j/FILE.journal (appended)
write() {
  python3 "$here/journal_export.py" --start "$2" | "$jr" --output="$tmp/j/$1.journal" - \
    2>> "$tmp/jr.err" || fail "journal-remote: $(tail -n 3 "$tmp/jr.err")"
}
collect() {
  "$bin" ingest journal --brokers "$brokers" --cluster c1 --all --unit slurmd \
    --directory "$tmp/j" --checkpoint "$tmp/j.pos" --from-start \
    > "$tmp/journal$1.out" 2> "$tmp/journal$1.err" &
  jpid=$!
  pids+=($jpid)
}
signals() {
  kcat -b "$brokers" -C -t "$t_signals" -o beginning -e -q -f '%S:%s' 2>> "$tmp/kcat.err" |
    python3 "$here/topic_dump.py" > "$tmp/signals.json"
}
# wait_count JQ N: up to 30 s for N signals matching JQ
wait_count() {
  local n=0
  for _ in $(seq 1 150); do
    signals
    n=$(jq -c "select($1)" "$tmp/signals.json" | wc -l)
    [ "$n" -ge "$2" ] && return 0
    sleep 0.2
  done
  fail "$n signals of $2 matching $1"
}

printf '%s\n' \
  "kernel gpu-001 NVRM: Xid (PCI:0000:3b:00): 79, pid=2871, name=python3, GPU has fallen off the bus." \
  "unit slurmd.service slurmd gpu-001 error: Node gpu-001 has low real_memory size ($run)" \
  "unit sshd.service sshd gpu-001 Accepted publickey for root ($run)" \
  "binary gpu-002" | write a "$now"
collect 0
wait_count '.source == "kernel" and .host == "gpu-002"' 1
wait_count '.source == "slurm"' 1
got=$(jq -c 'select(.source == "kernel" and .host == "gpu-001") | {line, ts, cluster}' "$tmp/signals.json")
want=$(jq -cn --arg ts "$(date -u -d "@$((now / 1000000))" +%Y-%m-%dT%H:%M:%S.000000Z)" \
  '{line: "NVRM: Xid (PCI:0000:3b:00): 79, pid=2871, name=python3, GPU has fallen off the bus.", ts: $ts, cluster: "c1"}')
[ "$got" = "$want" ] || fail "the kernel entry: $got, want $want"
got=$(jq -c 'select(.source == "slurm") | {host, line}' "$tmp/signals.json")
[ "$got" = "{\"host\":\"gpu-001\",\"line\":\"error: Node gpu-001 has low real_memory size ($run)\"}" ] ||
  fail "the slurmd entry: $got"
got=$(jq -r 'select(.source == "kernel" and .host == "gpu-002") | .line' "$tmp/signals.json")
[ "$got" = "$(printf 'NVRM: GPU at PCI:0000:3b:00: \357\277\275\357\277\275\nsecond line')" ] ||
  fail "the binary entry: $got"
grep -q "sshd" "$tmp/signals.json" && fail "an entry of a unit not asked for was published"

# Written while it runs, to a new file of the directory
seq 1 300 | sed "s/^/kernel gpu-003 $run live /" | write b $((now + 1000000))
wait_count "(.line // \"\") | startswith(\"$run live \")" 300

# SIGKILL; entries written while it is down; a restart on the checkpoint
sleep 0.5
kill -9 "$jpid"
wait "$jpid" 2>/dev/null
seq 1 500 | sed "s/^/kernel gpu-004 $run down /" | write c $((now + 2000000))
collect 1
wait_count "(.line // \"\") | startswith(\"$run down \")" 500
kill -TERM "$jpid"
wait "$jpid" || fail "collector exited $? on SIGTERM"
grep -q "ingest journal: .* entries, .* published" "$tmp/journal1.err" || fail "summary: $(tail -n 2 "$tmp/journal1.err")"
signals
lines=$(jq -r "select((.line // \"\") | contains(\"$run\")) | .line" "$tmp/signals.json" | sort -u | wc -l)
pairs=$(jq -r "select((.line // \"\") | contains(\"$run\")) | [.line, .id] | @tsv" "$tmp/signals.json" | sort -u | wc -l)
total=$(jq -r "select((.line // \"\") | contains(\"$run\")) | .line" "$tmp/signals.json" | wc -l)
[ "$lines" = 801 ] || fail "$lines distinct entries of this run on the topic, want 801"
[ "$pairs" = "$lines" ] || fail "an entry read twice got another id ($pairs line/id pairs for $lines lines)"

# A checkpoint that is not one: named, nothing read
echo "not a cursor" > "$tmp/bad.pos"
rc=0
"$bin" ingest journal --brokers "$brokers" --directory "$tmp/j" --checkpoint "$tmp/bad.pos" \
  --for 2 > /dev/null 2> "$tmp/bad.err" || rc=$?
[ "$rc" = 2 ] && grep -q "bad.pos:1: not a journal checkpoint" "$tmp/bad.err" ||
  fail "a bad checkpoint: exit $rc, $(cat "$tmp/bad.err")"
echo "ingest journal: 801 entries of this run on the topic ($total messages, the same ids when read twice): ok"
