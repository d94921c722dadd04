#!/usr/bin/env python3
"""The HTTP APIs cascade's executors call, as their vendors document them,
for the tests and the executor benchmark: Slack incoming webhooks (Block
Kit), Jira REST v2 (search, create, update), PagerDuty Events API v2, a
generic webhook and the Kubernetes API server's node, pod and Job paths.

Every request is checked against the documented shape (method, path,
headers, authentication, body fields and their limits). A request that does
not match gets the vendor's error status and is logged with "violation";
the tests fail on any. Every request is appended to --log as one JSON line
(secrets are never written: the log says whether authentication matched).

State is kept in memory (Jira issues, Kubernetes nodes, pods, Jobs) so the
executors' read-modify-write calls see their own effects.
"""
import argparse
import base64
import json
import re
import ssl
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SLACK_PATH = re.compile(r"^/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+$")
DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
TEXT_TYPES = {"plain_text", "mrkdwn"}


class Bad(Exception):
    def __init__(self, status, msg):
        super().__init__(msg)
        self.status = status


def need(cond, msg, status=400):
    if not cond:
        raise Bad(status, msg)


def text_obj(t, where, limit, kinds=TEXT_TYPES):
    need(isinstance(t, dict), f"{where}: a text object")
    need(t.get("type") in kinds, f"{where}.type must be one of {sorted(kinds)}")
    need(isinstance(t.get("text"), str) and 0 < len(t["text"]) <= limit,
         f"{where}.text: 1..{limit} characters")


def check_slack_blocks(body):
    # https://api.slack.com/reference/block-kit/blocks
    need(isinstance(body.get("text"), str) and body["text"],
         "text: the notification fallback is required with blocks")
    blocks = body.get("blocks")
    need(isinstance(blocks, list) and 0 < len(blocks) <= 50, "blocks: 1..50")
    for i, b in enumerate(blocks):
        w = f"blocks[{i}]"
        t = b.get("type")
        if t == "header":
            text_obj(b.get("text"), w + ".text", 150, {"plain_text"})
        elif t == "section":
            need("text" in b or "fields" in b, w + ": text or fields")
            if "text" in b:
                text_obj(b["text"], w + ".text", 3000)
            if "fields" in b:
                need(isinstance(b["fields"], list) and 0 < len(b["fields"]) <= 10,
                     w + ".fields: 1..10")
                for j, f in enumerate(b["fields"]):
                    text_obj(f, f"{w}.fields[{j}]", 2000)
        elif t == "actions":
            els = b.get("elements")
            need(isinstance(els, list) and 0 < len(els) <= 25, w + ".elements: 1..25")
            for j, e in enumerate(els):
                need(e.get("type") == "button", f"{w}.elements[{j}]: a button")
                text_obj(e.get("text"), f"{w}.elements[{j}].text", 75, {"plain_text"})
                need("url" not in e or (isinstance(e["url"], str) and len(e["url"]) <= 3000
                                        and e["url"].startswith(("http://", "https://"))),
                     f"{w}.elements[{j}].url: an http(s) URL of at most 3000")
                need(isinstance(e.get("action_id", ""), str) and len(e.get("action_id", "")) <= 255,
                     f"{w}.elements[{j}].action_id: at most 255")
                need(e.get("style", "primary") in ("primary", "danger"),
                     f"{w}.elements[{j}].style: primary or danger")
        elif t == "context":
            els = b.get("elements")
            need(isinstance(els, list) and 0 < len(els) <= 10, w + ".elements: 1..10")
            for j, e in enumerate(els):
                text_obj(e, f"{w}.elements[{j}]", 3000)
        elif t == "divider":
            pass
        else:
            raise Bad(400, f"{w}.type '{t}' is not a Block Kit block cascade should send")


PD_SEVERITY = {"critical", "error", "warning", "info"}


