#!/usr/bin/env bash
# The container image (deploy/image/build.sh), built from this build's
# Debian package and run as a container runtime would run it:
#   - every library the package depends on is one deploy/image/packages
#     names (what setup.sh caches for offline builds);
#   - skopeo reads the archive (digests verified on copy) and converts it
#     to Docker's format; its config runs /usr/bin/cascade as 65532 (the
#     user deploy/k8s asks for) and says the package's version;
#   - its one layer, unpacked, runs `cascade version` as 65532 in a
#     chroot with nothing from the host but /proc: the binary and every
#     library it needs are in the image;
#   - the correlator Deployment's own command (args from
#     deploy/k8s/correlate.yaml) runs in it against a Redis with a
#     password and the broker on loopback, answers /readyz 200, and an
#     incident of a fed stream opens.
# usage: image.sh CASCADE_BIN BUILD_DIR CORPUS
set -uo pipefail
bin=$1 build=$2 corpus=$3
here=$(dirname "$0")
. "$here/live_lib.sh"
. "$here/redis_lib.sh"
. "$here/corpus.sh"
src=$(cd "$here/../.." && pwd)
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: building and running the image needs root (mmdebstrap's root mode, chroot)"
  exit 77
fi
command -v skopeo > /dev/null || fail "skopeo is not installed (deploy/setup.sh)"

cpack -G DEB -B "$tmp/pkg" --config "$build/CPackConfig.cmake" > "$tmp/cpack.err" 2>&1 ||
  fail "cpack failed"
deb=$(ls "$tmp"/pkg/cascade_*_*.deb | head -1)
version=$(dpkg-deb -f "$deb" Version)
# every library the package depends on is in the image cache's list
for d in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/(.*//; s/ //g'); do
  grep -qx "$d" "$src/deploy/image/packages" ||
    fail "the package depends on $d, which deploy/image/packages lacks (setup.sh fetches that list)"
done
"$src/deploy/image/build.sh" "$deb" "$tmp/cascade.oci.tar" > "$tmp/build.out" 2> "$tmp/build.err" ||
  fail "the image build failed"

ref="oci-archive:$tmp/cascade.oci.tar"
skopeo inspect --config "$ref" > "$tmp/config.json" 2> "$tmp/skopeo.err" ||
  fail "skopeo cannot read the image"
jq -e '.config.User == "65532:65532" and .config.Entrypoint == ["/usr/bin/cascade"]
       and .architecture == "amd64"' "$tmp/config.json" > /dev/null ||
  fail "the image's config: $(jq -c .config "$tmp/config.json")"
jq -e --arg v "$version" '.config.Labels["org.opencontainers.image.version"] == $v' \
  "$tmp/config.json" > /dev/null || fail "the image does not say version $version"
skopeo copy -q "$ref" "docker-archive:$tmp/docker.tar:cascade:$version" 2>> "$tmp/skopeo.err" ||
  fail "skopeo cannot convert the image to Docker's format"
skopeo copy -q "$ref" "oci:$tmp/layout:$version" 2>> "$tmp/skopeo.err" ||
  fail "skopeo cannot copy the image (digests)"

# the layer, unpacked as a runtime would
layer=$(jq -r '.manifests[0].digest' "$tmp/layout/index.json" | cut -d: -f2)
layer=$(jq -r '.layers[0].digest' "$tmp/layout/blobs/sha256/$layer" | cut -d: -f2)
root=$tmp/root
mkdir -p "$root"
tar -xzf "$tmp/layout/blobs/sha256/$layer" -C "$root" 2>> "$tmp/tar.err" ||
  fail "the layer does not unpack"
mount -t proc proc "$root/proc" 2>> "$tmp/mount.err" && mounted=1
trap '[ -n "${mounted:-}" ] && umount "$root/proc"; cleanup' EXIT
in_image() { chroot --userspec=65532:65532 "$root" "$@"; }
in_image /usr/bin/cascade version > "$tmp/version.out" 2> "$tmp/version.err" ||
  fail "cascade does not run in the image"
grep -q "^cascade $version " "$tmp/version.out" ||
  fail "the image's cascade says: $(cat "$tmp/version.out")"

# the correlator's Deployment, its command as the manifest gives it
args=$(python3 -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "Deployment":
        print(" ".join(d["spec"]["template"]["spec"]["containers"][0]["args"]))' \
  "$src/deploy/k8s/correlate.yaml") || fail "no args in deploy/k8s/correlate.yaml"
redis_pw=$(random_hex)
rport=$(free_port)
redis_up "$rport"
start_broker 300
mport=$(free_port)
mkdir -p "$root/etc/cascade/secrets"
echo "$redis_pw" > "$root/etc/cascade/secrets/redis-password"
chmod 0444 "$root/etc/cascade/secrets/redis-password"
cat > "$root/etc/cascade/cascade.yaml" <<EOF
kafka:
  brokers: "$brokers"
redis:
  address: 127.0.0.1:$rport
  password: file:/etc/cascade/secrets/redis-password
metrics:
  listen: 127.0.0.1
  correlate: $mport
log:
  format: json
EOF
# shellcheck disable=SC2086
in_image /usr/bin/cascade $args --for 120 > "$tmp/correlate.out" 2> "$tmp/correlate.err" &
pids+=($!)
for _ in $(seq 1 300); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/readyz")" = 200 ] && break
  sleep 0.1
done
[ "$(curl -s "http://127.0.0.1:$mport/readyz")" = ready ] ||
  fail "the correlator in the image is not ready: $(curl -s "http://127.0.0.1:$mport/readyz")"
"$bin" ingest file --brokers "$brokers" "$(corpus_stream "$corpus" cascade_node_crash_xid)" \
  > "$tmp/ingest.out" 2> "$tmp/ingest.err" || fail "ingest failed"
# The page is read whole before grep: `curl | grep -q` under pipefail
# fails when grep stops at its match while curl still writes (SIGPIPE,
# curl's exit 23), which a loaded machine made happen now and then.
opened() {
  grep -q '^cascade_incidents_total{event="opened"} [1-9]' \
    <<< "$(curl -s "http://127.0.0.1:$mport/metrics")"
}
for _ in $(seq 1 300); do
  opened && break
  sleep 0.1
done
opened || fail "no incident opened in the image's correlator: $(curl -s "http://127.0.0.1:$mport/metrics" | grep '^cascade_incidents')"
jq -e 'select(.msg | test("incident inc-[0-9a-f]+ opened"))' "$tmp/correlate.err" > /dev/null ||
  fail "the image's correlator logged no opened incident (JSON log)"
echo "ok: $(cat "$tmp/build.out")"
echo "ok: the image runs cascade $version as 65532; its correlator opened an incident"
