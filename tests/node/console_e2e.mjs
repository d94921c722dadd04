// The console in headless Chromium (Debian's, driven by playwright-core),
// as an operator uses it: sign in with a token, see the incidents, see a
// new one appear without a reload, open one and see its chain drawn,
// approve the drain that waits for a human, and see the audit say who.
// A screenshot of each page goes to SHOTS. Prints what it saw as JSON for
// the shell test (tests/integration/console.sh) to judge.
//
// usage: node console_e2e.mjs URL TOKEN SHOTS NODE -- INGEST_COMMAND...
//   NODE: the node whose incident's drain is approved; the command after
//   -- is run once the list is shown (it feeds more incidents).
import { chromium } from "playwright-core";
import { execFileSync } from "node:child_process";

const [url, token, shots, node, dashdash, ...ingest] = process.argv.slice(2);
if (!url || dashdash !== "--" || !ingest.length) {
  console.error("usage: console_e2e.mjs URL TOKEN SHOTS NODE -- INGEST_COMMAND...");
  process.exit(2);
}
const out = {};
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("requestfailed", (r) => { if (!r.url().startsWith(url)) errors.push(`elsewhere: ${r.url()}`); });
  page.on("request", (r) => { if (!r.url().startsWith(url)) errors.push(`asked elsewhere: ${r.url()}`); });

  await page.goto(url);
  await page.fill("#token", "not-a-token");
  await page.click("#login button");
  await page.waitForSelector("#login-error:has-text('not known')");
  out.refused = await page.textContent("#login-error");
  await page.fill("#token", token);
  await page.click("#login button");
  await page.waitForSelector("#incidents tbody tr[data-id]", { timeout: 30000 });
  out.who = await page.textContent("#who");
  out.before = await page.locator("#incidents tbody tr[data-id]").count();
  await page.waitForSelector("#health .proc.up", { timeout: 30000 });
  await page.waitForSelector("#approvals table", { timeout: 30000 });
  out.health = await page.locator("#health .proc").count();
  out.waiting = await page.locator("#approvals tr").count();
  await page.evaluate(() => { window.notReloaded = true; });
  await page.screenshot({ path: `${shots}/console-incidents.png`, fullPage: true });

  // more incidents arrive while the page is open
  execFileSync(ingest[0], ingest.slice(1), { stdio: "ignore" });
  await page.waitForFunction((n) => document.querySelectorAll("#incidents tbody tr[data-id]").length > n,
    out.before, { timeout: 30000 });
  out.after = await page.locator("#incidents tbody tr[data-id]").count();
  out.notReloaded = await page.evaluate(() => window.notReloaded === true);
  out.fresh = await page.locator("#incidents tbody tr.fresh").count();

  // the incident of NODE: its chain, its drain
  await page.click(`#incidents tbody tr[data-id]:has(td:text-is("node ${node}"))`);
  await page.waitForSelector("#graph svg g.node.root");
  out.graph = {
    root: await page.locator("#graph g.node.root text").first().textContent(),
    effects: await page.locator("#graph g.node.effect").count(),
    edges: await page.locator("#graph path.edge").count(),
  };
  out.incident = page.url().split("#/incidents/")[1];
  const drain = page.locator("#actions tbody tr", { has: page.locator("td", { hasText: /^node\.drain$/ }) });
  out.drain = await drain.getAttribute("data-action");
  out.drainBefore = await drain.locator("td.state").textContent();
  await page.screenshot({ path: `${shots}/console-incident.png`, fullPage: true });

  await page.click(`button.approve[data-action="${out.drain}"]`);
  await page.waitForSelector("#decision.ok", { timeout: 30000 });
  out.decision = await page.textContent("#decision");
  await page.waitForSelector(`#audit tbody tr:has(td:text-is("approved")):has(td:text-is("human:alice"))`, { timeout: 30000 });
  await page.waitForSelector(`#actions tbody tr[data-action="${out.drain}"] td.state.done`, { timeout: 60000 });
  out.drainAfter = await page.locator(`#actions tbody tr[data-action="${out.drain}"] td.state`).textContent();
  out.auditEvents = await page.locator("#audit tbody tr").evaluateAll((rows, d) =>
    rows.filter((r) => r.children[1].textContent === d).map((r) => `${r.children[2].textContent}/${r.children[3].textContent}`), out.drain);
  await page.screenshot({ path: `${shots}/console-approved.png`, fullPage: true });

  // the report of what the console has read, with the approval in it
  await page.click("header a[href='#/report']");
  const report = page.frameLocator("#report");
  await report.locator("svg#chart-days").waitFor({ timeout: 30000 });
  await report.locator("svg#chart-actions").waitFor({ timeout: 30000 });
  out.report = {
    charts: await report.locator("svg.chart").count(),
    incidents: await report.locator("#n-incidents").textContent(),
    approved: await report.locator(".card", { hasText: "approved by people" }).locator("b").textContent(),
  };
  await page.screenshot({ path: `${shots}/console-report.png`, fullPage: true });
  out.errors = errors;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
