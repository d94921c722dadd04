#!/usr/bin/env bash
# The follower's promise: every line written to a followed file reaches
# cascade.signals, through rotations and restarts. Writers
# (log_writer.py) write syslog lines to a file rotated by rename and to
# one rotated by copytruncate, and plain lines to job output files that
# appear as the run goes on; `cascade ingest log --follow` follows the
# three patterns, closing files idle for a second (--idle-close 1) and
# opening them again when they grow.
#
#  1. rotations alone: every line is on the topic exactly once, but for
#     lines of the copytruncate file in flight at a truncation, which are
#     read again from the copy with their ids (at least once);
#  2. rotations and kill -9 of the follower, restarted on its checkpoint:
#     every line is on the topic (none lost); a line read again after a
#     kill keeps its id (counted, and checked: the same bytes).
#  3. two rotations while the follower is down (deterministic): a file
#     born after the last checkpoint and renamed away before the restart,
#     and copytruncate's middle copy, are read whole; files rotated and
#     read before the checkpoint are not read again.
#
# 0. standard input: a line is published as it is read, not at the end.
#
# kcat reads the topic back; each line carries a marker of its own. In
# the real-Kafka tier it runs on the tier's broker with topics of its own.
set -uo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/live_lib.sh"
command -v kcat >/dev/null || fail "kcat not installed (deploy/setup.sh installs it)"
seconds=${CASCADE_TEST_SECONDS:-10}
start_broker 600

# follow DIR N: follower instance N over DIR's files, checkpoint in DIR.pos
follow() {
  "$bin" ingest log --follow --brokers "$brokers" --all --from-start \
    --checkpoint "$1.pos" --sweep-ms 200 --idle-close 1 \
    "syslog:$1/syslog.log" "syslog:$1/copy.log" "plain:$1/jobs/{job}/rank{rank}.log" \
    > "$tmp/follow$2.out" 2> "$tmp/follow$2.err" &
  fpid=$!
  pids+=($fpid)
}

# on_topic RUN: "COUNT MARKER IDS" for each marker of RUN on the topic:
# how many messages carry it, and how many ids they have (1: a line read
# again kept its id)
on_topic() {
  kcat -b "$brokers" ${KCAT_CONFIG:+-F "$KCAT_CONFIG"} -C -t "$t_signals" -o beginning -e -q \
    -f '%S:%s' 2>> "$tmp/kcat.err" | python3 "$here/topic_dump.py" |
    jq -r --arg run "$1" 'select((.line // "") | contains($run + "-"))
      | "\((.line | capture("(?<m>" + $run + "-[a-z0-9]+-[0-9]+)").m)) \(.id)"' |
    sort | awk '{n[$1]++; if (!seen[$1 " " $2]++) ids[$1]++} END {for (m in n) print n[m], m, ids[m]}'
}

stop() {
  kill -TERM "$fpid"
  wait "$fpid"
  local rc=$?
  [ $rc -eq 0 ] || fail "follower exited $rc on SIGTERM"
}

# check RUN ALLOW_DUPS: every marker of the manifest on the topic
check() {
  local run=$1 dups=$2 written found lost twice
  sort -u "$tmp/$run.manifest" > "$tmp/$run.want"
  written=$(wc -l < "$tmp/$run.want")
  on_topic "$run" > "$tmp/$run.counts"
  found=$(wc -l < "$tmp/$run.counts")
  awk '{print $2}' "$tmp/$run.counts" | sort > "$tmp/$run.found"
  ids=$(awk '$3 != 1' "$tmp/$run.counts" | wc -l)
  lost=$(comm -23 "$tmp/$run.want" "$tmp/$run.found" | wc -l)
  twice=$(awk '$1 > 1' "$tmp/$run.counts" | wc -l)
  extra=$(comm -13 "$tmp/$run.want" "$tmp/$run.found" | wc -l)
  echo "follow race $run: $written lines written, $found on the topic, $lost lost, $twice read more than once, $extra unknown"
  [ "$written" -ge 1000 ] || fail "$run: only $written lines written"
  [ "$lost" -eq 0 ] || fail "$run: lines not on the topic: $(comm -23 "$tmp/$run.want" "$tmp/$run.found" | head -n 5 | tr '\n' ' ')"
  [ "$ids" -eq 0 ] || fail "$run: lines read again with another id: $(awk '$3 != 1' "$tmp/$run.counts" | head -n 3 | tr '\n' ' ')"
  [ "$extra" -eq 0 ] || fail "$run: markers nobody wrote: $(comm -13 "$tmp/$run.want" "$tmp/$run.found" | head -n 3 | tr '\n' ' ')"
  # Without kills, only the copytruncate file's lines that were in flight
  # at a truncation are read again (from the copy, with their ids)
  local other
  other=$(awk -v r="$run-c-" '$1 > 1 && index($2, r) != 1' "$tmp/$run.counts" | wc -l)
  [ "$dups" = 1 ] || [ "$other" -eq 0 ] || fail "$run: lines published twice without a kill: $(awk -v r="$run-c-" '$1 > 1 && index($2, r) != 1' "$tmp/$run.counts" | head -n 3 | tr '\n' ' ')"
}

