#!/usr/bin/env bash
# End to end through Debian's real Prometheus (agent mode) and three
# cascade processes:
#
#   static exporter (dcgm-exporter's names and labels, python http.server)
#     -> prometheus scrape -> remote_write -> cascade ingest remote-write
#     -> Kafka -> cascade correlate (+ redis-server) -> cascade.incidents
#
# Three hosts of one rack run hot: thermal.fleet_throttle opens from the
# samples alone (the rack comes from inventory signals). On cascade.signals:
# the metrics the rules read, renamed where the exporter's name is newer
# (DCGM_FI_DEV_CLOCKS_EVENT_REASONS), Prometheus' job kept as scrape_job,
# the cluster from external_labels; nothing of the names filtered out. A
# second remote_write with a wrong token gets 401s (Prometheus drops those
# samples: its samples_failed_total rises) and publishes nothing; the
# receiver killed with SIGKILL and restarted: Prometheus retries, and
# samples written while it was down arrive.
set -uo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
prom=${CASCADE_PROMETHEUS:-prometheus}
command -v "$prom" >/dev/null || { echo "FAIL: $prom not installed (deploy/setup.sh installs it)"; exit 1; }
command -v kcat >/dev/null || { echo "FAIL: kcat not installed (deploy/setup.sh installs it)"; exit 1; }
py=/usr/bin/python3

. "$here/live_lib.sh"

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
# prom_metric NAME FILTER: the sum of a Prometheus self-metric's samples
# whose labels contain FILTER.
prom_metric() {
  curl -fsS "http://127.0.0.1:$pport/metrics" 2>/dev/null |
    awk -v n="$1" -v f="$2" 'index($0, n"{") == 1 && index($0, f) { s += $NF } END { print s + 0 }'
}

