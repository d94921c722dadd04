#!/usr/bin/env bash
# What cascade act does not take on trust, against a real SLURM controller:
# the approval a request claims (the executor decides it from its own
# catalog: the playbook, the class, what the incident's scenario asks for
# it; the request's field may only make it stricter), so an `approval:
# auto` written straight to cascade.actions for a cancel the scenario
# gives a human, or for a resume no scenario proposes, waits for one.
# usage: act_trust.sh CASCADE_BIN
set -euo pipefail
bin=$(realpath "$1")
here=$(dirname "$0")
. "$here/live_lib.sh"
. "$here/slurm_lib.sh"

start_redis
start_broker 600
start_slurm 3

# the operator's tools, each call logged
mkdir -p "$tmp/bin"
for t in scontrol squeue scancel sbatch; do
  cat > "$tmp/bin/$t" <<W
#!/bin/sh
echo "$t \$*" >> "$tmp/calls.log"
exec $(command -v $t) "\$@"
W
  chmod +x "$tmp/bin/$t"
done
touch "$tmp/calls.log"
echo "alice-secret" > "$tmp/alice.token"
echo "alice file:$tmp/alice.token change,job,recovery,destructive" > "$tmp/approvers"

act_n=0
# start_act [FLAG...]: a cascade act on the test's cluster, and its API.
start_act() {
  act_n=$((act_n + 1))
  start_act_n $act_n --brokers "$brokers" --redis "$tmp/redis.sock" --mode on \
    --scheduler slurm --canary gpu-003 --slurm-bin "$tmp/bin" \
    --approvers "$tmp/approvers" --port 0 --verify-poll-ms 200 "$@"
}

# request N SCENARIO PLAYBOOK APPROVAL TARGET: a request as anyone with
# write access to the topic can make it; its id is printed.
request() {
  local id; id=$(printf 'act-%016d' "$1")
  printf '%s\n' "{\"id\":\"$id\",\"incident\":\"inc-$1\",\"scenario\":\"$2\",\"cluster\":\"default\",\"rack\":\"r1\",\"summary\":\"test $1\",\"action\":{\"playbook\":\"$3\",\"approval\":\"$4\",\"target\":$5,\"params\":{},\"state\":\"proposed\"}}" |
    kcat -b "$brokers" -P -t cascade.actions -k "inc-$1" 2>>"$tmp/kcat.err"
  echo "$id"
}
# detail ID EVENT: the detail of the action's last record of that event.
detail() {
  audit | jq -r --arg a "$1" --arg e "$2" 'select(.action == $a and .event == $e) | .detail' | tail -n 1
}
job_state() { scontrol show job -o "$1" | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p'; }

start_act

# ---- 1. the approval is the executor's, not the request's ----

# A job that runs on gpu-001, and a node cascade drained.
job=$(cd "$tmp" && sbatch --parsable -J train -w gpu-001 --wrap "sleep 600")
for _ in $(seq 1 100); do [ "$(job_state "$job")" = RUNNING ] && break; sleep 0.1; done
[ "$(job_state "$job")" = RUNNING ] || fail "the test job did not start"
scontrol update NodeName=gpu-002 State=DRAIN Reason="cascade inc-0: test"

# nccl.hang_busy_wait gives job.cancel to a human: `auto` in the request
# does not make it run alone.
a1=$(request 1 nccl.hang_busy_wait job.cancel auto "{\"job\":\"$job\"}")
until_event "$a1" waiting
detail "$a1" waiting | grep -q "scenario nccl.hang_busy_wait asks for hitl" ||
  fail "the cancel waits for another reason: $(detail "$a1" waiting)"
[ "$(job_state "$job")" = RUNNING ] || fail "job $job was cancelled without a human"
! grep -q "^scancel" "$tmp/calls.log" || fail "scancel ran without a human"

# No scenario proposes node.resume: a request for one waits for a human.
a2=$(request 2 hw.ecc_uncorrectable node.resume auto '{"node":"gpu-002"}')
until_event "$a2" waiting
detail "$a2" waiting | grep -q "scenario hw.ecc_uncorrectable does not propose it" ||
  fail "the resume waits for another reason: $(detail "$a2" waiting)"
[ "$(node_state gpu-002)" = drained ] || fail "gpu-002 was resumed without a human"

# The request may ask for more than the catalog: job.cancel is auto for
# hw.ecc_uncorrectable, hitl in the request wins.
a3=$(request 3 hw.ecc_uncorrectable job.cancel hitl "{\"job\":\"$job\"}")
until_event "$a3" waiting

# A human's approval runs it, as always.
"$bin" approve "$a2" --url "$api" --token-file "$tmp/alice.token" > /dev/null ||
  fail "alice could not approve the resume"
until_event "$a2" done
[ "$(node_state gpu-002)" = idle ] || fail "the approved resume did not resume gpu-002"

kill -TERM "$act_pid"; wait "$act_pid" || fail "cascade act did not stop cleanly"
if grep -E "ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:" "$tmp"/act*.err; then
  fail "sanitizer report"
fi
echo "act_trust: a request's approval never loosens the catalog's"
