// Read arrays through the store with the grouped view (default) and without it (groupedView: 0),
// for tests-integration/test_js_grouped_view.py: the zarr.json each shows, and a dense read of
// each array through zarrita with the requests it cost, counted at the test server.
//
// Usage: node test/grouped-view-check.mjs ROOT REFS PLACEHOLDER PATH...
//   ROOT         folder the test server serves (the references and the source files)
//   REFS         the references, relative to ROOT (a refs.json file or a folder)
//   PLACEHOLDER  the URL prefix the references name the sources under; read from the server
// Prints JSON: {path: {grouped: {zarr_json, requests, bytes, reads, calls, milliseconds, shape,
// stride, data}, stored: {…}}}: `calls` are zarrita's calls of the store, `data` the values as
// zarrita returns them, base64; {zarr_json, error} when the read fails (the error's class name).
import * as zarr from "zarrita";
import { ReferenceStore } from "shadowzarr";
import { startServer } from "./server.mjs";

const [root, refs, placeholder, ...paths] = process.argv.slice(2);
const server = await startServer({ root });
const resolveUrl = async (url) =>
  url.startsWith(placeholder) ? `${server.url}/${url.slice(placeholder.length)}` : url;

async function readWith(options, path) {
  const store = await ReferenceStore.fromUrl(`${server.url}/${refs}`, { resolveUrl, ...options });
  const zarrJson = new TextDecoder().decode(await store.get(`/${path}/zarr.json`));
  // the calls zarrita makes of the store (get and getRange), next to the server's requests
  let calls = 0;
  const counted = {
    get: (key, opts) => (calls++, store.get(key, opts)),
    getRange: (key, range, opts) => (calls++, store.getRange(key, range, opts)),
  };
  const array = await zarr.open.v3(zarr.root(counted).resolve(path), { kind: "array" });
  server.reset();
  calls = 0;
  const started = performance.now();
  let chunk;
  try {
    chunk = await zarr.get(array, null);
  } catch (error) {
    // the store's typed error (zarrita may wrap it as the cause of its own)
    const cause = error?.cause instanceof Error ? error.cause : error;
    return { zarr_json: zarrJson, error: cause?.name ?? String(cause) };
  }
  const milliseconds = performance.now() - started;
  const data = chunk.data;
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return {
    zarr_json: zarrJson,
    requests: server.counters.requests,
    bytes: server.counters.bytes,
    reads: store.stats.reads,
    calls,
    milliseconds,
    shape: chunk.shape,
    stride: chunk.stride,
    data: Buffer.from(bytes).toString("base64"),
  };
}

const out = {};
try {
  for (const path of paths) {
    out[path] = {
      grouped: await readWith({}, path),
      stored: await readWith({ groupedView: 0 }, path),
    };
  }
} finally {
  await server.close();
}
process.stdout.write(JSON.stringify(out));
