#!/usr/bin/python3
"""The plain Python Kubernetes watcher a user would write instead of
`cascade ingest k8s`: a WATCH of /api/v1/events and of /api/v1/pods read
line by line (http.client, as the kubernetes package's watch does),
json.loads of each event, the Warning Events and the OOMKilled
containers published to Kafka as small JSON signals with librdkafka's
Python binding (confluent-kafka, Debian's python3-confluent-kafka),
keyed by cluster, acks=all and idempotent like cascade's producer. No
list, no paging, no 410, no bookmarks, no checkpoint, no rules: the least
a watcher does. When a stream ends it watches again (which the bench
server notes as "read it all").

  k8s_watch_peer.py --server http://HOST:PORT --brokers B --topic T
"""
import argparse
import http.client
import json
import threading
import urllib.parse

from confluent_kafka import Producer


def watch(server, path, handle):
    u = urllib.parse.urlsplit(server)
    while True:
        c = http.client.HTTPConnection(u.hostname, u.port)
        c.request("GET", path + "?watch=1&resourceVersion=1&allowWatchBookmarks=true")
        r = c.getresponse()
        for line in r:
            if line.strip():
                ev = json.loads(line)
                handle(ev["type"], ev["object"])
        c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--cluster", default="default")
    a = ap.parse_args()
    p = Producer({"bootstrap.servers": a.brokers, "enable.idempotence": True,
                  "acks": "all", "linger.ms": 5, "compression.type": "zstd",
                  "queue.buffering.max.messages": 1000000})
    lock = threading.Lock()
    key = a.cluster.encode()

    def send(sig):
        data = json.dumps(sig, separators=(",", ":")).encode()
        with lock:
            while True:
                try:
                    p.produce(a.topic, data, key)
                    break
                except BufferError:
                    p.poll(0.05)
            p.poll(0)

    def on_event(typ, ev):
        if typ == "DELETED" or ev.get("type") != "Warning":
            return
        ts = ev.get("lastTimestamp") or ev.get("eventTime") or ev["metadata"]["creationTimestamp"]
        send({"ts": ts, "source": "k8s", "cluster": a.cluster, "event": ev})

    def on_pod(typ, pod):
        for cs in pod.get("status", {}).get("containerStatuses", []):
            t = cs.get("state", {}).get("terminated") or {}
            if t.get("reason") == "OOMKilled":
                m = pod["metadata"]
                send({"ts": t.get("finishedAt"), "source": "k8s", "cluster": a.cluster,
                      "host": pod["spec"].get("nodeName"),
                      "event": {"kind": "Event", "apiVersion": "v1", "reason": "OOMKilled",
                                "message": f"Container {cs['name']} in pod {m['namespace']}/{m['name']} was OOMKilled",
                                "involvedObject": {"kind": "Pod", "namespace": m["namespace"], "name": m["name"]}}})

    ts = [threading.Thread(target=watch, args=(a.server, "/api/v1/events", on_event), daemon=True),
          threading.Thread(target=watch, args=(a.server, "/api/v1/pods", on_pod), daemon=True)]
    for t in ts:
        t.start()
    while True:
        with lock:
            p.poll(0.1)
        ts[0].join(0.1)


if __name__ == "__main__":
    main()
