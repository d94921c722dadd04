#!/usr/bin/env bash
# What cascade act does not take on trust, against a real SLURM controller:
# the approval a request claims (the executor decides it from its own
# catalog: the playbook, the class, what the incident's scenario asks for
# it; the request's field may only make it stricter), so an `approval:
# auto` written straight to cascade.actions for a cancel the scenario
# gives a human, or for a resume no scenario proposes, waits for one; and
# its journal in Redis over a restart: an entry is taken only with the seal
# (HMAC) the executor put on it with its journal key, so one edited to
# "running, approved by human:mallory" is refused and audited, never run,
# while an untouched one resumes as before. Without a key, a restart
# cannot verify what an earlier process wrote and refuses it.
# usage: act_trust.sh CASCADE_BIN
set -euo pipefail
bin=$(realpath "$1")
here=$(dirname "$0")
. "$here/live_lib.sh"
. "$here/slurm_lib.sh"

start_redis
start_broker 600
start_slurm 3

logged_slurm_tools
echo "alice-secret" > "$tmp/alice.token"
echo "alice file:$tmp/alice.token change,job,recovery,destructive" > "$tmp/approvers"
openssl rand -hex 32 > "$tmp/journal.key"
key=(--journal-key "file:$tmp/journal.key")

# its metrics on a port of their own (metrics.act)
mport=$(free_port)
printf 'metrics:\n  listen: 127.0.0.1\n  act: %s\n' "$mport" > "$tmp/metrics.yaml"
act_n=0
# start_act [FLAG...]: a cascade act on the test's cluster, and its API.
start_act() {
  act_n=$((act_n + 1))
  start_act_n $act_n --brokers "$brokers" --redis "$tmp/redis.sock" --mode on \
    --cascade-config "$tmp/metrics.yaml" \
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
rcli() { redis-cli -s "$tmp/redis.sock" "$@"; }
stop_act() { kill -TERM "$act_pid"; wait "$act_pid" || fail "cascade act did not stop cleanly"; }
# approve ID: alice approves; the command's exit status, its answer in approve.out.
approve() {
  local rc=0
  "$bin" approve "$1" --url "$api" --token-file "$tmp/alice.token" > "$tmp/approve.out" 2>&1 || rc=$?
  return $rc
}

start_act "${key[@]}"

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
approve "$a2" || fail "alice could not approve the resume: $(cat "$tmp/approve.out")"
until_event "$a2" done
[ "$(node_state gpu-002)" = idle ] || fail "the approved resume did not resume gpu-002"

# ---- 2. an untouched journal entry resumes after kill -9 ----

touch "$tmp/slow"
a4=$(request 4 hw.ecc_correctable_rising node.drain auto '{"node":"gpu-003"}')
# Killed while scontrol sleeps in the update: the wrapper logs the call
# before it sleeps, so the kill lands mid-step however slow the audit
# topic is to read under load.
for _ in $(seq 1 200); do
  grep -q "^scontrol update NodeName=gpu-003" "$tmp/calls.log" && break
  sleep 0.05
done
grep -q "^scontrol update NodeName=gpu-003" "$tmp/calls.log" || fail "the drain of gpu-003 never started"
kill -9 "$act_pid"
rm -f "$tmp/slow"
for _ in $(seq 1 100); do [ "$(node_state gpu-003)" = drained ] && break; sleep 0.1; done
[ "$(rcli HGET "cascade:act:$a4" state)" = running ] || fail "$a4 is not running in its journal"
start_act "${key[@]}"
until_event "$a4" resumed
until_event "$a4" done
audit | jq -c --arg a "$a4" 'select(.action == $a and .event == "step_interrupted")' | grep -q . ||
  fail "the restart did not record the interrupted step"
[ "$(grep -c "update NodeName=gpu-003 State=DRAIN" "$tmp/calls.log")" = 1 ] ||
  fail "the drain of gpu-003 did not run exactly once"

# The restarted executor's metrics: the drain, read back from the ledger,
# counts against node.drain's budgets (2 per rack, 10 per cluster, an
# hour); the cancels a1 and a3 wait for a human (read at the sweep).
metrics() { curl -s "http://127.0.0.1:$mport/metrics"; }
for _ in $(seq 1 150); do
  grep -q '^cascade_act_approvals_pending 2$' <<< "$(metrics)" && break
  sleep 0.1
done
m=$(metrics)
grep -q '^cascade_act_approvals_pending 2$' <<< "$m" ||
  fail "pending approvals: $(grep approvals_pending <<< "$m")"
for want in 'used{playbook="node.drain",scope="default/r1",window="3600s"} 1' \
            'limit{playbook="node.drain",scope="default/r1",window="3600s"} 2' \
            'used{playbook="node.drain",scope="default",window="3600s"} 1' \
            'limit{playbook="node.drain",scope="default",window="3600s"} 10'; do
  grep -qF "cascade_act_budget_$want" <<< "$m" ||
    fail "no cascade_act_budget_$want in: $(grep budget <<< "$m")"
done

# ---- 3. a journal edited in Redis is refused on resume, and audited ----

stop_act
now=$(date +%s%3N)
# the waiting cancel, made "running, approved by human:mallory"
rcli HSET "cascade:act:$a1" state running phase steps step 0 running -1 who human:mallory > /dev/null
rcli ZADD cascade:act:active "$now" "$a1" > /dev/null
# an entry of its own: a destructive cleanup no request ever asked for
a6=$(printf 'act-%016d' 6)
rcli HSET "cascade:act:$a6" state running phase steps step 0 running -1 who human:mallory \
  req "{\"id\":\"$a6\",\"incident\":\"inc-6\",\"scenario\":\"node.stale_state\",\"cluster\":\"default\",\"summary\":\"x\",\"action\":{\"playbook\":\"node.cleanup\",\"approval\":\"hitl\",\"target\":{\"node\":\"gpu-002\"},\"params\":{}}}" > /dev/null
rcli ZADD cascade:act:active "$now" "$a6" > /dev/null
# the waiting hitl cancel, its request pointed at another job
rcli HSET "cascade:act:$a3" req "$(rcli HGET "cascade:act:$a3" req | sed "s/\"job\":\"$job\"/\"job\":\"1$job\"/")" > /dev/null
calls=$(wc -l < "$tmp/calls.log")
start_act "${key[@]}"
for a in "$a1" "$a6"; do
  until_event "$a" refused
  detail "$a" refused | grep -qE "journal entry refused: (its seal does not match|it carries no seal)" ||
    fail "$a is refused for another reason: $(detail "$a" refused)"
  audit | jq -r --arg a "$a" 'select(.action == $a and .event == "refused") |
    .who == "engine" and .journal.who == "human:mallory" and .journal.state == "running"' |
    grep -qx true || fail "the refusal of $a does not say what its journal claimed"
  grep -q "$a: journal entry refused" "$tmp/act$act_n.err" || fail "no log line names $a"
  [ "$(rcli HGET "cascade:act:$a" state)" = refused ] || fail "$a is not refused in its journal"
