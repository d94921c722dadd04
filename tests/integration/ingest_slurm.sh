#!/usr/bin/env bash
# The SLURM collector against a real slurmctld and slurmd (slurm_lib.sh):
# `cascade ingest slurm` polls it while jobs are submitted, one of them a
# training script whose batch size the collector must read, and a node
# fails under two of them; what it publishes is read back from
# cascade.signals (kcat, topic_dump.py):
#
#  - RUNNING for each job, with its nodes, GPUs (GRES), account as team,
#    and for the script its config (batch_size 64, precision, NCCL_* env,
#    no other variable);
#  - NODE_FAIL for both jobs once the node is set down, and the node's
#    record with its reason;
#  - the dependent job PENDING with DependencyNeverSatisfied, depending on
#    the failed one;
#  - an inventory signal per node (its leaf switch in topology.conf as
#    its rack, GPUs, canary from --canary-nodes), and again when a rack
#    feature is added, which wins;
#  - a controller that goes away publishes nothing (no job "gone"), and
#    the collector carries on when it is back;
#  - killed with SIGKILL and restarted on its state file, nothing already
#    told is told again; a state file cut short is set aside, not fatal.
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/live_lib.sh"
. "$here/slurm_lib.sh"
command -v kcat >/dev/null || fail "kcat not installed (deploy/setup.sh installs it)"
start_broker 300
# two leaf switches under a spine: the racks of nodes without a rack
# feature
SLURM_TEST_CPUS=4 SLURM_TEST_GPUS=4 SLURM_TEST_TOPOLOGY='SwitchName=leaf1 Nodes=gpu-[001-002]
SwitchName=leaf2 Nodes=gpu-003
SwitchName=spine Switches=leaf[1-2]' start_slurm 3

signals() {
  kcat -b "$brokers" -C -t "$t_signals" -o beginning -e -q -f '%S:%s' 2>> "$tmp/kcat.err" |
    python3 "$here/topic_dump.py" > "$tmp/signals.json"
}
# wait_for JQ_FILTER WHAT: up to 30 s for a signal matching
wait_for() {
  for _ in $(seq 1 150); do
    signals
    [ -n "$(jq -c "select($1)" "$tmp/signals.json" | head -n 1)" ] && return 0
    sleep 0.2
  done
  fail "no signal: $2"
}
collect() {
  "$bin" ingest slurm --brokers "$brokers" --cluster c1 --poll 1 \
    --canary-nodes gpu-002 --state "$tmp/slurm.state" \
    > "$tmp/collector$1.out" 2> "$tmp/collector$1.err" &
  cpid=$!
  pids+=($cpid)
}

cat > "$tmp/train.sh" <<'S'
#!/bin/bash
#SBATCH --job-name=llama-7b-ft
export NCCL_DEBUG=INFO
export WANDB_API_KEY=not-for-cascade
torchrun --nproc_per_node=2 train.py --batch-size 64 \
  --seq-len 2048 --precision bf16-mixed --num_workers 8
sleep 600
S
collect 0
cd "$tmp"
a=$(sbatch --parsable -w gpu-001 --no-requeue --mem=10 --gres=gpu:2 -A llm "$tmp/train.sh") || fail "sbatch a"
b=$(sbatch --parsable -w gpu-001 --no-requeue --mem=10 --gres=gpu:2 -A vision -J sdxl --wrap "sleep 600") || fail "sbatch b"
d=$(sbatch --parsable --mem=10 -d "afterok:$a" -J eval --wrap "sleep 5") || fail "sbatch d"

