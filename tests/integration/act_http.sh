#!/usr/bin/env bash
# cascade act's HTTP executors against the vendors' APIs as documented,
# served over TLS by tests/integration/vendor_server.py, which checks every
# request's method, path, headers, authentication and body (Slack Block
# Kit limits, Jira REST v2 fields, PagerDuty Events v2, the Kubernetes API
# server's node, pod and Job verbs) and keeps state, so that read-modify-
# write calls and verifications see their effects. Also: per-playbook modes
# from the config, a channel marked optional, the approval link the Slack
# message carries (GET /v1/actions/ID), a 429 sent again after its
# Retry-After, TLS verification on by default,
# and no secret in any log or on the audit topic.
# usage: act_http.sh CASCADE_BIN
set -euo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/live_lib.sh"

start_redis
start_broker 600

# ---- a CA and a certificate for 127.0.0.1 ----
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/ca.key" -out "$tmp/ca.pem" \
  -days 2 -subj /CN=cascade-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$tmp/srv.key" -out "$tmp/srv.csr" \
  -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$tmp/ext"
openssl x509 -req -in "$tmp/srv.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
  -CAcreateserial -out "$tmp/srv.pem" -days 2 -extfile "$tmp/ext" 2>/dev/null

# ---- secrets: files and one environment variable, all random ----
rnd() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
slack_secret=$(rnd | tr a-f A-F | head -c 24)
slack_path="/services/T0CASCADE/B0TEST/$slack_secret"
jira_token=$(rnd); k8s_token=$(rnd); hook_token=$(rnd)
export PD_KEY=$(rnd | head -c 32)
echo "$jira_token" > "$tmp/jira.token"
echo "$k8s_token" > "$tmp/k8s.token"
echo "$hook_token" > "$tmp/hook.token"

# ---- the cluster the Kubernetes API serves ----
cat > "$tmp/seed.json" <<'J'
{"nodes": [
  {"metadata": {"name": "gpu-a", "resourceVersion": "10", "annotations": {}},
   "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
   "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
  {"metadata": {"name": "gpu-h", "resourceVersion": "11"},
   "spec": {"unschedulable": true},
   "status": {"conditions": [{"type": "Ready", "status": "True"}]}}],
 "pods": [
  {"metadata": {"name": "train-1-x7k2p", "namespace": "ml", "labels": {"job-name": "train-1"}},
   "spec": {"nodeName": "gpu-a"}, "status": {"phase": "Running"}},
  {"metadata": {"name": "dcgm-exporter-abc", "namespace": "kube-system",
                "ownerReferences": [{"kind": "DaemonSet", "name": "dcgm-exporter"}]},
   "spec": {"nodeName": "gpu-a"}, "status": {"phase": "Running"}}],
 "jobs": [
  {"apiVersion": "batch/v1", "kind": "Job",
   "metadata": {"name": "train-1", "namespace": "ml", "uid": "u-1", "resourceVersion": "5",
                "creationTimestamp": "2026-11-20T10:00:00Z",
                "labels": {"team": "llm", "controller-uid": "u-1", "job-name": "train-1",
                           "batch.kubernetes.io/controller-uid": "u-1"}},
   "spec": {"backoffLimit": 0,
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}},
            "template": {"metadata": {"labels": {"controller-uid": "u-1", "job-name": "train-1",
                                                 "batch.kubernetes.io/controller-uid": "u-1",
                                                 "batch.kubernetes.io/job-name": "train-1"}},
                         "spec": {"restartPolicy": "Never",
                                  "containers": [{"name": "trainer", "image": "registry/llm:7",
                                                  "env": [{"name": "NCCL_P2P_DISABLE", "value": "0"}]}]}}},
   "status": {"active": 1}},
  {"apiVersion": "batch/v1", "kind": "Job",
   "metadata": {"name": "train-2", "namespace": "ml"},
   "spec": {"template": {"spec": {"containers": [{"name": "t", "image": "x"}]}}},
   "status": {"active": 1}}]}
J

python3 "$here/vendor_server.py" --cert "$tmp/srv.pem" --key "$tmp/srv.key" \
  --port-file "$tmp/vport" --log "$tmp/vendor.log" --seed "$tmp/seed.json" \
  --slack-path "$slack_path" --jira-token "$jira_token" --pd-key "$PD_KEY" \
  --webhook-token "$hook_token" --k8s-token "$k8s_token" --slack-429 1 \
  > "$tmp/vendor.out" 2> "$tmp/vendor.err" & pids+=($!)
