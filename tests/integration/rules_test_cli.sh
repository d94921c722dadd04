#!/usr/bin/env bash
# `cascade rules test` fails, naming file and line, when an example does
# not produce what it says, when another signature shadows it, and when a
# signature has no example; it passes on the project's own rules.
set -uo pipefail
bin=$1 rules=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
cp "$rules"/*.yaml "$tmp/"
"$bin" rules test "$tmp" > "$tmp/out" 2>&1 || { echo "own rules fail:"; cat "$tmp/out"; fail=1; }

# A wrong expectation, and a signature that a broader earlier one shadows.
cat > "$tmp/zz_extra.yaml" <<'YAML'
family: extra
signatures:
  - id: extra.wrong
    source: app
    fact: job_fault
    scenario: creds.expired
    match: 'token went stale'
    examples:
      - {line: "the token went stale", scenario: oom.shm}
  - id: extra.shadowed
    source: app
    fact: job_fault
    scenario: creds.expired
    match: 'ExpiredToken'
    examples:
      - {line: "An error occurred (ExpiredToken)", scenario: creds.expired}
YAML
"$bin" rules test "$tmp" > "$tmp/out" 2> "$tmp/err"; rc=$?
[ "$rc" -eq 1 ] || { echo "exit $rc, want 1"; fail=1; }
grep -q 'zz_extra.yaml:9: example of extra.wrong: want scenario oom.shm, got creds.expired' "$tmp/err" \
  || { echo "wrong expectation not reported"; fail=1; }
grep -q 'zz_extra.yaml:16: example of extra.shadowed: right scenario, but matched by signature app.credentials_expired' "$tmp/err" \
  || { echo "shadowed signature not reported"; fail=1; }

# A signature without examples is refused by the loader itself.
cat > "$tmp/zz_extra.yaml" <<'YAML'
family: extra
signatures:
  - id: extra.untested
    source: app
    fact: job_fault
    scenario: creds.expired
    match: 'x'
YAML
"$bin" rules test "$tmp" > "$tmp/out" 2> "$tmp/err"; rc=$?
[ "$rc" -eq 1 ] || { echo "untested signature: exit $rc, want 1"; fail=1; }
grep -q "zz_extra.yaml:3:5: signature extra.untested: 'examples' is required" "$tmp/err" \
  || { echo "missing examples not reported"; cat "$tmp/err"; fail=1; }
"$bin" rules test /nonexistent > /dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || { echo "missing folder: exit $rc, want 2"; fail=1; }
[ $fail -eq 0 ] && echo "rules test cli: ok"
exit $fail
