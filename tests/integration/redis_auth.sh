#!/usr/bin/env bash
# cascade correlate and cascade act against a Redis that wants a password,
# each as its own ACL user with the rights docs/SECURITY.md gives it, in
# database 3, their passwords named in their config files (file: and
# env:; the executor's is its --cascade-config), never written there:
#   - the correlator's incidents equal replay's, its state is in db 3 and
#     nowhere else; the executor decides every action request (shadow:
#     proposed) and journals it in db 3; no password in any output;
#   - refused at start, exit 2 with a message naming the address and the
#     user: a wrong password; a Redis that evicts keys (maxmemory-policy
#     allkeys-lru); a Redis that does not persist (appendonly no, save "");
#   - both of the last accepted with redis.require_durable: false.
# usage: redis_auth.sh CASCADE_BIN CORPUS
set -uo pipefail
bin=$1 corpus=$2
here=$(dirname "$0")
. "$here/live_lib.sh"
. "$here/redis_lib.sh"
. "$here/corpus.sh"

redis_pw=$(random_hex) corr_pw=$(random_hex) act_pw=$(random_hex)
port=$(free_port)
redis_up "$port"
rcli "$port" ACL SETUSER cascade-correlator on ">$corr_pw" resetkeys '~cascade:{*' \
  resetchannels +@all -@dangerous +info +role > /dev/null
rcli "$port" ACL SETUSER cascade-act on ">$act_pw" resetkeys '~cascade:act:*' \
  resetchannels -@all +hset +hget +hgetall +zadd +zrem +zrange +zrangebyscore \
  +zremrangebyscore +ping +select +wait +info +role > /dev/null
echo "$corr_pw" > "$tmp/corr.pw"
echo "not-$corr_pw" > "$tmp/wrong.pw"
export CASCADE_TEST_ACT_PW=$act_pw
start_broker 300

stream=$(corpus_stream "$corpus" cascade_node_crash_xid)
"$bin" replay "$stream" > "$tmp/want.jsonl" 2> "$tmp/replay.err" || fail "replay failed"

# corr_config [PASSWORD_REF] [LINE]: the correlator's config; LINE goes
# in its redis section.
corr_config() {
  printf 'kafka:\n  brokers: "%s"\nredis:\n  address: 127.0.0.1:%s\n  user: cascade-correlator\n  password: %s\n  db: 3\n%s\n' \
    "$brokers" "$port" "${1:-file:$tmp/corr.pw}" "${2:-}" > "$tmp/corr.yaml"
}
act_config() {
  printf 'redis:\n  address: 127.0.0.1:%s\n  user: cascade-act\n  password: env:CASCADE_TEST_ACT_PW\n  db: 3\n%s\n' \
    "$port" "${1:-}" > "$tmp/act-cascade.yaml"
}
# (exec: started in the background, the process is the command itself)
correlate() { exec "$bin" correlate --config "$tmp/corr.yaml" "$@"; }
act() { exec "$bin" act --brokers "$brokers" --cascade-config "$tmp/act-cascade.yaml" --mode shadow "$@"; }

# ---- both at work ----
corr_config
act_config
correlate --for 120 > "$tmp/correlate.out" 2> "$tmp/correlate.err" & corr_pid=$!; pids+=($corr_pid)
act --for 120 > "$tmp/act.out" 2> "$tmp/act.err" & act_pid=$!; pids+=($act_pid)
"$bin" ingest file --brokers "$brokers" "$stream" > "$tmp/ingest.out" 2> "$tmp/ingest.err" \
  || fail "ingest failed"
expect_replay "$tmp/want.jsonl" "the incidents through the ACL user differ from the replay"
expect_actions "$tmp/want.jsonl"
[ "$(rcli "$port" -n 3 --scan --pattern 'cascade:{*' | grep -c .)" -gt 0 ] ||
  fail "no correlator state in db 3"
[ "$(rcli "$port" -n 0 dbsize)" = 0 ] || fail "keys written to db 0"
kcat -b "$brokers" -C -t "$t_actions" -o beginning -e -q 2>>"$tmp/kcat.err" |
  jq -r .id | sort -u > "$tmp/action.ids"
[ -s "$tmp/action.ids" ] || fail "no action requests"
while read -r id; do
  until_event "$id" proposed
  [ "$(rcli "$port" -n 3 hget "cascade:act:$id" state)" = proposed ] ||
    fail "$id: no journal entry in db 3"
done < "$tmp/action.ids"
kill -TERM "$corr_pid" "$act_pid"
wait "$corr_pid" || fail "the correlator did not stop cleanly"
wait "$act_pid" || fail "the executor did not stop cleanly"

# ---- refusals at start ----
# refused WHAT PATTERN CMD...: CMD exits 2 and says PATTERN on stderr.
refused() {
  local what=$1 pattern=$2 rc=0; shift 2
  ("$@" --for 5) > "$tmp/refused.out" 2> "$tmp/refused.err" || rc=$?
  [ $rc -eq 2 ] || fail "$what: exit $rc, not 2"
  grep -qF -- "$pattern" "$tmp/refused.err" ||
    fail "$what: the message lacks '$pattern': $(cat "$tmp/refused.err")"
}
# accepted WHAT CMD...: CMD starts and stops by itself, exit 0.
accepted() {
  local what=$1 rc=0; shift
  ("$@" --for 1) > "$tmp/accepted.out" 2> "$tmp/accepted.err" || rc=$?
  [ $rc -eq 0 ] || fail "$what: exit $rc: $(cat "$tmp/accepted.err")"
}

corr_config "file:$tmp/wrong.pw"
refused "a wrong password" "cascade correlate: redis 127.0.0.1:$port (user cascade-correlator, db 3): AUTH refused: WRONGPASS" correlate
CASCADE_TEST_ACT_PW=wrong-act-pw refused "a wrong password" \
  "cascade act: redis 127.0.0.1:$port (user cascade-act, db 3): AUTH refused: WRONGPASS" act
grep -q "wrong-act-pw" "$tmp/refused.err" && fail "the executor printed the password"

rcli "$port" CONFIG SET maxmemory-policy allkeys-lru > /dev/null
corr_config
act_config
refused "allkeys-lru" "(user cascade-correlator, db 3) evicts keys (maxmemory-policy allkeys-lru): cascade's state and journal could be lost; set maxmemory-policy noeviction" correlate
refused "allkeys-lru" "(user cascade-act, db 3) evicts keys (maxmemory-policy allkeys-lru)" act
corr_config "" "  require_durable: false"
act_config "  require_durable: false"
accepted "allkeys-lru, require_durable: false" correlate
accepted "allkeys-lru, require_durable: false" act
rcli "$port" CONFIG SET maxmemory-policy noeviction > /dev/null

rcli "$port" CONFIG SET appendonly no > /dev/null
corr_config
act_config
refused "no persistence" "(user cascade-correlator, db 3) does not persist (INFO: aof_enabled:0" correlate
refused "no persistence" "set appendonly yes" act
corr_config "" "  require_durable: false"
act_config "  require_durable: false"
accepted "no persistence, require_durable: false" correlate
accepted "no persistence, require_durable: false" act

for s in "$redis_pw" "$corr_pw" "$act_pw"; do
  grep -rqF -- "$s" "$tmp"/*.out "$tmp"/*.err && fail "a password in the output"
done
echo "redis_auth: ok ($(wc -l < "$tmp/want.sorted") incidents equal to replay and $(wc -l < "$tmp/action.ids") actions journaled in db 3 through ACL users; wrong password, eviction and no persistence refused, accepted with require_durable: false)"