done
[ "$(rcli ZCARD cascade:act:active)" = 0 ] || fail "refused actions are still active"
# the human's approval of an edited request is refused too
approve "$a3" && fail "an edited request was approved: $(cat "$tmp/approve.out")"
grep -q "fails verification" "$tmp/approve.out" || fail "the approval was refused for another reason: $(cat "$tmp/approve.out")"
until_event "$a3" refused
sleep 1
# nothing of them ran
audit | jq -r --arg a "$a1" --arg b "$a6" --arg c "$a3" \
  'select((.action == $a or .action == $b or .action == $c) and (.event == "step_started" or .event == "resumed")) | .action' |
  grep -q . && fail "an edited journal entry ran"
tail -n +"$((calls + 1))" "$tmp/calls.log" | grep -E "^scancel|cleanup|NodeName=gpu-002" &&
  fail "an edited journal entry reached SLURM"
[ "$(job_state "$job")" = RUNNING ] || fail "job $job was cancelled"
[ "$(node_state gpu-002)" = idle ] || fail "gpu-002 was touched: $(node_state gpu-002)"

# ---- 4. without a key, a restart cannot verify an earlier process's entry ----

stop_act
start_act
grep -q "no journal key" "$tmp/act$act_n.err" || fail "no warning that the journal has no key"
a7=$(request 7 hw.driver_dstate node.reboot auto '{"node":"gpu-003"}')
until_event "$a7" waiting
stop_act
start_act
approve "$a7" && fail "an entry of an earlier keyless process was approved"
until_event "$a7" refused
detail "$a7" refused | grep -q "no journal key" || fail "the refusal does not say why: $(detail "$a7" refused)"

stop_act
if grep -E "ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:" "$tmp"/act*.err; then
  fail "sanitizer report"
fi
echo "act_trust: a request's approval never loosens the catalog's; a journal entry without its seal never runs"
