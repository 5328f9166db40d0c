// A dense read through zarrita with the grouped view (the default) and without it
// (groupedView: 0): requests counted at the test server, zarrita's calls of the store, and the
// median time (wall and this process's CPU, which includes the in-process test server) of REPEATS
// reads per setting, alternating, with LATENCY_MS per request; then one element read the same
// ways (`point`: requests, bytes and calls). Prints JSON
// (tools/bench/results/js/2026-12-07-grouped-view.json). STORE=path/to/dist/index.js measures
// another build of the store (an A/B of two builds in one run).
//
//   node --expose-gc bench/grouped_view.mjs ROOT REFS PLACEHOLDER PATH...   (after npm run build)
// ROOT holds the references REFS and their source files, named under the URL prefix
// PLACEHOLDER; tests-integration/test_js_grouped_view.py's write_hdf5 writes such a file.
import { loadavg } from "node:os";
import * as zarr from "zarrita";
import { startServer } from "../test/server.mjs";

const { ReferenceStore } = await import(process.env.STORE ?? "shadowzarr");

const [root, refs, placeholder, ...paths] = process.argv.slice(2);
const latencyMs = Number(process.env.LATENCY_MS ?? 0);
const repeats = Number(process.env.REPEATS ?? 7);
const server = await startServer({ root, latencyMs });
const resolveUrl = async (url) =>
  url.startsWith(placeholder) ? `${server.url}/${url.slice(placeholder.length)}` : url;
const settings = { grouped: {}, stored: { groupedView: 0 } };
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const out = { refs, latencyMs, repeats, loadStart: loadavg()[0], arrays: {} };
for (const path of paths) {
  const runs = { grouped: [], stored: [] };
  const point = {};
  for (let i = 0; i <= repeats; i++) {
    for (const [name, options] of Object.entries(settings)) {
      const store = await ReferenceStore.fromUrl(`${server.url}/${refs}`, {
        resolveUrl,
        ...options,
      });
      let calls = 0;
      const counted = {
        get: (key, opts) => (calls++, store.get(key, opts)),
        getRange: (key, range, opts) => (calls++, store.getRange(key, range, opts)),
      };
      const array = await zarr.open.v3(zarr.root(counted).resolve(path), { kind: "array" });
      server.reset();
      calls = 0;
      if (i === repeats) {
        // one element in the middle of the array, on a fresh store
        await zarr.get(
          array,
          array.shape.map((n) => Math.floor(n / 2)),
        );
        point[name] = { requests: server.counters.requests, bytes: server.counters.bytes, calls };
        continue;
      }
      // the garbage of opening the store (and of the read before) collected first: without it
      // the setting read first in each pair paid for it, about 1.5x on one JSON file
      globalThis.gc?.();
      const cpu = process.cpuUsage();
      const started = performance.now();
      await zarr.get(array, null);
      const ms = performance.now() - started;
      const used = process.cpuUsage(cpu);
      runs[name].push({
        ms,
        cpuMs: (used.user + used.system) / 1000,
        calls,
        requests: server.counters.requests,
        bytes: server.counters.bytes,
      });
    }
  }
  out.arrays[path] = Object.fromEntries(
    Object.entries(runs).map(([name, r]) => [
      name,
      {
        requests: r[0].requests,
        bytes: r[0].bytes,
        calls: r[0].calls,
        medianMs: Math.round(median(r.map((x) => x.ms))),
        medianCpuMs: Math.round(median(r.map((x) => x.cpuMs))),
        point: point[name],
      },
    ]),
  );
}
out.loadEnd = loadavg()[0];
await server.close();
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
