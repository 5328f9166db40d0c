// Launch the system Chromium through playwright-core and serve the test page from one loopback
// port; data servers run on others, so every data request is cross-origin.
import { chromium } from "playwright-core";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer } from "../server.mjs";

export const JS_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export async function openPage(pageName = "page.html") {
  const pageServer = await startServer({ root: JS_ROOT });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: CHROMIUM_ARGS,
  });
  const page = await browser.newPage();
  const consoleLines = [];
  page.on("console", (m) => consoleLines.push(m.text()));
  page.on("pageerror", (e) => consoleLines.push(String(e)));
  await page.goto(`${pageServer.url}/test/browser/${pageName}`);
  await page.waitForFunction(() => window.__ready === true, null, { timeout: 20000 });
  return {
    page,
    consoleLines,
    async close() {
      await browser.close();
      await pageServer.close();
    },
  };
}
