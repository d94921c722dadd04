#!/usr/bin/env bash
# cascade act with a slurmrestd section: facts and cancellations go through
# the real slurmrestd from Debian (22.05, OpenAPI v0.0.38, rest_auth/local
# on a unix socket) in front of a real slurmctld; calls v0.0.38 lacks (node
# drain and resume) still run scontrol. Checked: a cancel is a REST DELETE
# and no scancel runs; a drain's preconditions and verification are read
# over REST (IDLE+DRAIN reads DRAINED); a human's drain read over REST is
# left alone; running jobs on a node are counted from /jobs (a GPU reset
# with a job on the node is refused).
# usage: act_slurmrestd.sh CASCADE_BIN
set -euo pipefail
bin=$(realpath "$1")
here=$(dirname "$0")
. "$here/live_lib.sh"
. "$here/slurm_lib.sh"

command -v slurmrestd >/dev/null || fail "slurmrestd not installed (deploy/setup.sh)"
start_redis
start_broker 300
start_slurm 3

# slurmrestd refuses to run as root or SlurmUser unless told: the test's
# cluster runs everything as root (production runs it as its own user)
SLURMRESTD_SECURITY=disable_user_check slurmrestd -a rest_auth/local \
  -s openapi/v0.0.38 "unix:$tmp/rest.sock" > "$tmp/rest.out" 2> "$tmp/rest.err" &
pids+=($!)
for _ in $(seq 1 100); do [ -S "$tmp/rest.sock" ] && break; sleep 0.05; done
[ -S "$tmp/rest.sock" ] || fail "slurmrestd did not start"

mkdir -p "$tmp/bin"
for t in scontrol squeue scancel sbatch; do
  printf '#!/bin/sh\necho "%s $*" >> "%s/calls.log"\nexec %s "$@"\n' "$t" "$tmp" "$(command -v $t)" > "$tmp/bin/$t"
  chmod +x "$tmp/bin/$t"
done
touch "$tmp/calls.log"
printf 'slurmrestd: {url: "unix:%s"}\n' "$tmp/rest.sock" > "$tmp/act.yaml"

echo "alice-secret" > "$tmp/alice.token"
echo "alice file:$tmp/alice.token change,recovery" > "$tmp/approvers"
"$bin" act --brokers "$brokers" --redis "$tmp/redis.sock" --mode on --scheduler slurm \
  --canary gpu-001,gpu-002 --slurm-bin "$tmp/bin" --config "$tmp/act.yaml" \
  --approvers "$tmp/approvers" --port 0 \
  --verify-poll-ms 200 > "$tmp/act.out" 2> "$tmp/act.err" &
act_pid=$!; pids+=($act_pid)
for _ in $(seq 1 100); do grep -q "executors: slurm slurmrestd" "$tmp/act.out" 2>/dev/null && break; sleep 0.05; done
grep -q "executors: slurm slurmrestd" "$tmp/act.out" || fail "cascade act did not start with slurmrestd"
api=$(sed -n 's/^act: approvals API on \(http[^ ]*\).*/\1/p' "$tmp/act.out")
[ -n "$api" ] || fail "cascade act serves no approvals API"

# request N PLAYBOOK TARGET [SCENARIO]: a request of an incident of
# SCENARIO (default hw.ecc_uncorrectable); its id is printed.
request() {
  printf '%s\n' "{\"id\":\"act-$(printf %016d "$1")\",\"incident\":\"inc-$1\",\"scenario\":\"${4:-hw.ecc_uncorrectable}\",\"cluster\":\"default\",\"rack\":\"r$1\",\"summary\":\"test $1\",\"action\":{\"playbook\":\"$2\",\"approval\":\"auto\",\"target\":$3,\"params\":{},\"state\":\"proposed\"}}" |
    kcat -b "$brokers" -P -t cascade.actions -k "inc-$1" 2>>"$tmp/kcat.err"
  printf 'act-%016d' "$1"
}
approve() {
  "$bin" approve "$1" --url "$api" --token-file "$tmp/alice.token" > "$tmp/approve.out" ||
    fail "alice could not approve $1: $(cat "$tmp/approve.out")"
}
rest_log() { grep -c "operations_router: .* $1" "$tmp/rest.err" || true; }

