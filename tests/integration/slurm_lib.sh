# A SLURM cluster of the test's own, sourced after live_lib.sh: munged,
# slurmctld and one slurmd per node (gpu-001 .. gpu-00N), all on this
# machine as the Debian packages install them (slurm-wlm, munge), each on
# its own ports, state and sockets under $tmp/slurm. Exports SLURM_CONF so
# scontrol, sinfo and cascade act talk to it.

# slurm_steps_cleanup: the job steps of this cluster, gone. A slurmstepd
# outlives its slurmd (a test that kills one leaves its jobs running), so
# each job script under $tmp and its slurmstepd parent are killed.
slurm_steps_cleanup() {
  local p pp
  for p in $(pgrep -f "$tmp/slurm/spool/" 2>/dev/null); do
    pp=$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')
    kill -9 -- "-$p" "$p" 2>/dev/null # the script's process group: its sleep too
    [ -n "$pp" ] && [ "$(ps -o comm= -p "$pp" 2>/dev/null)" = slurmstepd ] &&
      kill -9 "$pp" 2>/dev/null
  done
  return 0
}

# start_slurm N: N nodes in partition gpu; waits until every node is idle.
# SLURM_TEST_CPUS (1): CPUs a node (jobs a node at once); SLURM_TEST_GPUS
# (none): GPUs a node, as GRES on empty files for devices;
# SLURM_TEST_FEATURES (none): the nodes' features; SLURM_TEST_TOPOLOGY
# (none): topology.conf's lines.
start_slurm() {
  local n=$1 d="$tmp/slurm" base i name
  command -v slurmctld >/dev/null || fail "slurmctld not installed (deploy/setup.sh)"
  trap 'slurm_steps_cleanup; cleanup' EXIT
  mkdir -p "$d/state" "$d/log" "$d/run"
  chmod 755 "$tmp" "$d" "$d/run"
  head -c 1024 /dev/urandom > "$d/munge.key"
  chmod 400 "$d/munge.key"
  munged -F --socket="$d/run/munge.sock" --key-file="$d/munge.key" \
    --log-file="$d/log/munged.log" --pid-file="$d/run/munged.pid" \
    --seed-file="$d/state/munge.seed" --force 2>> "$tmp/munged.err" &
  pids+=($!)
  for _ in $(seq 1 100); do [ -S "$d/run/munge.sock" ] && break; sleep 0.05; done
  [ -S "$d/run/munge.sock" ] || fail "munged did not start"
  base=$(free_ports $((n + 2))) || fail "no $((n + 2)) free ports for SLURM"
  cat > "$d/slurm.conf" <<CONF
ClusterName=cascade-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$d/run/munge.sock
CredType=cred/munge
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmdTimeout=300
MinJobAge=3600
${SLURM_TEST_GPUS:+GresTypes=gpu}
NodeName=gpu-[001-$(printf %03d "$n")] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$((base + 2))-$((base + 1 + n))] CPUs=${SLURM_TEST_CPUS:-1} RealMemory=100 State=UNKNOWN${SLURM_TEST_GPUS:+ Gres=gpu:$SLURM_TEST_GPUS}${SLURM_TEST_FEATURES:+ Features=$SLURM_TEST_FEATURES}
PartitionName=gpu Nodes=gpu-[001-$(printf %03d "$n")] Default=YES MaxTime=INFINITE State=UP
CONF
  # SLURM_TEST_TOPOLOGY: topology.conf's lines (topology/tree)
  if [ -n "${SLURM_TEST_TOPOLOGY:-}" ]; then
    printf '%s\n' "$SLURM_TEST_TOPOLOGY" > "$d/topology.conf"
    echo "TopologyPlugin=topology/tree" >> "$d/slurm.conf"
  fi
  # more CPUs and GPUs than the machine has: taken as configured
  if [ -n "${SLURM_TEST_CPUS:-}${SLURM_TEST_GPUS:-}" ]; then
    echo "SlurmdParameters=config_overrides" >> "$d/slurm.conf"
  fi
  if [ -n "${SLURM_TEST_GPUS:-}" ]; then
    # slurmd counts a gpu GRES by its device files: empty files stand in
    for i in $(seq 0 $((SLURM_TEST_GPUS - 1))); do : > "$d/nvidia$i"; done
    echo "NodeName=gpu-[001-$(printf %03d "$n")] Name=gpu File=$d/nvidia[0-$((SLURM_TEST_GPUS - 1))]" > "$d/gres.conf"
  fi
  export SLURM_CONF="$d/slurm.conf"
  slurmctld -D -c -i 2>> "$tmp/slurmctld.err" & pids+=($!)
  local ctld=$!
  for i in $(seq 1 "$n"); do
    name=$(printf gpu-%03d "$i")
    mkdir -p "$d/spool/$name"
    slurmd -D -N "$name" 2>> "$tmp/slurmd.err" & pids+=($!)
  done
  for _ in $(seq 1 200); do
    # a slurmctld that refused its config: say so now, not after sinfo's
    # timeouts
    kill -0 "$ctld" 2>/dev/null || fail "slurmctld exited: $(grep -E 'fatal|error' "$tmp/slurmctld.err" | tail -n 2)"
    [ "$(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)" -eq "$n" ] && return 0
    sleep 0.1
  done
  sinfo -N 2>&1 | head
  tail -5 "$d/log/slurmctld.log"
  fail "the SLURM nodes did not come up idle"
}

# node_state NODE: sinfo's state of NODE (idle, drained, draining, ...),
# without the '*' sinfo adds while a slurmd is late answering the
# controller's ping (seen as "idle*" on a loaded machine): that is the
# daemon's health, not the state an action set.
node_state() {
  sinfo -h -N -n "$1" -o %T | head -1 | sed 's/\*$//'
}

# node_reason NODE: the reason SLURM keeps for NODE's drain.
node_reason() {
  sinfo -h -N -n "$1" -o %E | head -1
}

# logged_slurm_tools: scontrol, squeue, scancel and sbatch as the executor
# runs them from $tmp/bin: the real ones, each call appended to
# $tmp/calls.log, and scontrol update slowed down while $tmp/slow exists
# (to stop the executor mid-step).
logged_slurm_tools() {
  local t
  mkdir -p "$tmp/bin"
  for t in scontrol squeue scancel sbatch; do
    cat > "$tmp/bin/$t" <<W
#!/bin/sh
echo "$t \$*" >> "$tmp/calls.log"
[ -e "$tmp/slow" ] && [ "\$1" = update ] && sleep 3
exec $(command -v $t) "\$@"
W
    chmod +x "$tmp/bin/$t"
  done
  touch "$tmp/calls.log"
}
