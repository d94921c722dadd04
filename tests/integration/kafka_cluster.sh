#!/usr/bin/env bash
# A real three-node Apache Kafka (deploy/kafka, replication factor 3,
# min.insync.replicas 2) loses a broker in the middle of a stream:
#
#   - `cascade kafka init` creates the topics with replication 3;
#   - the stream is published in chunks by `cascade ingest file`
#     (idempotent producer, acks=all) while a correlator runs;
#   - one node is SIGKILLed after the third chunk and started again after
#     the seventh; a second node is killed and restarted later, so that
#     leadership moves twice;
#   - afterwards cascade.signals holds every signal exactly once (nothing
#     lost, nothing doubled by the producer's retries), and the last
#     version of each incident on cascade.incidents equals what `cascade
#     replay` computes for the same stream.
#
# usage: kafka_cluster.sh CASCADE CORPUS KAFKA_SH
set -uo pipefail
bin=$1 corpus=$2 kafka_sh=$3
. "$(dirname "$0")/live_lib.sh"
. "$(dirname "$0")/corpus.sh"

kdir="$tmp/kafka"
cleanup_kafka() { "$kafka_sh" stop --dir "$kdir" >/dev/null 2>&1 || true; cleanup; }
trap cleanup_kafka EXIT

# Eight scenarios, each moved to a day of its own.
corpus_days "$corpus" 10 cascade_node_crash_xid oom_batch_size \
  cascade_node_crash_silent oom_activation nccl_rank_desync thermal_straggler \
  net_ib_down sched_spot_reclaimed > "$tmp/stream.jsonl"
total=$(wc -l < "$tmp/stream.jsonl")
[ "$total" -ge 500 ] || fail "the stream has only $total signals"
# replay prints some telemetry.gap incidents of this stream many times
# over (the same id, the same content: the engine makes the incident again
# on each later tick of a host that stays silent); the live path's final
# state keeps one line an id, so the comparison is of distinct lines.
"$bin" replay "$tmp/stream.jsonl" 2> "$tmp/replay.err" | sort -u > "$tmp/want.jsonl" \
  || fail "replay of the stream failed"

"$kafka_sh" start --dir "$kdir" --nodes 3 > "$tmp/kafka.out" 2> "$tmp/kafka.err" \
  || fail "the three-node cluster did not start: $(tail -n 5 "$tmp/kafka.err")"
brokers=$(cat "$kdir/bootstrap")
"$bin" kafka init --brokers "$brokers" --partitions 8 --replication 3 \
  > "$tmp/init.out" 2> "$tmp/init.err" || fail "kafka init failed: $(cat "$tmp/init.err")"
start_redis

"$bin" --log-level debug correlate --brokers "$brokers" --redis "$tmp/redis.sock" \
  --batch 50 --for 300 > "$tmp/correlate.out" 2> "$tmp/correlate.err" &
corr_pid=$!
pids+=($corr_pid)

split -n l/10 -d "$tmp/stream.jsonl" "$tmp/chunk."
i=0
for c in "$tmp"/chunk.*; do
  i=$((i + 1))
  "$bin" ingest file --brokers "$brokers" "$c" >> "$tmp/ingest.out" 2>> "$tmp/ingest.err" \
    || fail "ingest of chunk $i failed with a node down"
  case $i in
    3) "$kafka_sh" kill --dir "$kdir" --node 1 >> "$tmp/kafka.out" || fail "kill node 1" ;;
    5) "$kafka_sh" restart --dir "$kdir" --node 1 >> "$tmp/kafka.out" 2>> "$tmp/kafka.err" \
         || fail "node 1 did not come back" ;;
    6) "$kafka_sh" kill --dir "$kdir" --node 3 >> "$tmp/kafka.out" || fail "kill node 3" ;;
    8) "$kafka_sh" restart --dir "$kdir" --node 3 >> "$tmp/kafka.out" 2>> "$tmp/kafka.err" \
         || fail "node 3 did not come back" ;;
  esac
  sleep 0.3
done

expect_replay "$tmp/want.jsonl" "the incidents after two broker kills differ from the replay"
# Signals are msgpack without an id of their own: compare how many times
# each distinct payload is on the topic with how many times each distinct
# line is in the stream (the stream repeats some lines itself).
kcat -b "$brokers" -C -t cascade.signals -o beginning -e -q -f '%s<<END>>' \
  2>>"$tmp/kcat.err" > "$tmp/signals.bin"
counts=$(python3 - "$tmp/signals.bin" "$tmp/stream.jsonl" <<'PY'
import collections, sys
msgs = open(sys.argv[1], "rb").read().split(b"<<END>>")[:-1]
lines = open(sys.argv[2], "rb").read().splitlines()
got = sorted(collections.Counter(msgs).values())
want = sorted(collections.Counter(lines).values())
print(len(msgs), len(lines), "same" if got == want else "differ")
PY
)
read -r got want same <<< "$counts"
[ "$got" -eq "$want" ] || fail "cascade.signals holds $got messages for $want signals"
[ "$same" = same ] || fail "cascade.signals holds some signals twice and lacks others"
kill "$corr_pid" 2>/dev/null; wait "$corr_pid" 2>/dev/null
echo "kafka cluster: ok ($total signals, $got on the topic exactly once, $(wc -l < "$tmp/want.sorted") incidents equal to replay, two broker kills)"
