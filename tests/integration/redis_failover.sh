#!/usr/bin/env bash
# Redis fails over under a running correlator and executor, and nothing
# acknowledged is lost (docs/ARCHITECTURE.md, "Redis"): a master, one
# replica and three Sentinels (real redis-server and redis-sentinel
# processes on loopback ports), the correlator and the executor reaching
# the master through the Sentinels, with wait_replicas 1 (a write counts
# once the replica has it).
#
#   - a stream of signals (the restart test's four scenarios, one day
#     each) goes in three parts, and the executor gets notify requests
#     beside the correlator's (run for real: a webhook call each, counted
#     by tests/integration/vendor_server.py);
#   - during the second part, SENTINEL FAILOVER; during the third, kill -9
#     of the master then (the Sentinels promote the other), which is
#     started again from its append-only file and becomes the replica;
#   - afterwards the incidents on Kafka equal replay's, no action request
#     is lost, every request was decided once and every notify called the
#     webhook once; every notify published again is a duplicate (its
#     journal entry survived both failovers), no call made twice.
# usage: redis_failover.sh CASCADE_BIN CORPUS
set -uo pipefail
bin=$1 corpus=$2
here=$(dirname "$0")
. "$here/live_lib.sh"
. "$here/redis_lib.sh"
. "$here/corpus.sh"

corpus_days "$corpus" 2 cascade_node_crash_xid oom_batch_size \
  cascade_node_crash_silent oom_activation > "$tmp/stream.jsonl"
"$bin" replay "$tmp/stream.jsonl" > "$tmp/want.jsonl" 2> "$tmp/replay.err" ||
  fail "replay of the merged stream failed"
total=$(wc -l < "$tmp/stream.jsonl")
head -n 300 "$tmp/stream.jsonl" > "$tmp/part1.jsonl"
sed -n "301,550p" "$tmp/stream.jsonl" > "$tmp/part2.jsonl"
sed -n "551,${total}p" "$tmp/stream.jsonl" > "$tmp/part3.jsonl"

# ---- Redis: a master, its replica, three Sentinels ----
redis_pw=$(random_hex)
export CASCADE_TEST_REDIS_PW=$redis_pw
a=$(free_ports 2); b=$((a + 1))
redis_up "$a"
redis_up "$b" --replicaof 127.0.0.1 "$a"
sentinels=()
for _ in 1 2 3; do
  p=$(free_port); sentinel_up "$p" "$a"; sentinels+=("127.0.0.1:$p")
