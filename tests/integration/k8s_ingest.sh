#!/usr/bin/env bash
# `cascade ingest k8s` against a scripted API server (k8s_apiserver.py:
# kube-apiserver does not install here; the server replays the API
# reference's recorded shapes and protocol), publishing to Kafka, read
# back with kcat:
#
#  1. kubeconfig (CA as certificate-authority-data, tokenFile): paged
#     LISTs (limit 2, continue), then WATCHes with bookmarks and
#     timeoutSeconds; the listed Nodes as inventory (rack, canary, GPUs),
#     the Job's PENDING and RUNNING with its nodes, team, job_name,
#     priority, config; the Warning Event kept, the Normal one filtered,
#     the one older than --max-age skipped; Kueue v1beta2 404 -> v1beta1;
#  2. watched changes, each document split across chunks: a container
#     OOMKilled, a Node NotReady, the Job Failed, an events.k8s.io/v1
#     Event with a series, a Kueue preemption, a BOOKMARK;
#  3. 410: an ERROR event inside the watch, and an HTTP 410 when a watch
#     starts, each answered by a fresh LIST; an expired continue token;
#     429 on a LIST, tried again no sooner than a second later;
#  4. the token rotated: the server refuses the old one with 401, the
#     collector reads its token file again and goes on;
#  5. SIGTERM, then a restart on the state file: Events are watched from
#     the saved resourceVersion (no LIST), the same signals keep their
#     ids (same bytes but ts for inventory);
#  6. --events-api events: only /apis/events.k8s.io/v1 is read;
#     --in-cluster with a service-account folder and a client
#     certificate kubeconfig; a wrong CA serves nothing;
#  7. the signals replayed through the rules: node.down on gpu-012 and
#     sched.taint_mismatch open.
set -uo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
data=$(cd "$here/../data/k8s" && pwd)
. "$here/live_lib.sh"
command -v kcat >/dev/null || fail "kcat not installed (deploy/setup.sh installs it)"
start_broker 600

# ---- a CA, the server's certificate, a client certificate ----
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/ca.key" -out "$tmp/ca.pem" \
  -days 2 -subj /CN=kubernetes 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$tmp/srv.key" -out "$tmp/srv.csr" \
  -subj /CN=kube-apiserver 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n' > "$tmp/ext"
openssl x509 -req -in "$tmp/srv.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
  -CAcreateserial -out "$tmp/srv.pem" -days 2 -extfile "$tmp/ext" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$tmp/client.key" -out "$tmp/client.csr" \
  -subj "/O=system:monitoring/CN=cascade-k8s" 2>/dev/null
openssl x509 -req -in "$tmp/client.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
  -CAcreateserial -out "$tmp/client.pem" -days 2 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/other.key" -out "$tmp/other.pem" \
  -days 2 -subj /CN=other-ca 2>/dev/null

rnd() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
rnd > "$tmp/token"

python3 "$here/k8s_apiserver.py" --cert "$tmp/srv.pem" --key "$tmp/srv.key" \
  --client-ca "$tmp/ca.pem" --token-file "$tmp/token" --port-file "$tmp/port" \
  --log "$tmp/api.log" \
  --objects "nodes=$data/nodes.json" --objects "pods=$data/pods.json" \
  --objects "jobs=$data/jobs.json" --objects "events=$data/events.json" \
  --objects "workloads=$data/workloads.json" \
  > "$tmp/api.out" 2> "$tmp/api.err" &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port") || fail "the API server did not start"
api="https://127.0.0.1:$port"

b64() { base64 -w0 < "$1"; }
# kubeconfig: the cluster's CA inline, the user's token in a file
cat > "$tmp/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $api/
    certificate-authority-data: $(b64 "$tmp/ca.pem")
users:
- name: cascade
  user:
    tokenFile: token
- name: cert
  user:
    client-certificate: client.pem
    client-key-data: $(b64 "$tmp/client.key")
- name: plugin
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws
contexts:
- name: test
  context: {cluster: test, user: cascade}
- name: cert
  context: {cluster: test, user: cert}
