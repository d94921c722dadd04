// cascade's console: the incidents live, an incident's chain as a graph
// with its evidence, its actions with approve and deny for what waits on a
// human (sent with the person's token: the executor audits their name),
// the audit trail, and cascade's own health. No framework, nothing loaded
// from elsewhere: the binary serves this file.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const view = () => $("#view");
let token = sessionStorage.getItem("cascade-token") || "";
let timer = null;
let lastSeq = 0;

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids.flat()) e.append(k instanceof Node ? k : document.createTextNode(k ?? ""));
  return e;
}

async function api(path, opts = {}) {
  const r = await fetch(path, { ...opts, headers: { ...(opts.headers || {}), Authorization: `Bearer ${token}` } });
  const body = await r.json().catch(() => ({}));
  if (r.status === 401) {
    showLogin("That token is not known here.");
    throw new Error("unauthorized");
  }
  return { status: r.status, body };
}

function showLogin(msg) {
  clearInterval(timer);
  view().replaceChildren();
  $("#login").hidden = false;
  $("#login-error").textContent = msg || "";
}

$("#login").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  token = $("#token").value.trim();
  sessionStorage.setItem("cascade-token", token);
  $("#login").hidden = true;
  await start();
});

async function start() {
  if (!token) return showLogin();
  try {
    const me = await api("/api/whoami");
    $("#who").textContent = `signed in as ${me.body.name}`;
    route();
  } catch (e) { /* the login form is shown */ }
}

window.addEventListener("hashchange", route);

