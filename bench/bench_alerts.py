#!/usr/bin/env python3
"""The alert path: the same alerts posted to Alertmanager (POST
/api/v2/alerts, as Prometheus sends them) and to `cascade ingest webhook`
(the Alertmanager webhook payload, as Alertmanager forwards them), in posts
of --batch alerts over --conns keep-alive connections. Prints accepted
alerts per second for each run: the rate at which the receiver answered
2xx. A non-2xx answer fails the run.

usage: bench_alerts.py --target am|cascade --url URL [--token T]
                       [--alerts N] [--batch N] [--conns N] [--runs N]
"""
import argparse
import http.client
import json
import sys
import threading
import time
import urllib.parse


def alerts(n, offset):
    t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return [{
        "labels": {"alertname": "DCGM_FI_DEV_XID_ERRORS", "Hostname": f"gpu-{(offset + i) % 1000:04d}",
                   "gpu": str((offset + i) % 8), "err_code": "79", "cluster": "bench",
                   "seq": str(offset + i)},
        "annotations": {"summary": "XID 79: GPU has fallen off the bus"},
        "startsAt": t,
    } for i in range(n)]


def body(target, batch):
    if target == "am":
        return json.dumps(batch).encode()
    return json.dumps({
        "version": "4", "status": "firing", "receiver": "cascade", "groupKey": "{}:{}",
        "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {}, "externalURL": "",
        "alerts": [dict(a, status="firing", endsAt="0001-01-01T00:00:00Z",
                        fingerprint=f"{i:016x}") for i, a in enumerate(batch)],
    }).encode()


def poster(a, bodies, errors):
    u = urllib.parse.urlsplit(a.url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    path = u.path or "/"
    headers = {"Content-Type": "application/json"}
    if a.token:
        headers["Authorization"] = "Bearer " + a.token
    for b in bodies:
        c.request("POST", path, b, headers)
        r = c.getresponse()
        r.read()
        if r.status // 100 != 2:
            errors.append(f"HTTP {r.status}")
            return
    c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", choices=["am", "cascade"], required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", default="")
    ap.add_argument("--alerts", type=int, default=200000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--conns", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    for run in range(a.runs):
        # bodies are built before the clock starts: the sender's JSON work
        # is not the receiver's rate
        per = [[] for _ in range(a.conns)]
        for k, off in enumerate(range(0, a.alerts, a.batch)):
            per[k % a.conns].append(body(a.target, alerts(min(a.batch, a.alerts - off),
                                                          run * a.alerts + off)))
        errors = []
        threads = [threading.Thread(target=poster, args=(a, p, errors)) for p in per]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        dt = time.monotonic() - t0
        if errors:
            print(f"bench_alerts: {a.target}: {errors[0]}", file=sys.stderr)
            return 1
        print(f"{a.alerts / dt:.0f}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
