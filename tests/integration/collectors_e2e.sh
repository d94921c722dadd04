#!/usr/bin/env bash
# The collectors alone, end to end: a SLURM cluster (slurm_lib.sh: Debian's
# slurmctld and slurmd), `cascade ingest slurm` polling it, `cascade ingest
# log --follow` on the nodes' kernel log and on the jobs' output files
# (both configured by the config file's collect section), a
# broker, and `cascade correlate` with its redis-server. No signal is
# written by hand: the test submits jobs, writes what the kernel and the
# training script print (an NVRM Xid 79 line in rsyslog's format, a
# PyTorch OOM), and fails a node. The correlator must find:
#
#  - cascade.node_crash on gpu-001, root hw.gpu_off_bus (the followed
#    kernel log's Xid 79), with the three jobs the node took down as
#    children and a resubmit that excludes the node;
#  - oom.batch_size for the job whose output said CUDA out of memory, with
#    a resubmit whose batch_size is half of the 64 its batch script gave.
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/live_lib.sh"
. "$here/slurm_lib.sh"
start_broker 600
start_redis
SLURM_TEST_CPUS=4 SLURM_TEST_GPUS=4 SLURM_TEST_FEATURES=rack-7 start_slurm 3
mkdir -p "$tmp/log" "$tmp/out"
: > "$tmp/log/kern.log"

# The collectors as an operator runs them: their config's collect section
# (over the real-Kafka tier's kafka section, when there is one).
{
  [ -n "${CASCADE_CONFIG:-}" ] && cat "$CASCADE_CONFIG"
  cat <<Y
collect:
  cluster: c1
  log:
    checkpoint: $tmp/follow.pos
    sweep_ms: 200
    files:
      - {path: $tmp/log/kern.log, format: syslog}
      - {path: "$tmp/out/{host}-{job}.out", format: plain, source: app}
  slurm:
    poll: 1s
    state: $tmp/slurm.state
Y
} > "$tmp/collect.yaml"
"$bin" config check "$tmp/collect.yaml" > /dev/null 2> "$tmp/config.err" ||
  fail "config check: $(cat "$tmp/config.err")"
"$bin" ingest slurm --brokers "$brokers" --config "$tmp/collect.yaml" \
  > "$tmp/slurmcol.out" 2> "$tmp/slurmcol.err" & pids+=($!)
"$bin" ingest log --follow --brokers "$brokers" --config "$tmp/collect.yaml" \
  > "$tmp/follow.out" 2> "$tmp/follow.err" & pids+=($!)
"$bin" correlate --brokers "$brokers" --redis "$tmp/redis.sock" --for 300 \
  > "$tmp/correlate.out" 2> "$tmp/correlate.err" & pids+=($!)

incidents() {
  redis-cli -s "$tmp/redis.sock" --raw hvals 'cascade:{c1}:incidents' 2>/dev/null
}
# wait_incident JQ WHAT: up to 60 s for an incident matching JQ
wait_incident() {
  for _ in $(seq 1 300); do
    [ -n "$(incidents | jq -c "select($1)" 2>/dev/null | head -n 1)" ] && return 0
    sleep 0.2
  done
  echo "incidents:"; incidents | jq -c '{scenario, scope, root_cause, children}'
  fail "no incident: $2"
}
# running JOB: until SLURM runs JOB, and two polls more, so that the
# collector has told it
running() {
  for _ in $(seq 1 100); do
    [ "$(squeue -h -j "$1" -o %T 2>/dev/null)" = RUNNING ] && { sleep 2.5; return 0; }
    sleep 0.2
  done
  fail "job $1 did not start"
}

cd "$tmp"
cat > "$tmp/train.sh" <<'S'
#!/bin/bash
#SBATCH --job-name=llama-7b-ft
torchrun --nproc_per_node=1 train.py --batch-size 64 --seq-len 2048
echo "completed step: 1010, seconds: 6.016, loss: 2.137"
sleep 3
echo "RuntimeError: CUDA out of memory. Tried to allocate 1006.00 MiB (GPU 0; 10.91 GiB total capacity; 9.18 GiB already allocated; 569.81 MiB free; 9.49 GiB reserved in total by PyTorch)"
exit 1
S
# torchrun is not here: the script's first line fails, as a launcher
# line would not, and the rest goes on (the config is read, not run)
sed -i 's/^torchrun /: torchrun /' "$tmp/train.sh"

# 1. A node crash under three jobs
j1=$(sbatch --parsable -w gpu-001 --no-requeue --mem=10 --gres=gpu:1 -A llm -J gpt-13b-pt -o "$tmp/out/%N-%j.out" --wrap "sleep 600")
j2=$(sbatch --parsable -w gpu-001 --no-requeue --mem=10 --gres=gpu:1 -A llm -J sdxl-lora -o "$tmp/out/%N-%j.out" --wrap "sleep 600")
j3=$(sbatch --parsable -w gpu-001 --no-requeue --mem=10 --gres=gpu:1 -A llm -J llama-ft -o "$tmp/out/%N-%j.out" --wrap "sleep 600")
running "$j1"; running "$j2"; running "$j3"
printf '%s gpu-001 kernel: [90000.500000] NVRM: Xid (PCI:0000:3a:00): 79, pid=2871, name=python3, GPU has fallen off the bus.\n' \
  "$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)" >> "$tmp/log/kern.log"
sleep 2
kill -9 "$(cat "$tmp/slurm/run/slurmd-gpu-001.pid")"
scontrol update nodename=gpu-001 state=down reason="GPU fell off the bus" || fail "scontrol update"
wait_incident '.scenario == "cascade.node_crash" and .scope.node == "gpu-001" and (.children | length) >= 3' \
  "cascade.node_crash on gpu-001 with three jobs"
got=$(incidents | jq -c 'select(.scenario == "cascade.node_crash") |
  {root: .root_cause.scenario, jobs: ([.children[].job] | sort),
   exclude: ([.actions[] | select(.playbook == "job.resubmit") | .params.exclude_nodes[]] | unique)}')
want=$(jq -cn --arg a "$j1" --arg b "$j2" --arg c "$j3" \
  '{root: "hw.gpu_off_bus", jobs: ([$a, $b, $c] | sort), exclude: ["gpu-001"]}')
[ "$got" = "$want" ] || fail "node crash: $got, want $want"

# 2. An OOM: the job's own batch size, halved
j4=$(sbatch --parsable -w gpu-002 --no-requeue --mem=10 --gres=gpu:1 -A llm -o "$tmp/out/%N-%j.out" "$tmp/train.sh")
wait_incident ".scenario == \"oom.batch_size\" and .scope.job == \"$j4\"" "oom.batch_size for job $j4"
got=$(incidents | jq -c "select(.scenario == \"oom.batch_size\" and .scope.job == \"$j4\") |
  [.actions[] | select(.playbook == \"job.resubmit\") | .params.batch_size]")
[ "$got" = "[32]" ] || fail "the OOM's resubmit: batch_size $got, want [32] (64 halved)"
echo "collectors e2e: cascade.node_crash on gpu-001 with jobs $j1 $j2 $j3; oom.batch_size for $j4 with batch_size 64 -> 32: ok"
