#!/usr/bin/env bash
# Installs everything cascade needs to build, run and test on Debian 12.
# Idempotent: re-running installs nothing new. Needs root (or sudo).
set -euo pipefail

# libclang-rt-14-dev: clang's sanitizer and libFuzzer runtimes, which
# Debian 12 packages apart from clang (the fuzz build links them).
# libssl-dev: libcrypto's HMAC for the executor's journal seal
# (libcurl4-openssl-dev only suggests it).
# maven, openjdk-17-jre-headless: the real Apache Kafka the tests and
# benchmarks run (deploy/kafka: its jars come from Maven Central).
# libsystemd-dev: sd-journal, which `cascade ingest journal` reads the
# journal with; systemd-journal-remote: its tests' journal files, written
# from export format (no journald runs in a container).
# python3-confluent-kafka: the benchmark's plain Python log follower
# (bench/peers/follow_peer.py), the peer of `cascade ingest log --follow`.
# libsnappy-dev, libprotobuf-c-dev, protobuf-c-compiler: the remote-write
# receiver's body (snappy block, protobuf; protoc-c runs at build time);
# prometheus: its end-to-end test's real sender (agent mode), the real
# scraper of every process's /metrics (live.metrics) and promtool, which
# checks the metrics, the alert rules and the dashboard's expressions.
# systemd, dpkg-dev: systemd-analyze verifies the package's units and
# dpkg-shlibdeps finds its dependencies (ops.package); python3-venv: the
# test tools' own virtualenv (below).
# chromium: the console's browser test (driven by playwright-core from
# npm, tests/node).
# mmdebstrap, skopeo: the container image, built without a container
# engine (deploy/image/build.sh) and read back by skopeo (ops.image).
# redis-sentinel: the failover test's Sentinels (live.redis_failover starts
# its own; the system one the package enables is left as it is).
# What building and running cascade needs (`deploy/setup.sh --run`, the
# README's first command: build, then `cascade dev`, whose private Redis
# is redis-server's):
RUN_PKGS=(
  build-essential cmake pkg-config
  librdkafka-dev libevent-dev libhiredis-dev libmsgpack-dev libjansson-dev
  libcurl4-openssl-dev libssl-dev libpcre2-dev libhyperscan-dev libyaml-dev
  libsystemd-dev libsnappy-dev libprotobuf-c-dev protobuf-c-compiler
  redis-server
)
# What only the tests, benchmarks and checks need (the default: both):
TEST_PKGS=(
  clang libclang-rt-14-dev
  redis-tools redis-sentinel kcat jq prometheus-alertmanager python3 curl openssl
  slurm-wlm slurmrestd munge sec maven openjdk-17-jre-headless
  python3-confluent-kafka systemd-journal-remote prometheus
  systemd dpkg-dev python3-venv mmdebstrap skopeo chromium
)
mode=${1:---test}
case "$mode" in
  --run) PKGS=("${RUN_PKGS[@]}") ;;
  --test) PKGS=("${RUN_PKGS[@]}" "${TEST_PKGS[@]}") ;;
  -h|--help)
    echo "usage: deploy/setup.sh [--run | --test]"
    echo "  --run   what building and running cascade needs"
    echo "  --test  that, and what the tests and benchmarks need (default)"
    exit 0 ;;
  *) echo "setup: unknown option '$mode' (--run, --test)" >&2; exit 2 ;;
esac

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
# Node.js and npm for the test clients (tests/node), Debian's unless a
# Node.js is there already (its own npm with it: Debian's npm package
# would conflict with another Node.js build).
if [ "$mode" = --test ] && ! command -v npm > /dev/null; then
  missing+=(nodejs npm)
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} packages present"
else
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
  # The Debian package enables a system redis; cascade starts its own
  # private one per run, so the system service is left as the package set
  # it up.
fi
if [ "$mode" = --run ]; then
  echo "setup: done (build and run)"
  exit 0
fi
# The broker's jars: from Maven Central once, from the cache after.
"$(dirname "$0")/kafka/kafka.sh" fetch

# The image's Debian packages: from deb.debian.org once, from the cache
# after (image builds then run offline). mmdebstrap's root mode: as root
# only (ops.image, which needs root too, is skipped otherwise).
if [ "$(id -u)" -eq 0 ]; then
  "$(dirname "$0")/image/build.sh" --fetch
else
  echo "setup: not root: the container image's package cache is not fetched (ops.image skips)"
fi

# Test clients from npm (tests/node: the official MCP SDK the agents'
# tool layer is driven with, playwright-core for the console), from the
# lockfile; npm's cache keeps the
# packages, so a second run installs offline.
if [ ! -d "$(dirname "$0")/../tests/node/node_modules/@modelcontextprotocol/sdk" ] ||
   [ ! -d "$(dirname "$0")/../tests/node/node_modules/playwright-core" ]; then
  (cd "$(dirname "$0")/../tests/node" &&
     npm ci --no-audit --no-fund --prefer-offline --loglevel=error)
fi

# Test tools from PyPI, in a virtualenv of the project's own (never the
# system's Python): kubernetes-validate, the Kubernetes API's schemas
# offline, for the manifests in deploy/k8s (ops.k8s_manifests). The
# wheels are downloaded once into deploy/tools/wheels; a second run
# installs from there, offline.
tools=$(cd "$(dirname "$0")" && pwd)/tools
if [ ! -x "$tools/venv/bin/kubernetes-validate" ]; then
  python3 -m venv "$tools/venv"
  if ! "$tools/venv/bin/pip" install -q --no-index --find-links "$tools/wheels" \
       kubernetes-validate==1.37.0 2> /dev/null; then
    "$tools/venv/bin/pip" download -q -d "$tools/wheels" kubernetes-validate==1.37.0
    "$tools/venv/bin/pip" install -q --no-index --find-links "$tools/wheels" \
      kubernetes-validate==1.37.0
  fi
fi
echo "setup: done"
