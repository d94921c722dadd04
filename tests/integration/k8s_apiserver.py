#!/usr/bin/env python3
"""A scripted Kubernetes API server for the collector's tests.

Kubernetes' kube-apiserver does not install from the registries this
project reaches, so this replays its protocol as the API reference
documents it (docs/reference/using-api/api-concepts.md): LIST with limit
and continue (each page with the list's resourceVersion), WATCH with
resourceVersion, allowWatchBookmarks and timeoutSeconds as a chunked
stream of {"type", "object"} documents, BOOKMARK events, 410 Gone both as
an HTTP answer and as an in-stream ERROR event (reason Expired, or Gone
as older servers sent it), 401 for a token that is not the current one,
403/404/429 with Status bodies. The objects it serves are the recorded
shapes of the API reference (tests/data/k8s/*.json), with times given as
"@-SECONDS" (that long before the server started: an object put again
keeps its times, as a real one would).

Each watch document is written split across two chunks at a random byte,
and now and then two documents share a chunk, as a real server's writes
may fall.

Control (plain JSON POSTs to /_control, no authentication):
  {"op": "put", "resource": R, "object": O}       ADDED or MODIFIED
  {"op": "delete", "resource": R, "name": N, "namespace": NS}
  {"op": "bookmark", "resource": R}               a BOOKMARK to R's watches
  {"op": "expire", "resource": R, "reason": "Expired"|"Gone", "http": false}
        forget R's history: watches get an ERROR 410 event (or, with
        http true, the next watch request an HTTP 410)
  {"op": "end", "resource": R}                    end R's watches cleanly
  {"op": "fail", "resource": R, "status": 429, "count": 1, "retry_after": 1}
  {"op": "expire_continue"}                       the next continue is 410
Every request is logged to --log as a JSON line: method, path, query,
auth (ok/bad/none), status, t (seconds since start).
"""
import argparse
import json
import os
import random
import ssl
import sys
import threading
import time
import urllib.parse
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RESOURCES = {
    "/api/v1/nodes": ("nodes", "NodeList", "v1"),
    "/api/v1/pods": ("pods", "PodList", "v1"),
    "/apis/batch/v1/jobs": ("jobs", "JobList", "batch/v1"),
    "/api/v1/events": ("events", "EventList", "v1"),
    "/apis/events.k8s.io/v1/events": ("events.k8s.io", "EventList", "events.k8s.io/v1"),
    "/apis/kueue.x-k8s.io/v1beta1/workloads": ("workloads", "WorkloadList", "kueue.x-k8s.io/v1beta1"),
}
START = time.time()