function route() {
  clearInterval(timer);
  const m = location.hash.match(/^#\/incidents\/(inc-[0-9a-f]+)$/);
  if (m) showIncident(m[1]);
  else if (location.hash.startsWith("#/report")) showReport();
  else showList();
}

const when = (ts) => (ts ? ts.replace("T", " ").replace(/\.\d+Z$/, "Z") : "");
const where = (scope) => {
  for (const k of ["node", "job", "rack", "team"]) if (scope && scope[k]) return `${k} ${scope[k]}`;
  return "cluster";
};

// ---- the list ----

function showList() {
  const filter = el("input", { id: "filter", placeholder: "filter: scenario, node, job, text" });
  const status = el("select", { id: "status" },
    el("option", { value: "" }, "any status"), el("option", { value: "open" }, "open"),
    el("option", { value: "resolved" }, "resolved"), el("option", { value: "merged" }, "merged"));
  view().replaceChildren(
    el("div", { class: "grid" },
      el("div", {},
        el("h1", {}, "Incidents"),
        el("div", { class: "filters" }, status, filter),
        el("div", { class: "panel" },
          el("table", { id: "incidents" },
            el("thead", {}, el("tr", {}, ...["", "Incident", "Scenario", "Where", "Opened", "Actions", "Summary"].map((h) => el("th", {}, h)))),
            el("tbody")),
          el("p", { id: "count", class: "muted" }, "loading…"))),
      el("div", {},
        el("h2", {}, "Waiting for a human"),
        el("div", { class: "panel", id: "approvals" }, el("span", { class: "muted" }, "loading…")),
        el("h2", {}, "cascade's health"),
        el("div", { class: "panel health", id: "health" }, el("span", { class: "muted" }, "loading…")))));
  filter.addEventListener("input", refreshList);
  status.addEventListener("change", refreshList);
  refreshList(true);
  timer = setInterval(() => refreshList(false), 2000);
}

async function refreshList(first) {
  const st = $("#status")?.value || "";
  const { body } = await api(`/api/incidents${st ? `?status=${st}` : ""}`);
  const text = ($("#filter")?.value || "").toLowerCase();
  const tbody = $("#incidents tbody");
  if (!tbody) return;
  const rows = (body.incidents || []).filter((i) => !text || JSON.stringify(i).toLowerCase().includes(text));
  tbody.replaceChildren(...rows.map((i) => {
    const tr = el("tr", { class: "row", "data-id": i.id, onclick: () => (location.hash = `#/incidents/${i.id}`) },
      el("td", { class: `status ${i.status}` }, i.status),
      el("td", { class: "mono" }, i.id),
      el("td", {}, i.scenario),
      el("td", {}, where(i.scope)),
      el("td", { class: "mono" }, when(i.opened)),
      el("td", {}, String(i.actions)),
      el("td", {}, i.summary || ""));
    if (!first && i.changed > lastSeq) tr.classList.add("fresh");
    return tr;
  }));
  lastSeq = body.seq || lastSeq;
  $("#count").textContent = body.ready ? `${rows.length} incident(s)` : "reading the topics…";
  refreshSide();
}

async function refreshSide() {
  const [ap, he] = await Promise.all([api("/api/approvals"), api("/api/health")]);
  const box = $("#approvals");
  if (box) {
    const acts = ap.body.actions || [];
    box.replaceChildren(ap.status !== 200
      ? el("span", { class: "error" }, ap.body.error || `the executor answered ${ap.status}`)
      : acts.length === 0 ? el("span", { class: "muted" }, "nothing waits")
      : el("table", {}, el("tbody", {}, ...acts.map((a) => el("tr", {},
          el("td", { class: "mono" }, a.id),
          el("td", {}, a.request?.action?.playbook || ""),
          el("td", {}, el("a", { href: `#/incidents/${a.request?.incident}` }, JSON.stringify(a.request?.action?.target || {}))))))));
  }
  const hb = $("#health");
  if (hb) {
    const ps = he.body.processes || [];
    hb.replaceChildren(...(ps.length ? ps.map(proc) : [el("span", { class: "muted" }, "no process watched (cascade console --watch URL)")]));
  }
}

function proc(p) {
  const f = p.facts || {};
  const facts = Object.entries(f).filter(([k]) => k !== "process")
    .map(([k, v]) => el("div", { class: "muted mono" }, `${k.replace(/^cascade_/, "")} ${Number(v)}`));
  return el("div", { class: `proc ${p.ready ? "up" : "down"}` },
    el("div", { class: "name" }, f.process || p.url),
    el("div", { class: "muted" }, p.ready ? "ready" : p.why || "not ready"), ...facts);
}

// ---- the report: cascade report's page, of what the console has read ----

async function showReport() {
  const since = el("select", { id: "since" }, ...["1d", "7d", "30d"].map((d) =>
    el("option", d === "7d" ? { value: d, selected: "" } : { value: d }, `last ${d}`)));
  const frame = el("iframe", { id: "report", title: "report" });
  const load = async () => {
    const r = await fetch(`/api/report?since=${since.value}`, { headers: { Authorization: `Bearer ${token}` } });
    frame.srcdoc = await r.text();
  };
  since.addEventListener("change", load);
  view().replaceChildren(el("h1", {}, "Report"), el("div", { class: "filters" }, since), frame);
  await load();
}

// ---- one incident ----

async function showIncident(id) {
  view().replaceChildren(el("p", { class: "muted" }, "loading…"));
  await drawIncident(id, true);
  timer = setInterval(() => drawIncident(id, false), 2000);
}

async function drawIncident(id, first) {
  const { status, body } = await api(`/api/incidents/${id}`);
  if (status !== 200) {
    view().replaceChildren(el("p", { class: "error" }, body.error || `status ${status}`), el("a", { href: "#/" }, "all incidents"));
    return;
  }
  const inc = body.incident;
  const msg = $("#decision")?.textContent || "";
  const root = (inc.chain || []).find((c) => c.role === "root") || inc.root_cause || {};
  view().replaceChildren(
    el("p", {}, el("a", { href: "#/" }, "← all incidents")),
    el("h1", {}, `${inc.scenario} `, el("span", { class: `status ${inc.merged_into ? "merged" : inc.status}` }, inc.merged_into ? "merged" : inc.status)),
    el("p", { class: "mono muted" }, `${inc.id} · ${where(inc.scope)} · cluster ${inc.scope?.cluster || "default"} · opened ${when(inc.opened)} · updated ${when(inc.updated)}`),
    el("div", { class: "panel" }, el("strong", {}, inc.summary || "")),
    el("h2", {}, "Chain: root cause → effects → symptoms"),
    el("div", { id: "graph" }, graph(inc)),
    root.signal ? el("div", {}, el("h2", {}, "The line that showed the root cause"), el("div", { class: "evidence mono", id: "evidence" }, root.signal)) : "",
    el("p", { class: "muted" }, `evidence: ${inc.evidence?.count ?? 0} signals from ${(inc.evidence?.sources || []).join(", ")}, ${when(inc.evidence?.first)} to ${when(inc.evidence?.last)}`),
    el("h2", {}, "Actions"),
    el("div", { class: "panel" }, actions(body.actions || []), el("span", { id: "decision", class: "msg" }, msg)),
    el("h2", {}, "Audit trail"),
    el("div", { class: "panel" }, audit(body.audit || [])));
}

function actions(list) {
  if (!list.length) return el("span", { class: "muted" }, "no action proposed");
  return el("table", { id: "actions" },
    el("thead", {}, el("tr", {}, ...["Action", "Playbook", "Approval", "Target", "State", ""].map((h) => el("th", {}, h)))),
    el("tbody", {}, ...list.map((a) => el("tr", { "data-action": a.id },
      el("td", { class: "mono" }, a.id),
      el("td", {}, a.playbook),
      el("td", {}, a.approval),
      el("td", { class: "mono" }, JSON.stringify(a.target || {})),
      el("td", { class: `state ${a.state}` }, a.state + (a.by && a.by !== "engine" ? ` (${a.by})` : "")),
      el("td", {}, a.state === "waiting" ? [
        el("button", { class: "approve", "data-action": a.id, onclick: () => decide(a.id, true) }, "Approve"), " ",
        el("button", { class: "deny", "data-action": a.id, onclick: () => decide(a.id, false) }, "Deny")] : "")))));
}

async function decide(id, approve) {
  let reason = "approved in the console";
  if (!approve) {
    reason = prompt("Why deny it? (the audit keeps the reason)") || "";
    if (!reason) return;
  }
  const { status, body } = await api(`/api/actions/${id}/${approve ? "approve" : "deny"}`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ reason }) });
  const m = $("#decision");
  if (m) {
    m.className = status === 200 ? "msg ok" : "msg error";
    m.textContent = status === 200 ? `${body.decision} by ${body.by}` : body.error || `status ${status}`;
  }
}

