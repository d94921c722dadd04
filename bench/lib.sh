# Shared by the bench scripts (sourced): start and stop the stack one run
# needs, each piece fresh. Callers set `work` (a temporary folder).
pids=()

stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}

# start_stack DIR CASCADE: a redis-server with appendonly (everysec) on
# DIR/redis.sock and `cascade broker` over TCP; sets `brokers`.
start_stack() {
  local d=$1 cascade=$2
  redis-server --port 0 --unixsocket "$d/redis.sock" --dir "$d" --save '' \
    --appendonly yes --appendfsync everysec > "$d/redis.log" 2>&1 & pids+=($!)
  "$cascade" broker --for 3600 > "$d/broker.out" 2> "$d/broker.err" & pids+=($!)
  brokers=
  for _ in $(seq 1 200); do
    brokers=$(sed -n 's/^kafka: embedded broker at \([^ ]*\).*/\1/p' "$d/broker.out" 2>/dev/null || true)
    [ -n "$brokers" ] && [ -S "$d/redis.sock" ] && return 0
    sleep 0.05
  done
  echo "bench: cascade broker or redis-server did not start in $d" >&2
  return 1
}

# wait_log FILE PATTERN: up to 30 s for a line of FILE to match
wait_log() {
  for _ in $(seq 1 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  echo "bench: timed out waiting for '$2' in $1: $(tail -n 3 "$1" 2>/dev/null)" >&2
  return 1
}
