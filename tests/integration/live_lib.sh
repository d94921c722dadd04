# Shared by the live tests (sourced after setting $bin): a private
# folder ($tmp) and the processes started (pids), both gone at exit.
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null
  # CASCADE_TEST_KEEP=1 keeps the folder of a failed run to look into
  if [ -n "${CASCADE_TEST_KEEP:-}" ] && [ -n "${failed:-}" ]; then
    echo "kept $tmp" >&2
  else
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT
# fail WHY: says why with the tail of every log (debug lines left out).
fail() {
  echo "FAIL: $*"
  failed=1
  for f in "$tmp"/*.err; do echo "--- $f"; grep -v ' debug ' "$f" | tail -n 20; done
  exit 1
}

# free_ports N: the first of N consecutive ports nothing is bound to, from
# below the ephemeral range (deploy/free_ports says why); free_port:
# one such port.
live_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
free_ports() { "$live_lib_dir/../../deploy/free_ports" "$1"; }
free_port() { free_ports 1; }

# start_redis: a redis-server of the test's own, append-only with fsync
# always, so that what it acknowledged survives its own SIGKILL; its pid
# in redis_pid.
start_redis() {
  "${CASCADE_REDIS_SERVER:-redis-server}" --port 0 --unixsocket "$tmp/redis.sock" \
    --dir "$tmp" --appendonly yes --appendfsync always --save '' \
    >> "$tmp/redis.out" 2>&1 &
  redis_pid=$!
  pids+=($redis_pid)
  for _ in $(seq 1 100); do
    redis-cli -s "$tmp/redis.sock" ping >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  fail "redis-server did not start"
}

# start_broker SECONDS: `cascade broker` in its own process; its address
# in brokers. In the real-Kafka tier (CASCADE_TEST_KAFKA: the folder of a
# `deploy/kafka/kafka.sh start`), that broker instead, see real_kafka.
start_broker() {
  if [ -n "${CASCADE_TEST_KAFKA:-}" ]; then
    real_kafka
    return 0
  fi
  "$bin" broker --for "$1" > "$tmp/broker.out" 2> "$tmp/broker.err" & pids+=($!)
  broker_pid=$!
  # The background child opens broker.out itself, maybe after the first
  # look: a missing file is "not yet", not an error that set -e acts on
  # (live.act_http died of that, without a word, under ASan).
  for _ in $(seq 1 100); do
    brokers=$(sed -n 's/^kafka: embedded broker at \([^ ]*\).*/\1/p' "$tmp/broker.out" 2>/dev/null || true)
    [ -n "$brokers" ] && return 0
    sleep 0.05
  done
  fail "cascade broker printed no address"
}

# The topics' names: a test of the real-Kafka tier has topics of its own.
tp=""
t_signals=cascade.signals t_incidents=cascade.incidents t_actions=cascade.actions
t_audit=cascade.audit t_deadletter=cascade.deadletter

# real_kafka: the tier's shared broker, as production runs it: its client
# listener (SASL/PLAIN over TLS there), topics of this test's own under a
# prefix made by `cascade kafka init` (64 partitions, as the embedded
# broker's), and the prefix and the listener's properties in a config file
# every cascade command of the test reads ($CASCADE_CONFIG); kcat reads
# the same listener ($KCAT_CONFIG).
real_kafka() {
  local k=$CASCADE_TEST_KAFKA key val
  brokers=$(cat "$k/bootstrap") || fail "no real Kafka in $k"
  tp="t$$-${RANDOM}."
  t_signals=${tp}cascade.signals t_incidents=${tp}cascade.incidents
  t_actions=${tp}cascade.actions t_audit=${tp}cascade.audit
  t_deadletter=${tp}cascade.deadletter
  {
    printf 'kafka:\n  brokers: "%s"\n  topic_prefix: "%s"\n  properties:\n' "$brokers" "$tp"
    while IFS='=' read -r key val; do printf '    %s: "%s"\n' "$key" "$val"; done < "$k/client.properties"
  } > "$tmp/kafka.yaml"
  export CASCADE_CONFIG="$tmp/kafka.yaml"
  while IFS='=' read -r key val; do
    case "$val" in file:*) val=$(cat "${val#file:}") ;; esac
    printf '%s=%s\n' "$key" "$val"
  done < "$k/client.properties" > "$tmp/kcat.conf"
  export KCAT_CONFIG="$tmp/kcat.conf"
  "$bin" kafka init --partitions 64 --replication 1 > "$tmp/kafka-init.out" 2>&1 ||
    fail "cascade kafka init failed: $(cat "$tmp/kafka-init.out")"
}

