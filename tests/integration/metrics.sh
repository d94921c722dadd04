#!/usr/bin/env bash
# Self-observability, checked by the real tools:
#   - cascade correlate, cascade act, cascade ingest webhook and a following
#     log collector (their own processes, a Redis with a password) and
#     cascade dev each answer /metrics, /healthz and
#     /readyz on the ports of their metrics section; promtool check
#     metrics accepts every exposition;
#   - a real Prometheus (Debian's) scrapes all five: up is 1 for each,
#     the correlator's incidents are there to query and the executor's
#     shadow proposals;
#   - the correlator tells systemd READY=1 ($NOTIFY_SOCKET) once ready;
#   - node incidents merged into a rack's storm are logged at info;
#   - the correlator's and the executor's /readyz answer 200 once they
#     hold their partitions and state, and 503 naming Redis once Redis is
#     killed (cascade_redis_up 0, cascade_ready 0); 200 again when Redis
#     is back;
#   - on the embedded broker, taken down (SIGUSR1) and up again (SIGUSR2):
#     the correlator's, executor's, webhook's and collector's /readyz
#     answer 503 naming Kafka and their *_kafka_up gauges read 0, then
#     200 again (the real-Kafka tier shares its broker: not there).
# usage: metrics.sh CASCADE_BIN CORPUS
set -uo pipefail
bin=$1 corpus=$2
here=$(dirname "$0")
. "$here/live_lib.sh"
. "$here/redis_lib.sh"
. "$here/corpus.sh"
. "$here/metrics_lib.sh"

command -v prometheus > /dev/null || fail "prometheus is not installed (deploy/setup.sh)"
command -v promtool > /dev/null || fail "promtool is not installed (deploy/setup.sh)"

redis_pw=$(random_hex)
rport=$(free_port)
redis_up "$rport"
start_broker 300
read -r mport dport pport aport wport fport < <(p=$(free_ports 6)
  echo "$p $((p + 1)) $((p + 2)) $((p + 3)) $((p + 4)) $((p + 5))")

# the real-Kafka tier's settings, when there, then the test's own
{
  [ -n "${CASCADE_CONFIG:-}" ] && cat "$CASCADE_CONFIG"
  [ -z "${CASCADE_CONFIG:-}" ] && printf 'kafka:\n  brokers: "%s"\n' "$brokers"
  printf 'redis:\n  address: 127.0.0.1:%s\n  password: env:CASCADE_TEST_REDIS_PW\n' "$rport"
  printf 'metrics:\n  listen: 127.0.0.1\n  correlate: %s\n' "$mport"
} > "$tmp/corr.yaml"
printf 'metrics:\n  dev: %s\nwebhook:\n  port: 0\n' "$dport" > "$tmp/dev.yaml"
sed "s/^  correlate: $mport\$/  act: $aport/" "$tmp/corr.yaml" > "$tmp/act.yaml"
sed "s/^  correlate: $mport\$/  ingest: $wport/" "$tmp/corr.yaml" > "$tmp/wh.yaml"
sed "s/^  correlate: $mport\$/  ingest: $fport/" "$tmp/corr.yaml" > "$tmp/follow.yaml"
mkdir -p "$tmp/logs"
echo "2026-03-02T08:10:04Z gpu-031 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus." > "$tmp/logs/kern.log"
export CASCADE_TEST_REDIS_PW=$redis_pw

# systemd's side of Type=notify: the correlator says READY=1 once ready
python3 "$here/notify_listen.py" "$tmp/notify.sock" "$tmp/notify.log" & pids+=($!)
for _ in $(seq 1 100); do [ -S "$tmp/notify.sock" ] && break; sleep 0.05; done
NOTIFY_SOCKET=$tmp/notify.sock "$bin" correlate --config "$tmp/corr.yaml" --for 200 \
  > "$tmp/correlate.out" 2> "$tmp/correlate.err" & pids+=($!)
"$bin" dev --config "$tmp/dev.yaml" --for 200 > "$tmp/dev.out" 2> "$tmp/dev.err" &
pids+=($!)

# until_ready PORT WANT: until /readyz answers WANT (60 s)
until_ready() {
  for _ in $(seq 1 600); do
    get "$1" /readyz
    [ "$code" = "$2" ] && return 0
    sleep 0.1
  done
  fail "/readyz on $1 answers $code ($body), not $2"
}
"$bin" act --brokers "$brokers" --cascade-config "$tmp/act.yaml" --mode shadow \
  --for 200 > "$tmp/act.out" 2> "$tmp/act.err" & pids+=($!)
