#!/usr/bin/env bash
# The container image the Kubernetes manifests run (deploy/k8s: image
# cascade:VERSION), built without a container engine: mmdebstrap makes a
# Debian 12 root file system of the essential packages, ca-certificates
# and the cascade .deb with its dependencies (apt resolves them), then
# oci.py wraps it into a one-layer OCI image archive that `skopeo copy`,
# `podman load` and `docker load` take. Reproducible for a given package
# cache: every timestamp is the commit's time (SOURCE_DATE_EPOCH).
#
# The Debian packages come from deb.debian.org the first time and are
# kept, with an index, in $CASCADE_CACHE/image (default
# ~/.cache/cascade/image): later builds read only that (offline), and so
# carry the same package versions until --online fetches the archive's
# current ones (security updates) into the cache again.
#
# usage: deploy/image/build.sh [--online] DEB OUT.tar
#        deploy/image/build.sh --fetch   (deploy/setup.sh: the cache only,
#                                         from deploy/image/packages)
#   then: skopeo copy oci-archive:OUT.tar docker://REGISTRY/cascade:VERSION
#     or: docker load -i OUT.tar   (podman load -i OUT.tar)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
online=0 fetch=0
case "${1:-}" in
  --online) online=1; shift ;;
  --fetch) fetch=1; online=1; shift; set -- - /dev/null ;;
esac
if [ $# -ne 2 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -eq 2 ] && exit 0 || exit 2
fi
die() { echo "image: $*" >&2; exit 1; }
command -v mmdebstrap > /dev/null || die "mmdebstrap is not installed (deploy/setup.sh)"
[ "$(id -u)" = 0 ] || die "mmdebstrap's root mode needs root (or run it under sudo)"
cache="${CASCADE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cascade}/image"
stamp="$cache/fetched-$(sha256sum "$here/packages" | cut -c1-16)"
if [ $fetch = 1 ]; then
  [ -f "$stamp" ] && { echo "image: package cache present ($cache)"; exit 0; }
  include=(--include="$(grep -v '^#' "$here/packages" | paste -sd, -)")
  deb_in=()
  version=none
else
  deb=$(realpath "$1") out=$2
  [ -f "$deb" ] || die "no package at $1 (cmake --build build --target package)"
  include=(--include=ca-certificates --include="$deb")
  # dpkg inside the chroot is handed the package's path as apt outside
  # sees it: it is copied there for the install, and removed after
  deb_in=(--setup-hook="mkdir -p \"\$1$(dirname "$deb")\" && cp '$deb' \"\$1$deb\""
          --customize-hook="rm -f \"\$1$deb\"")
  version=$(dpkg-deb -f "$deb" Version)
fi
commit=$(git -C "$here" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
epoch=$(git -C "$here" log -1 --format=%ct 2>/dev/null || date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$cache/debs" "$work/debs"

# rootfs MIRROR...: the root file system as a tar in $work/rootfs.tar,
# the packages it was made of in $work/debs.
rootfs() {
  SOURCE_DATE_EPOCH=$epoch mmdebstrap --quiet --mode=root --variant=essential \
    "${include[@]}" \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-include=/usr/share/doc/cascade/*' \
    --skip=essential/unlink --skip=download/empty \
    --customize-hook="sync-out /var/cache/apt/archives $work/debs" \
    --customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb; rm -rf "$1"/var/lib/apt/lists/*' \
    --customize-hook='mkdir -p "$1"/etc/cascade' \
    "${deb_in[@]}" \
    bookworm "$work/rootfs.tar" "$@" > "$work/mmdebstrap.log" 2>&1
}

made=0
if [ $online = 0 ] && [ -f "$cache/debs/Packages" ]; then
  rootfs "deb [trusted=yes] copy://$cache/debs ./" && made=1 ||
    echo "image: the cached packages do not suffice ($(grep -m1 -E '^E:|error' "$work/mmdebstrap.log")); fetching from deb.debian.org" >&2
fi
if [ $made = 0 ]; then
  rootfs "deb http://deb.debian.org/debian bookworm main" \
         "deb http://deb.debian.org/debian bookworm-updates main" \
         "deb http://deb.debian.org/debian-security bookworm-security main" ||
    die "mmdebstrap failed: $(tail -20 "$work/mmdebstrap.log")"
  # the cache: what this build used (not cascade itself), and its index
  find "$work/debs" -name '*.deb' ! -name 'cascade_*' -exec cp -n {} "$cache/debs/" \;
  # a flat repository of suite bookworm: mmdebstrap takes the essential
  # set from the suite it is asked for, so the index must say which
  (cd "$cache/debs" && dpkg-scanpackages --multiversion . /dev/null > Packages 2> /dev/null) ||
    die "dpkg-scanpackages failed (dpkg-dev)"
  { printf 'Origin: cascade image cache\nSuite: bookworm\nCodename: bookworm\n'
    printf 'Architectures: amd64 all\nDate: %s\nSHA256:\n' "$(date -Ru)"
    printf ' %s %s Packages\n' "$(sha256sum < "$cache/debs/Packages" | cut -d' ' -f1)" \
      "$(stat -c %s "$cache/debs/Packages")"; } > "$cache/debs/Release"
fi
if [ $fetch = 1 ]; then
  touch "$stamp"
  echo "image: $(ls "$cache/debs" | grep -c '\.deb$') packages cached in $cache/debs"
  exit 0
fi
python3 "$here/oci.py" "$work/rootfs.tar" "$out" "$version" "$commit" "$epoch"
