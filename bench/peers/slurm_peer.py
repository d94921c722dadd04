#!/usr/bin/python3
"""The SLURM poller a user would write instead of `cascade ingest slurm`:
every --poll seconds `squeue --json` and `sinfo --json` (the commands
cascade runs), json.loads, each job's state and each node's state
compared with the last poll's, and every change published to Kafka as a
small JSON signal with confluent-kafka (Debian's python3-confluent-kafka,
librdkafka underneath; idempotent, acks=all). No batch scripts, no
state file, no dependencies or requeue logic: the least such a poller
does.

  slurm_peer.py --brokers B --topic T [--poll S] [--for S] [--bin DIR]

A poll starts when the last one ended (as cascade's). Prints the polls
made and the signals published, once every one is acknowledged.
"""
import argparse
import json
import os
import subprocess
import time

from confluent_kafka import Producer


def run(bindir, cmd):
    exe = os.path.join(bindir, cmd) if bindir else cmd
    out = subprocess.run([exe, "--json"], check=True, stdout=subprocess.PIPE).stdout
    doc = json.loads(out)
    if doc.get("errors"):
        raise RuntimeError("%s: %s" % (cmd, doc["errors"]))
    return doc


def job_state(j):
    s = j.get("job_state")
    return s[0] if isinstance(s, list) else s  # 23.02+: a list of flags


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--cluster", default="default")
    ap.add_argument("--poll", type=float, default=10)
    ap.add_argument("--for", dest="duration", type=float, default=60)
    ap.add_argument("--bin", default="")
    a = ap.parse_args()
    p = Producer({"bootstrap.servers": a.brokers, "enable.idempotence": True,
                  "acks": "all", "linger.ms": 5, "compression.type": "zstd"})
    key = a.cluster.encode()
    jobs, nodes = {}, {}
    polls = sent = 0
    end = time.monotonic() + a.duration

    def publish(sig):
        nonlocal sent
        sig["cluster"] = a.cluster
        p.produce(a.topic, json.dumps(sig, separators=(",", ":")).encode(), key)
        p.poll(0)
        sent += 1

    while time.monotonic() < end:
        jdoc, ndoc = run(a.bin, "squeue"), run(a.bin, "sinfo")
        for j in jdoc.get("jobs", []):
            jid, st = str(j["job_id"]), job_state(j)
            if jobs.get(jid) != st:
                jobs[jid] = st
                publish({"ts": time.time(), "source": "job", "job": jid,
                         "job_name": j.get("name"), "state": st,
                         "team": j.get("account"), "nodes": j.get("nodes")})
        for n in ndoc.get("nodes", []):
            st = (n.get("state"), n.get("reason"))
            if nodes.get(n["name"]) != st:
                nodes[n["name"]] = st
                publish({"ts": time.time(), "source": "inventory",
                         "host": n["name"], "state": st[0]})
        polls += 1
        time.sleep(a.poll)
    p.flush()
    print(polls, sent)


if __name__ == "__main__":
    main()