# 0. standard input is read line by line: a line piped in is on the
# topic while the pipe is still open
mkfifo "$tmp/stdin"
"$bin" ingest log --brokers "$brokers" --all --format plain - < "$tmp/stdin" \
  > "$tmp/stdin.out" 2> "$tmp/stdin.err" &
spid=$!
pids+=($spid)
exec 7> "$tmp/stdin"
echo "stdin-$$-first" >&7
seen=0
for _ in $(seq 1 100); do
  kcat -b "$brokers" -C -t "$t_signals" -o beginning -e -q 2>> "$tmp/kcat.err" |
    grep -aq "stdin-$$-first" && { seen=1; break; }
  sleep 0.1
done
exec 7>&-
wait "$spid" || fail "ingest log - exited $?"
[ $seen = 1 ] || fail "a line on standard input was not published before the input ended"
grep -q "<stdin>: 1 lines, 1 published" "$tmp/stdin.err" || fail "stdin summary: $(cat "$tmp/stdin.err")"

# 1. rotations alone
run=r1x$$
mkdir -p "$tmp/a"
follow "$tmp/a" 0
python3 "$here/log_writer.py" --dir "$tmp/a" --run "$run" --manifest "$tmp/$run.manifest" \
  --seconds "$seconds" --rotate-every 250 --seed 1 2> "$tmp/writer1.err" || fail "writer: $(cat "$tmp/writer1.err")"
sleep 3
stop
grep -q "rotations" "$tmp/follow0.err" || fail "no summary"
rot=$(sed -n 's/.*(\([0-9]*\) rotations, \([0-9]*\) truncations, \([0-9]*\) closed while idle, \([0-9]*\) woken).*/\1 \2 \3 \4/p' "$tmp/follow0.err")
set -- $rot
[ "${1:-0}" -ge 2 ] && [ "${2:-0}" -ge 2 ] || fail "rotations/truncations seen: '$rot'"
# files idle a second are closed and woken when written again
[ "${3:-0}" -ge 1 ] && [ "${4:-0}" -ge 1 ] || fail "idle files closed/woken: '$rot'"
check "$run" 0
# what the path says: a rank file's lines carry its job and rank
kcat -b "$brokers" -C -t "$t_signals" -o beginning -e -q -f '%S:%s' 2>> "$tmp/kcat.err" |
  python3 "$here/topic_dump.py" > "$tmp/r1.json"
shape=$(jq -c --arg m "$run-j3r1-" 'select((.line // "") | contains($m)) | {source, job, rank}' "$tmp/r1.json" | sort -u)
[ "$shape" = '{"source":"app","job":"7003","rank":1}' ] || fail "a rank file's signals: $shape"
shape=$(jq -c --arg m "$run-s-" 'select((.line // "") | contains($m)) | {source, host}' "$tmp/r1.json" | sort -u)
[ "$shape" = '{"source":"kernel","host":"gpu-001"}' ] || fail "a syslog file's signals: $shape"

# 2. rotations and kills
run=r2x$$
mkdir -p "$tmp/b"
follow "$tmp/b" 1
python3 "$here/log_writer.py" --dir "$tmp/b" --run "$run" --manifest "$tmp/$run.manifest" \
  --seconds "$seconds" --rotate-every 250 --seed 2 2> "$tmp/writer2.err" &
