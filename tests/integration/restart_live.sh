#!/usr/bin/env bash
# Kill the correlator at any moment and its replacement goes on
# (docs/ARCHITECTURE.md, "State and delivery"), and Redis may go away and come
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
bin=$1 corpus=$2
. "$(dirname "$0")/live_lib.sh"
. "$(dirname "$0")/corpus.sh"

# The streams of the issue's scenarios one after another, each moved to a
# day of its own, so that incidents open all along the stream.
corpus_days "$corpus" 2 cascade_node_crash_xid oom_batch_size \
  cascade_node_crash_silent oom_activation > "$tmp/stream.jsonl"
"$bin" replay "$tmp/stream.jsonl" > "$tmp/want.jsonl" 2> "$tmp/replay.err" \
  || fail "replay of the merged stream failed"
[ "$(wc -l < "$tmp/want.jsonl")" -ge 4 ] || fail "replay found too few incidents"

start_redis
start_broker 300

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

expect_replay "$tmp/want.jsonl" "the live incidents after the kills differ from the replay"
# The topic also holds requests made while an incident was still something
# else (node.down before it became a node crash): those must belong to the
# same incidents.
expect_actions "$tmp/want.jsonl"
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
