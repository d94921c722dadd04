#!/usr/bin/env python3
"""A Kubernetes API server for bench/k8s.sh that answers as fast as it
can: every LIST is empty (resourceVersion "1"), the first WATCH of each
resource streams a pre-generated file of watch events (one write of big
chunks, then the end of the stream), and a later WATCH is held open until
the bench ends. It prints, for each resource, when its first watch began
and when the client came back for the second: the client had read the
whole stream by then. Plain HTTP, no authentication: what is measured is
the client's work on the events, not TLS.

  k8s_stream.py --port-file F --times F RESOURCE=FILE...

Also writes the stream files: k8s_stream.py --generate DIR N (N Events
and N/4 Pods, the recorded shapes of tests/data/k8s with names, uids and
times of their own: half the Events are Warnings a rule reads, half
Normal events the edge filter drops).
"""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PATHS = {"/api/v1/events": "events", "/api/v1/pods": "pods"}
served = {}
times = {}
lock = threading.Lock()


def generate(out, n):
    base = time.time() - 600
    def ts(k):
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(base + k % 500))
    with open(os.path.join(out, "events"), "w") as f:
        for i in range(n):
            warn = i % 2 == 0
            ev = {"kind": "Event", "apiVersion": "v1",
                  "metadata": {"name": f"train-{i % 997}-0-x2k9p.{i:016x}", "namespace": "ml",
                               "uid": f"c54544b6-9a1e-4d0b-8f7e-{i:012x}",
                               "resourceVersion": str(1000 + i), "creationTimestamp": ts(i)},
                  "involvedObject": {"kind": "Pod", "namespace": "ml", "name": f"train-{i % 997}-0-x2k9p",
                                     "uid": f"039e0c2f-7d4e-4a52-8f0a-{i % 997:012x}", "apiVersion": "v1",
                                     "resourceVersion": str(500 + i % 997)},
                  "reason": "FailedScheduling" if warn else "Pulled",
                  "message": ("0/64 nodes are available: 8 node(s) had untolerated taint {nvidia.com/gpu: present}, "
                              "56 Insufficient nvidia.com/gpu. preemption: 0/64 nodes are available: 64 Preemption is not helpful for scheduling.")
                  if warn else "Successfully pulled image \"nvcr.io/nvidia/pytorch:24.05-py3\" in 1.042s (1.042s including waiting). Image size: 9876543210 bytes.",
                  "source": {"component": "default-scheduler" if warn else "kubelet", "host": "" if warn else f"gpu-{i % 64:03d}"},
                  "firstTimestamp": ts(i), "lastTimestamp": ts(i), "count": 1,
                  "type": "Warning" if warn else "Normal", "eventTime": None,
                  "reportingComponent": "default-scheduler" if warn else "kubelet", "reportingInstance": ""}
            f.write(json.dumps({"type": "ADDED", "object": ev}, separators=(",", ":")) + "\n")
    with open(os.path.join(out, "pods"), "w") as f:
        for i in range(n // 4):
            oom = i % 10 == 0
            term = ({"terminated": {"containerID": f"containerd://{i:064x}", "exitCode": 137, "reason": "OOMKilled",
                                    "startedAt": ts(i), "finishedAt": ts(i + 1)}}
                    if oom else {"running": {"startedAt": ts(i)}})
            pod = {"kind": "Pod", "apiVersion": "v1",
                   "metadata": {"name": f"train-{i}-0-x2k9p", "namespace": "ml",
                                "uid": f"039e0c2f-7d4e-4a52-8f0a-{i:012x}", "resourceVersion": str(2000000 + i),
                                "creationTimestamp": ts(i),
                                "labels": {"batch.kubernetes.io/job-name": f"train-{i}", "job-name": f"train-{i}",
                                           "batch.kubernetes.io/job-completion-index": "0"},
                                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": f"train-{i}",
                                                     "uid": f"5d4b5a0e-1c2b-4f5e-9a8d-{i:012x}", "controller": True}]},
                   "spec": {"nodeName": f"gpu-{i % 64:03d}", "restartPolicy": "Never",
                            "containers": [{"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                                            "command": ["torchrun", "--nproc_per_node=8"],
                                            "args": ["train.py", "--batch_size", "64"],
                                            "resources": {"limits": {"nvidia.com/gpu": "8", "memory": "512Gi"}}}]},
                   "status": {"phase": "Failed" if oom else "Running", "startTime": ts(i),
                              "containerStatuses": [{"name": "trainer", "ready": not oom, "restartCount": 0,
                                                     "state": term, "lastState": {},
                                                     "image": "nvcr.io/nvidia/pytorch:24.05-py3"}]}}
            f.write(json.dumps({"type": "MODIFIED", "object": pod}, separators=(",", ":")) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        path, _, query = self.path.partition("?")
        res = PATHS.get(path)
        if not res:
            body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}'
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if "watch=1" not in query:
            kind = "EventList" if res == "events" else "PodList"
            body = json.dumps({"kind": kind, "apiVersion": "v1",
                               "metadata": {"resourceVersion": "1"}, "items": []}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        with lock:
            first = res not in served
            served[res] = served.get(res, 0) + 1
            key = "start" if first else "back"
            times.setdefault(res, {}).setdefault(key, time.time())
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if first:
            with open(self.server.files[res], "rb") as f:
                while True:
                    data = f.read(1 << 20)
                    if not data:
                        break
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            return
        with open(self.server.times_file + ".tmp", "w") as f:
            json.dump(times, f)
        os.rename(self.server.times_file + ".tmp", self.server.times_file)
        time.sleep(3600)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generate", nargs=2, metavar=("DIR", "N"))
    ap.add_argument("--port-file")
    ap.add_argument("--times")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    if a.generate:
        generate(a.generate[0], int(a.generate[1]))
        return 0
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.files = dict(s.split("=", 1) for s in a.files)
    srv.times_file = a.times
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(a.port_file + ".tmp", a.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
