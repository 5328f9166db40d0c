// How maxMergeSize affects reading 82 neighbouring ~100 kB chunks of one file behind 20 ms of
// latency per request, in Node and in headless Chromium (page and data on different ports).
// Prints requests and the median time of 4 reads per setting.
//   npm run bench            (builds first)      LATENCY_MS=20 REPEATS=4 to change
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as zarr from "zarrita";
import { ReferenceStore } from "shadowzarr";
import { fork } from "node:child_process";
import { openPage } from "../test/browser/chromium.mjs";

const CHUNKS = 82;
const CHUNK_SAMPLES = 50_000; // int16: 100 kB per chunk
const LATENCY_MS = Number(process.env.LATENCY_MS ?? 20);
const REPEATS = Number(process.env.REPEATS ?? 4);
const SETTINGS = [0, 256 * 1024, 1024 * 1024, 4 * 1024 * 1024];

const dir = mkdtempSync(join(tmpdir(), "shadowzarr-bench-"));
writeFileSync(join(dir, "lfp.bin"), randomBytes(CHUNKS * CHUNK_SAMPLES * 2));
const child = fork(new URL("./serve.mjs", import.meta.url), [
  JSON.stringify({ root: dir, latencyMs: LATENCY_MS, cors: "full" }),
]);
const next = () => new Promise((resolve) => child.once("message", resolve));
const server = {
  url: (await next()).url,
  reset: async () => child.send({ cmd: "reset" }),
  ranges: async () => {
    const reply = next();
    child.send({ cmd: "counters" });
    return (await reply).counters.ranges;
  },
  close: async () => child.send({ cmd: "close" }),
};

function references(url) {
  const meta = {
    zarr_format: 3,
    node_type: "array",
    shape: [CHUNKS * CHUNK_SAMPLES],
    data_type: "int16",
    chunk_grid: { name: "regular", configuration: { chunk_shape: [CHUNK_SAMPLES] } },
    chunk_key_encoding: { name: "default", configuration: { separator: "/" } },
    fill_value: 0,
    codecs: [{ name: "bytes", configuration: { endian: "little" } }],
    attributes: {},
  };
  const refs = {
    "zarr.json": JSON.stringify({ zarr_format: 3, node_type: "group", attributes: {} }),
    "lfp/zarr.json": JSON.stringify(meta),
  };
  for (let i = 0; i < CHUNKS; i++)
    refs[`lfp/c/${i}`] = [url, i * CHUNK_SAMPLES * 2, CHUNK_SAMPLES * 2];
  return { version: 1, refs };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

async function nodeRead(maxMergeSize) {
  const store = new ReferenceStore(references(`${server.url}/lfp.bin`), { maxMergeSize });
  const array = await zarr.open.v3(zarr.root(store).resolve("lfp"), { kind: "array" });
  const t0 = performance.now();
  const result = await zarr.get(array, null);
  if (result.data.length !== CHUNKS * CHUNK_SAMPLES) throw new Error("short read");
  return performance.now() - t0;
}

async function browserRead(page, maxMergeSize) {
  return page.evaluate(
    async ({ refs, maxMergeSize }) => {
      const { zarr, shadowzarr } = window.sz;
      const store = new shadowzarr.ReferenceStore(refs, { maxMergeSize });
      const array = await zarr.open.v3(zarr.root(store).resolve("lfp"), { kind: "array" });
      const t0 = performance.now();
      await zarr.get(array, null);
      return performance.now() - t0;
    },
    { refs: references(`${server.url}/lfp.bin`), maxMergeSize },
  );
}

const rows = [];
const browser = await openPage();
try {
  for (const maxMergeSize of SETTINGS) {
    const row = { maxMergeSize };
    for (const [where, read] of [
      ["node", nodeRead],
      ["chromium", (m) => browserRead(browser.page, m)],
    ]) {
      await read(maxMergeSize); // warm-up: connections, codecs
      const times = [];
      let requests = 0;
      for (let r = 0; r < REPEATS; r++) {
        await server.reset();
        times.push(await read(maxMergeSize));
        requests = await server.ranges();
      }
      row[`${where}Requests`] = requests;
      row[`${where}Ms`] = Math.round(median(times));
    }
    rows.push(row);
  }
} finally {
  await browser.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}

const label = (n) =>
  n === 0 ? "0 (off)" : n >= 1 << 20 ? `${n / (1 << 20)} MiB` : `${n / 1024} KiB`;
console.log(
  `${CHUNKS} chunks of ${CHUNK_SAMPLES * 2} bytes, ${LATENCY_MS} ms latency per request, ` +
    `median of ${REPEATS} reads`,
);
console.log("maxMergeSize\trequests\tNode\tChromium (requests)");
for (const r of rows) {
  console.log(
    `${label(r.maxMergeSize)}\t${r.nodeRequests}\t${r.nodeMs} ms\t${r.chromiumMs} ms (${r.chromiumRequests})`,
  );
}