for _ in $(seq 1 100); do [ -s "$tmp/vport" ] && break; sleep 0.05; done
[ -s "$tmp/vport" ] || fail "the vendor API server did not start"
base="https://127.0.0.1:$(cat "$tmp/vport")"
echo "$base$slack_path" > "$tmp/slack.url"

# config: every section with the test CA; TLS verification stays on
config() {
  cat <<C
http: {timeout_s: 5}
modes:
  node.reboot: shadow    # over --mode on
slack:
  url: file:$tmp/slack.url
  approval_url: https://cascade.example:9096
  ${1:-ca_file: $tmp/ca.pem}
jira: {url: $base, project: OPS, auth: basic, user: bot@example.com,
       token: file:$tmp/jira.token, ca_file: $tmp/ca.pem}
pagerduty: {url: $base/v2/enqueue, routing_key: env:PD_KEY, ca_file: $tmp/ca.pem}
webhook: {url: $base/hook, token: file:$tmp/hook.token, ca_file: $tmp/ca.pem}
kubernetes: {api: $base, token: file:$tmp/k8s.token, namespace: ml, ca_file: $tmp/ca.pem}
C
}
config > "$tmp/act.yaml"
echo "carol-secret" > "$tmp/carol.token"
echo "carol file:$tmp/carol.token change,recovery" > "$tmp/approvers"

act_n=0
start_act() {
  act_n=$((act_n + 1))
  start_act_n $act_n --brokers "$brokers" --redis "$tmp/redis.sock" --mode on \
    --scheduler k8s --canary gpu-a --config "$1" --approvers "$tmp/approvers" \
    --port 0 --verify-poll-ms 100
}

# req ID INCIDENT PLAYBOOK APPROVAL TARGET [PARAMS] [SCENARIO]: one action
# request as the correlator writes it (with status, root cause and proposed
# actions) for an incident of SCENARIO (default hw.ecc_uncorrectable).
req() {
  printf '%s\n' "{\"id\":\"$(aid $1)\",\"incident\":\"inc-$2\",\"scenario\":\"${7:-hw.ecc_uncorrectable}\",\"cluster\":\"prod-a\",\"rack\":\"r7\",\"summary\":\"uncorrectable ECC on gpu-a (GPU 3), 2 jobs failed\",\"status\":\"open\",\"root_cause\":{\"scenario\":\"hw.ecc_uncorrectable\",\"node\":\"gpu-a\",\"ts\":\"2026-11-21T03:00:00Z\"},\"proposed\":[\"node.drain (canary)\",\"ticket.create (auto)\"],\"action\":{\"playbook\":\"$3\",\"approval\":\"$4\",\"target\":$5,\"params\":${6:-{\}},\"state\":\"proposed\"}}" |
    kcat -b "$brokers" -P -t "$t_actions" -k "inc-$2" 2>>"$tmp/kcat.err"
}

aid() { printf 'act-%016d' "$1"; }
# approve N: carol approves the action.
approve() {
  "$bin" approve "$(aid $1)" --url "$api" --token-file "$tmp/carol.token" > "$tmp/approve.out" ||
    fail "carol could not approve $(aid $1): $(cat "$tmp/approve.out")"
}

# vendor SELECTOR: the vendor server's log entries jq selects
vendor() { jq -c "select($1)" "$tmp/vendor.log"; }
count() { vendor "$1" | grep -c . || true; }

start_act "$tmp/act.yaml"
grep -q "executors: slack jira pagerduty webhook kubernetes" "$tmp/act1.out" ||
  fail "the executor does not list its executors: $(cat "$tmp/act1.out")"