- name: plugin
  context: {cluster: test, user: plugin}
current-context: test
EOF

control() {
  curl -sf --cacert "$tmp/ca.pem" -X POST -H 'Content-Type: application/json' \
    --data-binary "$1" "$api/_control" > /dev/null || fail "control: $1"
}
put() { control "{\"op\":\"put\",\"resource\":\"$1\",\"object\":$(cat "$data/changes/$2")}"; }

# requests MATCH: how many logged requests jq MATCH selects
requests() { jq -c "select($1)" "$tmp/api.log" 2>/dev/null | wc -l; }
# wait_for MATCH WHAT: until a logged request matches (20 s)
wait_for() {
  for _ in $(seq 1 200); do
    [ "$(requests "$1")" -ge 1 ] && return 0
    sleep 0.1
  done
  fail "no request $2: $(tail -n 5 "$tmp/api.log")"
}

collect() { # N ARGS...: collector instance N
  local n=$1
  shift
  "$bin" ingest k8s --brokers "$brokers" --cluster k8s-test --list-limit 2 \
    --watch-seconds 3 "$@" > "$tmp/k8s$n.out" 2> "$tmp/k8s$n.err" &
  kpid=$!
  pids+=($kpid)
}

stop() {
  kill -TERM "$kpid"
  wait "$kpid"
  local rc=$?
  [ $rc -eq 0 ] || fail "ingest k8s exited $rc on SIGTERM: $(tail -n 3 "$tmp/k8s$1.err")"
}

# topic: every signal of cluster k8s-test on the topic, as JSON lines
topic() {
  kcat -b "$brokers" ${KCAT_CONFIG:+-F "$KCAT_CONFIG"} -C -t "$t_signals" -o beginning -e -q \
    -f '%S:%s' 2>> "$tmp/kcat.err" | python3 "$here/topic_dump.py" |
    jq -c 'select(.cluster == "k8s-test")'
}
# until_topic JQ WHAT: until a signal matches (20 s)
until_topic() {
  for _ in $(seq 1 100); do
    topic > "$tmp/topic.json"
    [ "$(jq -c "select($1)" "$tmp/topic.json" | wc -l)" -ge 1 ] && return 0
    sleep 0.2
  done
  fail "no signal $2 on the topic"
}

# ---- 1. list and watch from a kubeconfig ----
control '{"op":"fail","resource":"jobs","status":429,"count":1,"retry_after":1}'
collect 1 --kubeconfig "$tmp/kubeconfig" --state "$tmp/k8s.state" --max-age 7200
for r in nodes pods jobs events; do
  wait_for ".query.watch == \"1\" and (.path | endswith(\"/$r\"))" "watching $r"
done
wait_for '.path == "/apis/kueue.x-k8s.io/v1beta1/workloads" and .query.watch == "1"' \
  "watching Kueue workloads (v1beta1 after v1beta2's 404)"
[ "$(requests '.path == "/apis/kueue.x-k8s.io/v1beta2/workloads" and .status == 404')" -ge 1 ] ||
  fail "v1beta2 was not tried first"
# paged: nodes (3) in two pages, the second with continue and limit 2
[ "$(requests '.path == "/api/v1/nodes" and .query.limit == "2" and (.query.continue // "") != ""')" -ge 1 ] ||
  fail "no second page of nodes"
[ "$(requests '.path == "/api/v1/pods" and .query.labelSelector == "batch.kubernetes.io/job-name"')" -ge 1 ] ||
  fail "pods not selected by their Job's label"
# the 429: the jobs' next request a second later at least
gap=$(jq -s '[.[] | select(.path == "/apis/batch/v1/jobs")] | (.[1].t - .[0].t)' "$tmp/api.log")
[ "$(jq -s '[.[] | select(.path == "/apis/batch/v1/jobs")][0].status' "$tmp/api.log")" = 429 ] ||
  fail "the jobs' first LIST was not the 429"
