#!/usr/bin/env python3
"""oci.py ROOTFS_TAR OUT_TAR VERSION COMMIT EPOCH: wraps a root file system
(a tar, as mmdebstrap writes it) into a one-layer container image, as an
OCI image layout in a tar (an "oci-archive"), with a Docker manifest.json
beside it so that `docker load` and `podman load` take it as well as
`skopeo copy oci-archive:...`. Reproducible: every timestamp is EPOCH
(the commit's time), the layer is gzip without a name or time.

The image runs /usr/bin/cascade as user 65532 (the manifests in
deploy/k8s ask for it); its arguments say which process: `correlate
--config /etc/cascade/cascade.yaml`, `act ...`, `ingest webhook ...`."""
import datetime
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile

PORTS = (9464, 9465, 9466, 9095, 9097)  # metrics (correlate, ingest, act), webhook, remote-write


def blob(out, data, media):
    """Adds data as a blob; its descriptor."""
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo(f"blobs/sha256/{digest}")
    info.size, info.mtime, info.mode = len(data), EPOCH, 0o644
    out.addfile(info, io.BytesIO(data))
    return {"mediaType": media, "digest": f"sha256:{digest}", "size": len(data)}


def add(out, name, data):
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), EPOCH, 0o644
    out.addfile(info, io.BytesIO(data))


def canon(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def main(rootfs, dest, version, commit):
    layer_tar = open(rootfs, "rb").read()
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as z:
        z.write(layer_tar)
    layer_gz = buf.getvalue()
    created = datetime.datetime.fromtimestamp(
        EPOCH, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    labels = {
        "org.opencontainers.image.title": "cascade",
        "org.opencontainers.image.description":
            "incident correlation for GPU fleets: correlator, executor, collectors",
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.revision": commit,
        "org.opencontainers.image.licenses": "Apache-2.0",
        "org.opencontainers.image.created": created,
    }
    config = {
        "created": created,
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "User": "65532:65532",
            "Entrypoint": ["/usr/bin/cascade"],
            "Cmd": ["--help"],
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
            "WorkingDir": "/",
            "ExposedPorts": {f"{p}/tcp": {} for p in PORTS},
            "Labels": labels,
        },
        "rootfs": {"type": "layers",
                   "diff_ids": ["sha256:" + hashlib.sha256(layer_tar).hexdigest()]},
        "history": [{"created": created,
                     "created_by": "deploy/image/build.sh (mmdebstrap, Debian 12, the cascade .deb)"}],
    }
    with tarfile.open(dest, "w", format=tarfile.PAX_FORMAT) as out:
        cfg = blob(out, canon(config), "application/vnd.oci.image.config.v1+json")
        lay = blob(out, layer_gz, "application/vnd.oci.image.layer.v1.tar+gzip")
        manifest = {"schemaVersion": 2,
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": cfg, "layers": [lay], "annotations": labels}
        man = blob(out, canon(manifest), "application/vnd.oci.image.manifest.v1+json")
        man["annotations"] = {"org.opencontainers.image.ref.name": version,
                              "io.containerd.image.name": f"cascade:{version}"}
        add(out, "oci-layout", canon({"imageLayoutVersion": "1.0.0"}))
        add(out, "index.json", canon({"schemaVersion": 2,
                                      "mediaType": "application/vnd.oci.image.index.v1+json",
                                      "manifests": [man]}))
        # what `docker load` before 25 reads
        add(out, "manifest.json", canon([{
            "Config": "blobs/sha256/" + cfg["digest"].split(":")[1],
            "RepoTags": [f"cascade:{version}"],
            "Layers": ["blobs/sha256/" + lay["digest"].split(":")[1]]}]))
    print(f"{dest}: cascade:{version} ({commit}), layer {len(layer_gz) / 1e6:.1f} MB "
          f"compressed, {len(layer_tar) / 1e6:.1f} MB unpacked, manifest {man['digest']}")


if __name__ == "__main__":
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    EPOCH = int(sys.argv[5])
    main(*sys.argv[1:5])
