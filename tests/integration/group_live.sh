#!/usr/bin/env bash
# Two correlators in one consumer group share the partitions and produce
# the incidents one would (docs/ARCHITECTURE.md, "State and delivery"): each
# owns the clusters keyed to its partitions, and a rebalance hands a
# cluster's state over through Redis.
#
#   - eight corpus streams and a rack storm, each made a cluster of its
#     own (clusterize.py --collide: the clusters share host and rack names
#     and event time, and each numbers its jobs from 100, so a correlator
#     that holds several clusters holds jobs and hosts of the same name);
#     the clusters fall on both halves of the 64 partitions;
#   - correlators A and B in one group; A is SIGKILLed mid-stream, B takes
#     its partitions over (after the group's session timeout) and goes on
#     with A's clusters from Redis, including outputs A stored but did not
#     publish; a new A' joins and takes half back;
#   - the last version of each incident on cascade.incidents must equal
#     the replay of the same stream; no action request lost.
#
# CASCADE_SOAK=1: every corpus stream and three of ours (a storm, a node
# that recovers and flaps, a job's ranks timing out) as clusters, ROUNDS (default 6)
# kills of a random member at a random moment, with a replacement each
# time, and Redis SIGKILLed and restarted from its AOF in the second.
set -uo pipefail
bin=$1 corpus=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/live_lib.sh"
. "$here/corpus.sh"
redis_killed=

base=$here/../data/fixtures/base
if [ "${CASCADE_SOAK:-0}" = 1 ]; then
  mapfile -t streams < <(corpus_streams "$corpus")
  streams+=("$base"/rack_power_storm.jsonl
           "$base"/node_down_recovered.jsonl "$base"/nccl_ranks_storm.jsonl)
  rounds=${ROUNDS:-6}
else
  streams=()
  for s in cascade_node_crash_xid oom_batch_size cascade_node_crash_silent \
           oom_activation cascade_dependency_chain hw_gpu_off_bus job_stalled \
           thermal_straggler; do
    streams+=("$(corpus_stream "$corpus" "$s")")
  done
  # a rack storm that forms, grows and recovers
  streams+=("$base/rack_power_storm.jsonl")
  rounds=1
fi
python3 "$here/clusterize.py" --collide "$tmp" 5 "${streams[@]}" || fail "clusterize.py"
low=$(awk '$2 < 32' "$tmp/partitions" | wc -l)
high=$(awk '$2 >= 32' "$tmp/partitions" | wc -l)
[ "$low" -ge 2 ] && [ "$high" -ge 2 ] || fail "clusters on one half of the partitions only"
"$bin" replay "$tmp/mixed.jsonl" > "$tmp/want.jsonl" 2> "$tmp/replay.err" \
  || fail "replay of the stream failed"
[ "$(wc -l < "$tmp/want.jsonl")" -ge 6 ] || fail "replay found too few incidents"

start_redis
start_broker 900

n=0
declare -A live=()
correlate() {
  n=$((n + 1))
  "$bin" --log-level debug correlate --brokers "$brokers" --redis "$tmp/redis.sock" \
    --group cascade-group-test --batch 20 --for 600 \
    > "$tmp/correlate$n.out" 2> "$tmp/correlate$n.err" &
  live[$n]=$!
  pids+=($!)
}
# count_of N PATTERN: how many lines of correlator N's log match.
count_of() {
  grep -c "$2" "$tmp/correlate$1.err" 2>/dev/null || true
}
# wait_for N PATTERN [SEEN]: until correlator N's log has more than SEEN
# (default 0) lines matching.
wait_for() {
  for _ in $(seq 1 600); do
    [ "$(count_of "$1" "$2")" -gt "${3:-0}" ] && return 0
    sleep 0.05
  done
  fail "correlator $1 never logged '$2' (more than ${3:-0} times)"
}
total=$(wc -l < "$tmp/mixed.jsonl")
parts=$((2 * rounds + 2))
per=$(( (total + parts - 1) / parts ))
split -l "$per" -d -a 3 "$tmp/mixed.jsonl" "$tmp/part."
chunks=("$tmp"/part.*)
ci=0
ingest_next() {
  [ "$ci" -lt "${#chunks[@]}" ] || return 0
  "$bin" ingest file --brokers "$brokers" "${chunks[$ci]}" >> "$tmp/ingest.out" 2>> "$tmp/ingest.err" \
    || fail "ingest file ${chunks[$ci]} failed"
  ci=$((ci + 1))
}

