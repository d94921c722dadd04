#!/usr/bin/env python3
"""A stream of Alertmanager webhook posts, for webhook_kill.sh: --conns
threads, each posting one post after another on a keep-alive connection
(a new one after any failure) until --seconds have passed. Every alert is
named by its label wk_id, RUN-CONN.POST-ALERT, and its cluster label
(the message key) spreads the alerts over the topic's partitions: the
embedded broker keeps about 5 MiB a partition.

Writes one line per post to --log, "CONN.POST STATUS" (the HTTP status,
or "err" when no answer came: refused, reset, timed out), and the wk_id
of every alert of every post answered 200 to --acked.

usage: alert_poster.py --url URL --token T --run RUN --log FILE
                       --acked FILE [--alerts N] [--conns N] [--seconds S]
"""
import argparse
import http.client
import json
import threading
import time
import urllib.parse


def post_body(run, conn, post, alerts):
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return json.dumps({
        "version": "4", "status": "firing", "receiver": "cascade",
        "groupKey": "{}:{}", "groupLabels": {}, "commonLabels": {},
        "commonAnnotations": {}, "externalURL": "http://am:9093",
        "alerts": [{
            "status": "firing", "startsAt": now,
            "endsAt": "0001-01-01T00:00:00Z",
            "labels": {"alertname": "WebhookKill", "Hostname": f"wk-{conn}-{a}",
                       "cluster": f"wk{(post * alerts + a) % 64}",
                       "wk_id": f"{run}-{conn}.{post}-{a}"},
        } for a in range(alerts)],
    }).encode()


def poster(a, conn, lines, acked, lock):
    u = urllib.parse.urlsplit(a.url)
    headers = {"Content-Type": "application/json",
               "Authorization": "Bearer " + a.token}
    c, post, end = None, 0, time.monotonic() + a.seconds
    while time.monotonic() < end:
        body = post_body(a.run, conn, post, a.alerts)
        try:
            if c is None:
                c = http.client.HTTPConnection(u.hostname, u.port, timeout=15)
            c.request("POST", u.path, body, headers)
            r = c.getresponse()
            r.read()
            status = str(r.status)
        except (OSError, http.client.HTTPException):
            status = "err"
            c.close()
            c = None
            time.sleep(0.05)  # the webhook is down: not a busy loop
        with lock:
            lines.append(f"{conn}.{post} {status}")
            if status == "200":
                acked.extend(f"{a.run}-{conn}.{post}-{i}" for i in range(a.alerts))
        post += 1
    if c is not None:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--acked", required=True)
    ap.add_argument("--alerts", type=int, default=10)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=20)
    a = ap.parse_args()
    lines, acked, lock = [], [], threading.Lock()
    threads = [threading.Thread(target=poster, args=(a, k, lines, acked, lock))
               for k in range(a.conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(a.log, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    with open(a.acked, "w") as f:
        f.write("".join(i + "\n" for i in acked))


if __name__ == "__main__":
    main()