awk -v g="$gap" 'BEGIN { exit !(g >= 1.0) }' || fail "a LIST after a 429 came after ${gap}s"
w=$(jq -r 'select(.query.watch == "1") | .query.timeoutSeconds + " " + .query.allowWatchBookmarks' "$tmp/api.log" | sort -u)
[ "$w" = "3 true" ] || fail "watch parameters: $w"

until_topic '.source == "job" and .state == "RUNNING"' "RUNNING for train-7"
until_topic '.source == "inventory" and .host == "cpu-001"' "inventory of cpu-001"
jq -c 'select(.source == "inventory") | {host, rack, gpus, canary}' "$tmp/topic.json" | sort -u > "$tmp/inv"
cat > "$tmp/inv.want" <<'EOF'
{"host":"cpu-001","rack":null,"gpus":0,"canary":false}
{"host":"gpu-011","rack":"r07","gpus":8,"canary":false}
{"host":"gpu-012","rack":"r07","gpus":8,"canary":true}
EOF
diff "$tmp/inv.want" "$tmp/inv" > "$tmp/inv.diff" || fail "inventory: $(cat "$tmp/inv.diff")"
run=$(jq -c 'select(.source == "job" and .state == "RUNNING") | {job, job_name, nodes, team, gpus, attempt, config}' "$tmp/topic.json" | sort -u)
[ "$run" = '{"job":"train-7","job_name":"llama-7b","nodes":["gpu-011","gpu-012"],"team":"llm","gpus":8,"attempt":1,"config":{"batch_size":64,"env":{"NCCL_DEBUG":"INFO"},"num_workers":8}}' ] ||
  fail "the Job's RUNNING signal: $run"
[ "$(jq -c 'select(.source == "job" and .state == "PENDING" and .job == "train-7")' "$tmp/topic.json" | wc -l)" -ge 1 ] ||
  fail "no PENDING for train-7"
until_topic '.source == "k8s" and .event.reason == "FailedScheduling" and .event.metadata.name == "serve-0.17f3a9c2b1d0e4a1"' \
  "the listed FailedScheduling Event"
ev=$(jq -c 'select(.source == "k8s" and .event.metadata.name == "serve-0.17f3a9c2b1d0e4a1") | [.event.kind, .event.apiVersion, (.event.metadata | has("managedFields"))]' "$tmp/topic.json" | sort -u)
[ "$ev" = '["Event","v1",false]' ] || fail "a listed Event's kind, apiVersion, managedFields: $ev"
[ "$(jq -c 'select(.event.reason == "Scheduled" or .event.metadata.name == "gpu-011.17f3a9c2b1d00003")' "$tmp/topic.json" | wc -l)" -eq 0 ] ||
  fail "a Normal Event or one older than --max-age was published"

# ---- 2. watched changes ----
put pods pod_oomkilled.json
put nodes node_notready.json
put jobs job_failed.json
put events event_new_api.json
put workloads workload_preempted.json
control '{"op":"bookmark","resource":"events"}'
until_topic '.source == "job" and .state == "FAILED"' "FAILED for train-7"
until_topic '.source == "k8s" and .event.reason == "OOMKilled"' "the derived OOMKilled Event"
until_topic '.source == "k8s" and .event.reason == "NodeNotReady"' "the derived NodeNotReady Event"
until_topic '.source == "job" and .state == "PREEMPTED"' "PREEMPTED for train-9"
until_topic '.source == "k8s" and .event.metadata.name == "train-8-0-m2n4b.17f3a9c2b1d0e4c3"' "the new-API Event"
oom=$(jq -c 'select(.event.reason == "OOMKilled") | [.host, .job, .event.message, .event.reportingComponent]' "$tmp/topic.json" | sort -u)
[ "$oom" = '["gpu-012","train-7","Container trainer in pod ml/train-7-0-x2k9p was OOMKilled (exit code 137)","cascade.io/k8s"]' ] ||
  fail "the OOMKilled Event: $oom"
