#!/usr/bin/env python3
"""Makes scenario streams into clusters of their own.

usage: clusterize.py [--collide] OUTDIR CHUNK STREAM...

Stream i becomes cluster c<NN> (NN = i), its hosts (gpu-*, a100-*) and racks
(rack-*) renamed into it and its event time moved i days on, written to
OUTDIR/c<NN>.jsonl. With --collide the clusters share names instead, as
real clusters do: hosts, racks and event time stay as they are, and job
ids are numbered from 100 in each stream (every SLURM controller counts
its own), so c00's job 100 and c01's job 100 are different jobs. OUTDIR/mixed.jsonl deals them round-robin, CHUNK lines
at a time, the stream furthest ahead first in each round: each cluster's
signals stay in order, as on its Kafka partition, while clusters
interleave as partitions do. OUTDIR/partitions lists each cluster with the
partition librdkafka's default partitioner gives it on 64 partitions.
"""
import datetime
import json
import os
import re
import sys
import zlib


def renumber(raws):
    """Job ids numbered from 100 in order of first appearance, wherever
    they occur (pod names, depends_on, log text)."""
    ids = {}
    for raw in raws:
        j = json.loads(raw).get("job")
        if j and j not in ids:
            ids[j] = str(100 + len(ids))
    if not ids:
        return raws
    pat = re.compile(r"\b(%s)\b" % "|".join(map(re.escape, ids)))
    return [pat.sub(lambda m: ids[m.group(1)], raw) for raw in raws]


def convert(path, i, collide):
    c = "c%02d" % i
    lines = []
    raws = [raw for raw in open(path) if raw.strip()]
    if collide:
        raws = renumber(raws)
    for raw in raws:
        if not collide:
            raw = re.sub(r"\b(gpu|a100)-(?=[\d[])", c + r"\1-", raw)  # also gpu-[201-205]
            raw = re.sub(r"\brack-(?=\d)", c + "rack-", raw)
        s = json.loads(raw)
        s["cluster"] = c
        if not collide:
            t = datetime.datetime.strptime(s["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
            t += datetime.timedelta(days=i)
            s["ts"] = (t.strftime("%Y-%m-%dT%H:%M:%S.") +
                       "%03dZ" % (t.microsecond // 1000))
        lines.append(json.dumps(s, separators=(",", ":")))
    return c, lines


def main():
    args = sys.argv[1:]
    collide = bool(args) and args[0] == "--collide"
    if collide:
        args = args[1:]
    if len(args) < 3:
        sys.exit(__doc__)
    out, chunk, paths = args[0], int(args[1]), args[2:]
    streams = []
    with open(os.path.join(out, "partitions"), "w") as parts:
        for i, path in enumerate(paths):
            c, lines = convert(path, i, collide)
            with open(os.path.join(out, c + ".jsonl"), "w") as f:
                f.write("\n".join(lines) + "\n")
            # rd_crc32 is zlib's CRC-32
            parts.write("%s %d\n" % (c, zlib.crc32(c.encode()) % 64))
            streams.append(lines)
    pos = [0] * len(streams)
    with open(os.path.join(out, "mixed.jsonl"), "w") as f:
        while any(p < len(s) for p, s in zip(pos, streams)):
            for k in reversed(range(len(streams))):
                for line in streams[k][pos[k]:pos[k] + chunk]:
                    f.write(line + "\n")
                pos[k] += chunk


main()
