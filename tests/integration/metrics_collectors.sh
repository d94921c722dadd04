#!/usr/bin/env bash
# Self-observability of the processes metrics.sh does not start: the
# remote-write receiver, and the journal, SLURM and Kubernetes collectors,
# each on its real peer (systemd-journal-remote's files, a slurmctld with
# munge, the scripted API server; nothing is faked on cascade's side):
#   - each answers /metrics, /healthz and /readyz on the port of its
#     config's metrics section, and promtool check metrics accepts it;
#   - each collector counts what it read and published (labelled by
#     collector), and says its Kafka link is up;
#   - a real Prometheus scrapes all four: up is 1 for each, and each
#     collector's published signals are there to query.
# usage: metrics_collectors.sh CASCADE_BIN
set -uo pipefail
bin=$1
here=$(dirname "$0")
. "$here/live_lib.sh"
. "$here/slurm_lib.sh"
. "$here/metrics_lib.sh"

command -v prometheus > /dev/null || fail "prometheus is not installed (deploy/setup.sh)"
command -v promtool > /dev/null || fail "promtool is not installed (deploy/setup.sh)"
jr=$(command -v systemd-journal-remote || echo /lib/systemd/systemd-journal-remote)
[ -x "$jr" ] || fail "systemd-journal-remote not installed (deploy/setup.sh)"

start_broker 200
start_slurm 2
read -r rport jport sport kport pport < <(p=$(free_ports 5)
  echo "$p $((p + 1)) $((p + 2)) $((p + 3)) $((p + 4))")
# config PORT: a config whose metrics.ingest is PORT (the tier's kafka
# settings first, when there)
config() {
  {
    [ -n "${CASCADE_CONFIG:-}" ] && cat "$CASCADE_CONFIG"
    [ -z "${CASCADE_CONFIG:-}" ] && printf 'kafka:\n  brokers: "%s"\n' "$brokers"
    printf 'metrics:\n  listen: 127.0.0.1\n  ingest: %s\n' "$1"
  } > "$tmp/m$1.yaml"
  echo "$tmp/m$1.yaml"
}

# the remote-write receiver
CASCADE_REMOTE_WRITE_TOKEN=rw-token "$bin" ingest remote-write --brokers "$brokers" \
  --config "$(config "$rport")" --port 0 --for 120 > "$tmp/rw.out" 2> "$tmp/rw.err" &
pids+=($!)

# the journal collector, on a journal file journal-remote wrote
mkdir -p "$tmp/j"
printf '%s\n' "kernel gpu-001 NVRM: Xid (PCI:0000:3b:00): 79, pid=2871, name=python3, GPU has fallen off the bus." |
  python3 "$here/journal_export.py" --start $(( $(date +%s) * 1000000 )) |
  "$jr" --output="$tmp/j/a.journal" - 2>> "$tmp/jr.err" || fail "journal-remote failed"
"$bin" ingest journal --brokers "$brokers" --config "$(config "$jport")" --cluster c1 \
  --directory "$tmp/j" --checkpoint "$tmp/j.pos" --from-start --for 120 \
  > "$tmp/journal.out" 2> "$tmp/journal.err" & pids+=($!)

# the SLURM collector, polling the controller
"$bin" ingest slurm --brokers "$brokers" --config "$(config "$sport")" --cluster c1 \
  --poll 1 --for 120 > "$tmp/slurm.out" 2> "$tmp/slurm.err" & pids+=($!)

# the Kubernetes collector, on the scripted API server over TLS
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/srv.key" -out "$tmp/srv.pem" \
  -days 2 -subj /CN=kube-apiserver -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null ||
  fail "openssl could not make the API server's certificate"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$tmp/token"
data=$(cd "$here/../data/k8s" && pwd)
python3 "$here/k8s_apiserver.py" --cert "$tmp/srv.pem" --key "$tmp/srv.key" \
  --token-file "$tmp/token" --port-file "$tmp/kport" --log "$tmp/api.log" \
  --objects "nodes=$data/nodes.json" --objects "pods=$data/pods.json" \
  --objects "jobs=$data/jobs.json" --objects "events=$data/events.json" \
  --objects "workloads=$data/workloads.json" > "$tmp/api.out" 2> "$tmp/api.err" &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$tmp/kport" ] && break; sleep 0.1; done
[ -s "$tmp/kport" ] || fail "the API server did not start"
cat > "$tmp/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:$(cat "$tmp/kport")/
    certificate-authority-data: $(base64 -w0 < "$tmp/srv.pem")
users:
- name: cascade
  user:
    tokenFile: token
contexts:
- name: test
  context: {cluster: test, user: cascade}
current-context: test
EOF
"$bin" ingest k8s --brokers "$brokers" --config "$(config "$kport")" --cluster k8s-test \
  --kubeconfig "$tmp/kubeconfig" --max-age 604800 --for 120 \
  > "$tmp/k8s.out" 2> "$tmp/k8s.err" & pids+=($!)

# each process's endpoints: /readyz and /healthz answer 200
endpoints() {
  get "$1" /readyz
  [ "$code" = 200 ] || fail "$2: /readyz answers $code ($body)"
  get "$1" /healthz
  [ "$code" = 200 ] || fail "$2: /healthz answers $code ($body)"
}
scrape "$rport" remote-write '^cascade_build_info{.*process="ingest remote-write"} 1'
endpoints "$rport" remote-write
grep -q '^cascade_rw_kafka_up 1' "$tmp/remote-write.metrics" || fail "remote-write: no cascade_rw_kafka_up 1"
for c in journal:$jport slurm:$sport k8s:$kport; do
  scrape "${c#*:}" "${c%%:*}" "^cascade_collector_published_total{collector=\"${c%%:*}\"} [1-9]"
  endpoints "${c#*:}" "${c%%:*}"
  grep -q "^cascade_collector_kafka_up{collector=\"${c%%:*}\"} 1" "$tmp/${c%%:*}.metrics" ||
    fail "${c%%:*}: its Kafka link is not up in /metrics"
  grep -q "^cascade_collector_read_total{collector=\"${c%%:*}\"} [1-9]" "$tmp/${c%%:*}.metrics" ||
    fail "${c%%:*}: read nothing"
done

# ---- a real Prometheus scrapes all four ----
start_prometheus "$rport" "$jport" "$sport" "$kport"
for _ in $(seq 1 300); do
  [ "$(query 'up{job="cascade"} == 1')" = 4 ] &&
    [ "$(query 'cascade_collector_published_total > 0')" = 3 ] && break
  sleep 0.2
done
[ "$(query 'up{job="cascade"} == 1')" = 4 ] || fail "Prometheus does not scrape the four processes"
[ "$(query 'cascade_collector_published_total > 0')" = 3 ] ||
  fail "Prometheus lacks the published signals of the three collectors"
[ "$(query 'cascade_ready == 1')" = 4 ] || fail "Prometheus does not see all four ready"
echo "ok: remote-write, journal, slurm and k8s: /metrics accepted by promtool and scraped by Prometheus"
