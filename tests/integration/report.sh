#!/usr/bin/env bash
# cascade report over a known stream (the field captures of a lemon node,
# an idle GPU's cost, a team's peak demand, a node crash and a rack storm,
# replayed): the numbers behind the charts, checked against what those
# streams hold by hand; shadow's match rate as cascade shadow scores it;
# and the page rendered in headless Chromium (playwright-core): every
# chart drawn, nothing asked of anyone. SHOT (optional) keeps a
# screenshot.
# usage: report.sh CASCADE_BIN FIXTURES [SHOT]
set -uo pipefail
bin=$1 fx=$2
here=$(dirname "$0")
node_dir=$(cd "$here/../node" && pwd)
. "$here/live_lib.sh"
shot=${3:-$tmp/report.png}

for f in "$fx/field_lemon_node.hosts.jsonl" "$fx/cost_idle_gpu.hosts.jsonl" \
         "$fx/peak_demand.hosts.jsonl" "$fx/base/field_node_crash_window.jsonl" \
         "$fx/base/rack_power_storm.jsonl"; do
  "$bin" replay "$f" >> "$tmp/incidents.jsonl" 2>> "$tmp/replay.err" || fail "replay $f"
done
# what an operator did: drained the crashed gpu-453, and one node cascade never named
cat > "$tmp/operators.jsonl" <<O
{"ts": "2026-03-02T08:20:00Z", "playbook": "node.drain", "node": "gpu-453", "by": "alice"}
{"ts": "2026-03-02T08:40:00Z", "playbook": "node.drain", "node": "gpu-999", "by": "bob"}
O
"$bin" report --incidents "$tmp/incidents.jsonl" --since 2026-03-01T00:00:00Z \
  --until 2026-05-01T00:00:00Z --operators "$tmp/operators.jsonl" --json \
  --out "$tmp/report.html" > "$tmp/stats.json" 2> "$tmp/report.err" ||
  fail "cascade report failed: $(cat "$tmp/report.err")"
j() { jq -r "$1" "$tmp/stats.json"; }
# every incident but the storm's merged node incidents
want=$(jq -s '[.[] | select(.merged_into == null)] | length' "$tmp/incidents.jsonl")
[ "$(j .incidents)" = "$want" ] || fail "incidents: $(j .incidents), not $want"
# per day: the lemon node's four days, the crash and storm day, the idle GPU's
[ "$(j '.per_day.days | join(" ")')" = "2026-03-02 2026-04-08 2026-04-09 2026-04-10 2026-04-11" ] ||
  fail "days: $(j .per_day.days)"
[ "$(j '[.per_day.counts[] | add] | add')" = "$want" ] || fail "the bars do not add up to $want"
# the lemon: dgx-601's four incidents, 04-08 14:12 to 04-11 16:05, three gaps
[ "$(j '.nodes[0].node')" = dgx-601 ] && [ "$(j '.nodes[0].incidents')" = 4 ] ||
  fail "nodes: $(j .nodes)"
[ "$(j '.nodes[0].lemon')" = true ] || fail "dgx-601 is not a lemon candidate"
[ "$(j '.nodes[0].mtbf_h * 1000 | round')" = 24628 ] || fail "mtbf: $(j .nodes[0].mtbf_h) h, not 24.628"
# the idle GPUs: 2 GPUs, 14:00:31 to 14:14:31 plus the hour before: 2.467 GPU-h at 3 USD
[ "$(j '.idle[] | select(.team == "research") | .gpu_hours * 1000 | round')" = 2467 ] ||
  fail "idle GPU-hours: $(j .idle)"
[ "$(j '.idle[] | select(.team == "research") | .cost_usd * 100 | round')" = 740 ] ||
  fail "idle cost: $(j .idle)"
# peak demand: team vision at 14:00
[ "$(j '.peak.teams | join(" ")')" = vision ] && [ "$(j '.peak.hours[0][14]')" = 1 ] &&
  [ "$(j '.peak.hours[0] | add')" = 1 ] || fail "peak: $(j .peak)"
# time to resolve: every resolved incident of the period counted
want=$(jq -s '[.[] | select(.merged_into == null and .resolved != null)] | length' "$tmp/incidents.jsonl")
[ "$(j '[.ttr[].n] | add // 0')" = "$want" ] || fail "ttr counts: $(j .ttr), not $want"
# shadow: as cascade shadow scores the same incidents and operators
"$bin" shadow --incidents "$tmp/incidents.jsonl" --operators "$tmp/operators.jsonl" --json \
  > "$tmp/shadow.json" 2>> "$tmp/report.err" || fail "cascade shadow failed"
[ "$(j '.shadow.match_rate')" = "$(jq -r .match_rate "$tmp/shadow.json")" ] &&
  [ "$(j '.shadow.proposals')" = "$(jq -r .proposals "$tmp/shadow.json")" ] ||
  fail "shadow: $(j .shadow) against $(cat "$tmp/shadow.json" | head -c 300)"

# ---- the page, in Chromium ----
[ -d "$node_dir/node_modules/playwright-core" ] || fail "playwright-core is not installed (deploy/setup.sh)"
node "$node_dir/render_report.mjs" "$tmp/report.html" "$shot" > "$tmp/render.json" \
  2> "$tmp/render.err" || fail "rendering failed: $(tail -5 "$tmp/render.err")"
r() { jq -r "$1" "$tmp/render.json"; }
[ "$(r '.charts | keys | join(" ")')" = "chart-actions chart-days chart-idle chart-nodes chart-peak chart-ttd chart-ttr" ] ||
  fail "charts: $(r .charts)"
[ "$(r '[.charts[] | select(. == 0)] | length')" = 0 ] || fail "an empty chart: $(r .charts)"
[ "$(r .incidents)" = "$(j .incidents)" ] || fail "the page says $(r .incidents) incidents"
r '.lemons[0]' | grep -c "dgx-6014.*lemon candidate" > /dev/null || fail "lemons: $(r .lemons)"
[ "$(r .shadow)" != null ] || fail "no shadow figure on the page"
[ "$(r '.requests | length')" = 0 ] || fail "the page asked for $(r .requests)"
[ -s "$shot" ] || fail "no screenshot"
echo "ok: report numbers as the streams hold them; $(r '.charts | length') charts drawn in Chromium"
