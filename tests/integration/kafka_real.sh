#!/usr/bin/env bash
# cascade's Kafka clients against a real Apache Kafka (deploy/kafka/kafka.sh:
# one KRaft node, SASL/PLAIN over TLS), configured only through
# kafka.properties:
#   - cascade kafka check / init: missing, created (CreateTopics), as
#     planned with the configs read back (DescribeConfigs), what differs
#     (partitions, replication, min.insync.replicas) never changed;
#   - a signal file through `cascade ingest file` and `cascade correlate
#     --drain` to incidents, the partition count recorded in Redis;
#   - a wrong password refused; SCRAM against Kafka 4 with a librdkafka
#     before 2.6.1 refused, and warned of at start;
#   - two correlators with one instance id: the broker fences the first,
#     which stops with exit 2 and says why.
set -uo pipefail
bin=$1
root=$2
source "$(dirname "$0")/live_lib.sh"
kafka=$root/deploy/kafka/kafka.sh
trap '"$kafka" stop --dir "$tmp/k" > /dev/null 2>&1; cleanup' EXIT

command -v kcat > /dev/null || fail "kcat not installed (deploy/setup.sh installs it)"
"$kafka" --help > "$tmp/help.out" 2>&1 || fail "kafka.sh --help: $(cat "$tmp/help.out")"
grep -q 'client.properties' "$tmp/help.out" || fail "kafka.sh --help says nothing of client.properties"
"$kafka" start --dir "$tmp/k" --security sasl_ssl > "$tmp/kafka.out" 2> "$tmp/kafka.err" \
  || fail "kafka.sh start (deploy/setup.sh fetches the jars): $(cat "$tmp/kafka.err")"

# The client listener's settings, as kafka.properties.
cfg() { # FILE PASSWORD-REF MECHANISM
  { printf 'kafka:\n  brokers: "%s"\n  properties:\n' "$(cat "$tmp/k/bootstrap")"
    sed -e "s|^sasl.password=.*|sasl.password=$2|" -e "s|^sasl.mechanisms=.*|sasl.mechanisms=$3|" \
        -e 's/^\([^=]*\)=\(.*\)$/    \1: "\2"/' "$tmp/k/client.properties"
  } > "$1"
}
cfg "$tmp/c.yaml" "file:$tmp/k/cascade.password" PLAIN
grep -q 'security.protocol: "sasl_ssl"' "$tmp/c.yaml" || fail "no SASL_SSL in $(cat "$tmp/c.yaml")"

run_rc() { # WANT NAME ARGS...
  local want=$1 name=$2 rc=0; shift 2
  "$bin" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err" || rc=$?
  [ "$rc" -eq "$want" ] || fail "cascade $* exited $rc, not $want: $(cat "$tmp/$name.out" "$tmp/$name.err")"
}
count() { grep -c -- "$2" "$tmp/$1.out" || true; }

run_rc 1 missing kafka check --config "$tmp/c.yaml" --single-broker --partitions 4
[ "$(count missing ': missing (cascade kafka init creates it)')" -eq 5 ] || fail "not 5 missing: $(cat "$tmp/missing.out")"
run_rc 0 init kafka init --config "$tmp/c.yaml" --single-broker --partitions 4
[ "$(count init ': created: 4 partitions, replication 1, retention.ms=')" -eq 5 ] || fail "not 5 created: $(cat "$tmp/init.out")"
grep -q '^cascade.audit: created: .*retention.ms=7776000000 min.insync.replicas=1 cleanup.policy=delete' \
  "$tmp/init.out" || fail "audit not created as planned: $(cat "$tmp/init.out")"
run_rc 0 planned kafka check --config "$tmp/c.yaml" --single-broker --partitions 4
[ "$(count planned ': as planned: 4 partitions; replication 1; configs as planned')" -eq 5 ] \
  || fail "not 5 as planned: $(cat "$tmp/planned.out")"
run_rc 1 differs kafka init --config "$tmp/c.yaml" --partitions 8
grep -q '^cascade.signals: differs: 4 partitions, planned 8 (an existing topic.s count is never changed here); replication 1, planned 3; min.insync.replicas 1, planned 2$' \
  "$tmp/differs.out" || fail "the differences were not told: $(cat "$tmp/differs.out")"
run_rc 0 unchanged kafka check --config "$tmp/c.yaml" --single-broker --partitions 4

# signals in, incidents out, over SASL_SSL
start_redis
run_rc 0 ingest ingest file --config "$tmp/c.yaml" "$root/deploy/samples/node_crash.jsonl"
run_rc 0 drain correlate --config "$tmp/c.yaml" --redis "$tmp/redis.sock" --drain
grep -q 'drained: every partition read to its end' "$tmp/drain.err" || fail "no drain: $(tail -n 5 "$tmp/drain.err")"
[ "$(redis-cli -s "$tmp/redis.sock" hget 'cascade:{meta}:partitions' cascade.signals)" = 4 ] \
  || fail "the partition count was not recorded"
n=$(kcat -b "$(cat "$tmp/k/bootstrap.plain")" -C -t cascade.incidents -e -q 2>> "$tmp/kcat.err" | wc -l)
[ "$n" -ge 1 ] || fail "no incident on cascade.incidents"

# a wrong password: refused, and the log says so
echo wrong > "$tmp/wrong.pw"
cfg "$tmp/wrong.yaml" "file:$tmp/wrong.pw" PLAIN
run_rc 2 wrong kafka check --config "$tmp/wrong.yaml" --single-broker --partitions 4 --timeout 5
grep -q 'SASL authentication error: Authentication failed' "$tmp/wrong.err" || fail "no authentication error: $(cat "$tmp/wrong.err")"

# SCRAM: librdkafka before 2.6.1 cannot log in to Kafka 4, and says so
cfg "$tmp/scram.yaml" "file:$tmp/k/cascade.password" SCRAM-SHA-256
rc=0
"$bin" kafka check --config "$tmp/scram.yaml" --single-broker --partitions 4 --timeout 5 \
  > "$tmp/scram.out" 2> "$tmp/scram.err" || rc=$?
if grep -q 'confluentinc/librdkafka#4895' "$tmp/scram.err"; then
  [ "$rc" -eq 2 ] || fail "SCRAM with an old librdkafka exited $rc, not 2"
else
  [ "$rc" -eq 0 ] || fail "SCRAM with a fixed librdkafka exited $rc: $(cat "$tmp/scram.err")"
fi

# one instance id, two correlators: the first is fenced and stops
"$bin" correlate --config "$tmp/c.yaml" --redis "$tmp/redis.sock" --instance-id corr-1 --for 60 \
  > "$tmp/a.out" 2> "$tmp/a.err" & a=$!; pids+=($a)
for _ in $(seq 1 200); do grep -q 'partitions assigned' "$tmp/a.err" && break; sleep 0.1; done
grep -q 'partitions assigned' "$tmp/a.err" || fail "the first static member got no partitions"
"$bin" correlate --config "$tmp/c.yaml" --redis "$tmp/redis.sock" --instance-id corr-1 --for 30 \
  > "$tmp/b.out" 2> "$tmp/b.err" & pids+=($!)
rc=0; wait "$a" || rc=$?
[ "$rc" -eq 2 ] || fail "the fenced correlator exited $rc, not 2"
grep -q 'another consumer joined the group with this one.s instance id (kafka.instance_id, --instance-id), and the broker fenced this one' \
  "$tmp/a.err" || fail "the fenced correlator did not say why"
echo "kafka real: ok"
