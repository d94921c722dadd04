# Redis servers and Sentinels on loopback TCP ports of the test's own,
# sourced after live_lib.sh: each with its folder under $tmp, append-only
# with fsync always (what it acknowledged survives its own SIGKILL), no
# wait before a replica's sync. The default user's password is $redis_pw
# (set it before starting any); the processes go in pids.

# random_hex: 32 random hex digits (a password, a token).
random_hex() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# rcli PORT ARGS...: redis-cli as the default user.
rcli() {
  local p=$1; shift
  redis-cli -p "$p" --no-auth-warning -a "$redis_pw" "$@"
}

# wait_answer PORT: until something answers on PORT (NOAUTH counts).
wait_answer() {
  for _ in $(seq 1 200); do
    redis-cli -p "$1" ping 2>/dev/null | grep -qE 'PONG|NOAUTH' && return 0
    sleep 0.05
  done
  fail "nothing answers on port $1"
}

# redis_up PORT [ARG...]: redis-server on 127.0.0.1:PORT; its pid in
# redis_pids[PORT]. Started again on the same port, it reads back its
# append-only file.
declare -A redis_pids
redis_up() {
  local p=$1; shift
  mkdir -p "$tmp/redis-$p"
  "${CASCADE_REDIS_SERVER:-redis-server}" --port "$p" --bind 127.0.0.1 \
    --dir "$tmp/redis-$p" --appendonly yes --appendfsync always --save '' \
    --requirepass "$redis_pw" --masterauth "$redis_pw" \
    --repl-diskless-sync-delay 0 "$@" >> "$tmp/redis-$p.out" 2>&1 &
  redis_pids[$p]=$!
  pids+=($!)
  wait_answer "$p"
}

# sentinel_up PORT MASTER_PORT: a Sentinel watching master 'mymaster'
# (quorum 2: two of the three must see it down), quick to fail over.
sentinel_up() {
  local p=$1 m=$2
  cat > "$tmp/sentinel-$p.conf" <<S
port $p
bind 127.0.0.1
dir $tmp
sentinel monitor mymaster 127.0.0.1 $m 2
sentinel auth-pass mymaster $redis_pw
sentinel down-after-milliseconds mymaster 1000
sentinel failover-timeout mymaster 10000
sentinel parallel-syncs mymaster 1
S
  "${CASCADE_REDIS_SENTINEL:-redis-sentinel}" "$tmp/sentinel-$p.conf" \
    >> "$tmp/sentinel-$p.out" 2>&1 &
  pids+=($!)
  wait_answer "$p"
}

# master_of SENTINEL_PORT: the port of the master that Sentinel names.
master_of() {
  redis-cli -p "$1" --raw sentinel get-master-addr-by-name mymaster 2>/dev/null | sed -n 2p
}