# 1. notify: a Block Kit message to Slack and the generic webhook.
req 1 1 notify auto '{"node":"gpu-a"}'
until_event "$(aid 1)" done
[ "$(count '.vendor == "slack" and .status == 200')" = 1 ] || fail "no Slack message"
# Slack answered the first post 429 Retry-After: 1; it was sent again
[ "$(count '.vendor == "slack" and .status == 429')" = 1 ] || fail "the 429 was not seen"
vendor '.vendor == "slack"' | jq -e '.body.blocks[0].type == "header" and
  (.body.blocks | map(select(.type == "actions"))[0].elements[0].url ==
   "https://cascade.example:9096/v1/actions/'"$(aid 1)"'") and
  (.body.blocks | map(.fields // []) | add | map(.text) | any(startswith("*Root cause*") and endswith("hw.ecc_uncorrectable on node gpu-a")))' \
  >/dev/null || fail "the Slack message lacks the header, root cause or approval link"
[ "$(count '.vendor == "webhook" and .status == 200 and .body.request.id == "'"$(aid 1)"'"')" = 1 ] ||
  fail "no webhook call"

# the link the message carries answers with the action's journal
curl -fsS "$api/v1/actions/$(aid 1)" | jq -e '.state == "done" and .request.action.playbook == "notify"' \
  >/dev/null || fail "GET /v1/actions/ID does not show the finished action"

# 2. ticket.create: the first creates the incident's issue, the second
#    (another action of the same incident) finds it by label and updates it.
req 2 2 ticket.create auto '{}'
until_event "$(aid 2)" done
req 3 2 ticket.create auto '{}' '{"rev":2}'
until_event "$(aid 3)" done
[ "$(count '.vendor == "jira" and .method == "POST" and .status == 201')" = 1 ] || fail "not one Jira create"
[ "$(count '.vendor == "jira" and .method == "PUT" and .path == "/rest/api/2/issue/OPS-1" and .status == 204')" = 1 ] ||
  fail "the second ticket action did not update OPS-1"
vendor '.vendor == "jira" and .method == "POST"' | jq -e '.body.fields.labels | index("cascade-inc-2")' >/dev/null ||
  fail "the Jira issue is not labelled with its incident"
audit | jq -r 'select(.action == "'"$(aid 2)"'" and .event == "step_ok") | .detail' | grep -q "created OPS-1" ||
  fail "the audit does not name the created issue"

# 3. page and page.resolve: one dedup key, the incident's.
req 4 3 page auto '{"node":"gpu-a"}'
until_event "$(aid 4)" done
req 5 3 page.resolve auto '{"node":"gpu-a"}'
until_event "$(aid 5)" done
vendor '.vendor == "pagerduty"' | jq -s -e 'length == 2 and .[0].body.event_action == "trigger" and
  .[0].body.payload.severity == "critical" and .[1].body.event_action == "resolve" and
  .[0].body.dedup_key == "inc-3" and .[1].body.dedup_key == "inc-3"' >/dev/null ||
  fail "PagerDuty did not get trigger then resolve under dedup key inc-3"

# 4. node.drain on the canary node: cordon (owned by the incident) and
#    taint; verified from the API (CORDONED). Then resume (approved: no
#    scenario proposes one): uncordon, and cascade's taint is gone while
#    the node's own stays.
req 6 4 node.drain auto '{"node":"gpu-a"}' '{}' hw.ecc_correctable_rising
until_event "$(aid 6)" done
audit | jq -r 'select(.action == "'"$(aid 6)"'" and .event == "done") |
  .before["node.state"] == "SCHEDULABLE" and .after["node.state"] == "CORDONED" and
  .after["node.drained_by"] == "cascade"' | grep -qx true || fail "the drain's before/after facts are wrong"
vendor '.vendor == "k8s" and .method == "PATCH" and .path == "/api/v1/nodes/gpu-a"' | head -n 2 |
  jq -s -e '.[0].body.spec.unschedulable == true and
    .[0].body.metadata.annotations["cascade.io/cordoned-by"] == "cascade inc-4" and
    .[0].content_type == "application/merge-patch+json" and
    (.[1].body.spec.taints | map(.key) == ["nvidia.com/gpu", "cascade.io/incident"]) and
    (.[1].body.metadata.resourceVersion | length > 0)' >/dev/null ||
  fail "cordon or taint did not send the documented patches"
req 7 5 node.resume auto '{"node":"gpu-a"}'
until_event "$(aid 7)" waiting
approve 7
until_event "$(aid 7)" done
vendor '.vendor == "k8s" and .method == "PATCH" and .path == "/api/v1/nodes/gpu-a"' | tail -n 1 |
  jq -e '.body.spec.unschedulable == false and (.body.spec.taints | map(.key) == ["nvidia.com/gpu"]) and
    .body.metadata.annotations["cascade.io/cordoned-by"] == null' >/dev/null ||
  fail "uncordon left cascade's taint or annotation"

# 5. A node a human cordoned is theirs.
req 8 6 node.resume auto '{"node":"gpu-h"}'
until_event "$(aid 8)" waiting
approve 8
until_event "$(aid 8)" refused
[ "$(count '.path == "/api/v1/nodes/gpu-h" and .method == "PATCH"')" = 0 ] || fail "cascade touched gpu-h"

# 6. job.cancel: DELETE the Job (background propagation), verified gone.
req 9 7 job.cancel auto '{"job":"train-2"}'
until_event "$(aid 9)" done
[ "$(count '.method == "DELETE" and .path == "/apis/batch/v1/namespaces/ml/jobs/train-2" and .body.propagationPolicy == "Background"')" = 1 ] ||
  fail "job.cancel did not delete the Job"

# 7. job.resubmit: the Job again, under a new name, with the incident's
#    patch (env, nodes to avoid) and without the old Job's identity.
req 10 8 job.resubmit auto '{"job":"train-1"}' '{"env":{"NCCL_P2P_DISABLE":"1"},"exclude_nodes":["gpu-a"],"batch_size":16}' \
  cascade.node_crash
until_event "$(aid 10)" done
vendor '.method == "POST" and .path == "/apis/batch/v1/namespaces/ml/jobs"' | jq -e '
  .status == 201 and (.body.metadata.name | test("^train-1-[0-9a-z]{6}$")) and
  .body.metadata.labels == {"team": "llm"} and
  .body.metadata.annotations["cascade.io/recreated-from"] == "train-1" and
  (.body.spec.template.spec.containers[0].env | from_entries | .NCCL_P2P_DISABLE == "1" and .CASCADE_PATCH_BATCH_SIZE == "16") and
  .body.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values == ["gpu-a"]' \
  >/dev/null || fail "the re-created Job is not the patched copy"

# 8. modes per playbook: node.reboot is shadow in the config, over --mode on.
req 11 9 node.reboot auto '{"node":"gpu-a"}'
until_event "$(aid 11)" proposed

# 9. An API error is a failed step with the server's reason.
req 12 10 job.cancel auto '{"job":"no-such-job"}'
until_event "$(aid 12)" done   # already gone: 404 on delete is success
req 13 11 job.resubmit auto '{"job":"no-such-job"}' '{}' cascade.node_crash
until_event "$(aid 13)" failed
audit | jq -r 'select(.action == "'"$(aid 13)"'" and .event == "step_failed") | .detail' |
  grep -q 'HTTP 404: jobs.batch "no-such-job" not found' || fail "the failed step does not say why"

# ---- every request had the documented shape ----
[ "$(count 'has("violation")')" = 0 ] || { vendor 'has("violation")'; fail "requests broke the vendors' documented shape"; }

# 10. TLS verification is on by default: Slack without the test CA fails.
kill -TERM "$act_pid"; wait "$act_pid" || true
config "# no ca_file: the system store" > "$tmp/act2.yaml"
start_act "$tmp/act2.yaml"
slack_before=$(count '.vendor == "slack"')
req 14 12 notify auto '{"node":"gpu-a"}'
until_event "$(aid 14)" failed
audit | jq -r 'select(.action == "'"$(aid 14)"'" and .event == "step_failed") | .detail' |
  grep -qi 'certificate' || fail "an untrusted certificate did not fail the Slack call"
[ "$(count '.vendor == "slack"')" = "$slack_before" ] || fail "a request went to an unverified server"

# 11. A channel the config does not name: an optional step (notify's Slack
#     post) is skipped and the action goes on; a step that is not optional
#     (page, with no pagerduty section) fails the action, saying why.
kill -TERM "$act_pid"; wait "$act_pid" || true
printf 'http: {timeout_s: 5}\nwebhook: {url: %s/hook, token: file:%s/hook.token, ca_file: %s/ca.pem}\n' \
  "$base" "$tmp" "$tmp" > "$tmp/act3.yaml"
start_act "$tmp/act3.yaml"
req 15 13 notify auto '{"node":"gpu-a"}'
until_event "$(aid 15)" done
audit | jq -r 'select(.action == "'"$(aid 15)"'" and .event == "step_ok") | .detail' |
  grep -q 'skipped: slack.post is optional' || fail "the optional Slack step was not skipped as such"
req 16 14 page auto '{"node":"gpu-a"}'
until_event "$(aid 16)" failed
audit | jq -r 'select(.action == "'"$(aid 16)"'" and .event == "step_failed") | .detail' |
  grep -q 'no executor for pagerduty' || fail "a step with no executor did not fail the action"

# ---- no secret anywhere ----
for s in "$slack_secret" "$jira_token" "$k8s_token" "$hook_token" "$PD_KEY"; do
  if grep -rqF "$s" "$tmp"/act*.out "$tmp"/act*.err || audit | grep -qF "$s"; then
    fail "a secret reached a log or the audit topic"
  fi
done
if grep -E "ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:" "$tmp"/act*.err; then
  fail "sanitizer report"
fi
kill -TERM "$act_pid"; wait "$act_pid" || fail "cascade act did not stop cleanly"
echo "act_http: Slack, Jira, PagerDuty, webhook and Kubernetes calls match the documented shapes"
