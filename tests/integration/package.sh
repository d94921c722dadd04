#!/usr/bin/env bash
# The Debian package, built by CPack from this build tree:
#   - its files: the binary, the nine systemd units (one per process), the cascade user
#     (sysusers), the example config, alert rules, dashboard and docs;
#   - its dependencies found by dpkg-shlibdeps;
#   - the binary from the package runs and says its version and commit;
#   - every unit passes systemd-analyze verify (with ExecStart pointed at
#     the unpacked binary, which verify requires to exist), and every
#     unit's command line is one the binary accepts (it parses it with
#     --help added: no Kafka or Redis needed).
# usage: package.sh BUILD_DIR
set -uo pipefail
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cpack -G DEB -B "$tmp/pkg" --config "$build/CPackConfig.cmake" > "$tmp/cpack.log" 2>&1 ||
  fail "cpack: $(tail -5 "$tmp/cpack.log")"
deb=$(ls "$tmp"/pkg/cascade_*_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no package built: $(tail -5 "$tmp/cpack.log")"
dpkg-deb -c "$deb" | awk '{print $6}' > "$tmp/files"
for f in ./usr/bin/cascade ./usr/lib/systemd/system/cascade-correlate.service \
         ./usr/lib/systemd/system/cascade-act.service \
         ./usr/lib/systemd/system/cascade-ingest-webhook.service \
         ./usr/lib/systemd/system/cascade-ingest-log.service \
         ./usr/lib/systemd/system/cascade-ingest-journal.service \
         ./usr/lib/systemd/system/cascade-ingest-slurm.service \
         ./usr/lib/systemd/system/cascade-ingest-k8s.service \
         ./usr/lib/systemd/system/cascade-ingest-remote-write.service \
         ./usr/lib/systemd/system/cascade-console.service \
         ./usr/lib/sysusers.d/cascade.conf \
         ./usr/share/doc/cascade/examples/cascade.example.yaml \
         ./usr/share/doc/cascade/copyright ./usr/share/doc/cascade/OPERATIONS.md \
         ./usr/share/doc/cascade/CONFIG.md \
         ./usr/share/cascade/prometheus/cascade.rules.yml \
         ./usr/share/cascade/grafana/cascade.json; do
  grep -qx "$f" "$tmp/files" || fail "the package lacks $f"
done
dpkg-deb -f "$deb" Depends | grep -q librdkafka1 || fail "no shared-library dependencies"
dpkg-deb -e "$deb" "$tmp/control"
[ -x "$tmp/control/postinst" ] || fail "no postinst"

dpkg-deb -x "$deb" "$tmp/root"
bin=$tmp/root/usr/bin/cascade
"$bin" version | grep -Eq '^cascade [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]+|unknown\)' ||
  fail "the packaged binary says: $("$bin" version 2>&1)"
mkdir -p "$tmp/units"
for u in "$tmp"/root/usr/lib/systemd/system/*.service; do
  sed "s|/usr/bin/cascade|$bin|" "$u" > "$tmp/units/$(basename "$u")"
done
(cd "$tmp/units" && systemd-analyze verify ./*.service) > "$tmp/verify.log" 2>&1 ||
  fail "systemd-analyze verify: $(cat "$tmp/verify.log")"
for u in "$tmp"/units/*.service; do
  cmd=$(sed -n 's/^ExecStart=//p' "$u")
  # shellcheck disable=SC2086
  $cmd --help > "$tmp/help.out" 2>&1 ||
    fail "$(basename "$u"): its command line is refused: $(head -3 "$tmp/help.out")"
done
echo "ok: $(basename "$deb"): $(grep -c . "$tmp/files") entries, units verified"