nr=$(jq -c 'select(.event.reason == "NodeNotReady") | [.host, .event.message]' "$tmp/topic.json" | sort -u)
[ "$nr" = '["gpu-012","Node gpu-012 status is now: NodeNotReady"]' ] || fail "NodeNotReady: $nr"
failed=$(jq -c 'select(.source == "job" and .state == "FAILED") | [.job, .nodes]' "$tmp/topic.json" | sort -u)
[ "$failed" = '["train-7",["gpu-011","gpu-012"]]' ] || fail "FAILED: $failed"
# read through /api/v1, the events.k8s.io object has message, not note
newev=$(jq -c 'select(.event.metadata.name == "train-8-0-m2n4b.17f3a9c2b1d0e4c3") | [.event.apiVersion, (.event.message | length > 0), .event.series.count]' "$tmp/topic.json" | sort -u)
[ "$newev" = '["v1",true,3]' ] || fail "the new-API Event through core/v1: $newev"
wait_for '.path == "/api/v1/events" and .query.watch == "1" and (.query.resourceVersion | tonumber) > 0 and .t > 0' "an events watch"

# ---- 3. 410s and an expired continue ----
lists_before=$(requests '.path == "/api/v1/pods" and (.query.watch // "") == ""')
control '{"op":"expire","resource":"pods","reason":"Expired"}'
for _ in $(seq 1 100); do
  [ "$(requests '.path == "/api/v1/pods" and (.query.watch // "") == ""')" -gt "$lists_before" ] && break
  sleep 0.1
done
[ "$(requests '.path == "/api/v1/pods" and (.query.watch // "") == ""')" -gt "$lists_before" ] ||
  fail "an in-stream 410 (Expired) was not answered by a LIST"
lists_before=$(requests '.path == "/api/v1/nodes" and (.query.watch // "") == ""')
control '{"op":"expire_continue"}'
control '{"op":"expire","resource":"nodes","reason":"Gone","http":true}'
control '{"op":"end","resource":"nodes"}'
wait_for '.path == "/api/v1/nodes" and .status == 410' "answered HTTP 410"
for _ in $(seq 1 100); do
  [ "$(requests '.path == "/api/v1/nodes" and (.query.watch // "") == "" and .status == 200 and (.query.continue // "") == ""')" -gt "$lists_before" ] && break
  sleep 0.1
done
grep -q 'nodes: .*listing again' "$tmp/k8s1.err" || fail "no relist of nodes logged"

# ---- 4. the token rotated ----
rnd > "$tmp/token.new" && mv "$tmp/token.new" "$tmp/token"
control '{"op":"end","resource":"jobs"}'
# the first watch to start again meets the 401 (one ended on its own
# may come before the one ended here); the token is the collector's, so
# every kind goes on with the new one
wait_for '.status == 401' "refused with 401 after the rotation"
t401=$(jq -s '[.[] | select(.status == 401)][0].t' "$tmp/api.log")
p401=$(jq -r -s '[.[] | select(.status == 401)][0].path' "$tmp/api.log")
wait_for ".path == \"$p401\" and .status == 200 and .t > $t401" "with the new token"
grep -q '401 Unauthorized.*the token file changed' "$tmp/k8s1.err" || fail "the 401 not told: $(grep 401 "$tmp/k8s1.err")"

# ---- 5. restart on the state file ----
sleep 1.5 # a tick past the last Event: its resourceVersion is committed
stop 1
saved=$(jq -r .events_rv "$tmp/k8s.state") || fail "no state file"
[ -n "$saved" ] && [ "$saved" != null ] || fail "state: $(cat "$tmp/k8s.state")"
topic > "$tmp/before.json"
n_before=$(wc -l < "$tmp/before.json")
: > "$tmp/api.log"
collect 2 --kubeconfig "$tmp/kubeconfig" --state "$tmp/k8s.state" --max-age 7200
wait_for '.path == "/api/v1/events" and .query.watch == "1"' "watching events after the restart"
[ "$(requests '.path == "/api/v1/events" and (.query.watch // "") == ""')" -eq 0 ] ||
  fail "events were listed again after a restart with a state file"
