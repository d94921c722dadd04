#!/usr/bin/env python3
"""Alert to grouped notification (Alertmanager) and to incident (cascade).

usage: alert_latency.py --am URL --hook URL --token T --listen PORT
                        --cascade-out FILE [--alerts N] [--gap S]

For each of N fresh nodes, one Xid 79 alert (GPUXidError, err_code 79) is
posted to Alertmanager's /api/v2/alerts and, as Alertmanager's webhook
payload (version 4), to cascade's webhook. Alertmanager must route it to a
webhook receiver at http://127.0.0.1:PORT/ (this script listens there);
`cascade dev` must write its dry-run action lines to FILE: the first line
naming the node is taken as its incident (the action requests leave with
the incident, in the same batch). Prints one line per tool:
  tool n seen p50_ms p99_ms max_ms
Exit 1 when a tool answered none.
"""
import argparse
import http.server
import json
import sys
import threading
import time
import urllib.request

NOTIFIED = {}


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        now = time.time()
        try:
            for a in json.loads(body).get("alerts", []):
                NOTIFIED.setdefault(a["labels"].get("Hostname", ""), now)
        except (ValueError, KeyError):
            pass
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def post(url, payload, token=None):
    req = urllib.request.Request(url, data=json.dumps(payload).encode(),
                                 headers={"Content-Type": "application/json"})
    if token:
        req.add_header("Authorization", "Bearer " + token)
    urllib.request.urlopen(req, timeout=10).read()


def summary(tool, sent, got):
    lat = sorted((got[n] - t) * 1000 for n, t in sent.items() if n in got)
    if not lat:
        return None
    return "%s %d %d %.1f %.1f %.1f" % (tool, len(sent), len(lat),
                                        lat[len(lat) // 2],
                                        lat[min(len(lat) - 1, int(len(lat) * 0.99))],
                                        lat[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--am", required=True)
    ap.add_argument("--hook", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--cascade-out", required=True)
    ap.add_argument("--alerts", type=int, default=40)
    ap.add_argument("--gap", type=float, default=0.25)
    a = ap.parse_args()

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", a.listen), Receiver)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    sent_am, sent_c, seen_c = {}, {}, {}
    out = open(a.cascade_out)
    out.seek(0, 2)

    lock = threading.Lock()
    done = threading.Event()

    def tail():
        # its own thread, polling every millisecond: the time a line shows
        # is the time it was seen, not when the poster got round to it
        while not done.is_set():
            line = out.readline()
            if not line:
                time.sleep(0.001)
                continue
            if not line.startswith("[dry-run]"):
                continue
            now = time.time()
            with lock:
                for node in sent_c:
                    if node in line and node not in seen_c:
                        seen_c[node] = now

    reader = threading.Thread(target=tail, daemon=True)
    reader.start()

    run = int(time.time())
    for i in range(a.alerts):
        node = "alat%d-%03d" % (run % 100000, i)
        labels = {"alertname": "GPUXidError", "Hostname": node, "gpu": "0",
                  "err_code": "79", "modelName": "NVIDIA H100 80GB HBM3"}
        start = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        sent_am[node] = time.time()
        post(a.am + "/api/v2/alerts", [{"labels": labels, "startsAt": start}])
        with lock:
            sent_c[node] = time.time()
        post(a.hook, {"version": "4", "groupKey": node, "status": "firing",
                      "receiver": "cascade", "groupLabels": {"Hostname": node},
                      "commonLabels": labels, "commonAnnotations": {},
                      "externalURL": "http://am", "truncatedAlerts": 0,
                      "alerts": [{"status": "firing", "labels": labels,
                                  "annotations": {}, "startsAt": start,
                                  "endsAt": "0001-01-01T00:00:00Z",
                                  "generatorURL": "", "fingerprint": "%016x" % i}]},
             a.token)
        time.sleep(a.gap)
    deadline = time.time() + 10
    while time.time() < deadline and (len(NOTIFIED) < len(sent_am) or len(seen_c) < len(sent_c)):
        time.sleep(0.01)
    done.set()
    reader.join()
    srv.shutdown()
    rc = 0
    for tool, sent, got in (("alertmanager", sent_am, NOTIFIED), ("cascade", sent_c, seen_c)):
        line = summary(tool, sent, got)
        if not line:
            print("alert_latency: %s answered none of %d alerts" % (tool, len(sent)),
                  file=sys.stderr)
            rc = 1
            continue
        print(line)
    return rc


if __name__ == "__main__":
    sys.exit(main())