token=rw-$$-$RANDOM
printf '%s\n' "$token" > "$tmp/token"
printf 'not-the-token\n' > "$tmp/wrong-token"
cluster=e2e-rw-$$
rack=rack-rw-$$
h1=gpu-rw1-$$ h2=gpu-rw2-$$ h3=gpu-rw3-$$
start_broker 180
broker_pid=${pids[${#pids[@]}-1]:-} # the embedded one's; none in the real-Kafka tier
start_redis

# The exporter: a static page in dcgm-exporter's text format (4.x labels:
# gpu, UUID, pci_bus_id, device, modelName, Hostname, the driver version
# as a label), names the receiver drops, and one series without a host
# label (its host is then the instance's).
mkdir -p "$tmp/exp"
{
  echo '# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).'
  echo '# TYPE DCGM_FI_DEV_GPU_TEMP gauge'
  for h in $h1 $h2 $h3; do
    echo "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-5fd4a4bc-0000-0000-0000-$h\",pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"$h\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 94"
  done
  echo '# HELP DCGM_FI_DEV_CLOCKS_EVENT_REASONS Current clock event reasons.'
  echo '# TYPE DCGM_FI_DEV_CLOCKS_EVENT_REASONS gauge'
  echo "DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"0\",UUID=\"GPU-5fd4a4bc-0000-0000-0000-$h1\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"$h1\"} 64"
  echo '# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).'
  echo '# TYPE DCGM_FI_DEV_FB_FREE gauge'
  echo "DCGM_FI_DEV_FB_FREE{gpu=\"0\",device=\"nvidia0\",Hostname=\"$h1\"} 81000"
  echo '# TYPE node_load1 gauge'
  echo 'node_load1 3.5'
  echo '# TYPE DCGM_FI_DEV_POWER_USAGE gauge'
  echo 'DCGM_FI_DEV_POWER_USAGE{gpu="0"} 300'
} > "$tmp/exp/metrics"
eport=$(free_ports 2); rwport=$((eport + 1)) # two: the exporter binds late
"$py" -m http.server --bind 127.0.0.1 "$eport" --directory "$tmp/exp" \
  > "$tmp/exporter.out" 2> "$tmp/exporter.err" & pids+=($!)

start_rw() {
  CASCADE_REMOTE_WRITE_TOKEN=$token "$bin" ingest remote-write --brokers "$brokers" \
    --port "$rwport" --cluster fallback --for 150 \
    >> "$tmp/rw.out" 2>> "$tmp/rw.err" & rwpid=$!
  pids+=($rwpid)
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$rwport/healthz" > /dev/null 2>&1 && return 0
    sleep 0.05
  done
  fail "cascade ingest remote-write did not start"
}
start_rw

"$bin" correlate --brokers "$brokers" --redis "$tmp/redis.sock" --for 150 \
  > "$tmp/correlate.out" 2> "$tmp/correlate.err" & pids+=($!)

# The rack of each host, as the SLURM or Kubernetes collector says it.
now=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
for h in $h1 $h2 $h3; do
  echo "{\"ts\":\"$now\",\"source\":\"inventory\",\"host\":\"$h\",\"rack\":\"$rack\",\"gpus\":8,\"canary\":false,\"cluster\":\"$cluster\"}"
done > "$tmp/inventory.jsonl"
"$bin" ingest file --brokers "$brokers" "$tmp/inventory.jsonl" > "$tmp/inv.out" 2> "$tmp/inv.err" \
  || fail "cascade ingest file refused the inventory"

cat > "$tmp/prom.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  external_labels: {cluster: $cluster}
scrape_configs:
  - job_name: dcgm
    static_configs: [{targets: ["127.0.0.1:$eport"]}]
remote_write:
  - name: cascade
    url: http://127.0.0.1:$rwport/api/v1/write
    authorization: {credentials_file: $tmp/token}
    queue_config: {batch_send_deadline: 1s, min_backoff: 50ms, max_backoff: 1s, max_shards: 2}
    metadata_config: {send: true, send_interval: 2s}
  - name: wrong
    url: http://127.0.0.1:$rwport/api/v1/write
    authorization: {credentials_file: $tmp/wrong-token}
    queue_config: {batch_send_deadline: 1s, max_shards: 1}
EOF
"$prom" --version > /dev/null 2>&1 || fail "$prom does not run"
pport=
for _ in 1 2 3 4 5; do
  port=$(free_port)
  "$prom" --enable-feature=agent --config.file="$tmp/prom.yml" \
    --storage.agent.path="$tmp/wal" --web.listen-address="127.0.0.1:$port" \
    > "$tmp/prometheus.out" 2> "$tmp/prometheus.err" & ppid=$!
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$port/-/ready" > /dev/null 2>&1 && { pport=$port; break; }
    kill -0 $ppid 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$pport" ] && { pids+=($ppid); break; }
  kill $ppid 2>/dev/null; wait $ppid 2>/dev/null
done
[ -n "$pport" ] || fail "prometheus did not start"

dump_signals() {
  kcat -b "$brokers" -C -t "$t_signals" -o beginning -e -q -f '%S:%s' 2>> "$tmp/kcat.err" |
    "$py" "$here/topic_dump.py" > "$tmp/signals.jsonl"
}

# 1. thermal.fleet_throttle from the samples alone.
found=
for _ in $(seq 1 90); do
  kcat -b "$brokers" -C -t "$t_incidents" -o beginning -e -q > "$tmp/incidents.jsonl" 2>> "$tmp/kcat.err"
  if grep -q "\"scenario\":\"thermal.fleet_throttle\".*\"cluster\":\"$cluster\"\|\"cluster\":\"$cluster\".*\"scenario\":\"thermal.fleet_throttle\"" "$tmp/incidents.jsonl"; then
    found=1; break
  fi
  sleep 0.5
done
[ -n "$found" ] || fail "no thermal.fleet_throttle incident for $cluster on cascade.incidents"
line=$(grep "thermal.fleet_throttle" "$tmp/incidents.jsonl" | grep "$cluster" | tail -n 1)
echo "$line" | grep -q "\"$rack\"" || fail "the incident does not name rack $rack: $line"

# 2. The signals as the receiver built them.
dump_signals
"$py" - "$tmp/signals.jsonl" "$h1" "$cluster" <<'EOF' || fail "the metric signals are not as expected"
import json, sys
sigs = [s for s in map(json.loads, open(sys.argv[1]))
        if s.get("cluster") == sys.argv[3] and s.get("source") == "metric"]
assert sigs, "no metric signals of the cluster"
names = {s["name"] for s in sigs}
assert names == {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
                 "DCGM_FI_DEV_POWER_USAGE"}, names
for s in sigs:
    # no host label: the instance's host
    want = "127.0.0.1" if s["name"] == "DCGM_FI_DEV_POWER_USAGE" else "gpu-rw"
    assert s["host"].startswith(want), s
    assert s["labels"]["scrape_job"] == "dcgm", s
    assert "job" not in s["labels"] and "__name__" not in s["labels"], s
    assert s["labels"]["instance"].startswith("127.0.0.1:"), s
    assert len(s["id"]) == 16, s
t = [s for s in sigs if s["name"] == "DCGM_FI_DEV_GPU_TEMP"][0]
assert t["value"] == 94 and t["labels"]["modelName"] == "NVIDIA H100 80GB HBM3", t
assert t["labels"]["DCGM_FI_DRIVER_VERSION"] == "550.54.15", t
th = [s for s in sigs if s["name"] == "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"]
assert th and th[0]["host"] == sys.argv[2] and th[0]["value"] == 64, th
print("metric signals ok:", len(sigs), "signals,", sorted(names))
EOF
grep -q '"name": "node_load1"\|"name": "DCGM_FI_DEV_FB_FREE"\|"cluster": "fallback"' "$tmp/signals.jsonl" \
  && fail "a filtered sample reached $t_signals"

# 3. The wrong token: 401s, which Prometheus drops.
for _ in $(seq 1 60); do
  [ "$(prom_metric prometheus_remote_storage_samples_failed_total 'remote_name="wrong"')" != 0 ] && break
  sleep 0.5
done
[ "$(prom_metric prometheus_remote_storage_samples_failed_total 'remote_name="wrong"')" != 0 ] \
  || fail "prometheus counted no failed sample for the wrong token"
grep -q '401' "$tmp/rw.err" || fail "the receiver did not log the 401"
[ "$(prom_metric prometheus_remote_storage_samples_failed_total 'remote_name="cascade"')" = 0 ] \
  || fail "prometheus dropped samples sent with the right token"

# 4. SIGKILL and restart: what Prometheus scraped meanwhile is retried.
kill -9 $rwpid; wait $rwpid 2>/dev/null
sleep 3
killed_at=$(date +%s)
start_rw
for _ in $(seq 1 60); do
  [ "$(prom_metric prometheus_remote_storage_samples_retried_total 'remote_name="cascade"')" != 0 ] && break
  sleep 0.5
done
sleep 3
dump_signals
"$py" - "$tmp/signals.jsonl" "$cluster" "$killed_at" <<'EOF' || fail "no samples from while the receiver was down"
import json, sys, datetime
cl, down = sys.argv[2], int(sys.argv[3])
ts = []
for l in open(sys.argv[1]):
    s = json.loads(l)
    if s.get("cluster") == cl and s.get("source") == "metric":
        t = datetime.datetime.strptime(s["ts"][:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
        ts.append(int(t.timestamp()))
gap = [t for t in ts if down - 2 <= t < down]
assert gap, "no sample timed within the last 2 s the receiver was down"
print("samples from while it was down:", len(gap))
EOF
[ "$(prom_metric prometheus_remote_storage_samples_failed_total 'remote_name="cascade"')" = 0 ] \
  || fail "prometheus dropped samples while the receiver was down"

# 5. Requests Prometheus would not send, by hand (curl; the body written
# by rw_body below: protobuf by hand, snappy as literals only).
rw_body() {
  "$py" - "$@" <<'EOF'
import struct, sys, time
def varint(v):
    out = b""
    while True:
        b, v = v & 0x7F, v >> 7
        out += bytes([b | (0x80 if v else 0)])
        if not v:
            return out
def ld(f, b): return varint(f << 3 | 2) + varint(len(b)) + b
def series(labels, v, ms):
    lab = b"".join(ld(1, ld(1, k.encode()) + ld(2, x.encode())) for k, x in labels)
    return ld(1, lab + ld(2, b"\x09" + struct.pack("<d", v) + b"\x10" + varint(ms)))
out, cluster, host, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
now = int(time.time() * 1000)
labels = [("Hostname", host), ("__name__", "DCGM_FI_DEV_GPU_TEMP"), ("cluster", cluster)]
pb = series(labels, 71, now)
if n > 1:  # one more, an hour in the future
    pb += series(labels, 72, now + 3600 * 1000)
snap = varint(len(pb))
for i in range(0, len(pb), 60):
    chunk = pb[i:i + 60]
    snap += bytes([(len(chunk) - 1) << 2]) + chunk
open(out, "wb").write(snap)
EOF
}
post() { # post BODYFILE CONTENT-ENCODING: prints the status, the answer in $tmp/answer
  curl -sS -o "$tmp/answer" -w '%{http_code}' -XPOST -H "Authorization: Bearer $token" \
    -H "Content-Encoding: $2" -H 'Content-Type: application/x-protobuf' \
    -H 'X-Prometheus-Remote-Write-Version: 0.1.0' --data-binary "@$1" \
    "http://127.0.0.1:$rwport/api/v1/write"
}
rw_body "$tmp/partial.bin" "$cluster" gpu-partial-$$ 2 || fail "cannot write a body"
code=$(post "$tmp/partial.bin" gzip)
[ "$code" = 415 ] || fail "gzip content answered $code, not 415: $(cat "$tmp/answer")"
printf 'not snappy at all' > "$tmp/junk.bin"
code=$(post "$tmp/junk.bin" snappy)
[ "$code" = 400 ] || fail "a body that is not snappy answered $code, not 400"
grep -q 'snappy' "$tmp/answer" || fail "the 400 does not say why: $(cat "$tmp/answer")"
code=$(post "$tmp/partial.bin" snappy)
[ "$code" = 400 ] || fail "a request with a sample in the future answered $code, not 400"
grep -q '1 of 2 samples refused.*in the future.*the other 1 were taken' "$tmp/answer" \
  || fail "the 400 does not name the refused sample: $(cat "$tmp/answer")"
dump_signals
"$py" - "$tmp/signals.jsonl" gpu-partial-$$ <<'EOF' || fail "the valid half of the request did not arrive"
import json, sys
got = [s for s in map(json.loads, open(sys.argv[1])) if s.get("host") == sys.argv[2]]
assert [s["value"] for s in got] == [71], got
EOF

# 6. Kafka not acknowledging (the embedded broker stopped with SIGSTOP;
# not in the real-Kafka tier, whose broker other tests share): 503 with
# Retry-After after ack_timeout_s.
if [ -z "${CASCADE_TEST_KAFKA:-}" ]; then
  bpid=$broker_pid
  rw_body "$tmp/ok.bin" "$cluster" gpu-503-$$ 1
  kill -STOP "$bpid"
  code=$(post "$tmp/ok.bin" snappy)
  kill -CONT "$bpid"
  [ "$code" = 503 ] || fail "with Kafka stopped the request answered $code, not 503"
  grep -q 'not acknowledged by Kafka within' "$tmp/answer" || fail "the 503 does not say why: $(cat "$tmp/answer")"
fi

echo "remote-write e2e: ok"
echo "$line"
