#!/usr/bin/env bash
# The webhook's promise: a post answered 200 is on Kafka. A client posts a
# stream of Alertmanager posts (tests/integration/alert_poster.py, every
# alert named) to `cascade ingest webhook`, which is killed with SIGKILL
# several times mid-stream and restarted on the same port (the last stop
# is a SIGTERM, which must end within webhook.ack_timeout_s). Afterwards
# every alert of every post answered 200 must be on cascade.signals,
# read back by kcat.
#
# A webhook that answered before Kafka's acknowledgement (as it did) fails
# here: each kill takes the alerts still lingering in its producer queue,
# of posts already answered 200.
#
# In the real-Kafka tier (CASCADE_TEST_KAFKA, live_lib.sh) it runs against
# the tier's broker, on topics of its own; each run's alerts are named by
# a run id all the same, so that no other message on the topic counts.
set -uo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/live_lib.sh"
command -v kcat >/dev/null || fail "kcat not installed (deploy/setup.sh installs it)"

seconds=${CASCADE_TEST_SECONDS:-20}
token=wk-$$-$RANDOM
run=wk$$x$RANDOM
start_broker 120
topic=$t_signals

# start_webhook N PORT: instance N on PORT (0: any); its pid in wh_pid,
# its URL in url.
start_webhook() {
  "$bin" ingest webhook --brokers "$brokers" --token "$token" --port "$2" \
    --for 120 > "$tmp/webhook$1.out" 2> "$tmp/webhook$1.err" &
  wh_pid=$!
  pids+=($wh_pid)
  for _ in $(seq 1 100); do
    url=$(sed -n 's/^webhook: listening on \(http:[^ ]*\).*/\1/p' "$tmp/webhook$1.out" 2>/dev/null || true)
    [ -n "$url" ] && return 0
    kill -0 $wh_pid 2>/dev/null || break
    sleep 0.05
  done
  fail "webhook instance $1 did not start"
}

start_webhook 0 0
port=${url##*:}; port=${port%%/*}
python3 "$here/alert_poster.py" --url "$url" --token "$token" --run "$run" \
  --log "$tmp/posts.log" --acked "$tmp/acked.ids" --seconds "$seconds" \
  > "$tmp/poster.out" 2> "$tmp/poster.err" &
poster=$!
pids+=($poster)

kills=5
for k in $(seq 1 $kills); do
  sleep "$(awk -v r=$RANDOM -v s="$seconds" -v k=$kills 'BEGIN { printf "%.2f", s / (k + 2) * (0.6 + r / 32767 * 0.8) }')"
  kill -9 $wh_pid 2>/dev/null || fail "webhook instance $((k - 1)) died on its own"
  wait $wh_pid 2>/dev/null
  sleep 0.3
  start_webhook $k "$port"
done
sleep 2
# SIGTERM: posts that wait for Kafka are answered, then it stops.
t0=$(date +%s%N)
kill -TERM $wh_pid
wait $wh_pid
rc=$?
took=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $rc -eq 0 ] || fail "webhook exited $rc on SIGTERM"
[ $took -lt 7000 ] || fail "webhook took $took ms to stop on SIGTERM"
start_webhook $((kills + 1)) "$port"
wait $poster || fail "the poster failed: $(tail -n 5 "$tmp/poster.err")"

sent=$(wc -l < "$tmp/posts.log")
ok=$(grep -c ' 200$' "$tmp/posts.log")
unavailable=$(grep -c ' 503$' "$tmp/posts.log")
noanswer=$(grep -c ' err$' "$tmp/posts.log")
other=$((sent - ok - unavailable - noanswer))
sort -u "$tmp/acked.ids" > "$tmp/acked.sorted"
kcat -b "$brokers" -C -t "$topic" -o beginning -e -q -f '%s\n' 2>> "$tmp/kcat.err" |
  grep -aoE "$run-[0-9]+\.[0-9]+-[0-9]+" | sort -u > "$tmp/found.sorted"
comm -23 "$tmp/acked.sorted" "$tmp/found.sorted" > "$tmp/lost"
echo "webhook kill: $sent posts, $ok answered 200, $unavailable 503, $noanswer" \
     "without an answer, $other other; $((kills)) SIGKILLs and a SIGTERM;" \
     "$(wc -l < "$tmp/acked.sorted") alerts of 200'd posts," \
     "$(wc -l < "$tmp/found.sorted") of this run's alerts on $topic," \
     "$(wc -l < "$tmp/lost") lost;" \
     "$(cat "$tmp"/webhook*.err | grep -c 'not after the last one reported')" \
     "deliveries reported at an offset already reported (answered 503)"
[ "$other" -eq 0 ] || fail "answers other than 200, 503: $(grep -v ' \(200\|503\|err\)$' "$tmp/posts.log" | head -n 3)"
[ "$ok" -ge 100 ] || fail "only $ok posts answered 200"
[ "$noanswer" -gt 0 ] || fail "no post went unanswered: the kills missed the stream"
[ -s "$tmp/lost" ] && fail "alerts of posts answered 200 are not on $topic: $(head -n 5 "$tmp/lost" | tr '\n' ' ')"
echo "webhook kill: ok"
