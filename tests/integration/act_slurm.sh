#!/usr/bin/env bash
# cascade act against a real SLURM controller (slurmctld, slurmd, munge from
# Debian) started here: drains really drain (sinfo shows it, with the
# incident in the reason), resume resumes once a human approves it, the
# budget stops the third drain of a rack until a human approves it, a
# human's drain is left alone, a resubmission excludes the bad node and
# sets the incident's environment, a redelivered request runs nothing
# twice, and kill -9 in the middle of a step neither repeats the step nor
# leaves the node drained without an audit record saying why. Every
# decision is checked on cascade.audit.
# usage: act_slurm.sh CASCADE_BIN
set -euo pipefail
bin=$(realpath "$1")
here=$(dirname "$0")
. "$here/live_lib.sh"
. "$here/slurm_lib.sh"

start_redis
start_broker 600
start_slurm 5

logged_slurm_tools

echo "alice-secret" > "$tmp/alice.token"
echo "bob-secret" > "$tmp/bob.token"
cat > "$tmp/approvers" <<A
# name  token                 may approve
alice   file:$tmp/alice.token change,job,recovery,destructive
bob     file:$tmp/bob.token   job
A

# the key the journal is sealed with: the restart after kill -9 verifies
# what the killed executor wrote
openssl rand -hex 32 > "$tmp/journal.key"

act_n=0
start_act() {
  act_n=$((act_n + 1))
  start_act_n $act_n --brokers "$brokers" --redis "$tmp/redis.sock" --mode on \
    --scheduler slurm --canary gpu-001,gpu-002,gpu-003,gpu-005 \
    --slurm-bin "$tmp/bin" --approvers "$tmp/approvers" --port 0 \
    --verify-poll-ms 200 --journal-key "file:$tmp/journal.key"
}

# request ID-SUFFIX PLAYBOOK APPROVAL TARGET [PARAMS] [RACK] [SCENARIO]: one
# action request as the correlator writes it for an incident of SCENARIO
# (default hw.ecc_uncorrectable); the id is printed.
request() {
  local id="act-test$1" rack=${6:-r1} scenario=${7:-hw.ecc_uncorrectable}
  printf '%s\n' "{\"id\":\"$id\",\"incident\":\"inc-$1\",\"scenario\":\"$scenario\",\"cluster\":\"default\",\"rack\":\"$rack\",\"summary\":\"test $1\",\"action\":{\"playbook\":\"$2\",\"approval\":\"$3\",\"target\":$4,\"params\":${5:-{\}},\"state\":\"proposed\"}}" |
    kcat -b "$brokers" -P -t cascade.actions -k "inc-$1" 2>>"$tmp/kcat.err"
  echo "$id"
}

start_act

# approve ID: alice approves the action.
approve() {
  "$bin" approve "$1" --url "$api" --token-file "$tmp/alice.token" > "$tmp/approve.out" ||
    fail "alice could not approve $1: $(cat "$tmp/approve.out")"
}

# 1. A drain on a canary node runs alone and really drains (rising
#    correctable errors: the scenario drains on a canary node alone).
rising=hw.ecc_correctable_rising
a1=$(request 1 node.drain auto '{"node":"gpu-001"}' '{}' r1 $rising)
until_event "$a1" done
[ "$(node_state gpu-001)" = drained ] || fail "gpu-001 is $(node_state gpu-001), not drained"
node_reason gpu-001 | grep -q "cascade inc-1" || fail "gpu-001's reason names no incident: $(node_reason gpu-001)"
audit | jq -r --arg a "$a1" 'select(.action == $a and .event == "done") |
  .playbook == "node.drain" and .version == "1.0.0" and .who == "engine" and
  .before["node.state"] == "IDLE" and .after["node.state"] == "DRAINED"' | grep -qx true ||
  fail "the done record lacks playbook, version, who or state before/after"

# 2. The second drain of rack r1 in the hour runs; 3. the third waits.
a2=$(request 2 node.drain auto '{"node":"gpu-002"}' '{}' r1 $rising)
until_event "$a2" done
a3=$(request 3 node.drain auto '{"node":"gpu-003"}' '{}' r1 $rising)
until_event "$a3" waiting
audit | jq -r --arg a "$a3" 'select(.action == $a and .event == "waiting") |
  .detail | test("budget spent: 2 of 2 per rack")' | grep -qx true ||
  fail "the third drain waits for another reason"
[ "$(node_state gpu-003)" = idle ] || fail "the budget did not stop the third drain"

