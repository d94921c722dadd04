#!/usr/bin/env bash
# cascade's topics against the embedded broker (`cascade broker`):
#   - cascade kafka check / init: as planned, what differs (replication,
#     partition count: reported, never changed, exit 1), missing topics
#     (check: exit 1; init: the embedded broker cannot create them, exit 2);
#   - every process refuses to start when one of its topics is missing,
#     naming it and `cascade kafka init`;
#   - the correlator records the signals topic's partition count in Redis
#     and refuses a topic with another count, with both numbers;
#   - outside cascade dev a missing broker or Redis address is an error
#     naming its flag and config key, never a throwaway service.
# The embedded broker has neither CreateTopics nor DescribeConfigs: what
# needs them (a topic created, a config that differs, SASL/TLS) runs
# against a real Kafka (deploy/kafka/kafka.sh) in the harness's tests.
set -uo pipefail
bin=$1
source "$(dirname "$0")/live_lib.sh"

# other_broker NAME ARGS...: one more `cascade broker ARGS`; its address
# in the variable NAME.
other_broker() {
  local name=$1; shift
  "$bin" broker --for 120 "$@" > "$tmp/$name.out" 2> "$tmp/$name.err" & pids+=($!)
  for _ in $(seq 1 100); do
    local b
    b=$(sed -n 's/^kafka: embedded broker at \([^ ]*\).*/\1/p' "$tmp/$name.out" 2>/dev/null || true)
    [ -n "$b" ] && { printf -v "$name" '%s' "$b"; return 0; }
    sleep 0.05
  done
  fail "cascade broker $* printed no address"
}

# run_rc WANT NAME ARGS...: cascade ARGS, output in NAME.out and NAME.err,
# its exit code WANT.
run_rc() {
  local want=$1 name=$2 rc=0; shift 2
  "$bin" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err" || rc=$?
  [ "$rc" -eq "$want" ] || fail "cascade $* exited $rc, not $want: $(cat "$tmp/$name.out" "$tmp/$name.err")"
}

# has NAME TEXT: NAME.out or NAME.err holds TEXT (a fixed string). grep
# reads the files itself: `cat | grep -q` fails under pipefail when grep
# stops at a match in the first file while cat still writes (SIGPIPE).
has() {
  grep -qF -- "$2" "$tmp/$1.out" "$tmp/$1.err" || fail "$1: no '$2' in: $(cat "$tmp/$1.out" "$tmp/$1.err")"
}

start_redis
start_broker 120
printf 'kafka:\n  topic_prefix: t2.\n' > "$tmp/t2.yaml"

# --- cascade kafka check / init ---
run_rc 0 check_one kafka check --brokers "$brokers" --single-broker
[ "$(grep -c ': as planned: 64 partitions; replication 1; configs not checked: ' "$tmp/check_one.out")" -eq 5 ] \
  || fail "check --single-broker: not 5 topics as planned: $(cat "$tmp/check_one.out")"
has check_one "cascade.audit: as planned"
has check_one "the embedded broker has none"
run_rc 1 check_rf kafka check --brokers "$brokers"
has check_rf "cascade.signals: differs: 64 partitions; replication 1, planned 3"
run_rc 0 init_same kafka init --brokers "$brokers" --single-broker
has init_same "cascade.signals: as planned: 64 partitions"
run_rc 1 init_parts kafka init --brokers "$brokers" --single-broker --partitions 8
has init_parts "cascade.signals: differs: 64 partitions, planned 8 (an existing topic's count is never changed here)"
run_rc 0 check_after kafka check --brokers "$brokers" --single-broker
has check_after "cascade.signals: as planned: 64 partitions" # not changed by init

# topics under a prefix this broker was not started with: missing
run_rc 1 check_missing kafka check --brokers "$brokers" --config "$tmp/t2.yaml" --single-broker
[ "$(grep -c ': missing (cascade kafka init creates it)' "$tmp/check_missing.out")" -eq 5 ] \
  || fail "check: not 5 topics missing: $(cat "$tmp/check_missing.out")"
