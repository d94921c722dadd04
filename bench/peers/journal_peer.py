#!/usr/bin/python3
"""The plain journal reader a user would write instead of `cascade ingest
journal`: `journalctl -o json` piped in, each entry's MESSAGE published
to Kafka as a small JSON signal (ts from __REALTIME_TIMESTAMP, host from
_HOSTNAME) with confluent-kafka (Debian's python3-confluent-kafka,
librdkafka underneath), keyed by cluster, idempotent, acks=all. No
cursor, no edge filter: the least such a reader does.

  journalctl --file F -o json | journal_peer.py --brokers B --topic T

Prints the entries published once every one is acknowledged.
"""
import argparse
import json
import sys

from confluent_kafka import Producer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--cluster", default="default")
    a = ap.parse_args()
    p = Producer({"bootstrap.servers": a.brokers, "enable.idempotence": True,
                  "acks": "all", "linger.ms": 5, "compression.type": "zstd",
                  "queue.buffering.max.messages": 1000000})
    key = a.cluster.encode()
    n = 0
    for line in sys.stdin.buffer:
        e = json.loads(line)
        msg = e.get("MESSAGE")
        if not isinstance(msg, str):
            continue
        us = int(e["__REALTIME_TIMESTAMP"])
        sig = {"ts": us / 1e6, "source": "kernel", "cluster": a.cluster,
               "host": e.get("_HOSTNAME"), "line": msg}
        data = json.dumps(sig, separators=(",", ":")).encode()
        while True:
            try:
                p.produce(a.topic, data, key)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
        n += 1
    p.flush()
    print(n)


if __name__ == "__main__":
    main()