"$bin" ingest webhook --brokers "$brokers" --config "$tmp/wh.yaml" --token t0k \
  --port 0 --for 200 > "$tmp/webhook.out" 2> "$tmp/webhook.err" & pids+=($!)
"$bin" ingest log --follow --from-start --config "$tmp/follow.yaml" \
  --brokers "$brokers" --cluster c1 --for 200 "$tmp/logs/*.log" > "$tmp/follow.out" \
  2> "$tmp/follow.err" & pids+=($!)
until_ready "$mport" 200
until_ready "$fport" 200
until_ready "$dport" 200
until_ready "$aport" 200
until_ready "$wport" 200
for _ in $(seq 1 40); do grep -q '^READY=1' "$tmp/notify.log" && break; sleep 0.05; done
grep -q '^READY=1|STATUS=ready' "$tmp/notify.log" ||
  fail "the correlator sent no READY=1 to \$NOTIFY_SOCKET: $(cat "$tmp/notify.log")"
get "$mport" /healthz
[ "$code" = 200 ] && [ "$body" = ok ] || fail "/healthz: $code $body"

stream=$(corpus_stream "$corpus" cascade_node_crash_xid)
"$bin" ingest file --brokers "$brokers" "$stream" > "$tmp/ingest.out" \
  2> "$tmp/ingest.err" || fail "ingest failed"
scrape "$mport" correlate '^cascade_incidents_total{event="opened"} [1-9]'
for f in cascade_signals_read_total cascade_batch_phase_seconds_bucket \
         cascade_detection_latency_seconds_count cascade_incidents_open \
         cascade_last_signal_timestamp_seconds cascade_redis_up cascade_build_info \
         cascade_kafka_partitions_assigned process_start_time_seconds; do
  grep -q "^$f" "$tmp/correlate.metrics" || fail "$f missing from /metrics"
done
scrape "$dport" dev '^cascade_webhook_posts_waiting'
scrape "$wport" webhook '^cascade_build_info{.*process="ingest webhook"} 1'
scrape "$fport" follow '^cascade_collector_published_total{collector="follow"} [1-9]'
scrape "$aport" act '^cascade_act_actions_total{outcome="proposed"} [1-9]'
for f in cascade_act_kafka_up cascade_act_redis_up; do
  grep -q "^$f 1" "$tmp/act.metrics" || fail "the executor's $f is not 1"
done
grep -q '^cascade_kafka_up 1' "$tmp/correlate.metrics" || fail "the correlator's cascade_kafka_up is not 1"
# the stream's ids are kept to count redeliveries once, none forgotten
grep -q '^cascade_seen_ids [1-9]' "$tmp/correlate.metrics" || fail "cascade_seen_ids counts no id"
grep -q '^cascade_seen_evicted_total 0$' "$tmp/correlate.metrics" || fail "cascade_seen_evicted_total is not 0"
grep -q '^cascade_seen_horizon_seconds 7200$' "$tmp/correlate.metrics" || fail "cascade_seen_horizon_seconds is not 7200"
# the executor has no act section: it says at once which playbooks cannot run
grep -q "playbook ticket.create cannot run here: no executor takes its step jira.upsert (configure act.jira)" \
  "$tmp/act.err" || fail "the executor did not say at start that it lacks Jira: $(grep 'cannot run' "$tmp/act.err" | head -3)"
grep -q '^cascade_act_runs_ended_total{playbook="[a-z._]*",state="proposed"} [1-9]' \
  "$tmp/act.metrics" || fail "the executor shows no proposal by playbook"
grep -q "incident inc-[0-9a-f]* opened: " "$tmp/correlate.err" ||
  fail "no log line for the opened incident"

# ---- a real Prometheus scrapes all five ----
start_prometheus "$mport" "$dport" "$aport" "$wport" "$fport"
for _ in $(seq 1 300); do
  [ "$(query 'up{job="cascade"} == 1')" = 5 ] &&
    [ "$(query 'cascade_incidents_total{event="opened"} > 0')" = 1 ] && break
  sleep 0.2