has check_missing "t2.cascade.signals: missing"
run_rc 2 init_missing kafka init --brokers "$brokers" --config "$tmp/t2.yaml" --single-broker
has init_missing "t2.cascade.signals: missing, not created: CreateTopics: the brokers name no controller"
# ... which asking about them did not make (the embedded broker used to)
run_rc 1 check_still kafka check --brokers "$brokers" --config "$tmp/t2.yaml" --single-broker
has check_still "t2.cascade.audit: missing"
# a broker started under the prefix makes them
other_broker b_t2 --config "$tmp/t2.yaml" --partitions 8
run_rc 0 check_t2 kafka check --brokers "$b_t2" --config "$tmp/t2.yaml" --single-broker --partitions 8
has check_t2 "t2.cascade.signals: as planned: 8 partitions"
run_rc 2 usage kafka frobnicate
run_rc 0 help kafka --help
has help "cascade kafka init|check"
run_rc 2 no_brokers kafka check
has no_brokers "no Kafka brokers: give --brokers or kafka.brokers in --config"

# --- a process whose topics are missing does not start ---
run_rc 2 corr_missing correlate --brokers "$brokers" --redis "$tmp/redis.sock" --config "$tmp/t2.yaml" --for 5
has corr_missing "does not exist: create cascade's topics with \`cascade kafka init\`"
has corr_missing "t2.cascade."
echo '{"ts":"2026-03-02T08:00:00Z","source":"kernel","host":"n1","text":"x"}' > "$tmp/one.jsonl"
run_rc 2 file_missing ingest file --brokers "$brokers" --config "$tmp/t2.yaml" "$tmp/one.jsonl"
has file_missing "topic t2.cascade.signals does not exist"
run_rc 2 act_missing act --brokers "$brokers" --redis "$tmp/redis.sock" --cascade-config "$tmp/t2.yaml" --for 5
has act_missing "topic t2.cascade.actions does not exist"

# --- the correlator's partition count ---
run_rc 0 corr_first correlate --brokers "$brokers" --redis "$tmp/redis.sock" --for 1
[ "$(redis-cli -s "$tmp/redis.sock" hget 'cascade:{meta}:partitions' cascade.signals)" = 64 ] \
  || fail "the first correlator did not record 64 partitions"
other_broker b8 --partitions 8
run_rc 2 corr_8 correlate --brokers "$b8" --redis "$tmp/redis.sock" --for 5
has corr_8 "cascade correlate: cascade.signals has 8 partitions, but the correlators' state in Redis was built for 64 (cascade:{meta}:partitions)"
# the prefixed topic is a record of its own
run_rc 0 corr_t2 correlate --brokers "$b_t2" --redis "$tmp/redis.sock" --config "$tmp/t2.yaml" --for 1
[ "$(redis-cli -s "$tmp/redis.sock" hget 'cascade:{meta}:partitions' t2.cascade.signals)" = 8 ] \
  || fail "the prefixed signals topic's count was not recorded as 8"
has corr_t2 "correlate: consuming t2.cascade.signals as group t2.cascade-correlate"

# --- no throwaway services outside cascade dev ---
run_rc 2 corr_nob correlate --redis "$tmp/redis.sock" --for 1
has corr_nob "cascade correlate: no Kafka brokers: give --brokers or kafka.brokers in the config"
run_rc 2 corr_nor correlate --brokers "$brokers" --for 1
has corr_nor "cascade correlate: no Redis: give --redis or redis.address in the config"
grep -q '^kafka: embedded broker\|^redis: private' "$tmp/corr_nob.out" "$tmp/corr_nor.out" \
  && fail "correlate started an embedded service"
run_rc 2 hook_nob ingest webhook --token t --port 0 --for 1
has hook_nob "no Kafka brokers: give --brokers or kafka.brokers"
run_rc 2 file_nob ingest file "$tmp/one.jsonl"
has file_nob "cascade ingest file: no Kafka brokers: give --brokers or kafka.brokers in --config"
run_rc 2 log_nob ingest log --all "$tmp/one.jsonl"
has log_nob "cascade ingest log: no Kafka brokers"
run_rc 2 act_nor act --brokers "$brokers" --for 1
has act_nor "cascade act: no Redis: give --redis, or redis.address in --cascade-config"
# the addresses may come from the config
printf 'kafka:\n  brokers: "%s"\nredis:\n  address: %s\n' "$brokers" "$tmp/redis.sock" > "$tmp/addr.yaml"
run_rc 0 corr_cfg correlate --config "$tmp/addr.yaml" --for 1
run_rc 0 act_cfg act --cascade-config "$tmp/addr.yaml" --for 1

# The real-Kafka harness, when it is in the tree.
if [ -x "$(dirname "$0")/../../deploy/kafka/kafka.sh" ]; then
  "$(dirname "$0")/../../deploy/kafka/kafka.sh" --help > "$tmp/harness.out" 2>&1 \
    || fail "deploy/kafka/kafka.sh --help failed: $(cat "$tmp/harness.out")"
fi
echo "kafka topics: ok"
