#!/usr/bin/env bash
# End to end through a real Alertmanager, three cascade processes and kcat:
#
#   curl -> prometheus-alertmanager -> cascade ingest webhook -> Kafka
#        -> cascade correlate (+ the test's redis-server) -> cascade.incidents
#        -> kcat
#
# The broker is `cascade broker` (the embedded Kafka-protocol broker) in
# its own process, so every other component reaches it over TCP; in the
# real-Kafka tier, the tier's broker (live_lib.sh).
# Alertmanager posts with a bearer token from its http_config; a second
# receiver with the wrong token proves that the 401 path stops an alert.
set -uo pipefail
bin=$1
am=${CASCADE_ALERTMANAGER:-prometheus-alertmanager}
command -v "$am" >/dev/null || { echo "FAIL: $am not installed (deploy/setup.sh installs it)"; exit 1; }
command -v kcat >/dev/null || { echo "FAIL: kcat not installed (deploy/setup.sh installs it)"; exit 1; }

. "$(dirname "$0")/live_lib.sh"
fail() { echo "FAIL: $*"; for f in "$tmp"/*.out "$tmp"/*.err; do echo "--- $f"; tail -n 30 "$f"; done; exit 1; }

# wait_for FILE SED-EXPR: prints the first capture once FILE has it.
wait_for() {
  local v
  for _ in $(seq 1 200); do
    v=$(sed -n "$2" "$1" 2>/dev/null | head -n 1)
    [ -n "$v" ] && { echo "$v"; return 0; }
    sleep 0.05
  done
  return 1
}

token=e2e-$$-$RANDOM
start_broker 120

"$bin" ingest webhook --brokers "$brokers" --token "$token" --port 0 --for 120 \
  > "$tmp/webhook.out" 2> "$tmp/webhook.err" & pids+=($!)
url=$(wait_for "$tmp/webhook.out" 's/^webhook: listening on \(http:[^ ]*\).*/\1/p') \
  || fail "cascade ingest webhook printed no address"

# append-only: a correlator refuses a Redis that does not persist
redis-server --port 0 --unixsocket "$tmp/redis.sock" --save '' --appendonly yes \
  --dir "$tmp" > "$tmp/redis.out" 2>&1 & pids+=($!)
for _ in $(seq 1 100); do
  redis-cli -s "$tmp/redis.sock" ping > /dev/null 2>&1 && break; sleep 0.05
done
"$bin" correlate --brokers "$brokers" --redis "$tmp/redis.sock" --for 120 \
  > "$tmp/correlate.out" 2> "$tmp/correlate.err" & pids+=($!)

cat > "$tmp/am.yml" <<EOF
route:
  receiver: cascade
  group_by: [alertname, Hostname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
  routes:
    - receiver: wrong-token
      matchers: ['team="wrong"']
receivers:
  - name: cascade
    webhook_configs:
      - url: $url
        send_resolved: false
        http_config:
          authorization:
            credentials: $token
  - name: wrong-token
    webhook_configs:
      - url: $url
        send_resolved: false
        http_config:
          authorization:
            credentials: not-the-token
EOF

# Alertmanager needs a fixed port; try a few until one binds.
amurl=
for _ in 1 2 3 4 5; do
  port=$(free_port)
  "$am" --config.file="$tmp/am.yml" --storage.path="$tmp/amdata" \
    --web.listen-address="127.0.0.1:$port" --cluster.listen-address= \
    --log.level=debug > "$tmp/alertmanager.out" 2> "$tmp/alertmanager.err" &
  ampid=$!
  for _ in $(seq 1 100); do
    if curl -fsS "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1; then
      amurl="http://127.0.0.1:$port"; break
    fi
    kill -0 $ampid 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$amurl" ] && { pids+=($ampid); break; }
  kill $ampid 2>/dev/null; wait $ampid 2>/dev/null
done
[ -n "$amurl" ] || fail "alertmanager did not start"

now=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
host=gpu-e2e-$$
# The alert as dcgm-exporter's Xid rule raises it, plus one routed to the
# receiver whose token is wrong.
curl -fsS -XPOST -H 'Content-Type: application/json' "$amurl/api/v2/alerts" -d "[
 {\"labels\":{\"alertname\":\"GPUXidError\",\"severity\":\"critical\",\"Hostname\":\"$host\",
   \"gpu\":\"3\",\"err_code\":\"79\",\"err_msg\":\"GPU has fallen off the bus\"},
  \"annotations\":{\"summary\":\"XID 79 on $host GPU 3\"},\"startsAt\":\"$now\"},
 {\"labels\":{\"alertname\":\"GPUXidError\",\"team\":\"wrong\",\"Hostname\":\"gpu-rejected\",
   \"gpu\":\"0\",\"err_code\":\"79\"},\"startsAt\":\"$now\"}]" \
  || fail "alertmanager refused the alerts"

found=
for _ in $(seq 1 60); do
  kcat -b "$brokers" -C -t "$t_incidents" -o beginning -e -q > "$tmp/incidents.jsonl" 2>> "$tmp/kcat.err"
  if grep -q "\"scenario\":\"hw.gpu_off_bus\".*\"node\":\"$host\"" "$tmp/incidents.jsonl"; then
    found=1; break
  fi
  sleep 0.5
done
[ -n "$found" ] || fail "no hw.gpu_off_bus incident for $host on cascade.incidents"

line=$(grep "\"node\":\"$host\"" "$tmp/incidents.jsonl" | tail -n 1)
echo "$line" | grep -q '"sources":\["alertmanager"\]' || fail "evidence does not name alertmanager: $line"
echo "$line" | grep -q '"playbook":"node.drain"' || fail "no node.drain action: $line"
kcat -b "$brokers" -C -t "$t_actions" -o beginning -e -q > "$tmp/actions.jsonl" 2>> "$tmp/kcat.err"
grep -q "\"node\":\"$host\"" "$tmp/actions.jsonl" || fail "no action request for $host on cascade.actions"

# The wrong-token receiver: Alertmanager saw a 401, cascade published nothing.
for _ in $(seq 1 40); do
  grep -q 'wrong-token.*status code 401' "$tmp/alertmanager.err" && break
  sleep 0.25
done
grep -q 'wrong-token.*status code 401' "$tmp/alertmanager.err" || fail "alertmanager did not report a 401 for the wrong token"
grep -q 'gpu-rejected' "$tmp/incidents.jsonl" && fail "an alert with a wrong token reached the correlator"

echo "alertmanager e2e: ok"
echo "$line"