def check_pagerduty(body, routing_key):
    # https://developer.pagerduty.com/docs/events-api-v2/trigger-events/
    need(body.get("routing_key") == routing_key, "routing_key: not this integration's", 400)
    act = body.get("event_action")
    need(act in ("trigger", "acknowledge", "resolve"), "event_action: trigger|acknowledge|resolve")
    dk = body.get("dedup_key")
    need(isinstance(dk, str) and 0 < len(dk) <= 255, "dedup_key: 1..255 characters")
    if act == "trigger":
        p = body.get("payload")
        need(isinstance(p, dict), "payload: required for trigger")
        need(isinstance(p.get("summary"), str) and 0 < len(p["summary"]) <= 1024,
             "payload.summary: 1..1024 characters")
        need(isinstance(p.get("source"), str) and p["source"], "payload.source: required")
        need(p.get("severity") in PD_SEVERITY, "payload.severity: critical|error|warning|info")
        for k in ("component", "group", "class"):
            need(k not in p or isinstance(p[k], str), f"payload.{k}: a string")
        need("custom_details" not in p or isinstance(p["custom_details"], dict),
             "payload.custom_details: an object")
    else:
        need("payload" not in body, f"payload: not part of {act}")


def merge_patch(target, patch):
    # RFC 7386
    if not isinstance(patch, dict):
        return patch
    if not isinstance(target, dict):
        target = {}
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = merge_patch(target.get(k), v)
    return target