# a job that runs on gpu-002
job=$(cd "$tmp" && sbatch --parsable -J train -w gpu-002 --wrap "sleep 600")
for _ in $(seq 1 100); do [ "$(squeue -h -j "$job" -o %T)" = RUNNING ] && break; sleep 0.1; done
[ "$(squeue -h -j "$job" -o %T)" = RUNNING ] || fail "the test job did not start"

# 1. A GPU reset with a job on the node: refused on facts read over REST
#    (once a human approved it: a reset always needs one).
a1=$(request 1 gpu.reset '{"node":"gpu-002"}')
until_event "$a1" waiting
approve "$a1"
until_event "$a1" refused
audit | jq -r --arg a "$a1" 'select(.action == $a and .event == "refused") | .detail' |
  grep -q "node.jobs is 1" || fail "the reset was not refused for the running job"
[ "$(rest_log "GET /slurm/v0.0.38/jobs")" -ge 1 ] || fail "running jobs were not read through slurmrestd"

# 2. job.cancel: a DELETE on slurmrestd, no scancel.
a2=$(request 2 job.cancel "{\"job\":\"$job\"}")
until_event "$a2" done
[ "$(rest_log "DELETE /slurm/v0.0.38/job/$job")" = 1 ] || fail "the cancel did not go through slurmrestd"
! grep -q "^scancel" "$tmp/calls.log" || fail "scancel ran although slurmrestd is configured"
[ "$(scontrol show job "$job" -o | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p')" = CANCELLED ] ||
  fail "job $job is not cancelled"
audit | jq -r --arg a "$a2" 'select(.action == $a and .event == "done") | .after["job.state"]' |
  grep -qx CANCELLED || fail "the cancel's verification did not read CANCELLED over REST"

# 3. node.drain: facts over REST, the drain itself through scontrol.
a3=$(request 3 node.drain '{"node":"gpu-001"}' hw.ecc_correctable_rising)
until_event "$a3" done
[ "$(node_state gpu-001)" = drained ] || fail "gpu-001 is not drained"
grep -q "^scontrol update NodeName=gpu-001 State=DRAIN" "$tmp/calls.log" || fail "the drain did not run scontrol"
[ "$(rest_log "GET /slurm/v0.0.38/node/gpu-001")" -ge 2 ] || fail "the drain's facts were not read through slurmrestd"
audit | jq -r --arg a "$a3" 'select(.action == $a and .event == "done") |
  .before["node.state"] == "IDLE" and .after["node.state"] == "DRAINED" and
  .after["node.drained_by"] == "cascade"' | grep -qx true || fail "REST facts before/after are wrong"
! grep -q "^scontrol show node" "$tmp/calls.log" || fail "facts were read with scontrol"

# 4. A human's drain, read over REST, is theirs.
scontrol update NodeName=gpu-003 State=DRAIN Reason="bad fan, OPS-7"
a4=$(request 4 node.resume '{"node":"gpu-003"}')
until_event "$a4" waiting
approve "$a4"
until_event "$a4" refused
audit | jq -r --arg a "$a4" 'select(.action == $a and .event == "refused") | .detail' |
  grep -q "node.drained_by is human" || fail "the human's drain was not recognised over REST"
[ "$(node_state gpu-003)" = drained ] || fail "cascade resumed a human's drain"

if grep -E "ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:" "$tmp/act.err"; then
  fail "sanitizer report"
fi
kill -TERM "$act_pid"; wait "$act_pid" || fail "cascade act did not stop cleanly"
echo "act_slurmrestd: facts and cancellations through slurmrestd, drains through scontrol"