# 4. bob may not approve a change; alice may, and it runs.
set +e
CASCADE_TOKEN=nope "$bin" approve "$a3" --url "$api" > "$tmp/nope.out" 2>&1; rc_nope=$?
"$bin" approve "$a3" --url "$api" --token-file "$tmp/bob.token" > "$tmp/bob.out" 2>&1; rc_bob=$?
set -e
[ "$rc_nope" = 1 ] && grep -q "unknown bearer token" "$tmp/nope.out" || fail "an unknown token was not refused: $(cat "$tmp/nope.out")"
[ "$rc_bob" = 1 ] && grep -q "may not approve change" "$tmp/bob.out" || fail "bob approved a change: $(cat "$tmp/bob.out")"
# The log says what was decided, after the permission check.
! grep -q "bob approves" "$tmp/act1.err" || fail "bob's refused approval is logged as an approval: $(grep bob "$tmp/act1.err")"
grep -q "approvals: bob's approval of $a3 refused: 403" "$tmp/act1.err" || fail "bob's refused approval is not logged as refused"
# A reason is the approver's text: a newline in it cannot start a log line.
"$bin" approve "$a3" --url "$api" --token-file "$tmp/alice.token" \
  --reason $'hardware team agrees\n2026-01-01T00:00:00.000Z info  approvals: bob approves act-forged' > "$tmp/alice.out" ||
  fail "alice could not approve: $(cat "$tmp/alice.out")"
until_event "$a3" done
grep -q "approvals: alice approves $a3: hardware team agrees\\\\n2026" "$tmp/act1.err" || fail "alice's approval is not logged with its reason escaped"
! grep -q "^2026-01-01T00:00:00.000Z" "$tmp/act1.err" || fail "an approval reason forged a log line"
[ "$(node_state gpu-003)" = drained ] || fail "the approved drain did not drain gpu-003"
audit | jq -r --arg a "$a3" 'select(.action == $a and .event == "approved") | .who == "human:alice"' | grep -qx true ||
  fail "the approval is not audited as alice's"
set +e
"$bin" approve "$a3" --url "$api" --token-file "$tmp/alice.token" > "$tmp/again.out" 2>&1; rc_again=$?
set -e
[ "$rc_again" = 1 ] && grep -q "not waiting" "$tmp/again.out" || fail "a second approval was taken: $(cat "$tmp/again.out")"

# 5. A human's drain is theirs: cascade neither resumes it nor drains it,
#    approved or not. (No scenario proposes a resume: it waits for a human.)
scontrol update NodeName=gpu-004 State=DRAIN Reason="disk swap, ticket OPS-12"
a5=$(request 5 node.resume auto '{"node":"gpu-004"}' '{}' r2)
until_event "$a5" waiting
approve "$a5"
until_event "$a5" refused
[ "$(node_state gpu-004)" = drained ] || fail "cascade resumed a node a human drained"
[ "$(node_reason gpu-004)" = "disk swap, ticket OPS-12" ] || fail "the human's reason changed: $(node_reason gpu-004)"

# 6. Resume of a node cascade drained runs once approved, budget spent or
#    not.
a6=$(request 6 node.resume auto '{"node":"gpu-001"}')
until_event "$a6" waiting
approve "$a6"
until_event "$a6" done
[ "$(node_state gpu-001)" = idle ] || fail "gpu-001 was not resumed: $(node_state gpu-001)"

# 7. A change that is not on a canary node and not approved waits; deny it.
a7=$(request 7 node.reboot hitl '{"node":"gpu-004"}' '{}' r2)
until_event "$a7" waiting
"$bin" deny "$a7" --url "$api" --token-file "$tmp/alice.token" --reason "not now" > /dev/null ||
  fail "alice could not deny"
until_event "$a7" denied

# 8. Resubmission: the job's own script, without the bad node, with the
#    incident's environment.
mkdir -p "$tmp/work"
jid=$(sbatch --parsable -w gpu-005 --partition gpu -J train-7b -D "$tmp/work" --wrap 'exit 3')
for _ in $(seq 1 100); do
  squeue -h -j "$jid" -o %T 2>/dev/null | grep -q . || break
  sleep 0.1
done
a8=$(request 8 job.resubmit auto "{\"job\":\"$jid\",\"job_name\":\"train-7b\"}" \
     '{"exclude_nodes":["gpu-005"],"env":{"NCCL_DEBUG":"INFO"},"batch_size":16}' r1 \
     cascade.node_crash)
