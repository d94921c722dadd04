#!/usr/bin/env python3
"""Makes shared scenario streams into clusters of their own.

usage: clusterize.py OUTDIR CHUNK STREAM...

Stream i becomes cluster c<NN> (NN = i), its hosts (gpu-*) and racks
(rack-*) renamed into it and its event time moved i days on, written to
OUTDIR/c<NN>.jsonl. OUTDIR/mixed.jsonl deals them round-robin, CHUNK lines
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


def convert(path, i):
    c = "c%02d" % i
    lines = []
    for raw in open(path):
        if not raw.strip():
            continue
        raw = re.sub(r"\bgpu-(?=[\d[])", c + "gpu-", raw)  # also gpu-[201-205]
        raw = re.sub(r"\brack-(?=\d)", c + "rack-", raw)
        s = json.loads(raw)
        s["cluster"] = c
        t = datetime.datetime.strptime(s["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
        t += datetime.timedelta(days=i)
        s["ts"] = t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)
        lines.append(json.dumps(s, separators=(",", ":")))
    return c, lines


def main():
    out, chunk, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    streams = []
    with open(os.path.join(out, "partitions"), "w") as parts:
        for i, path in enumerate(paths):
            c, lines = convert(path, i)
            with open(os.path.join(out, c + ".jsonl"), "w") as f:
                f.write("\n".join(lines) + "\n")
            # rd_crc32 is zlib's CRC-32
            parts.write("%s %d\n" % (c, zlib.crc32(c.encode()) % 64))
            streams.append(lines)
    # one correlator keys jobs by id across its clusters (a known limit):
    # streams that share a job id would test that, not the group
    owner = {}
    for i, lines in enumerate(streams):
        for line in lines:
            j = json.loads(line).get("job")
            if j and owner.setdefault(j, i) != i:
                sys.exit("clusterize.py: job %s is in streams %s and %s"
                         % (j, paths[owner[j]], paths[i]))
    pos = [0] * len(streams)
    with open(os.path.join(out, "mixed.jsonl"), "w") as f:
        while any(p < len(s) for p, s in zip(pos, streams)):
            for k in reversed(range(len(streams))):
                for line in streams[k][pos[k]:pos[k] + chunk]:
                    f.write(line + "\n")
                pos[k] += chunk


main()
