#!/usr/bin/env bash
# The live path end to end on the embedded defaults: `cascade dev` publishes
# a sample stream to Kafka, correlates it through Redis, publishes the
# incidents, and prints the dry-run actions; kcat, a separate process,
# reads the incidents back from the embedded broker.
set -uo pipefail
bin=$1 sample=$2
tmp=$(mktemp -d)
"$bin" dev --feed "$sample" --port 0 --for 40 > "$tmp/out" 2> "$tmp/err" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
# The drain is proposed once per incident: under cascade.node_crash when
# the Xid and the jobs' failures reach the correlator in one batch, under
# hw.gpu_off_bus when the Xid came first (a loaded machine) and the
# incident became a node crash after; the same action is not proposed again.
drain='(hw.gpu_off_bus|cascade.node_crash): node.drain \(hitl\) target=\{"node":"gpu-020"\}'
resubmit='cascade.node_crash: job.resubmit \(auto\) .*"exclude_nodes":\["gpu-020"\]'
for _ in $(seq 1 300); do
  grep -q 'oom.batch_size: job.resubmit' "$tmp/out" && \
  grep -Eq "$drain" "$tmp/out" && grep -Eq "$resubmit" "$tmp/out" && break
  sleep 0.1
done
fail=0
grep -Eq "$drain" "$tmp/out" || { echo "no node.drain for gpu-020"; fail=1; }
grep -Eq "$resubmit" "$tmp/out" \
  || { echo "no node-crash resubmit excluding gpu-020"; fail=1; }
grep -q 'oom.batch_size: job.resubmit (auto).*"batch_size":32' "$tmp/out" \
  || { echo "no batch-size resubmit"; fail=1; }
broker=$(sed -n 's/^kafka: embedded broker at \([^ ]*\).*/\1/p' "$tmp/out")
[ -n "$broker" ] || { echo "no broker address printed"; fail=1; }
kcat -b "$broker" -C -t cascade.incidents -o beginning -e -q > "$tmp/inc" 2>"$tmp/kcat.err"
grep -q '"scenario":"cascade.node_crash".*"root_cause":{"scenario":"hw.gpu_off_bus"' "$tmp/inc" \
  || { echo "kcat did not read the node-crash incident"; cat "$tmp/kcat.err"; fail=1; }
grep -q '"scenario":"oom.batch_size"' "$tmp/inc" \
  || { echo "kcat did not read the OOM incident"; fail=1; }
if [ $fail -ne 0 ]; then cat "$tmp/out" "$tmp/err"; exit 1; fi
echo "dev live path: ok ($(wc -l < "$tmp/inc") incident updates read by kcat)"