until_event "$a8" done
new=$(audit | jq -r --arg a "$a8" 'select(.action == $a and .event == "step_ok") | .detail' |
      sed -n 's/.*resubmitted as \([0-9]*\).*/\1/p')
[ -n "$new" ] || fail "no new job id in the resubmission's audit"
scontrol show job -o "$new" | grep -q "ExcNodeList=gpu-005" || fail "job $new does not exclude gpu-005"
scontrol show job -o "$new" | grep -q "JobName=train-7b" || fail "job $new lost its name"
scontrol show job -o "$new" | grep -q "WorkDir=$tmp/work " || fail "job $new lost its working directory"

# 9. A redelivered request runs nothing again.
before=$(grep -c "State=DRAIN" "$tmp/calls.log")
request 1 node.drain auto '{"node":"gpu-001"}' '{}' r1 $rising > /dev/null
for _ in $(seq 1 100); do
  [ "$(audit | jq -r --arg a "$a1" 'select(.action == $a and .event == "duplicate") | .event' | wc -l)" -ge 1 ] && break
  sleep 0.1
done
[ "$(audit | jq -r --arg a "$a1" 'select(.action == $a and .event == "duplicate") | .event' | wc -l)" -ge 1 ] ||
  fail "the redelivered request left no duplicate record"
[ "$(grep -c "State=DRAIN" "$tmp/calls.log")" = "$before" ] || fail "a redelivered drain ran again"

# 10. Malformed requests go to the dead-letter topic with the reason.
printf '%s\n' '{"incident":"inc-x","action":{"playbook":"node.explode","target":{}}}' 'not json' |
  kcat -b "$brokers" -P -t cascade.actions -k bad 2>>"$tmp/kcat.err"
for _ in $(seq 1 100); do
  [ "$(kcat -b "$brokers" -C -t cascade.deadletter -o beginning -e -q 2>/dev/null | wc -l)" -ge 2 ] && break
  sleep 0.1
done
kcat -b "$brokers" -C -t cascade.deadletter -o beginning -e -q 2>/dev/null |
  jq -r .reason > "$tmp/dead.txt"
grep -q "node.explode' is not in this executor's rules" "$tmp/dead.txt" && grep -q "not JSON" "$tmp/dead.txt" ||
  fail "dead letters: $(cat "$tmp/dead.txt")"

# 11. kill -9 in the middle of a drain: the step is not run twice, and the
#     drained node has its audit record.
touch "$tmp/slow"
a11=$(request 11 node.drain auto '{"node":"gpu-005"}' '{}' r3 $rising)
until_event "$a11" step_started
sleep 0.5
kill -9 "$act_pid"
rm -f "$tmp/slow"
for _ in $(seq 1 100); do [ "$(node_state gpu-005)" = drained ] && break; sleep 0.1; done
[ "$(node_state gpu-005)" = drained ] || fail "the interrupted drain never reached the controller"
audit | jq -r --arg a "$a11" 'select(.action == $a and .event == "step_started") |
  .call == "slurm.drain" and .incident == "inc-11" and (.args.reason | test("inc-11"))' | grep -qx true ||
  fail "no audit record says why gpu-005 is drained"
start_act
until_event "$a11" done
audit | jq -c --arg a "$a11" 'select(.action == $a and .event == "step_interrupted")' | grep -q . ||
  fail "the restart did not record the interrupted step"
n=$(grep -c "update NodeName=gpu-005 State=DRAIN" "$tmp/calls.log")
[ "$n" = 1 ] || fail "the drain of gpu-005 ran $n times"

kill "$act_pid"; wait "$act_pid" 2>/dev/null || true
if grep -l "Sanitizer\|runtime error" "$tmp"/act*.err; then
  cat "$tmp"/act*.err | grep -A30 "Sanitizer\|runtime error" | head -60
  fail "a sanitizer report in cascade act's log"
fi
grep -q "requests: .* done" "$tmp/act$act_n.err" || fail "cascade act did not stop cleanly on SIGTERM"
grep -qi "secret" "$tmp"/act*.err "$tmp"/act*.out && fail "a token reached the log"
grep -q "secret" <<< "$(audit)" && fail "a token reached the audit topic"
echo "act_slurm: ok ($(audit | wc -l) audit records; drain, budget, approval, denial, human drain, resume, resubmit $jid -> $new, redelivery, dead letters, kill -9 mid-step)"
