#!/usr/bin/env bash
# Self-observability, checked by the real tools:
#   - cascade correlate (its own process, a Redis with a password) and
#     cascade dev each answer /metrics, /healthz and /readyz on the ports
#     of their metrics section; promtool check metrics accepts both
#     expositions;
#   - a real Prometheus (Debian's) scrapes both: up is 1 for each, and the
#     correlator's incidents and signals are there to query;
#   - the correlator's /readyz answers 200 once it holds its partitions
#     and its state, and 503 naming Redis once Redis is killed
#     (cascade_redis_up 0, cascade_ready 0); 200 again when Redis is back.
# usage: metrics.sh CASCADE_BIN CORPUS
set -uo pipefail
bin=$1 corpus=$2
here=$(dirname "$0")
. "$here/live_lib.sh"
. "$here/redis_lib.sh"
. "$here/corpus.sh"

command -v prometheus > /dev/null || fail "prometheus is not installed (deploy/setup.sh)"
command -v promtool > /dev/null || fail "promtool is not installed (deploy/setup.sh)"

redis_pw=$(random_hex)
rport=$(free_port)
redis_up "$rport"
start_broker 300
read -r mport dport pport < <(p=$(free_ports 3); echo "$p $((p + 1)) $((p + 2))")

# the real-Kafka tier's settings, when there, then the test's own
{
  [ -n "${CASCADE_CONFIG:-}" ] && cat "$CASCADE_CONFIG"
  [ -z "${CASCADE_CONFIG:-}" ] && printf 'kafka:\n  brokers: "%s"\n' "$brokers"
  printf 'redis:\n  address: 127.0.0.1:%s\n  password: env:CASCADE_TEST_REDIS_PW\n' "$rport"
  printf 'metrics:\n  listen: 127.0.0.1\n  correlate: %s\n' "$mport"
} > "$tmp/corr.yaml"
printf 'metrics:\n  dev: %s\nwebhook:\n  port: 0\n' "$dport" > "$tmp/dev.yaml"
export CASCADE_TEST_REDIS_PW=$redis_pw

"$bin" correlate --config "$tmp/corr.yaml" --for 200 > "$tmp/correlate.out" \
  2> "$tmp/correlate.err" & pids+=($!)
"$bin" dev --config "$tmp/dev.yaml" --for 200 > "$tmp/dev.out" 2> "$tmp/dev.err" &
pids+=($!)

# get PORT PATH: the body; the status code in $code
get() {
  local out
  out=$(curl -s -w '\n%{http_code}' "http://127.0.0.1:$1$2") || { code=000; body=""; return; }
  code=${out##*$'\n'}
  body=${out%$'\n'*}
  body=${body%$'\n'}
}
# until_ready PORT WANT: until /readyz answers WANT (60 s)
until_ready() {
  for _ in $(seq 1 600); do
    get "$1" /readyz
    [ "$code" = "$2" ] && return 0
    sleep 0.1
  done
  fail "/readyz on $1 answers $code ($body), not $2"
}
until_ready "$mport" 200
until_ready "$dport" 200
get "$mport" /healthz
[ "$code" = 200 ] && [ "$body" = ok ] || fail "/healthz: $code $body"

stream=$(corpus_stream "$corpus" cascade_node_crash_xid)
"$bin" ingest file --brokers "$brokers" "$stream" > "$tmp/ingest.out" \
  2> "$tmp/ingest.err" || fail "ingest failed"
for _ in $(seq 1 300); do
  get "$mport" /metrics
  grep -q '^cascade_incidents_total{event="opened"} [1-9]' <<< "$body" && break
  sleep 0.1
done
echo "$body" > "$tmp/correlate.metrics"
grep -q '^cascade_incidents_total{event="opened"} [1-9]' "$tmp/correlate.metrics" ||
  fail "no incident opened in the correlator's metrics"
for f in cascade_signals_read_total cascade_batch_phase_seconds_bucket \
         cascade_detection_latency_seconds_count cascade_incidents_open \
         cascade_last_signal_timestamp_seconds cascade_redis_up cascade_build_info \
         cascade_kafka_partitions_assigned process_start_time_seconds; do
  grep -q "^$f" "$tmp/correlate.metrics" || fail "$f missing from /metrics"
done
promtool check metrics < "$tmp/correlate.metrics" > "$tmp/promtool.err" 2>&1 ||
  fail "promtool refuses the correlator's metrics: $(cat "$tmp/promtool.err")"
get "$dport" /metrics
echo "$body" > "$tmp/dev.metrics"
promtool check metrics < "$tmp/dev.metrics" > "$tmp/promtool.err" 2>&1 ||
  fail "promtool refuses cascade dev's metrics: $(cat "$tmp/promtool.err")"
grep -q '^cascade_webhook_posts_waiting' "$tmp/dev.metrics" || fail "dev shows no webhook metrics"
grep -q "incident inc-[0-9a-f]* opened: " "$tmp/correlate.err" ||
  fail "no log line for the opened incident"

# ---- a real Prometheus scrapes both ----
cat > "$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: cascade
    static_configs:
      - targets: ['127.0.0.1:$mport', '127.0.0.1:$dport']
EOF
promtool check config "$tmp/prometheus.yml" > "$tmp/promtool.err" 2>&1 ||
  fail "promtool check config: $(cat "$tmp/promtool.err")"
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
  --web.listen-address="127.0.0.1:$pport" > "$tmp/prometheus.out" \
  2> "$tmp/prometheus.err" & pids+=($!)
# query EXPR: the number of series in the instant vector
query() {
  curl -s --get "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]["result"]))' 2>/dev/null
}
for _ in $(seq 1 300); do
  [ "$(query 'up{job="cascade"} == 1')" = 2 ] &&
    [ "$(query 'cascade_incidents_total{event="opened"} > 0')" = 1 ] && break
  sleep 0.2
done
[ "$(query 'up{job="cascade"} == 1')" = 2 ] || fail "Prometheus does not scrape both processes"
[ "$(query 'cascade_incidents_total{event="opened"} > 0')" = 1 ] ||
  fail "Prometheus has no opened incidents from the correlator"
[ "$(query 'cascade_build_info{process="dev"}')" = 1 ] || fail "no build info from cascade dev"

# ---- readiness follows Redis ----
kill -9 "${redis_pids[$rport]}"
until_ready "$mport" 503
grep -q "Redis" <<< "$body" || fail "/readyz does not name Redis: $body"
get "$mport" /metrics
grep -q '^cascade_redis_up 0' <<< "$body" || fail "cascade_redis_up is not 0 without Redis"
grep -q '^cascade_ready 0' <<< "$body" || fail "cascade_ready is not 0 without Redis"
redis_up "$rport"
until_ready "$mport" 200
echo "ok: /metrics accepted by promtool and scraped by Prometheus; /readyz follows Redis"
