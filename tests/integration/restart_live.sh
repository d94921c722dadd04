#!/usr/bin/env bash
# Kill the correlator at any moment and its replacement goes on
# (ARCHITECTURE.md, "State and delivery"), and Redis may go away and come
# back. The live path must end with exactly the incidents that `cascade
# replay` computes for the same stream, with nothing lost:
#
#   - a redis-server of the test's own, append-only with fsync always, so
#     that what it acknowledged survives its own SIGKILL;
#   - `cascade broker` in its own process;
#   - the stream published with `cascade ingest file`;
#   - `cascade correlate` SIGKILLed twice while it works, Redis SIGKILLed
#     and restarted once under a running correlator, then a last
#     correlator left to finish;
#   - kcat reads cascade.incidents; the last version of each incident must
#     equal the replay output, line for line.
set -uo pipefail
bin=$1 shared=$2
redis_server=${CASCADE_REDIS_SERVER:-redis-server}
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/*.err; do echo "--- $f"; tail -n 20 "$f"; done
  exit 1
}

# The streams of the issue's scenarios one after another, each moved to a
# day of its own, so that incidents open all along the stream.
day=2
for s in cascade_node_crash_xid oom_batch_size cascade_node_crash_silent oom_activation; do
  sed "s/^{\"ts\":\"2026-03-02T/{\"ts\":\"2026-03-0${day}T/" "$shared/scenarios/$s.jsonl"
  day=$((day + 1))
done > "$tmp/stream.jsonl"
"$bin" replay "$tmp/stream.jsonl" > "$tmp/want.jsonl" 2> "$tmp/replay.err" \
  || fail "replay of the merged stream failed"
[ "$(wc -l < "$tmp/want.jsonl")" -ge 4 ] || fail "replay found too few incidents"

start_redis() {
  "$redis_server" --port 0 --unixsocket "$tmp/redis.sock" --dir "$tmp" \
    --appendonly yes --appendfsync always --save '' \
    > "$tmp/redis.out" 2>&1 &
  redis_pid=$!
  pids+=($redis_pid)
  for _ in $(seq 1 100); do
    redis-cli -s "$tmp/redis.sock" ping >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  fail "redis-server did not start"
}
start_redis

"$bin" broker --for 300 > "$tmp/broker.out" 2> "$tmp/broker.err" & pids+=($!)
for _ in $(seq 1 100); do
  brokers=$(sed -n 's/^kafka: embedded broker at \([^ ]*\).*/\1/p' "$tmp/broker.out")
  [ -n "$brokers" ] && break
  sleep 0.05
done
[ -n "$brokers" ] || fail "cascade broker printed no address"

total=$(wc -l < "$tmp/stream.jsonl")
head -n 450 "$tmp/stream.jsonl" > "$tmp/part1.jsonl"
sed -n "451,$((total - 150))p" "$tmp/stream.jsonl" > "$tmp/part2.jsonl"
tail -n 150 "$tmp/stream.jsonl" > "$tmp/part3.jsonl"
ingest() {
  "$bin" ingest file --brokers "$brokers" "$1" >> "$tmp/ingest.out" 2>> "$tmp/ingest.err" \
    || fail "ingest file $1 failed"
}

n=0
correlate() {
  n=$((n + 1))
  # Small batches: more commit points, and crashes land mid-stream.
  "$bin" --log-level debug correlate --brokers "$brokers" --redis "$tmp/redis.sock" \
    --batch 25 --for 60 > "$tmp/correlate$n.out" 2> "$tmp/correlate$n.err" &
  corr_pid=$!
  pids+=($corr_pid)
}

# wait_commit: until the running correlator has committed a batch.
wait_commit() {
  for _ in $(seq 1 600); do
    grep -q "batch committed" "$tmp/correlate$n.err" && return 0
    sleep 0.05
  done
  fail "correlator $n committed nothing"
}

