#!/usr/bin/env bash
# The whole test suite from a fresh clone: install dependencies, build the
# normal and the ASan+UBSan trees, run ctest on both, run the fuzzers for
# a bounded time, and build the Release tree (-O3) with its unit tests.
#   CASCADE_SOAK=1 deploy/test.sh   also runs the long tests (label soak)
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)

build() { # dir, extra cmake args...
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
}

label=()
[ "${CASCADE_SOAK:-0}" = 1 ] || label=(-LE soak)

build build
(cd build && ctest --output-on-failure -j"$jobs" "${label[@]}")

# Sanitizers: leaks are checked too; librdkafka's background threads are
# shut down before exit so their memory is freed.
build build-asan -DCASCADE_SANITIZE=ON
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
   UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest --output-on-failure -j"$jobs" "${label[@]}")
# Fuzzers: each parser of outside input for a bounded time (clang).
CC=clang build build-fuzz -DCASCADE_FUZZ=ON -DCASCADE_FUZZ_SECONDS="${CASCADE_FUZZ_SECONDS:-20}"
# UBSan's findings stop the fuzzer too (they only printed before: a
# null-pointer offset in the engine's window trim went unseen).
(cd build-fuzz && UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest --output-on-failure -L fuzz)
# Release: what a package builds. -O3 sees what -O2 does not (a buffer a
# format may overflow, a value maybe used uninitialised), and -Werror
# makes that a failed build; its unit tests run too.
build build-release -DCMAKE_BUILD_TYPE=Release
(cd build-release && ctest --output-on-failure -j"$jobs" -R '^unit\.')
echo "test.sh: normal, sanitizer, fuzz and release suites passed"