correlate; a=$n
wait_for "$a" "restored .* for 64 of 64 partitions"
correlate; b=$n
# both in the group with half the partitions each
wait_for "$a" "for 32 of 64 partitions"
wait_for "$b" "for 32 of 64 partitions"
ingest_next
# consumed N: until the first two members together have read N signals
# (exact while nobody was killed: no signal is read twice).
consumed() {
  local got=0
  for _ in $(seq 1 600); do
    got=0
    for m in $a $b; do
      c=$(sed -n 's/.*batch committed: .*, \([0-9]*\) signals so far.*/\1/p' \
          "$tmp/correlate$m.err" | tail -n 1)
      got=$((got + ${c:-0}))
    done
    [ "$got" -ge "$1" ] && return 0
    sleep 0.05
  done
  fail "the group read $got of $1 signals"
}
for r in $(seq 1 "$rounds"); do
  declare -A commits=()
  for m in "${!live[@]}"; do commits[$m]=$(count_of "$m" "batch committed"); done
  ingest_next
  if [ "$r" = 1 ]; then
    # the first kill hits a member that holds the state of half the
    # clusters: everything so far was read and committed
    consumed "$(cat "${chunks[@]:0:$ci}" | wc -l)"
  else
    for m in "${!live[@]}"; do wait_for "$m" "batch committed" "${commits[$m]}"; done
  fi
  ids=("${!live[@]}")
  victim=${ids[$((RANDOM % ${#ids[@]}))]}
  [ "$rounds" -gt 1 ] && sleep "0.$((RANDOM % 10))"
  for m in "${!live[@]}"; do [ "$m" = "$victim" ] || took=$(count_of "$m" "for 64 of 64 partitions"); done
  kill -9 "${live[$victim]}"; wait "${live[$victim]}" 2>/dev/null
  unset "live[$victim]"
  survivor=${!live[*]}
  # the survivor takes the dead member's partitions over (session timeout)
  wait_for "$survivor" "for 64 of 64 partitions" "$took"
  if [ "$r" = 2 ]; then
    # Redis dies under the survivor and comes back from its AOF
    kill -9 "$redis_pid"; wait "$redis_pid" 2>/dev/null
    sleep 1
    start_redis
    redis_killed=1
  fi
  ingest_next
  correlate
  wait_for "$n" "for 32 of 64 partitions"
done
while [ "$ci" -lt "${#chunks[@]}" ]; do ingest_next; done

expect_replay "$tmp/want.jsonl" "the incidents of the group differ from the replay"
expect_actions "$tmp/want.jsonl"
! grep -h "arrived on partition" "$tmp"/correlate*.err || fail "signals on the wrong partition"
# A cluster's incidents and actions are on the partition of its signals
# (docs/FORMATS.md): every topic has 64 partitions here.
kcat -b "$brokers" -C -t "$t_signals" -o beginning -e -q -f '%k %p\n' 2>>"$tmp/kcat.err" |
  sort -u > "$tmp/signal.parts"
[ "$(cut -d ' ' -f 2 "$tmp/signal.parts" | sort -u | wc -l)" -gt 1 ] ||
  fail "the clusters' signals share one partition: nothing to check"
for t in "$t_incidents" "$t_actions"; do
  kcat -b "$brokers" -C -t "$t" -o beginning -e -q -f '%p %s\n' 2>>"$tmp/kcat.err" |
    jq -Rr 'capture("^(?<p>[0-9]+) (?<m>.*)$") |
      "\(.m | fromjson | .scope.cluster // .cluster // "default") \(.p)"' |
    sort -u > "$tmp/out.parts"
  [ -s "$tmp/out.parts" ] || fail "nothing on $t"
  misplaced=$(comm -23 "$tmp/out.parts" "$tmp/signal.parts")
  [ -z "$misplaced" ] || fail "outputs on $t not on their cluster's signal partition: $misplaced"
done
takeovers=$(( $(cat "$tmp"/correlate*.err | grep -c "for 64 of 64 partitions") - 1 ))
echo "group: ok ($(wc -l < "$tmp/want.sorted") incidents and $(wc -l < "$tmp/want.actions") action requests of ${#streams[@]} clusters equal to replay; $rounds member(s) killed${redis_killed:+ and redis once}, $n correlators in all, $takeovers takeovers of every partition by the survivor)"