wait_for ".source == \"job\" and .job == \"$a\" and .state == \"RUNNING\"" "job $a RUNNING"
wait_for ".source == \"job\" and .job == \"$b\" and .state == \"RUNNING\"" "job $b RUNNING"
got=$(jq -cS "select(.source == \"job\" and .job == \"$a\" and .state == \"RUNNING\")
  | {job_name, team, nodes, gpus, attempt, cluster, config}" "$tmp/signals.json")
want=$(echo '{"job_name":"llama-7b-ft","team":"llm","nodes":["gpu-001"],"gpus":2,"attempt":1,"cluster":"c1","config":{"batch_size":64,"seq_len":2048,"precision":"bf16","num_workers":8,"env":{"NCCL_DEBUG":"INFO"}}}' | jq -cS .)
[ "$got" = "$want" ] || fail "job $a RUNNING: $got, want $want"
got=$(jq -c "select(.source == \"inventory\") | {host, rack, gpus, canary}" "$tmp/signals.json" | sort -u | tr '\n' ' ')
want='{"host":"gpu-001","rack":"leaf1","gpus":4,"canary":false} {"host":"gpu-002","rack":"leaf1","gpus":4,"canary":true} {"host":"gpu-003","rack":"leaf2","gpus":4,"canary":false} '
[ "$got" = "$want" ] || fail "inventory: $got"
# NodeAddr 127.0.0.1 and NodeHostname localhost name every node alike:
# no inventory offers them as addresses.
got=$(jq -c 'select(.source == "inventory" and has("addrs")) | .addrs' "$tmp/signals.json")
[ -z "$got" ] || fail "loopback offered as addrs: $got"
# A rack feature is the site's own word: it wins over the leaf switch,
# and the changed node is told again.
scontrol update NodeName=gpu-003 AvailableFeatures=rack-7 ActiveFeatures=rack-7 ||
  fail "scontrol update features"
wait_for '.source == "inventory" and .host == "gpu-003" and .rack == "rack-7"' "gpu-003 in rack-7"

# The controller goes away (squeue --json then exits 0 with errors) and
# comes back with its state: the collector says so and carries on.
kill -TERM "$(cat "$tmp/slurm/run/slurmctld.pid")"
for _ in $(seq 1 150); do
  grep -q "next try in" "$tmp/collector0.err" && break
  sleep 0.2
done
grep -q "next try in" "$tmp/collector0.err" || fail "a controller that does not answer was not noticed"
slurmctld -D -i 2>> "$tmp/slurmctld.err" & pids+=($!)
for _ in $(seq 1 100); do squeue -h > /dev/null 2>&1 && break; sleep 0.2; done

# The node fails under both jobs.
kill -9 "$(cat "$tmp/slurm/run/slurmd-gpu-001.pid")"
scontrol update nodename=gpu-001 state=down reason="GPU fell off the bus" || fail "scontrol update"
wait_for ".source == \"job\" and .job == \"$a\" and .state == \"NODE_FAIL\"" "job $a NODE_FAIL"
wait_for ".source == \"job\" and .job == \"$b\" and .state == \"NODE_FAIL\"" "job $b NODE_FAIL"
wait_for ".source == \"job\" and .job == \"$d\" and .reason == \"DependencyNeverSatisfied\"" "job $d blocked"
got=$(jq -c "select(.source == \"job\" and .job == \"$d\" and .reason == \"DependencyNeverSatisfied\") | {state, depends_on}" "$tmp/signals.json" | head -n 1)
[ "$got" = "{\"state\":\"PENDING\",\"depends_on\":[\"$a\"]}" ] || fail "job $d: $got"
got=$(jq -c "select(.source == \"job\" and .job == \"$b\" and .state == \"NODE_FAIL\") | {nodes, team, job_name, slurm_state}" "$tmp/signals.json")
[ "$got" = '{"nodes":["gpu-001"],"team":"vision","job_name":"sdxl","slurm_state":"NODE_FAIL"}' ] || fail "job $b NODE_FAIL: $got"
wait_for '.source == "slurm" and .host == "gpu-001" and (.line | test("^NodeName=gpu-001 State=DOWN.* Reason=GPU fell off the bus"))' "the node's record"
# no signal says a job vanished while the controller was away
n=$(jq -c 'select(.source == "job")' "$tmp/signals.json" | wc -l)
told=$(jq -r 'select(.source == "job") | .id' "$tmp/signals.json" | sort -u | wc -l)
[ "$n" = "$told" ] || fail "$n job signals, $told ids: some told twice"

# SIGKILL and a restart on the state file: nothing told again.
sleep 2
kill -9 "$cpid"
wait "$cpid" 2>/dev/null
signals
before=$(wc -l < "$tmp/signals.json")
collect 1
sleep 4
kill -TERM "$cpid"
wait "$cpid" || fail "collector exited $? on SIGTERM"
signals
# what came after the restart is news (the node may have turned NOT
# RESPONDING meanwhile), never a signal told before
head -n "$before" "$tmp/signals.json" | jq -r .id | sort > "$tmp/ids.before"
again=$(tail -n +$((before + 1)) "$tmp/signals.json" | jq -r .id | sort | comm -12 - "$tmp/ids.before")
[ -z "$again" ] || fail "after a restart, told again: $(grep -F "$again" "$tmp/signals.json" | head -n 3)"
grep -q "ingest slurm: .* polls (0 failed)" "$tmp/collector1.err" || fail "summary: $(tail -n 2 "$tmp/collector1.err")"
# A state file cut by a power cut: set aside, everything told again
# (harmless: the same ids), not a collector that cannot start.
printf '{"version":1,"jobs":{"1":{"sho' > "$tmp/slurm.state"
"$bin" ingest slurm --brokers "$brokers" --cluster c1 --poll 1 --state "$tmp/slurm.state" \
  --for 3 > /dev/null 2> "$tmp/collector2.err" || fail "with a cut state file: exit $?"
grep -q "set aside as .*slurm.state.bad; telling every job and node again" "$tmp/collector2.err" ||
  fail "a cut state file: $(grep -v ' debug ' "$tmp/collector2.err" | head -n 3)"
jq -e '.version == 1' "$tmp/slurm.state" > /dev/null || fail "no new state file after a cut one"
# A canary list that is no hostlist: refused, named, exit 2
out=$("$bin" ingest slurm --brokers "$brokers" --canary-nodes 'gpu-[001-' --for 3 2>&1)
rc=$?
[ "$rc" = 2 ] && grep -qF "canary nodes 'gpu-[001-': not a hostlist" <<< "$out" ||
  fail "a bad --canary-nodes: exit $rc: $out"
echo "ingest slurm: $before signals ($n job signals), the restart told none again: ok"