first=$(jq -r -s '[.[] | select(.path == "/api/v1/events")][0].query.resourceVersion' "$tmp/api.log")
[ "$first" = "$saved" ] || fail "events watched from $first, saved $saved"
wait_for '.path == "/apis/batch/v1/jobs" and .query.watch == "1"' "watching jobs after the restart"
sleep 1
stop 2
topic > "$tmp/after.json"
# a repeat keeps its id and bytes (inventory's ts is the time it was told)
python3 - "$tmp/after.json" > "$tmp/dupids" <<'PY'
import json, sys
seen = {}
for line in open(sys.argv[1]):
    s = json.loads(line)
    key = dict(s)
    if s["source"] == "inventory":
        key.pop("ts")
    k = json.dumps(key, sort_keys=True)
    if seen.setdefault(s["id"], k) != k:
        print(s["id"], k)
PY
[ ! -s "$tmp/dupids" ] || fail "an id told with other contents: $(head -n 2 "$tmp/dupids")"
[ "$(wc -l < "$tmp/after.json")" -gt "$n_before" ] || fail "the restart told nothing again"

# ---- 6. the other Event API, in-cluster, client certificates, a wrong CA ----
: > "$tmp/api.log"
mkdir -p "$tmp/sa"
cp "$tmp/token" "$tmp/sa/token"; cp "$tmp/ca.pem" "$tmp/sa/ca.crt"; echo ml > "$tmp/sa/namespace"
KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$port \
  collect 3 --in-cluster --sa-dir "$tmp/sa" --events-api events --no-workloads --namespace ml
wait_for '.path == "/apis/events.k8s.io/v1/namespaces/ml/events" and .query.watch == "1"' "watching events.k8s.io in ml"
stop 3
[ "$(requests '(.path | test("^/api/v1(/namespaces/[^/]+)?/events$"))')" -eq 0 ] ||
  fail "--events-api events also read /api/v1 events"
[ "$(requests '(.path | test("kueue"))')" -eq 0 ] || fail "--no-workloads still asked for Kueue"
[ "$(requests '.auth != "ok"')" -eq 0 ] || fail "in-cluster: a request without the account's token"

: > "$tmp/api.log"
collect 4 --kubeconfig "$tmp/kubeconfig" --context cert --no-workloads
wait_for '.path == "/api/v1/nodes" and .auth == "cert" and .status == 200' "with a client certificate"
stop 4

: > "$tmp/api.log"
sed "s|certificate-authority-data: .*|certificate-authority-data: $(b64 "$tmp/other.pem")|" \
  "$tmp/kubeconfig" > "$tmp/kubeconfig.wrong"
collect 5 --kubeconfig "$tmp/kubeconfig.wrong" --no-workloads
sleep 2
stop 5
[ "$(requests 'true')" -eq 0 ] || fail "a server the CA does not vouch for was sent requests"
grep -qi 'certificate' "$tmp/k8s5.err" || fail "the TLS failure was not told: $(tail -n 3 "$tmp/k8s5.err")"

"$bin" ingest k8s --brokers "$brokers" --kubeconfig "$tmp/kubeconfig" --context plugin \
  > "$tmp/plugin.out" 2> "$tmp/plugin.err"
[ $? -eq 2 ] || fail "an exec plugin did not exit 2"
grep -q 'exec plugin.*service-account token' "$tmp/plugin.err" || fail "exec: $(cat "$tmp/plugin.err")"

# ---- 7. through the rules ----
jq -c 'select(.source != "inventory")' "$tmp/after.json" > "$tmp/signals.jsonl"
"$bin" replay "$tmp/signals.jsonl" > "$tmp/incidents.json" 2> "$tmp/replay.err" ||
  fail "replay: $(tail -n 3 "$tmp/replay.err")"
for s in node.down sched.taint_mismatch; do
  jq -c --arg s "$s" 'select(.scenario == $s)' "$tmp/incidents.json" | grep -q . ||
    fail "no $s incident from the collector's signals: $(jq -c '[.scenario, .root_cause]' "$tmp/incidents.json")"
done
echo "ingest k8s: ok ($(wc -l < "$tmp/after.json") signals, $(jq -r .scenario "$tmp/incidents.json" | sort -u | tr '\n' ' '))"