# final_state: the last version of each incident on cascade.incidents.
final_state() {
  kcat -b "$brokers" -C -t cascade.incidents -o beginning -e -q 2>>"$tmp/kcat.err" |
    awk '{ match($0, /"id":"[^"]*"/); id = substr($0, RSTART, RLENGTH);
           if (!(id in last)) order[++k] = id; last[id] = $0 }
         END { for (i = 1; i <= k; i++) print last[order[i]] }' | sort
}

ingest "$tmp/part1.jsonl"
# 1: dies after Redis acknowledged a batch's state, before Kafka has the
#    batch's incidents and actions (they wait in the Redis outbox).
CASCADE_CRASH_AT=stored:1 correlate
wait $corr_pid; rc=$?
[ $rc -eq 137 ] || fail "correlator 1 exited $rc, not at its crash point"
# 2: dies after Kafka has the outputs, before the outbox is cleared and
#    the offsets are committed: the batch comes again.
CASCADE_CRASH_AT=delivered:1 correlate
wait $corr_pid; rc=$?
[ $rc -eq 137 ] || fail "correlator 2 exited $rc, not at its crash point"
# 3: SIGKILL from outside, between batches.
correlate
wait_commit
kill -9 $corr_pid; wait $corr_pid 2>/dev/null

# 4: runs on; Redis dies under it and comes back from its AOF.
correlate
ingest "$tmp/part2.jsonl"
wait_commit
kill -9 $redis_pid; wait $redis_pid 2>/dev/null
sleep 1
start_redis
ingest "$tmp/part3.jsonl"

sort "$tmp/want.jsonl" > "$tmp/want.sorted"
ok=
for _ in $(seq 1 120); do
  final_state > "$tmp/got.sorted"
  if cmp -s "$tmp/want.sorted" "$tmp/got.sorted"; then ok=1; break; fi
  sleep 0.5
done
if [ -z "$ok" ]; then
  diff "$tmp/want.sorted" "$tmp/got.sorted" | cut -c1-400
  fail "the live incidents after the kills differ from the replay"
fi
# No action request lost: every action of the replay's final incidents
# reached cascade.actions (at least once; a crash may repeat some). The
# topic also holds requests made while an incident was still something
# else (node.down before it became a node crash): those must belong to the
# same incidents.
jq -c '.id as $i | .actions[] | {incident: $i, action: .}' "$tmp/want.jsonl" |
  sort -u > "$tmp/want.actions"
kcat -b "$brokers" -C -t cascade.actions -o beginning -e -q 2>>"$tmp/kcat.err" |
  jq -c '{incident, action}' | sort -u > "$tmp/got.actions"
lost=$(comm -23 "$tmp/want.actions" "$tmp/got.actions")
[ -z "$lost" ] || fail "action requests lost: $lost"
jq -r .id "$tmp/want.jsonl" | sort -u > "$tmp/want.ids"
jq -r .incident "$tmp/got.actions" | sort -u > "$tmp/got.ids"
cmp -s "$tmp/want.ids" "$tmp/got.ids" || fail "action requests for other incidents: $(comm -13 "$tmp/want.ids" "$tmp/got.ids")"
grep -q 'redis at .* unavailable; retrying' "$tmp/correlate$n.err" \
  || fail "the correlator did not report the Redis outage"
grep -h 'restored .* state records' "$tmp"/correlate*.err | sed 's/^.*correlate: //'
for i in 2 3 4; do
  grep -q 'restored [1-9][0-9]* state records' "$tmp/correlate$i.err" \
    || fail "correlator $i restored nothing: the kills came too early"
done
grep -q '[1-9][0-9]* outputs to publish again' "$tmp/correlate2.err" \
  || fail "correlator 2 found no outbox left by the crash after the Redis write"
echo "restart: ok ($(wc -l < "$tmp/want.sorted") incidents and $(wc -l < "$tmp/want.actions") action requests equal to replay after 3 correlator crashes and 1 redis kill)"