class State:
    def __init__(self, args, seed):
        self.lock = threading.Lock()
        self.args = args
        self.issues = {}   # key -> {"fields": ...}
        self.nodes = {}
        self.pods = {}     # (ns, name) -> pod
        self.jobs = {}     # (ns, name) -> job
        self.rv = 100
        self.log = open(args.log, "a", buffering=1) if args.log else None
        self.count = 0
        self.slack_429 = args.slack_429
        for n in seed.get("nodes", []):
            self.nodes[n["metadata"]["name"]] = n
        for p in seed.get("pods", []):
            self.pods[(p["metadata"].get("namespace", "default"), p["metadata"]["name"])] = p
        for j in seed.get("jobs", []):
            self.jobs[(j["metadata"].get("namespace", "default"), j["metadata"]["name"])] = j

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def record(self, entry):
        with self.lock:
            self.count += 1
            if self.log:
                self.log.write(json.dumps(entry, sort_keys=True) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "vendor-apis/1"

    def log_message(self, fmt, *a):
        pass

    def do_GET(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def do_PUT(self):
        self.handle_any()

    def do_PATCH(self):
        self.handle_any()

    def do_DELETE(self):
        self.handle_any()

    # ---- plumbing ----
    def reply(self, status, body=None, ctype="application/json"):
        data = b""
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        for k, v in getattr(self, "extra_headers", {}).items():
            self.send_header(k, v)
        if data:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)

    def json_body(self, required=True):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        self.raw = raw
        if not raw:
            need(not required, "a JSON body is required")
            return None
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        self.ctype = ctype
        try:
            return json.loads(raw)
        except ValueError as e:
            raise Bad(400, f"body is not JSON: {e}")

    def bearer(self, token):
        h = self.headers.get("Authorization") or ""
        need(h == "Bearer " + token, "Authorization: Bearer with the right token", 401)

    def handle_any(self):
        st: State = self.server.state
        u = urllib.parse.urlsplit(self.path)
        self.raw = b""
        self.ctype = ""
        self.extra_headers = {}
        entry = {"method": self.command, "path": u.path, "query": u.query}
        try:
            vendor, status, body, ctype = self.route(st, u)
            entry.update(vendor=vendor, status=status)
        except Bad as e:
            entry.update(status=e.status, violation=str(e))
            status, body, ctype = e.status, {"error": str(e)}, "application/json"
            if u.path.startswith(("/api/", "/apis/")):
                # the API server's failures are Status objects
                body = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "message": str(e), "code": e.status,
                        "reason": {401: "Unauthorized", 404: "NotFound",
                                   409: "Conflict"}.get(e.status, "BadRequest")}
            if e.status in (404, 409) and "violation" in entry and \
                    not str(e).startswith(("no ", "cascade only")):
                # a missing or changed object is an answer, not a bad request
                entry["answer"] = entry.pop("violation")
        except Exception as e:  # a bug here must fail the test, not hang it
            entry.update(status=500, violation=f"server error: {e!r}")
            status, body, ctype = 500, {"error": repr(e)}, "application/json"
        if self.raw:
            try:
                entry["body"] = json.loads(self.raw)
            except ValueError:
                entry["body"] = self.raw.decode("utf-8", "replace")
        entry["content_type"] = self.ctype or (self.headers.get("Content-Type") or "")
        st.record(entry)
        self.reply(status, body, ctype)

    def route(self, st, u):
        a = st.args
        p = u.path
        if p.startswith("/services/"):
            return self.slack(st, p)
        if p.startswith("/rest/api/2/"):
            return self.jira(st, u)
        if p == "/v2/enqueue":
            need(self.command == "POST", "PagerDuty's enqueue is POST", 405)
            body = self.json_body()
            need(self.ctype == "application/json", "Content-Type: application/json")
            check_pagerduty(body, a.pd_key)
            return "pagerduty", 202, {"status": "success", "message": "Event processed",
                                      "dedup_key": body["dedup_key"]}, "application/json"
        if p == "/hook":
            need(self.command == "POST", "the webhook takes POST", 405)
            if a.webhook_token:
                self.bearer(a.webhook_token)
            body = self.json_body()
            need(isinstance(body, dict) and isinstance(body.get("request"), dict)
                 and body["request"].get("id"), "webhook: {event, request: {id, ...}}")
            return "webhook", 200, {"ok": True}, "application/json"
        if p.startswith("/api/v1/") or p.startswith("/apis/batch/v1/"):
            self.bearer(a.k8s_token)
            return self.k8s(st, u)
        raise Bad(404, f"no API at {p}")

    # ---- Slack ----
    def slack(self, st, p):
        # https://api.slack.com/messaging/webhooks
        need(self.command == "POST", "incoming webhooks take POST", 405)
        need(SLACK_PATH.match(p) is not None, "not an incoming webhook path", 404)
        need(p == st.args.slack_path, "invalid_token", 403)
        body = self.json_body()
        need(self.ctype == "application/json", "Content-Type: application/json")
        check_slack_blocks(body)
        with st.lock:
            limited = st.slack_429 > 0
            st.slack_429 -= limited
        if limited:
            # https://api.slack.com/apis/rate-limits: 429 with Retry-After
            self.extra_headers = {"Retry-After": "1"}
            return "slack", 429, "rate_limited", "text/plain"
        return "slack", 200, "ok", "text/plain"

    # ---- Jira ----
    def jira(self, st, u):
        # https://docs.atlassian.com/software/jira/docs/api/REST/latest/
        a = st.args
        h = self.headers.get("Authorization") or ""
        want = "Basic " + base64.b64encode(f"{a.jira_user}:{a.jira_token}".encode()).decode()
        need(h == want, "Authorization: Basic user:api-token", 401)
        p = u.path
        if p == "/rest/api/2/search":
            need(self.command == "GET", "search is GET here", 405)
            q = urllib.parse.parse_qs(u.query)
            jql = q.get("jql", [""])[0]
            m = re.fullmatch(r'labels\s*=\s*"([^"]+)"', jql)
            need(m is not None, f"jql '{jql}' is not a label search")
            with st.lock:
                found = [k for k, i in st.issues.items() if m.group(1) in i["fields"]["labels"]]
            issues = [{"id": str(10000 + int(k.split("-")[1])), "key": k} for k in found[:1]]
            return "jira", 200, {"startAt": 0, "maxResults": 1, "total": len(found),
                                 "issues": issues}, "application/json"
        if p == "/rest/api/2/issue":
            need(self.command == "POST", "create is POST", 405)
            body = self.json_body()
            need(self.ctype == "application/json", "Content-Type: application/json")
            f = body.get("fields")
            need(isinstance(f, dict), "fields: required")
            need(f.get("project", {}).get("key") == a.jira_project, "fields.project.key")
            need(isinstance(f.get("issuetype", {}).get("name"), str), "fields.issuetype.name")
            self.jira_fields(f)
            labels = f.get("labels")
            need(isinstance(labels, list) and all(isinstance(x, str) and " " not in x
                                                  for x in labels),
                 "fields.labels: strings without spaces")
            with st.lock:
                key = f"{a.jira_project}-{len(st.issues) + 1}"
                st.issues[key] = {"fields": f}
            return "jira", 201, {"id": str(10000 + len(st.issues)), "key": key,
                                 "self": f"https://jira.invalid/rest/api/2/issue/{key}"}, \
                "application/json"
        m = re.fullmatch(r"/rest/api/2/issue/([A-Z][A-Z0-9]*-\d+)", p)
        need(m is not None, f"no Jira resource at {p}", 404)
        need(self.command == "PUT", "update is PUT", 405)
        body = self.json_body()
        need(self.ctype == "application/json", "Content-Type: application/json")
        f = body.get("fields")
        need(isinstance(f, dict), "fields: required")
        need(not ({"status", "resolution", "project", "issuetype"} & set(f)),
             "an update changes content only: closing stays with people")
        self.jira_fields(f)
        with st.lock:
            need(m.group(1) in st.issues, "Issue Does Not Exist", 404)
            st.issues[m.group(1)]["fields"].update(f)
        return "jira", 204, None, "application/json"

    def jira_fields(self, f):
        s = f.get("summary")
        need(isinstance(s, str) and 0 < len(s) <= 255 and "\n" not in s,
             "fields.summary: one line of 1..255 characters")
        need(isinstance(f.get("description", ""), str), "fields.description: a string (v2)")

    # ---- Kubernetes ----
    def k8s(self, st, u):
        # https://kubernetes.io/docs/reference/using-api/api-concepts/
        p, m = u.path, self.command
        q = urllib.parse.parse_qs(u.query)
        node = re.fullmatch(r"/api/v1/nodes/([^/]+)", p)
        pods_ns = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods(?:/([^/]+))?", p)
        jobs_ns = re.fullmatch(r"/apis/batch/v1/namespaces/([^/]+)/jobs(?:/([^/]+))?", p)
        if node:
            name = node.group(1)
            with st.lock:
                need(name in st.nodes, f'nodes "{name}" not found', 404)
                obj = st.nodes[name]
                if m == "GET":
                    return "k8s", 200, obj, "application/json"
                need(m == "PATCH", "nodes take GET or PATCH here", 405)
                body = self.json_body()
                need(self.ctype in ("application/merge-patch+json",
                                    "application/strategic-merge-patch+json"),
                     f"PATCH Content-Type {self.ctype!r}: merge or strategic merge patch")
                need(isinstance(body, dict), "a patch is an object")
                rv = body.get("metadata", {}).get("resourceVersion")
                need(rv is None or rv == obj["metadata"]["resourceVersion"],
                     "the object has been modified; please apply your changes to the latest version", 409)
                for t in (body.get("spec") or {}).get("taints") or []:
                    need(isinstance(t.get("key"), str) and t["key"], "taint.key")
                    need(t.get("effect") in ("NoSchedule", "PreferNoSchedule", "NoExecute"),
                         "taint.effect: NoSchedule|PreferNoSchedule|NoExecute")
                merged = merge_patch(json.loads(json.dumps(obj)), body)
                merged["metadata"]["resourceVersion"] = st.next_rv()
                st.nodes[name] = merged
                return "k8s", 200, merged, "application/json"
        if p == "/api/v1/pods":
            need(m == "GET", "pods across namespaces: GET", 405)
            sel = dict(x.split("=", 1) for x in q.get("fieldSelector", [""])[0].split(",") if "=" in x)
            with st.lock:
                items = [v for v in st.pods.values()
                         if all(self.field(v, k) == val for k, val in sel.items())]
            return "k8s", 200, {"kind": "PodList", "apiVersion": "v1", "items": items}, \
                "application/json"
        if pods_ns:
            ns, name = pods_ns.group(1), pods_ns.group(2)
            need(m == "DELETE", "cascade only deletes pods", 405)
            with st.lock:
                if name:
                    need((ns, name) in st.pods, f'pods "{name}" not found', 404)
                    gone = [st.pods.pop((ns, name))]
                else:
                    sel = q.get("labelSelector", [""])[0]
                    need(re.fullmatch(r"job-name=[a-z0-9.-]+", sel) is not None,
                         "deletecollection needs a labelSelector job-name=NAME")
                    want = sel.split("=", 1)[1]
                    keys = [k for k, v in st.pods.items() if k[0] == ns and
                            v["metadata"].get("labels", {}).get("job-name") == want]
                    gone = [st.pods.pop(k) for k in keys]
            return "k8s", 200, gone[0] if name else {"kind": "PodList", "apiVersion": "v1",
                                                     "items": gone}, "application/json"
        if jobs_ns:
            ns, name = jobs_ns.group(1), jobs_ns.group(2)
            with st.lock:
                if m == "GET" and name:
                    need((ns, name) in st.jobs, f'jobs.batch "{name}" not found', 404)
                    return "k8s", 200, st.jobs[(ns, name)], "application/json"
                if m == "DELETE" and name:
                    body = self.json_body(required=False)
                    if body is not None:
                        need(body.get("kind") == "DeleteOptions", "body: DeleteOptions")
                        need(body.get("propagationPolicy") in ("Background", "Foreground", "Orphan"),
                             "propagationPolicy: Background|Foreground|Orphan")
                    need((ns, name) in st.jobs, f'jobs.batch "{name}" not found', 404)
                    st.jobs.pop((ns, name))
                    return "k8s", 200, {"kind": "Status", "status": "Success"}, "application/json"
                need(m == "POST" and not name, "jobs: GET/DELETE one, POST the collection", 405)
                body = self.json_body()
                need(self.ctype == "application/json", "Content-Type: application/json")
                self.check_job(body, ns)
                jn = body["metadata"]["name"]
                need((ns, jn) not in st.jobs, f'jobs.batch "{jn}" already exists', 409)
                body["metadata"].update(namespace=ns, uid=f"uid-{st.next_rv()}",
                                        resourceVersion=st.next_rv())
                body["status"] = {}
                st.jobs[(ns, jn)] = body
                return "k8s", 201, body, "application/json"
        raise Bad(404, f"no Kubernetes resource at {p}")

    @staticmethod
    def field(obj, path):
        for k in path.split("."):
            obj = obj.get(k, {}) if isinstance(obj, dict) else {}
        return obj if isinstance(obj, str) else None

    def check_job(self, j, ns):
        need(j.get("apiVersion") == "batch/v1" and j.get("kind") == "Job", "a batch/v1 Job")
        md = j.get("metadata") or {}
        need(isinstance(md.get("name"), str) and len(md["name"]) <= 63
             and DNS1123.match(md["name"]), "metadata.name: a DNS-1123 label")
        for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "selfLink"):
            need(k not in md, f"metadata.{k} is set by the server")
        need(md.get("namespace", ns) == ns, "metadata.namespace differs from the path")
        need("status" not in j or not j["status"], "status is set by the server")
        spec = j.get("spec") or {}
        need("selector" not in spec or spec.get("manualSelector"),
             "spec.selector without manualSelector: the API server generates it")
        tpl = spec.get("template") or {}
        labels = (tpl.get("metadata") or {}).get("labels") or {}
        for k in ("controller-uid", "batch.kubernetes.io/controller-uid"):
            need(k not in labels, f"template label {k} belongs to the old Job")
        cs = (tpl.get("spec") or {}).get("containers")
        need(isinstance(cs, list) and cs, "spec.template.spec.containers: required")
        for c in cs:
            for e in c.get("env", []):
                need(isinstance(e.get("name"), str) and re.fullmatch(r"[-._a-zA-Z][-._a-zA-Z0-9]*", e["name"]),
                     f"env name {e.get('name')!r} is not a C identifier-like name")
                need(isinstance(e.get("value", ""), str), "env value: a string")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--log")
    ap.add_argument("--seed", help="JSON {nodes, pods, jobs} for the Kubernetes API")
    ap.add_argument("--slack-path", default="/services/T000/B000/XXXX")
    ap.add_argument("--jira-user", default="bot@example.com")
    ap.add_argument("--jira-token", default="")
    ap.add_argument("--jira-project", default="OPS")
    ap.add_argument("--pd-key", default="")
    ap.add_argument("--webhook-token", default="")
    ap.add_argument("--k8s-token", default="")
    ap.add_argument("--slack-429", type=int, default=0,
                    help="answer this many Slack posts 429 Retry-After: 1 first")
    a = ap.parse_args()
    seed = json.load(open(a.seed)) if a.seed else {}
    # the default listen backlog (5) drops connections an executor opens
    # in parallel
    ThreadingHTTPServer.request_queue_size = 256
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    srv.state = State(a, seed)
    if a.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(a.port_file + ".tmp", a.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