def stamp(secs_ago, micro=False):
    # from the server's start, so an object put again keeps its times
    t = datetime.fromtimestamp(START - secs_ago, tz=timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def times(o):
    """Replaces "@-N" with the time N seconds ago ("@-N.u": MicroTime)."""
    if isinstance(o, dict):
        return {k: times(v) for k, v in o.items()}
    if isinstance(o, list):
        return [times(v) for v in o]
    if isinstance(o, str) and o.startswith("@-"):
        micro = o.endswith(".u")
        return stamp(float(o[2:].removesuffix(".u")), micro)
    return o


def to_core_event(o):
    """An events.k8s.io/v1 Event as /api/v1 shows it (the same object)."""
    e = dict(o)
    e["apiVersion"] = "v1"
    if "regarding" in e:
        e["involvedObject"] = e.pop("regarding")
    if "note" in e:
        e["message"] = e.pop("note")
    for new, old in (("deprecatedSource", "source"), ("deprecatedCount", "count"),
                     ("deprecatedFirstTimestamp", "firstTimestamp"),
                     ("deprecatedLastTimestamp", "lastTimestamp")):
        if new in e:
            e[old] = e.pop(new)
    return e


def to_new_event(o):
    """A core/v1 Event as events.k8s.io/v1 shows it."""
    e = dict(o)
    e["apiVersion"] = "events.k8s.io/v1"
    for old, new in (("involvedObject", "regarding"), ("message", "note"),
                     ("source", "deprecatedSource"), ("count", "deprecatedCount"),
                     ("firstTimestamp", "deprecatedFirstTimestamp"),
                     ("lastTimestamp", "deprecatedLastTimestamp")):
        if old in e:
            e[new] = e.pop(old)
    e.setdefault("eventTime", None)
    return e


class Store:
    def __init__(self):
        self.lock = threading.Condition()
        self.rv = 100
        self.objects = {}   # resource -> {ns/name: object}
        self.history = {}   # resource -> [(rv, type, object)]
        self.floor = {}     # resource -> the oldest rv a watch may start from
        self.gone = {}      # resource -> (reason, http) for the next watch
        self.ends = {}      # resource -> generation of "end" orders
        self.fails = {}     # resource -> [status, count, retry_after]
        self.expire_continue = False
        self.continues = {}

    def key(self, o):
        m = o["metadata"]
        return f"{m.get('namespace', '')}/{m['name']}"

    def put(self, res, o, kind="ADDED"):
        with self.lock:
            self.rv += 1
            o = times(o)
            o.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
            objs = self.objects.setdefault(res, {})
            k = self.key(o)
            typ = "MODIFIED" if k in objs else kind
            objs[k] = o
            self.history.setdefault(res, []).append((self.rv, typ, o))
            self.lock.notify_all()

    def delete(self, res, ns, name):
        with self.lock:
            o = self.objects.get(res, {}).pop(f"{ns or ''}/{name}", None)
            if o:
                self.rv += 1
                o = dict(o, metadata=dict(o["metadata"], resourceVersion=str(self.rv)))
                self.history.setdefault(res, []).append((self.rv, "DELETED", o))
                self.lock.notify_all()


store = Store()
state = {"log": None, "token_file": None}
log_lock = threading.Lock()


def log(entry):
    entry["t"] = round(time.time() - START, 3)
    with log_lock:
        with open(state["log"], "a") as f:
            f.write(json.dumps(entry) + "\n")


def store_name(res):
    # both Event APIs are one store
    return "events" if res == "events.k8s.io" else res


def shape(res, o):
    if res == "events.k8s.io":
        return to_new_event(o) if o.get("apiVersion") == "v1" else o
    if res == "events" and o.get("apiVersion") == "events.k8s.io/v1":
        return to_core_event(o)
    return o


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, body, extra=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def status(self, code, reason, message, extra=None):
        self.answer(code, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                           "status": "Failure", "message": message,
                           "reason": reason, "code": code}, extra)

    def do_POST(self):
        if self.path != "/_control":
            return self.status(405, "MethodNotAllowed", "read-only")
        n = int(self.headers.get("Content-Length", "0"))
        c = json.loads(self.rfile.read(n))
        op, res = c["op"], store_name(c.get("resource", ""))
        if op == "put":
            store.put(res, c["object"])
        elif op == "delete":
            store.delete(res, c.get("namespace"), c["name"])
        elif op == "bookmark":
            with store.lock:
                store.rv += 1
                store.history.setdefault(res, []).append((store.rv, "BOOKMARK", None))
                store.lock.notify_all()
        elif op == "expire":
            # the history before now is compacted away: a watch from an
            # older resourceVersion is answered 410
            with store.lock:
                store.rv += 1
                store.floor[res] = store.rv
                store.history[res] = []
                store.gone[res] = (c.get("reason", "Expired"), c.get("http", False))
                store.lock.notify_all()
        elif op == "end":
            with store.lock:
                store.ends[res] = store.ends.get(res, 0) + 1
                store.lock.notify_all()
        elif op == "fail":
            store.fails[res] = [c["status"], c.get("count", 1), c.get("retry_after")]
        elif op == "expire_continue":
            store.expire_continue = True
        self.answer(200, {"ok": True})

    def auth(self):
        h = self.headers.get("Authorization", "")
        if self.connection.getpeercert():
            return "cert"
        if not h:
            return "none"
        with open(state["token_file"]) as f:
            want = f.read().strip()
        return "ok" if h == "Bearer " + want else "bad"

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        path = u.path
        ns = None
        if "/namespaces/" in path:
            pre, rest = path.split("/namespaces/", 1)
            ns, res_part = rest.split("/", 1)
            path = pre + "/" + res_part
        entry = {"method": "GET", "path": u.path, "query": q, "auth": self.auth()}
        if path not in RESOURCES:
            entry["status"] = 404
            log(entry)
            return self.status(404, "NotFound", "the server could not find the requested resource")
        res, list_kind, api = RESOURCES[path]
        if entry["auth"] not in ("ok", "cert"):
            entry["status"] = 401
            log(entry)
            return self.status(401, "Unauthorized", "Unauthorized")
        f = store.fails.get(store_name(res))
        if f and f[1] > 0:
            f[1] -= 1
            entry["status"] = f[0]
            log(entry)
            extra = {"Retry-After": str(f[2])} if f[2] else None
            return self.status(f[0], "TooManyRequests" if f[0] == 429 else "InternalError",
                               "injected", extra)
        if q.get("watch") in ("1", "true"):
            return self.watch(res, ns, q, entry)
        return self.list(res, list_kind, api, ns, q, entry)

    def items(self, res, ns, sel):
        with store.lock:
            objs = [o for k, o in sorted(store.objects.get(store_name(res), {}).items())
                    if ns is None or o["metadata"].get("namespace") == ns]
            rv = store.rv
        if sel:
            objs = [o for o in objs if sel in o["metadata"].get("labels", {})]
        return objs, rv

    def list(self, res, list_kind, api, ns, q, entry):
        limit = int(q.get("limit", "0") or 0)
        objs, rv = self.items(res, ns, q.get("labelSelector"))
        start = 0
        if q.get("continue"):
            if store.expire_continue:
                store.expire_continue = False
                entry["status"] = 410
                log(entry)
                return self.status(410, "Expired", "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
            start, rv = store.continues[q["continue"]]
        page = objs[start:start + limit] if limit else objs[start:]
        meta = {"resourceVersion": str(rv)}
        if limit and start + limit < len(objs):
            tok = "c%08x" % random.getrandbits(32)
            store.continues[tok] = (start + limit, rv)
            meta["continue"] = tok
            meta["remainingItemCount"] = len(objs) - start - limit
        # typed lists leave kind and apiVersion off their items
        page = [{k: v for k, v in shape(res, o).items() if k not in ("kind", "apiVersion")}
                for o in page]
        entry["status"] = 200
        entry["items"] = len(page)
        log(entry)
        self.answer(200, {"kind": list_kind, "apiVersion": api, "metadata": meta, "items": page})

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def send_docs(self, docs):
        """Each document in two chunks split at random; sometimes two
        documents in one chunk."""
        buf = b""
        for d in docs:
            buf += json.dumps(d).encode() + b"\n"
            if random.random() < 0.3:
                continue  # shares a chunk with the next
            cut = random.randint(1, len(buf) - 1)
            self.chunk(buf[:cut])
            time.sleep(0.002)
            self.chunk(buf[cut:])
            buf = b""
        if buf:
            self.chunk(buf)

    def pending(self, res, sres, ns, q, sent):
        """The documents after sent (under the lock), and the new sent."""
        docs = []
        kinds = {"nodes": "Node", "pods": "Pod", "jobs": "Job", "events": "Event",
                 "workloads": "Workload"}
        for (hrv, typ, o) in store.history.get(sres, []):
            if hrv <= sent:
                continue
            sent = hrv
            if typ == "BOOKMARK":
                if q.get("allowWatchBookmarks") == "true":
                    docs.append({"type": "BOOKMARK", "object": {
                        "kind": kinds[sres], "apiVersion": "v1",
                        "metadata": {"resourceVersion": str(hrv)}}})
                continue
            if ns is not None and o["metadata"].get("namespace") != ns:
                continue
            sel = q.get("labelSelector")
            if sel and sel not in o["metadata"].get("labels", {}):
                continue
            docs.append({"type": typ, "object": shape(res, o)})
        return docs, sent

    def watch(self, res, ns, q, entry):
        sres = store_name(res)
        sent = int(q.get("resourceVersion") or 0)
        timeout = float(q.get("timeoutSeconds") or 1800)
        with store.lock:
            gone = store.gone.get(sres)
            too_old = sent < store.floor.get(sres, 0)
            end_gen = store.ends.get(sres, 0)
            if too_old and gone and gone[1]:
                store.gone.pop(sres, None)
        if too_old and gone and gone[1]:
            entry["status"] = 410
            log(entry)
            return self.status(410, gone[0], f"too old resource version: {sent} ({store.rv})")
        entry["status"] = 200
        log(entry)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        deadline = time.time() + timeout
        try:
            while True:
                with store.lock:
                    done = False
                    if sent < store.floor.get(sres, 0):
                        reason = (store.gone.get(sres) or ("Expired", False))[0]
                        docs = [{"type": "ERROR", "object": {
                            "kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Failure",
                            "message": f"too old resource version: {sent} ({store.rv})",
                            "reason": reason, "code": 410}}]
                        done = True
                    else:
                        docs, sent = self.pending(res, sres, ns, q, sent)
                        done = store.ends.get(sres, 0) != end_gen
                    if not docs and not done:
                        left = deadline - time.time()
                        if left <= 0:
                            break
                        store.lock.wait(min(left, 0.5))
                        continue
                if docs:
                    self.send_docs(docs)
                if done:
                    break
            self.chunk(b"")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass
        self.close_connection = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--client-ca", help="also accept client certificates of this CA")
    ap.add_argument("--token-file", required=True, help="the one token accepted (read per request)")
    ap.add_argument("--objects", action="append", default=[],
                    help="RESOURCE=FILE: a JSON list of the objects it starts with")
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    state["log"] = a.log
    state["token_file"] = a.token_file
    for spec in a.objects:
        res, path = spec.split("=", 1)
        with open(path) as f:
            for o in json.load(f):
                store.put(res, o)
        store.history[res] = []  # what a list shows, not a watch
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    if a.client_ca:
        ctx.load_verify_locations(a.client_ca)
        ctx.verify_mode = ssl.CERT_OPTIONAL
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(a.port_file + ".tmp", a.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
