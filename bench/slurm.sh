#!/usr/bin/env bash
# What `cascade ingest slurm` costs a poll with JOBS jobs in the
# controller, beside the plain poller a user would write instead
# (bench/peers/slurm_peer.py: the same squeue --json and sinfo --json,
# json.loads, states compared, changes published with confluent-kafka).
# The controller is Debian's slurmctld with three slurmd
# (tests/integration/slurm_lib.sh), filled with JOBS held batch jobs
# (each its own sbatch, PENDING for the whole run).
#
# Figures, each over --runs runs:
#   slurm.first_poll   seconds from a start with no state until every job
#                      is told, acknowledged and its batch script read
#                      (two at a time): the state file holds each with
#                      its config
#   slurm.poll_cpu     CPU milliseconds a steady poll (nothing changed),
#                      the squeue and sinfo it runs included, for cascade
#                      and the peer (--poll 1 for --seconds, CPU from
#                      getrusage of the finished process and its children,
#                      polls counted by a squeue wrapper)
#   slurm.squeue_cpu   the same for `squeue --json` and `sinfo --json`
#                      alone (ten of each): what every poller pays the
#                      controller's client
#
# usage: bench/slurm.sh [--runs N] [--jobs N] [--seconds S] [--json FILE] [BUILD_DIR]
set -euo pipefail
runs=3 njobs=2000 seconds=20 json=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --jobs) njobs=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "usage: bench/slurm.sh [--runs N] [--jobs N] [--seconds S] [--json FILE] [BUILD_DIR]" >&2; exit 2 ;;
    *) break ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
cascade=$build/cascade

# The test suite's SLURM cluster: its folder ($tmp) and processes (pids)
# are live_lib.sh's, gone at exit; the broker is bench/lib.sh's.
. "$root/tests/integration/live_lib.sh"
. "$root/tests/integration/slurm_lib.sh"
work=$tmp
. "$root/bench/lib.sh" # after live_lib.sh: its start_broker is the bench's
bench_py bench/slurm.sh
start_slurm 3
start_broker "$work" "$cascade" || exit 1

# squeue and sinfo as both pollers run them: the real ones, each squeue
# call counted (a poll runs one).
mkdir -p "$work/bin"
for t in squeue sinfo scontrol; do
  cat > "$work/bin/$t" <<W
#!/bin/sh
[ $t = squeue ] && echo >> "$work/polls"
exec $(command -v $t) "\$@"
W
  chmod +x "$work/bin/$t"
done
polls() { [ -f "$work/polls" ] && wc -l < "$work/polls" || echo 0; }

echo "slurm: submitting $njobs held jobs" >&2
t0=$(date +%s)
seq 1 "$njobs" | xargs -P 4 -n 50 sh -c '
  for i; do
    sbatch --hold -p gpu -J "bench-$i" -o /dev/null --wrap "sleep 1" > /dev/null || exit 255
  done' _ || { echo "bench/slurm.sh: sbatch failed" >&2; exit 1; }
have=$(squeue -h -t PD | wc -l)
[ "$have" -ge "$njobs" ] || { echo "bench/slurm.sh: $have of $njobs jobs in the controller" >&2; exit 1; }
bytes=$(squeue --json | wc -c)
echo "slurm: $have jobs in $(( $(date +%s) - t0 )) s; squeue --json prints $bytes bytes" >&2

# cpu_ms CMD...: CPU milliseconds CMD and its children used, on stdout
cpu_ms() {
  $py - "$@" 2>> "$work/steady.err" <<'PY'
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(round((r.ru_utime + r.ru_stime) * 1000))
PY
}

# one_first: one cold start; its state file in first_state, its seconds
# in first_s
one_first() {
  local t0 t1 pid
  first_state=$work/state.$RANDOM
  t0=$(date +%s%N)
  "$cascade" ingest slurm --brokers "$brokers" --cluster bench --poll 1 \
    --slurm-bin "$work/bin" --state "$first_state" 2> "$work/slurm.err" &
  pid=$!
  # every job told, and its batch script read (config no longer null)
  until [ -s "$first_state" ] &&
    [ "$(jq '[.jobs[] | select(.config != null)] | length' "$first_state" 2>/dev/null || echo 0)" -ge "$njobs" ]; do
    kill -0 $pid 2>/dev/null || { echo "bench/slurm.sh: the collector died: $(tail -n 2 "$work/slurm.err")" >&2; exit 1; }
    sleep 0.2
  done
  t1=$(date +%s%N)
  kill -TERM $pid
  wait $pid || true
  first_s=$(awk -v ns="$((t1 - t0))" 'BEGIN { printf "%.2f\n", ns / 1e9 }')
}

# steady CMD...: CPU ms a poll of CMD, run for --seconds with --poll 1
steady() {
  local before after ms
  before=$(polls)
  ms=$(cpu_ms "$@")
  after=$(polls)
  [ "$after" -gt "$before" ] || { echo "bench/slurm.sh: no poll made by $1: $(tail -n 3 "$work/steady.err")" >&2; exit 1; }
  awk -v ms="$ms" -v n="$((after - before))" 'BEGIN { printf "%.1f\n", ms / n }'
}

results=$work/results.jsonl
: > "$results"
record() { bench_record "$results" "$1" slurm "${@:2}"; }

vals=() states=()
for _ in $(seq 1 "$runs"); do
  one_first
  states+=("$first_state")
  vals+=("$first_s")
done
record s slurm.first_poll cascade "cascade ingest slurm, no state: $njobs jobs told, batch scripts read" "${vals[@]}"

vals=()
for i in $(seq 1 "$runs"); do
  vals+=("$(steady "$cascade" ingest slurm --brokers "$brokers" --cluster bench --poll 1 \
    --slurm-bin "$work/bin" --state "${states[$((i - 1))]}" --for "$seconds")")
done
record ms slurm.poll_cpu cascade "cascade ingest slurm --poll 1, $njobs jobs, nothing changed" "${vals[@]}"

vals=()
for _ in $(seq 1 "$runs"); do
  vals+=("$(steady $py "$root/bench/peers/slurm_peer.py" --brokers "$brokers" \
    --topic cascade.signals --poll 1 --for "$seconds" --bin "$work/bin")")
done
record ms slurm.poll_cpu python "slurm_peer.py --poll 1, $njobs jobs (confluent-kafka)" "${vals[@]}"

vals=()
for _ in $(seq 1 "$runs"); do
  vals+=("$(steady sh -c "for i in 1 2 3 4 5 6 7 8 9 10; do '$work/bin/squeue' --json && '$work/bin/sinfo' --json || exit 1; done")")
done
record ms slurm.squeue_cpu squeue "squeue --json; sinfo --json ($njobs jobs)" "${vals[@]}"

if [ -n "$json" ]; then jq -s . "$results" > "$json"; else cat "$results"; fi
