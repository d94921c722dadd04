#!/usr/bin/env bash
# The config file drives `cascade ingest webhook`, and SIGHUP reloads it:
# a new token applies at once, the old one stops working; a broken file is
# reported with its line and column and changes nothing.
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; tail -n 20 "$tmp"/*.err; exit 1; }

"$bin" broker --for 60 > "$tmp/broker.out" 2> "$tmp/broker.err" & pids+=($!)
for _ in $(seq 1 100); do
  brokers=$(sed -n 's/^kafka: embedded broker at \([^ ]*\).*/\1/p' "$tmp/broker.out" 2>/dev/null || true)
  [ -n "$brokers" ] && break; sleep 0.05
done
[ -n "$brokers" ] || fail "no broker"

echo "token-one" > "$tmp/token"
write_config() {
  cat > "$tmp/cascade.yaml" <<YAML
kafka:
  brokers: "$brokers"
webhook:
  port: 0
  token_file: $tmp/token
  max_body: 64KiB
log:
  level: $1
YAML
}
write_config info
"$bin" config check "$tmp/cascade.yaml" > "$tmp/check.out" 2> "$tmp/check.err" \
  || fail "config check refused a valid file"
grep -q 'token: "<set>"' "$tmp/check.out" || fail "config check printed no redacted token"
grep -q 'token-one' "$tmp/check.out" && fail "config check printed the token"

"$bin" ingest webhook --config "$tmp/cascade.yaml" --for 60 \
  > "$tmp/webhook.out" 2> "$tmp/webhook.err" & pid=$!; pids+=($pid)
for _ in $(seq 1 100); do
  url=$(sed -n 's/^webhook: listening on \(http:[^ ]*\).*/\1/p' "$tmp/webhook.out" 2>/dev/null || true)
  [ -n "$url" ] && break; sleep 0.05
done
[ -n "$url" ] || fail "webhook did not start from the config file"

body='{"version":"4","status":"firing","receiver":"cascade","groupLabels":{},
 "commonLabels":{},"commonAnnotations":{},"externalURL":"http://am:9093","groupKey":"{}",
 "alerts":[{"status":"firing","labels":{"alertname":"GPUXidError","Hostname":"gpu-1",
 "err_code":"79"},"annotations":{},"startsAt":"2026-03-02T08:00:00Z",
 "endsAt":"0001-01-01T00:00:00Z","generatorURL":"","fingerprint":"1"}]}'
post() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" \
           -H 'Content-Type: application/json' -d "$body" "$url"; }

[ "$(post token-one)" = 200 ] || fail "token from token_file refused"
# webhook.max_body from the file: 64 KiB
big=$(head -c 70000 /dev/zero | tr '\0' 'x')
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer token-one' \
       -d "$big" "$url")
[ "$code" = 413 ] || fail "a 70000-byte body got $code, not 413 (max_body 64KiB)"

echo "token-two" > "$tmp/token"
write_config debug
kill -HUP $pid
for _ in $(seq 1 100); do grep -q 'webhook token replaced' "$tmp/webhook.err" && break; sleep 0.05; done
grep -q 'webhook token replaced' "$tmp/webhook.err" || fail "SIGHUP did not replace the token"
[ "$(post token-one)" = 401 ] || fail "the old token still works after SIGHUP"
[ "$(post token-two)" = 200 ] || fail "the new token does not work after SIGHUP"

printf 'kafka:\n  brokers: x\n  bogus: 1\n' > "$tmp/cascade.yaml"
kill -HUP $pid
for _ in $(seq 1 100); do grep -q 'config not reloaded' "$tmp/webhook.err" && break; sleep 0.05; done
grep -q "config not reloaded, keeping the running one: $tmp/cascade.yaml:3:3: unknown key 'bogus'" \
  "$tmp/webhook.err" || fail "a broken config on SIGHUP was not reported with its line"
[ "$(post token-two)" = 200 ] || fail "a broken config on SIGHUP changed the running token"

# A broken file at start: exit 2 with the line, nothing started.
"$bin" ingest webhook --config "$tmp/cascade.yaml" > /dev/null 2> "$tmp/bad.err"; rc=$?
[ $rc -eq 2 ] || fail "a broken config at start exited $rc"
grep -q "cascade.yaml:3:3: unknown key 'bogus' in 'kafka'" "$tmp/bad.err" \
  || fail "a broken config at start was not reported with its line"
echo "config reload: ok"
