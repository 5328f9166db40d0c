// Drive a catalog page in headless Chromium for test_catalog_page.py: the rows as shown, the
// order after a click on a column, one asset's tree after a click on its row, a screenshot;
// and the same page from file:// (table only). Prints one JSON object.
//
//   node catalog_page.mjs <js dir> <page url> <file url> <asset id> <sort column> <screenshot>
import { createRequire } from "node:module";
import { join } from "node:path";

const [jsDir, pageUrl, fileUrl, assetId, sortColumn, screenshot] = process.argv.slice(2);
const require = createRequire(join(jsDir, "package.json"));
const { chromium } = require("playwright-core");

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"],
});
const out = { console: [], requests: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on("console", (m) => out.console.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => out.console.push(`pageerror: ${e}`));
  page.on("request", (r) => out.requests.push(r.url()));
  page.on("response", (r) => r.status() >= 400 && out.console.push(`error: ${r.status()} ${r.url()}`));
  await page.goto(pageUrl);
  await page.waitForSelector("body[data-ready=true]", { timeout: 20000 });
  const ids = () =>
    page.$$eval("#catalog tbody tr", (rows) => rows.map((r) => r.dataset.assetId));
  out.rows = await ids();
  out.cells = await page.$$eval("#catalog tbody tr", (rows) =>
    rows.map((r) => [...r.cells].map((c) => c.textContent)),
  );
  out.headers = await page.$$eval("#catalog th", (hs) => hs.map((h) => h.dataset.key));
  out.links = await page.$$eval("#catalog tbody tr", (rows) =>
    rows.map((r) => [r.dataset.assetId, r.querySelector("a")?.href ?? null]),
  );
  await page.click(`#catalog th[data-key="${sortColumn}"]`);
  out.sortedAscending = await ids();
  await page.click(`#catalog th[data-key="${sortColumn}"]`);
  out.sortedDescending = await ids();
  out.sortState = await page.getAttribute(`#catalog th[data-key="${sortColumn}"]`, "aria-sort");

  await page.click(`#catalog tbody tr[data-asset-id="${assetId}"]`);
  await page.waitForSelector("#tree[data-state=shown], #tree[data-state=error]", {
    timeout: 30000,
  });
  out.treeState = await page.getAttribute("#tree", "data-state");
  out.treeText = await page.textContent("#tree");
  out.tree = await page.$$eval("#tree li", (items) =>
    items.map((li) => {
      const path = [];
      for (let n = li; n && n.id !== "tree"; n = n.parentElement) {
        if (n.tagName === "LI") path.unshift(n.dataset.name);
      }
      return { path: path.join("/"), kind: li.className, shape: li.dataset.shape ?? null };
    }),
  );
  await page.screenshot({ path: screenshot, fullPage: false });

  const local = await browser.newPage();
  local.on("pageerror", (e) => out.console.push(`file pageerror: ${e}`));
  await local.goto(fileUrl);
  await local.waitForSelector("body[data-ready=true]", { timeout: 20000 });
  out.fileRows = await local.$$eval("#catalog tbody tr", (rows) => rows.length);
  await local.click(`#catalog tbody tr[data-asset-id="${assetId}"]`);
  await local.waitForSelector("#tree[data-state=error]", { timeout: 20000 });
  out.fileTreeText = await local.textContent("#tree");
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
