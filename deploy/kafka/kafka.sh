#!/usr/bin/env bash
# A real Apache Kafka (KRaft mode) for cascade's tests and benchmarks: one
# node, or three (replication factor 3, min.insync.replicas 2), each a
# broker and a controller, on loopback ports, optionally behind SASL and
# TLS. The jars come from Maven Central (pom.xml beside this script).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
lib="$here/lib"
cache="${CASCADE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cascade}"

usage() {
  cat <<EOF
usage: deploy/kafka/kafka.sh COMMAND [OPTIONS]

commands:
  fetch                 copy the broker's jars into deploy/kafka/lib, from
                        Maven Central the first time, from the Maven cache
                        ($cache/m2) after (offline)
  start --dir DIR       format KRaft storage in DIR and start the cluster;
                        returns once every node is up
      --nodes N         1 (default) or 3: replication factor 3,
                        min.insync.replicas 2
      --port BASE       first of 3 ports a node (internal, controller,
                        client); default: a free range
      --security PROTO  the client listener's security.protocol:
                        plaintext (default), sasl_plaintext, ssl, sasl_ssl.
                        SASL offers PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512
                        for user 'cascade' (password in DIR/cascade.password)
      --heap MB         each node's Java heap (default 512)
      --gc g1|zgc       the JVM's collector: g1 (default; pauses of
                        10-300 ms on a loaded 2-core machine, gc.log) or
                        zgc (pauses under a millisecond, paid for with
                        concurrent work on the same cores)
  stop --dir DIR        stop every node (SIGTERM, SIGKILL after 20 s)
  kill --dir DIR --node I       SIGKILL node I (1-based)
  restart --dir DIR --node I    start node I again on its storage
  status --dir DIR      which nodes run

After start, DIR holds:
  bootstrap             the client listeners, comma-separated
  bootstrap.plain       the internal PLAINTEXT listeners (tests' readers)
  client.properties     librdkafka properties for the client listener
                        (security.protocol, sasl.*, ssl.ca.location) with
                        sasl.password as file:DIR/cascade.password
  node-I/               server.properties, data/, kafka.log, pid, gc.log
                        (the JVM's collections: each pause and its CPU)
EOF
}

die() { echo "kafka.sh: $*" >&2; exit 2; }

fetch() {
  command -v mvn >/dev/null || die "mvn not found (deploy/setup.sh installs maven)"
  local repo="$cache/m2" offline=()
  mkdir -p "$repo"
  # Offline when the cache already holds everything: a fresh clone on a
  # machine that fetched once needs no network.
  if [ -f "$cache/kafka-fetched-$(sha256sum "$here/pom.xml" | cut -c1-16)" ]; then
    offline=(-o)
  fi
  rm -rf "$lib.tmp"
  if ! mvn -B -q "${offline[@]}" -f "$here/pom.xml" -Dmaven.repo.local="$repo" \
      dependency:copy-dependencies -DoutputDirectory="$lib.tmp" \
      -DincludeScope=runtime > "$cache/fetch.log" 2>&1; then
    sed 's/\x1b\[[0-9;]*m//g' "$cache/fetch.log" >&2
    die "fetching the broker's jars failed (above; log: $cache/fetch.log)"
  fi
  rm -rf "$lib"
  mv "$lib.tmp" "$lib"
  touch "$cache/kafka-fetched-$(sha256sum "$here/pom.xml" | cut -c1-16)"
  echo "kafka.sh: $(ls "$lib" | wc -l) jars in $lib"
}

need_jars() {
  ls "$lib"/kafka_2.13-*.jar >/dev/null 2>&1 ||
    die "no broker jars in $lib: run deploy/kafka/kafka.sh fetch (deploy/setup.sh does)"
}

java_run() { # main class, args...
  java -Xshare:auto -Dlog4j2.configurationFile="$here/log4j2.yaml" \
    -cp "$lib/*" "$@"
}

port() { echo $((base + 3 * ($1 - 1) + $2)); } # node, 0 internal 1 controller 2 client

# tls DIR: a CA and a server certificate for 127.0.0.1 and localhost, and
# the PKCS12 keystore the broker reads.
make_tls() {
  local t="$1/tls"
  mkdir -p "$t"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=cascade test CA" \
    -keyout "$t/ca.key" -out "$t/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$t/server.key" -out "$t/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$t/san.ext"
  openssl x509 -req -in "$t/server.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" \
    -CAcreateserial -days 30 -extfile "$t/san.ext" -out "$t/server.pem" 2>/dev/null
  openssl pkcs12 -export -in "$t/server.pem" -inkey "$t/server.key" \
    -certfile "$t/ca.pem" -name broker -passout "pass:$storepass" \
    -out "$t/server.p12"
}

# props NODE: the node's server.properties.
props() {
  local i=$1 voters="" rf=1 isr=1 proto
  for j in $(seq 1 "$nodes"); do
    voters="$voters${voters:+,}$j@127.0.0.1:$(port "$j" 1)"
  done
  [ "$nodes" -ge 3 ] && { rf=3; isr=2; }
  proto=$(echo "$security" | tr a-z A-Z)
  cat <<EOF
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=INTERNAL://127.0.0.1:$(port "$i" 0),CONTROLLER://127.0.0.1:$(port "$i" 1),CLIENT://127.0.0.1:$(port "$i" 2)
advertised.listeners=INTERNAL://127.0.0.1:$(port "$i" 0),CLIENT://127.0.0.1:$(port "$i" 2)
listener.security.protocol.map=INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT,CLIENT:$proto
controller.listener.names=CONTROLLER
inter.broker.listener.name=INTERNAL
log.dirs=$dir/node-$i/data
num.partitions=1
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
# Topics are created by 'cascade kafka init', as in production.
auto.create.topics.enable=false
# A test's first consumer group starts at once, not after 3 s.
group.initial.rebalance.delay.ms=0
# A fetch that waits for data sits in the fetch purgatory, and once done
# stays referenced there (with its per-partition state) until the next
# purge, every 1000 by default: with librdkafka's full fetches of every
# partition that kept tens of MB alive through each young collection, and
# the pauses were the clients' latency tail (BENCHMARKS.md).
fetch.purgatory.purge.interval.requests=100
EOF
  case "$security" in sasl_*)
    cat <<EOF
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.client.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_cascade="$password";
listener.name.client.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.client.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
EOF
  esac
  case "$security" in *ssl)
    cat <<EOF