function audit(recs) {
  if (!recs.length) return el("span", { class: "muted" }, "no record yet");
  return el("table", { id: "audit" },
    el("thead", {}, el("tr", {}, ...["Time", "Action", "Event", "Who", "Detail"].map((h) => el("th", {}, h)))),
    el("tbody", {}, ...recs.map((r) => el("tr", {},
      el("td", { class: "mono" }, when(r.ts)), el("td", { class: "mono" }, r.action || ""),
      el("td", {}, r.event), el("td", {}, r.who), el("td", {}, r.detail || "")))));
}

// The chain as a graph: the root at the left, the jobs it broke in the
// middle, the jobs that only showed symptoms at the right.
function graph(inc) {
  const NS = "http://www.w3.org/2000/svg";
  const s = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const chain = inc.chain && inc.chain.length ? inc.chain : [{ role: "root", ...(inc.root_cause || {}) }];
  const root = chain.find((c) => c.role === "root") || chain[0];
  const effects = chain.filter((c) => c.role === "effect");
  const symptoms = chain.filter((c) => c.role === "symptom");
  const W = 250, H = 46, gap = 14, colX = [20, 340, 660];
  const rows = Math.max(1, effects.length, symptoms.length);
  const height = Math.max(H + 40, rows * (H + gap) + 30);
  const svg = s("svg", { viewBox: `0 0 940 ${height}`, height, role: "img", "aria-label": "incident chain" });
  const rootY = height / 2 - H / 2;
  const box = (x, y, cls, title, sub) => {
    const g = s("g", { class: `node ${cls}`, transform: `translate(${x},${y})` });
    g.append(s("rect", { width: W, height: H, rx: 6 }), s("text", { x: 10, y: 19 }, title), s("text", { x: 10, y: 36, class: "sub" }, sub));
    svg.append(g);
  };
  const column = (list, x, cls) => list.forEach((c, i) => {
    const y = 15 + i * (H + gap);
    svg.append(s("path", { class: `edge ${cls}`, d: `M${colX[0] + W},${rootY + H / 2} C${x - 60},${rootY + H / 2} ${x - 60},${y + H / 2} ${x},${y + H / 2}` }));
    box(x, y, cls, `job ${c.job}${c.state ? ` ${c.state}` : ""}`, when(c.ts));
  });
  column(effects, colX[1], "effect");
  column(symptoms, colX[2], "symptom");
  box(colX[0], rootY, "root", root.scenario || inc.scenario, [root.node && `node ${root.node}`, root.job && `job ${root.job}`, when(root.ts)].filter(Boolean).join(" · "));
  return svg;
}

start();