writer=$!
pids+=($writer)
kills=4
for k in $(seq 1 $kills); do
  sleep "$(awk -v r=$RANDOM -v s="$seconds" -v k=$kills 'BEGIN { printf "%.2f", s / (k + 1) * (0.5 + r / 32767) }')"
  kill -9 "$fpid" 2>/dev/null || fail "follower $k died on its own"
  wait "$fpid" 2>/dev/null
  sleep 0.$((RANDOM % 5))
  follow "$tmp/b" $((k + 1))
done
wait "$writer" || fail "writer: $(cat "$tmp/writer2.err")"
sleep 3
stop
check "$run" 1
# 3. two rotations in one outage
run=r3x$$
c=$tmp/c
mkdir -p "$c"
n3=0
put3() { # FILE MARKER...
  local f=$1
  shift
  for m in "$@"; do
    echo "2026-03-02T08:00:00.000000+00:00 gpu-003 kernel: NVRM: Xid (PCI:0000:3b:00): 13, $run-$m" >> "$c/$f"
    echo "$run-$m" >> "$tmp/$run.want3"
  done
}
follow3() {
  "$bin" ingest log --follow --brokers "$brokers" --all --from-start \
    --checkpoint "$c.pos" --sweep-ms 200 "syslog:$c/syslog.log" "syslog:$c/copy.log" \
    > "$tmp/follow3-$1.out" 2> "$tmp/follow3-$1.err" &
  fpid=$!
  pids+=($fpid)
}
put3 syslog.log old-1 old-2
put3 copy.log a-1 a-2
follow3 a
sleep 1
mv "$c/syslog.log" "$c/syslog.log.9" # rotated, read to its end and closed:
put3 syslog.log x-1 x-2              # never read again
for _ in $(seq 1 150); do grep -q 'closed .*syslog.log at offset' "$tmp/follow3-a.err" && break; sleep 0.1; done
grep -q 'closed .*syslog.log at offset' "$tmp/follow3-a.err" || fail "the rotated file was not closed"
sleep 0.5 # a checkpoint after it was closed
kill -9 "$fpid"; wait "$fpid" 2>/dev/null
sleep 0.05 # the files written now are newer than the checkpoint
put3 syslog.log x-3
mv "$c/syslog.log" "$c/syslog.log.1"              # X -> .1
put3 syslog.log y-1 y-2                            # Y: never seen
mv "$c/syslog.log.1" "$c/syslog.log.2"; mv "$c/syslog.log" "$c/syslog.log.1"  # X -> .2, Y -> .1
put3 syslog.log z-1
put3 copy.log a-3
cp "$c/copy.log" "$c/copy.log.1"; : > "$c/copy.log"   # cycle a -> .1
put3 copy.log b-1 b-2
mv "$c/copy.log.1" "$c/copy.log.2"; cp "$c/copy.log" "$c/copy.log.1"; : > "$c/copy.log"  # a -> .2, b -> .1
put3 copy.log c-1
follow3 b
sleep 3
stop
kcat -b "$brokers" ${KCAT_CONFIG:+-F "$KCAT_CONFIG"} -C -t "$t_signals" -o beginning -e -q \
  2>> "$tmp/kcat.err" | grep -ao "$run-[a-z]*-[0-9]*" | sort > "$tmp/$run.got3"
lost=$(sort -u "$tmp/$run.want3" | comm -23 - <(sort -u "$tmp/$run.got3") | tr '\n' ' ')
[ -z "$lost" ] || fail "two rotations while down: lost $lost"
[ "$(grep -c -- "-old-" "$tmp/$run.got3")" -eq 2 ] ||
  fail "a copy rotated and read before the checkpoint was read again: $(grep -c -- "-old-" "$tmp/$run.got3") old lines"
grep -q 'rotated away while the follower was down' "$tmp/follow3-b.err" ||
  fail "the unseen copy was not told: $(cat "$tmp/follow3-b.err")"
echo "follow race r3: $(sort -u "$tmp/$run.got3" | wc -l) markers, none lost"
echo "follow race: ok"