listener.name.client.ssl.keystore.type=PKCS12
listener.name.client.ssl.keystore.location=$dir/tls/server.p12
listener.name.client.ssl.keystore.password=$storepass
listener.name.client.ssl.key.password=$storepass
EOF
  esac
}

client_props() {
  echo "security.protocol=$security"
  case "$security" in sasl_*)
    echo "sasl.mechanisms=PLAIN"
    echo "sasl.username=cascade"
    echo "sasl.password=file:$dir/cascade.password"
  esac
  case "$security" in *ssl)
    echo "ssl.ca.location=$dir/tls/ca.pem"
  esac
}

launch() { # node
  local n="$dir/node-$1"
  # setsid: the node outlives the shell that started it (a test fixture
  # that starts the broker for the tests after it). gc.log: a broker's
  # stop-the-world pauses are its clients' latency tail (BENCHMARKS.md).
  # ZGC names its pauses only under gc+phases ("Pause Mark Start").
  local gcopt=(-XX:+UseG1GC -XX:MaxGCPauseMillis=20) tags=gc,gc+cpu
  [ "$gc" = zgc ] && gcopt=(-XX:+UseZGC) tags=gc,gc+phases,gc+cpu
  setsid java -Xms"${heap}m" -Xmx"${heap}m" "${gcopt[@]}" \
    -Xlog:$tags:file="$n/gc.log":uptime,tags \
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$here/log4j2.yaml" \
    -cp "$lib/*" kafka.Kafka "$n/server.properties" >> "$n/kafka.log" 2>&1 < /dev/null &
  echo $! > "$n/pid"
}

# running NODE: its process exists and is not a zombie left unreaped.
running() {
  local pid state
  pid=$(cat "$dir/node-$1/pid" 2>/dev/null) || return 1
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

# gone NODE...: waits up to 20 s for the nodes to exit; 1 if some did not.
gone() {
  for _ in $(seq 1 200); do
    local left=0
    for i in "$@"; do running "$i" && left=1; done
    [ "$left" = 0 ] && return 0
    sleep 0.1
  done
  return 1
}

# wait_up NODE SINCE: the node logged that it started, after line SINCE.
wait_up() {
  local n="$dir/node-$1"
  for _ in $(seq 1 600); do
    tail -n +"$2" "$n/kafka.log" 2>/dev/null | grep -q 'Kafka Server started' && return 0
    running "$1" || { tail -n 30 "$n/kafka.log" >&2; die "node $1 exited while starting (log: $n/kafka.log)"; }
    sleep 0.1
  done
  tail -n 30 "$n/kafka.log" >&2
  die "node $1 did not start within 60 s (log: $n/kafka.log)"
}

# wait_brokers N: the cluster's metadata lists N brokers.
wait_brokers() {
  local got=0
  for _ in $(seq 1 300); do
    got=$(kcat -b "$(cat "$dir/bootstrap.plain")" -L -m 5 2>/dev/null |
          sed -n 's/^ *\([0-9]*\) brokers:$/\1/p' | head -n 1)
    [ "${got:-0}" -ge "$1" ] && return 0
    sleep 0.2
  done
  die "the cluster lists ${got:-0} of $1 brokers after 60 s"
}

start() {
  need_jars
  [ -n "$dir" ] || die "start needs --dir"
  [ "$nodes" = 1 ] || [ "$nodes" = 3 ] || die "--nodes must be 1 or 3"
  case "$security" in plaintext|sasl_plaintext|ssl|sasl_ssl) ;;
    *) die "--security must be plaintext, sasl_plaintext, ssl or sasl_ssl" ;;
  esac
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  for i in $(seq 1 "$nodes"); do
    running "$i" && die "node $i already runs in $dir (stop it first)"
  done
  rm -rf "$dir"/node-* "$dir/tls"
  [ -n "$base" ] || base=$("$here/../free_ports" $((3 * nodes)))
  password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
  storepass=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
  (umask 077; printf '%s\n' "$password" > "$dir/cascade.password")
  case "$security" in *ssl) make_tls "$dir" ;; esac
  local cid scram=()
  cid=$(java_run kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)
  case "$security" in sasl_*)
    scram=(--add-scram "SCRAM-SHA-256=[name=cascade,password=$password]"
           --add-scram "SCRAM-SHA-512=[name=cascade,password=$password]")
  esac
  local client="" plain=""
  for i in $(seq 1 "$nodes"); do
    mkdir -p "$dir/node-$i"
    props "$i" > "$dir/node-$i/server.properties"
    java_run kafka.tools.StorageTool format -t "$cid" \
      -c "$dir/node-$i/server.properties" "${scram[@]}" > "$dir/node-$i/format.log" 2>&1 ||
      { cat "$dir/node-$i/format.log" >&2; die "formatting node $i failed"; }
    client="$client${client:+,}127.0.0.1:$(port "$i" 2)"
    plain="$plain${plain:+,}127.0.0.1:$(port "$i" 0)"
  done
  echo "$client" > "$dir/bootstrap"
  echo "$plain" > "$dir/bootstrap.plain"
  echo "$base" > "$dir/base"
  echo "$nodes" > "$dir/nodes"
  client_props > "$dir/client.properties"
  for i in $(seq 1 "$nodes"); do launch "$i"; done
  for i in $(seq 1 "$nodes"); do wait_up "$i" 1; done
  wait_brokers "$nodes"
  echo "kafka.sh: $nodes node(s) up in $dir; bootstrap $client ($security)"
}

stop_pids() { # signal, nodes...
  local sig=$1; shift
  for i in "$@"; do
    running "$i" && kill "-$sig" "$(cat "$dir/node-$i/pid")" 2>/dev/null || true
  done
}

stop() {
  [ -n "$dir" ] && [ -d "$dir" ] || die "stop needs the --dir of a start"
  local all
  all=$(seq 1 "$(cat "$dir/nodes" 2>/dev/null || echo 3)")
  # shellcheck disable=SC2086
  stop_pids TERM $all
  # shellcheck disable=SC2086
  gone $all && { echo "kafka.sh: stopped"; return 0; }
  # Brokers whose controllers stopped first wait for a controlled
  # shutdown that cannot come.
  # shellcheck disable=SC2086
  stop_pids KILL $all
  echo "kafka.sh: stopped (some nodes killed after 20 s)"
}

node_arg() {
  [ -n "$dir" ] && [ -f "$dir/nodes" ] || die "needs the --dir of a start"
  [ -n "$node" ] && [ "$node" -ge 1 ] && [ "$node" -le "$(cat "$dir/nodes")" ] ||
    die "--node must be 1..$(cat "$dir/nodes")"
}

cmd=${1:-}
[ -n "$cmd" ] || { usage >&2; exit 2; }
shift
dir="" nodes=1 base="" security=plaintext heap=512 node="" gc=g1
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --port) base=$2; shift 2 ;;
    --security) security=$2; shift 2 ;;
    --heap) heap=$2; shift 2 ;;
    --gc) gc=$2; shift 2
          case "$gc" in g1|zgc) ;; *) die "--gc takes g1 or zgc, not '$gc'" ;; esac ;;
    --node) node=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

case "$cmd" in
  fetch) fetch ;;
  start) start ;;
  stop) stop ;;
  kill)
    node_arg; stop_pids KILL "$node"
    gone "$node" || die "node $node still runs after SIGKILL"
    echo "kafka.sh: node $node killed" ;;
  restart)
    node_arg; need_jars
    running "$node" && die "node $node still runs"
    lines=$(wc -l < "$dir/node-$node/kafka.log")
    launch "$node"; wait_up "$node" $((lines + 1))
    echo "kafka.sh: node $node up again" ;;
  status)
    [ -f "$dir/nodes" ] || die "needs the --dir of a start"
    for i in $(seq 1 "$(cat "$dir/nodes")"); do
      if running "$i"; then echo "node $i: running"; else echo "node $i: stopped"; fi
    done ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
