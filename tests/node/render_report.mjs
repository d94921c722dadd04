// A report page (cascade report's HTML) rendered in headless Chromium
// (Debian's, driven by playwright-core): how many charts it drew and how
// many marks each has, whether it asked for anything, and a screenshot.
//
// usage: node render_report.mjs FILE.html SHOT.png
import { chromium } from "playwright-core";

const [file, shot] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const out = { requests: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on("request", (r) => { if (!r.url().startsWith("file:")) out.requests.push(r.url()); });
  await page.goto(`file://${file}`);
  out.charts = await page.locator("svg.chart").evaluateAll((svgs) => Object.fromEntries(
    svgs.map((s) => [s.id, s.querySelectorAll("rect").length])));
  out.lemons = await page.locator("#lemons tr").evaluateAll((rows) => rows.slice(1).map((r) => r.textContent));
  out.incidents = await page.textContent("#n-incidents");
  out.shadow = (await page.locator("#shadow").count()) ? await page.textContent("#shadow") : null;
  if (shot) await page.screenshot({ path: shot, fullPage: true });
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
