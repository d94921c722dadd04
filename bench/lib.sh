# Shared by the bench scripts (sourced): start and stop the stack one run
# needs, each piece fresh. Callers set `work` (a temporary folder) and
# `root` (the repository).
#
# BENCH_KAFKA=real runs a real Apache Kafka instead of the embedded broker:
# one node of deploy/kafka (KRaft, its own storage on the run's folder),
# the topics made by `cascade kafka init` with the embedded broker's 64
# partitions (BENCH_KAFKA_PARTITIONS replaces it) and replication 1.
pids=()
kafka_dirs=()

# bench_py SCRIPT: Debian's python3 in `py` (python3-confluent-kafka, the
# peers' Kafka client, is installed for it), or SCRIPT exits saying so.
bench_py() {
  py=/usr/bin/python3
  $py -c 'import confluent_kafka' 2>/dev/null ||
    { echo "$1: python3-confluent-kafka is not installed (deploy/setup.sh)" >&2; exit 1; }
}

# free_port: a port nothing is bound to, from below the ephemeral range
# (deploy/free_ports says why).
free_port() { "$root/deploy/free_ports" 1; }

stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  for k in "${kafka_dirs[@]}"; do "$root/deploy/kafka/kafka.sh" stop --dir "$k" >/dev/null 2>&1 || true; done
  kafka_dirs=()
}

# start_kafka DIR CASCADE: the real broker of BENCH_KAFKA=real.
start_kafka() {
  local d=$1 cascade=$2
  kafka_dirs+=("$d/kafka")
  "$root/deploy/kafka/kafka.sh" start --dir "$d/kafka" --heap "${BENCH_KAFKA_HEAP:-1024}" --gc "${BENCH_KAFKA_GC:-g1}" \
    > "$d/kafka.out" 2>&1 || { echo "bench: kafka did not start: $(tail -n 3 "$d/kafka.out")" >&2; return 1; }
  brokers=$(cat "$d/kafka/bootstrap")
  "$cascade" kafka init --brokers "$brokers" --partitions "${BENCH_KAFKA_PARTITIONS:-64}" --replication 1 \
    > "$d/kafka-init.out" 2>&1 ||
    { echo "bench: cascade kafka init failed: $(tail -n 3 "$d/kafka-init.out")" >&2; return 1; }
}

# kafka_kind: what `brokers` points at, for the figures' labels.
kafka_kind() { [ "${BENCH_KAFKA:-embedded}" = real ] && echo real || echo embedded; }

# start_redis DIR: a redis-server with appendonly (everysec) on
# DIR/redis.sock, in the background (its socket may not be there yet).
# BENCH_REDIS_ARGS: more redis-server options ("--auto-aof-rewrite-min-size
# 4gb"), split on spaces.
start_redis() {
  # shellcheck disable=SC2086 # options, split on purpose
  redis-server --port 0 --unixsocket "$1/redis.sock" --dir "$1" --save '' \
    --appendonly yes --appendfsync everysec ${BENCH_REDIS_ARGS:-} > "$1/redis.log" 2>&1 & pids+=($!)
}

# start_stack DIR CASCADE: start_redis and a broker (`cascade broker` over
# TCP, or BENCH_KAFKA's real one); sets `brokers`.
start_stack() {
  local d=$1 cascade=$2
  start_redis "$d"
  brokers=
  if [ "$(kafka_kind)" = real ]; then
    start_kafka "$d" "$cascade" || return 1
  else
    "$cascade" broker --for 3600 > "$d/broker.out" 2> "$d/broker.err" & pids+=($!)
  fi
  for _ in $(seq 1 200); do
    [ -n "$brokers" ] ||
      brokers=$(sed -n 's/^kafka: embedded broker at \([^ ]*\).*/\1/p' "$d/broker.out" 2>/dev/null || true)
    [ -n "$brokers" ] && [ -S "$d/redis.sock" ] && return 0
    sleep 0.05
  done
  echo "bench: the broker or redis-server did not start in $d" >&2
  return 1
}

# start_broker DIR CASCADE: `cascade broker` alone, over TCP, for the
# collectors' benches; sets `brokers`.
start_broker() {
  local d=$1 cascade=$2
  brokers=
  "$cascade" broker --for 3600 > "$d/broker.out" 2> "$d/broker.err" & pids+=($!)
  for _ in $(seq 1 100); do
    brokers=$(sed -n 's/^kafka: embedded broker at \([^ ]*\).*/\1/p' "$d/broker.out" 2>/dev/null || true)
    [ -n "$brokers" ] && return 0
    sleep 0.05
  done
  echo "bench: the broker did not start in $d" >&2
  return 1
}

# wait_log FILE PATTERN: up to 30 s for a line of FILE to match
wait_log() {
  for _ in $(seq 1 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  echo "bench: timed out waiting for '$2' in $1: $(tail -n 3 "$1" 2>/dev/null)" >&2
  return 1
}

# bench_record RESULTS UNIT PREFIX NAME TOOL COMMAND VALUE...: one figure,
# its median, min and max over the runs' values, as a JSON line appended
# to RESULTS, and a line for the reader on stderr.
bench_record() {
  local results=$1 unit=$2 prefix=$3 name=$4 tool=$5 cmd=$6 sorted med
  shift 6
  sorted=$(printf '%s\n' "$@" | sort -g)
  med=$(sed -n "$(( ($# + 1) / 2 ))p" <<< "$sorted")
  jq -cn --arg n "$name" --arg t "$tool" --arg c "$cmd" --arg u "$unit" \
    --argjson med "$med" --argjson min "$(head -n 1 <<< "$sorted")" \
    --argjson max "$(tail -n 1 <<< "$sorted")" --argjson runs "$#" \
    '{name: $n, tool: $t, unit: $u, median: $med, min: $min, max: $max, runs: $runs, command: $c}' \
    >> "$results"
  echo "$prefix: $name $tool: median $med $unit ($*)" >&2
}
