#!/usr/bin/python3
"""The plain Python log follower a user would write instead of `cascade
ingest log --follow`: tail a file line by line (as `tail -F` does) and
publish each line to Kafka as a small JSON signal with librdkafka's Python
binding (confluent-kafka, Debian's python3-confluent-kafka), keyed by
cluster, acks=all and idempotent like cascade's producer. No rotation,
no checkpoint, no edge filter: the least a follower does.

  follow_peer.py --brokers HOST:PORT --topic T FILE [--exit-at-eof]

--exit-at-eof: stop once the file's end is reached and every line is
acknowledged, and print the lines published (what the benchmark times).
"""
import argparse
import json
import sys
import time

from confluent_kafka import Producer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--cluster", default="default")
    ap.add_argument("--exit-at-eof", action="store_true")
    ap.add_argument("file")
    a = ap.parse_args()
    p = Producer({"bootstrap.servers": a.brokers, "enable.idempotence": True,
                  "acks": "all", "linger.ms": 5, "compression.type": "zstd"})
    n = 0
    with open(a.file, "r", encoding="utf-8", errors="replace") as f:
        while True:
            line = f.readline()
            if not line:
                if a.exit_at_eof:
                    break
                time.sleep(0.1)
                continue
            if not line.endswith("\n"):
                continue  # a line still being written (enough for a peer)
            parts = line.rstrip("\n").split(" ", 3)
            sig = {"ts": parts[0], "source": "kernel",
                   "host": parts[1] if len(parts) > 1 else "",
                   "line": parts[3] if len(parts) > 3 else line.strip(),
                   "cluster": a.cluster}
            while True:
                try:
                    p.produce(a.topic, json.dumps(sig).encode(), a.cluster.encode())
                    break
                except BufferError:
                    p.poll(0.1)
            n += 1
            if n % 1000 == 0:
                p.poll(0)
    if p.flush(60) != 0:
        print("follow_peer: lines still unacknowledged", file=sys.stderr)
        return 1
    print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
