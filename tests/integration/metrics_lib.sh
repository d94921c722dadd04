# Shared by the metrics tests (sourced after live_lib.sh): reading a
# process's endpoints, and a real Prometheus's answers.

# get PORT PATH: the body; the status code in $code
get() {
  local out
  out=$(curl -s -w '\n%{http_code}' "http://127.0.0.1:$1$2") || { code=000; body=""; return; }
  code=${out##*$'\n'}
  body=${out%$'\n'*}
  body=${body%$'\n'}
}

# scrape PORT NAME [PATTERN]: /metrics of PORT into $tmp/NAME.metrics,
# waiting (30 s) for a line matching PATTERN; promtool must accept it.
scrape() {
  for _ in $(seq 1 300); do
    get "$1" /metrics
    [ -z "${3:-}" ] || grep -q "$3" <<< "$body" && break
    sleep 0.1
  done
  echo "$body" > "$tmp/$2.metrics"
  [ -z "${3:-}" ] || grep -q "$3" "$tmp/$2.metrics" || fail "$2: no line matches $3"
  promtool check metrics < "$tmp/$2.metrics" > "$tmp/promtool.err" 2>&1 ||
    fail "promtool refuses the metrics of $2: $(cat "$tmp/promtool.err")"
}

# query EXPR: how many series the Prometheus on $pport answers EXPR with
query() {
  curl -s --get "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]["result"]))' 2>/dev/null
}

# start_prometheus PORT...: a real Prometheus on $pport scraping each
# 127.0.0.1:PORT every second as job "cascade" (its config checked by
# promtool first).
start_prometheus() {
  local targets
  targets=$(printf "'127.0.0.1:%s', " "$@")
  cat > "$tmp/prometheus.yml" <<P
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: cascade
    static_configs:
      - targets: [${targets%, }]
P
  promtool check config "$tmp/prometheus.yml" > "$tmp/promtool.err" 2>&1 ||
    fail "promtool check config: $(cat "$tmp/promtool.err")"
  prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
    --web.listen-address="127.0.0.1:$pport" > "$tmp/prometheus.out" \
    2> "$tmp/prometheus.err" & pids+=($!)
}