done
s1=${sentinels[0]#*:}
for _ in $(seq 1 100); do
  rcli "$a" info replication | grep -q 'connected_slaves:1' && break; sleep 0.1
done
rcli "$a" info replication | grep -q 'connected_slaves:1' || fail "the replica did not sync"
start_broker 300

redis_block="redis:
  sentinels: [$(IFS=,; echo "${sentinels[*]}")]
  master: mymaster
  password: env:CASCADE_TEST_REDIS_PW
  db: 1
  wait_replicas: 1
  wait_timeout_ms: 500"
printf 'kafka:\n  brokers: "%s"\n%s\n' "$brokers" "$redis_block" > "$tmp/corr.yaml"

# ---- the executor's webhook, and the executor ----
hook_token=$(random_hex)
echo "$hook_token" > "$tmp/hook.token"
python3 "$here/vendor_server.py" --port-file "$tmp/vport" --log "$tmp/vendor.log" \
  --webhook-token "$hook_token" > "$tmp/vendor.out" 2> "$tmp/vendor.err" & pids+=($!)
for _ in $(seq 1 100); do [ -s "$tmp/vport" ] && break; sleep 0.05; done
[ -s "$tmp/vport" ] || fail "the webhook server did not start"
# The correlator's requests are proposed (shadow); notify runs: a Slack
# post and a webhook call.
vendor="http://127.0.0.1:$(cat "$tmp/vport")"
echo "$vendor/services/T000/B000/XXXX" > "$tmp/slack.url"
printf 'modes: {notify: on}\nslack: {url: "file:%s"}\nwebhook: {url: "%s/hook", token: "file:%s"}\n' \
  "$tmp/slack.url" "$vendor" "$tmp/hook.token" > "$tmp/act.yaml"
printf '%s\n' "$redis_block" > "$tmp/act-cascade.yaml"
"$bin" act --brokers "$brokers" --config "$tmp/act.yaml" --mode shadow --for 280 \
  --cascade-config "$tmp/act-cascade.yaml" \
  > "$tmp/act.out" 2> "$tmp/act.err" & act_pid=$!; pids+=($act_pid)
"$bin" --log-level debug correlate --config "$tmp/corr.yaml" --batch 25 --for 280 \
  > "$tmp/correlate.out" 2> "$tmp/correlate.err" & corr_pid=$!; pids+=($corr_pid)

# notify FIRST LAST: notify requests FIRST..LAST on cascade.actions.
notify() {
  for i in $(seq "$1" "$2"); do
    printf 'inc-n%d\t{"id":"act-%016d","incident":"inc-n%d","scenario":"hw.ecc_uncorrectable","cluster":"prod-a","rack":"r7","summary":"test %d","status":"open","root_cause":{"scenario":"hw.ecc_uncorrectable","node":"gpu-a"},"proposed":["notify (auto)"],"action":{"playbook":"notify","approval":"auto","target":{"node":"gpu-a"},"params":{},"state":"proposed"}}\n' "$i" "$i" "$i" "$i"
  done | kcat -b "$brokers" -P -t "$t_actions" -K '\t' 2>>"$tmp/kcat.err"
}
ingest() {
  "$bin" ingest file --brokers "$brokers" "$1" >> "$tmp/ingest.out" 2>> "$tmp/ingest.err" ||
    fail "ingest file $1 failed"
}
# new_master OLD: until the Sentinels name a master other than port OLD.
new_master() {
  for _ in $(seq 1 300); do
    m=$(master_of "$s1")
    [ -n "$m" ] && [ "$m" != "$1" ] &&
      rcli "$m" role 2>/dev/null | head -1 | grep -q master && return 0
    sleep 0.1
  done
  fail "the Sentinels named no new master (still $1)"
}
# switched WHO N: WHO's log tells of its N-th master change.
switched() {
  for _ in $(seq 1 300); do
    [ "$(grep -c "redis: master of 'mymaster' is now" "$tmp/$1.err")" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "$1 did not follow master change $2"
}

ingest "$tmp/part1.jsonl"
notify 1 15
# (the correlator may still be starting: its log is waited for, 30 s)
found=
for _ in $(seq 1 300); do
  grep -q "redis: master of 'mymaster' is 127.0.0.1:$a" "$tmp/correlate.err" && { found=1; break; }
  sleep 0.1
done
[ -n "$found" ] || fail "the correlator did not find the master through the Sentinels"

# 1: a failover on demand, while the second part comes in.
ingest "$tmp/part2.jsonl" &
ingest_pid=$!
sleep 0.3
redis-cli -p "$s1" sentinel failover mymaster | grep -q OK || fail "SENTINEL FAILOVER refused"
notify 16 30
wait $ingest_pid || fail "ingest of part 2 failed"
new_master "$a"
switched correlate 1
switched act 1

# 2: the master killed outright, while the third part comes in; it comes
# back from its append-only file as the new master's replica.
killed=$(master_of "$s1")
ingest "$tmp/part3.jsonl" &
ingest_pid=$!
sleep 0.3
kill -9 "${redis_pids[$killed]}"; wait "${redis_pids[$killed]}" 2>/dev/null
notify 31 45
wait $ingest_pid || fail "ingest of part 3 failed"
new_master "$killed"
redis_up "$killed"
switched correlate 2
switched act 2

# ---- nothing lost, nothing run twice ----
expect_replay "$tmp/want.jsonl" "the incidents after two failovers differ from the replay"
expect_actions "$tmp/want.jsonl"
kcat -b "$brokers" -C -t "$t_actions" -o beginning -e -q 2>>"$tmp/kcat.err" |
  jq -r .id | sort -u > "$tmp/action.ids"
[ -s "$tmp/action.ids" ] || fail "no action requests"
# all_told IDS EVENT...: until every action in the file IDS has a record
# of one of the events (60 s at most).
all_told() {
  local ids=$1; shift
  for _ in $(seq 1 120); do
    audit | jq -r --args 'select(.event as $e | $ARGS.positional | index($e)) | .action' "$@" |
      sort -u > "$tmp/told"
    [ -z "$(comm -23 "$ids" "$tmp/told")" ] && return 0
    sleep 0.5
  done
  fail "no $* record for $(comm -23 "$ids" "$tmp/told" | head -3 | tr '\n' ' ')"
}
all_told "$tmp/action.ids" proposed done
audit > "$tmp/audit.jsonl"
jq -r 'select(.event == "proposed" or .event == "started") | .action' "$tmp/audit.jsonl" |
  sort | uniq -d > "$tmp/twice"
[ -s "$tmp/twice" ] && fail "decided twice: $(cat "$tmp/twice")"
calls() { jq -r 'select(.vendor == "webhook" and .status == 200) | .body.request.id' "$tmp/vendor.log" | sort; }
[ "$(calls | uniq | wc -l)" = 45 ] || fail "not every notify called the webhook: $(calls | uniq | wc -l) of 45"
[ -z "$(calls | uniq -d)" ] || fail "webhook called twice for $(calls | uniq -d | head -3)"

# Every notify again, as Kafka may redeliver: each journal entry must
# still say it ran.
notify 1 45
grep '^act-0000' "$tmp/action.ids" > "$tmp/notify.ids"
all_told "$tmp/notify.ids" duplicate
[ "$(calls | wc -l)" = 45 ] || fail "a notify ran again after the failovers: $(calls | uniq -d | head -3)"
grep -q "has the batch on too few replicas\|connecting again" "$tmp/correlate.err" ||
  fail "the correlator never had to connect again"
# Both stop cleanly after all that (under the sanitizers: nothing leaked).
kill -TERM "$corr_pid" "$act_pid"
wait "$corr_pid" || fail "the correlator did not stop cleanly"
wait "$act_pid" || fail "the executor did not stop cleanly"
echo "redis_failover: ok ($(wc -l < "$tmp/want.sorted") incidents equal to replay, $(wc -l < "$tmp/action.ids") action requests decided once, 45 notify calls made once, over a SENTINEL FAILOVER and a kill -9 of the master)"