done
[ "$(query 'up{job="cascade"} == 1')" = 5 ] || fail "Prometheus does not scrape the five processes"
[ "$(query 'cascade_act_actions_total{outcome="proposed"} > 0')" = 1 ] ||
  fail "Prometheus has no proposals from the executor"
[ "$(query 'cascade_incidents_total{event="opened"} > 0')" = 1 ] ||
  fail "Prometheus has no opened incidents from the correlator"
[ "$(query 'cascade_build_info{process="dev"}')" = 1 ] || fail "no build info from cascade dev"

# ---- an incident merged into a storm is logged at info ----
# three nodes of a rack down within minutes: the two node incidents
# already published are published again, merged into the rack's storm
at() { date -u -d "@$(( $(date +%s) - $1 ))" +%FT%TZ; }
storm_part() {
  printf '%s\n' "$@" > "$tmp/storm.jsonl"
  "$bin" ingest file --brokers "$brokers" "$tmp/storm.jsonl" >> "$tmp/ingest.out" \
    2>> "$tmp/ingest.err" || fail "ingest of the storm failed"
}
opened() { grep -c "incident inc-[0-9a-f]* opened: node" "$tmp/correlate.err"; }
until_opened() {
  for _ in $(seq 1 300); do [ "$(opened)" -ge "$1" ] && return 0; sleep 0.1; done
  fail "$(opened) node incidents opened, not $1"
}
inv() { echo "{\"ts\":\"$(at 900)\",\"cluster\":\"storm\",\"source\":\"inventory\",\"host\":\"$1\",\"rack\":\"rack-9\",\"gpus\":8}"; }
down() { echo "{\"ts\":\"$(at "$2")\",\"cluster\":\"storm\",\"source\":\"slurm\",\"line\":\"error: Nodes $1 not responding\"}"; }
before=$(opened)
storm_part "$(inv gpu-401)" "$(inv gpu-402)" "$(inv gpu-403)" "$(down gpu-401 600)"
until_opened $((before + 1))
storm_part "$(down gpu-402 480)"
until_opened $((before + 2))
storm_part "$(down gpu-403 300)"
for _ in $(seq 1 300); do
  [ "$(grep -c " info  correlate: incident inc-[0-9a-f]* merged into inc-" "$tmp/correlate.err")" -ge 2 ] && break
  sleep 0.1
done
[ "$(grep -c " info  correlate: incident inc-[0-9a-f]* merged into inc-" "$tmp/correlate.err")" = 2 ] ||
  fail "the two node incidents merged into the storm are not logged at info: $(grep merged "$tmp/correlate.err")"

# ---- readiness follows Redis ----
kill -9 "${redis_pids[$rport]}"
until_ready "$mport" 503
grep -q "Redis" <<< "$body" || fail "/readyz does not name Redis: $body"
get "$mport" /metrics
grep -q '^cascade_redis_up 0' <<< "$body" || fail "cascade_redis_up is not 0 without Redis"
grep -q '^cascade_ready 0' <<< "$body" || fail "cascade_ready is not 0 without Redis"
until_ready "$aport" 503
grep -q "Redis" <<< "$body" || fail "the executor's /readyz does not name Redis: $body"
redis_up "$rport"
until_ready "$mport" 200
until_ready "$aport" 200

# ---- readiness follows Kafka ----
if [ -z "${CASCADE_TEST_KAFKA:-}" ]; then
  kill -USR1 "$broker_pid"
  for p in "$mport:cascade_kafka_up" "$aport:cascade_act_kafka_up" \
           "$wport:cascade_webhook_kafka_up" "$fport:cascade_collector_kafka_up"; do
    until_ready "${p%%:*}" 503
    grep -q "Kafka" <<< "$body" || fail "/readyz on ${p%%:*} does not name Kafka: $body"
    get "${p%%:*}" /metrics
    grep -q "^${p#*:}\({[^}]*}\)\? 0" <<< "$body" || fail "${p#*:} is not 0 with the broker down"
  done
  kill -USR2 "$broker_pid"
  for p in "$mport" "$aport" "$wport" "$fport"; do until_ready "$p" 200; done
  get "$mport" /metrics
  grep -q '^cascade_kafka_up 1' <<< "$body" || fail "cascade_kafka_up is not 1 again"
  echo "ok: /readyz follows the broker"
fi
echo "ok: /metrics accepted by promtool and scraped by Prometheus; /readyz follows Redis"