# final_state: the last version of each incident on cascade.incidents,
# but those merged into another (a storm): replay does not print them.
final_state() {
  kcat -b "$brokers" -C -t "$t_incidents" -o beginning -e -q 2>>"$tmp/kcat.err" |
    awk '{ match($0, /"id":"[^"]*"/); id = substr($0, RSTART, RLENGTH);
           if (!(id in last)) order[++k] = id; last[id] = $0 }
         END { for (i = 1; i <= k; i++) print last[order[i]] }' |
    grep -v '"merged_into":' | sort
}

# expect_replay WANT WHAT: until the final state on Kafka equals the
# replay output WANT (two minutes at most).
expect_replay() {
  local ok=
  sort "$1" > "$tmp/want.sorted"
  for _ in $(seq 1 240); do
    final_state > "$tmp/got.sorted"
    if cmp -s "$tmp/want.sorted" "$tmp/got.sorted"; then ok=1; break; fi
    sleep 0.5
  done
  if [ -z "$ok" ]; then
    diff "$tmp/want.sorted" "$tmp/got.sorted" | cut -c1-400
    fail "$2"
  fi
}

# expect_actions WANT: every action of the replay's final incidents reached
# cascade.actions (at least once; a crash may repeat some) -> want.actions.
expect_actions() {
  jq -c '.id as $i | .actions[] | {incident: $i, action: .}' "$1" |
    sort -u > "$tmp/want.actions"
  kcat -b "$brokers" -C -t "$t_actions" -o beginning -e -q 2>>"$tmp/kcat.err" |
    jq -c '{incident, action}' | sort -u > "$tmp/got.actions"
  local lost
  lost=$(comm -23 "$tmp/want.actions" "$tmp/got.actions")
  [ -z "$lost" ] || fail "action requests lost: $lost"
}

# audit: every record on cascade.audit so far (the executor's tests).
audit() {
  kcat -b "$brokers" -C -t "$t_audit" -o beginning -e -q 2>>"$tmp/kcat.err"
}

# until_event ID EVENT: waits (30 s at most) for an audit record of the
# action ID with that event; fails with the action's records when none.
until_event() {
  for _ in $(seq 1 300); do
    audit | jq -c --arg a "$1" --arg e "$2" 'select(.action == $a and .event == $e)' \
      2>/dev/null | grep -q . && return 0
    sleep 0.1
  done
  audit | jq -c --arg a "$1" 'select(.action == $a) | [.event, .detail]' | tail -n 20
  fail "no '$2' audit record for $1"
}

# start_act N ARGS...: `cascade act ARGS...` in the background (pid in
# act_pid, output in act$N.out and act$N.err); waits for its approvals API
# (--approvers) and puts its URL in api.
start_act_n() {
  local n=$1; shift
  "$bin" act "$@" > "$tmp/act$n.out" 2> "$tmp/act$n.err" &
  act_pid=$!
  pids+=($act_pid)
  for _ in $(seq 1 100); do
    api=$(sed -n 's/^act: approvals API on \(http[^ ]*\).*/\1/p' "$tmp/act$n.out" 2>/dev/null || true)
    [ -n "$api" ] && return 0
    sleep 0.05
  done
  fail "cascade act did not start: $(cat "$tmp/act$n.err")"
}
