// The same reads in headless Chromium: page on one loopback port, data on others (cross-origin)
// with CORS variants; request counts asserted from the data servers' counters.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { join } from "node:path";
import { caseFiles, jsErrorName, load, writeCaseDirectory } from "../conformance.mjs";
import { expectedRead } from "../conformance-run.mjs";
import { FIXTURES, manifest } from "../fixtures.mjs";
import { startServer } from "../server.mjs";
import { openPage } from "./chromium.mjs";

let browser;
const servers = {};
before(async () => {
  browser = await openPage();
  for (const cors of ["full", "noexpose", "rangeonly", "none"]) {
    servers[cors] = await startServer({ root: FIXTURES, cors });
  }
});
after(async () => {
  await browser?.close();
  for (const s of Object.values(servers)) await s.close();
});

/** Read every array of every fixture in the page; returns failures per refs. */
function compareInPage(data, options) {
  return browser.page.evaluate(
    async ({ data, manifest, options }) => {
      const { zarr, shadowzarr, readAndCompareAll } = window.sz;
      const out = [];
      for (const section of Object.values(manifest)) {
        if (section.arrays === undefined) continue;
        for (const refs of [section.refs].flat()) {
          try {
            const resolveUrl = section.placeholder
              ? async (u) => u.replace(section.placeholder, `${data}/`)
              : undefined;
            const store = await shadowzarr.ReferenceStore.fromUrl(`${data}/${refs}`, {
              ...options,
              resolveUrl,
            });
            const r = await readAndCompareAll({ zarr, store, base: data, section });
            out.push({ refs, checked: r.checked, failures: r.failures });
          } catch (error) {
            out.push({ refs, error: `${error.name}: ${error.message}` });
          }
        }
      }
      return out;
    },
    { data, manifest, options },
  );
}

describe("Chromium", () => {
  test("the format's conformance suite: every case as in Node and Python", async () => {
    // The case directories are served cross-origin (CORS allows Range, exposes Content-Range).
    const root = join(FIXTURES, "conformance-browser");
    const suites = {};
    for (const name of ["documents", "malformed", "attributes", "types"]) {
      suites[name] = load(name).cases.map((c, i) => {
        writeCaseDirectory(c, join(root, `${name}-${i}`));
        return { ...c, dir: `${name}-${i}` };
      });
    }
    const expressions = load("gen_expressions");
    const got = await browser.page.evaluate(
      async ({ data, expressions, suites }) => {
        const { zarr, shadowzarr } = window.sz;
        const o = await import("/test/conformance-outcomes.mjs");
        const openCase = async (c) => {
          const base = `${data}/${c.dir}/`;
          const requests = [];
          const fetch = o.loggingFetch(base, requests, (r) => globalThis.fetch(r));
          const options = { fetch, groupedView: 0 }; // keys as stored, as the Python side
          return { store: await shadowzarr.ReferenceStore.fromUrl(base, options), requests };
        };
        const out = {
          gen_expressions: expressions.cases.map((c) =>
            o.expressionOutcome(shadowzarr.compileExpression, c, expressions.variables),
          ),
          documents: [],
          malformed: [],
          attributes: [],
          types: [],
        };
        for (const c of suites.documents) out.documents.push(await o.documentOutcomes(openCase, c));
        for (const c of suites.malformed) out.malformed.push(await o.malformedOutcome(openCase, c));
        for (const c of suites.attributes) {
          out.attributes.push(
            await o.attributeOutcome(openCase, zarr, shadowzarr.decodeAttributes, c),
          );
        }
        for (const c of suites.types) {
          out.types.push(await o.typesOutcome(openCase, zarr, shadowzarr, c));
        }
        return out;
      },
      { data: `${servers.full.url}/conformance-browser`, expressions, suites },
    );
    const failures = [];
    const compare = (where, value, wanted) => {
      try {
        assert.deepEqual(value, wanted);
      } catch {
        failures.push({ where, value, wanted });
      }
    };
    expressions.cases.forEach((c, i) =>
      compare(
        `gen_expressions ${i}`,
        got.gen_expressions[i],
        "value" in c ? { value: c.value } : { error: jsErrorName(c.error), stage: c.stage },
      ),
    );
    suites.documents.forEach((c, i) => {
      const files = caseFiles(c);
      c.reads.forEach((read, r) =>
        compare(
          `documents ${i} ${read.key}`,
          got.documents[i][r],
          expectedRead(read, files, jsErrorName),
        ),
      );
    });
    suites.malformed.forEach((c, i) =>
      compare(`malformed ${i} ${c.name}`, got.malformed[i], { error: jsErrorName(c.error) }),
    );
    suites.attributes.forEach((c, i) =>
      compare(
        `attributes ${i} ${c.name}`,
        got.attributes[i],
        "error" in c.expect ? { error: jsErrorName(c.expect.error) } : c.expect,
      ),
    );
    suites.types.forEach((c, i) =>
      compare(
        `types ${i} ${c.name}`,
        got.types[i],
        "error" in c.expect ? { error: jsErrorName(c.expect.error) } : c.expect,
      ),
    );
    assert.deepEqual(failures, []);
  });

  test("every fixture array equals h5py/numpy (CORS allows If-Match, exposes headers)", async () => {
    const server = servers.full;
    server.reset();
    const results = await compareInPage(server.url, {});
    for (const r of results) {
      assert.equal(r.error, undefined, r.refs);
      assert.deepEqual(r.failures, [], r.refs);
      assert.ok(r.checked > 0);
    }
    // If-Match makes every cross-origin range request preflighted (not cached by Chromium)
    assert.ok(server.counters.options > 0);
  });

  test("struct arrays with fixed-length string fields: fields equal what h5py reads", async () => {
    const section = manifest.struct_text;
    const data = servers.full.url;
    const failures = await browser.page.evaluate(
      async ({ data, section }) => {
        const { zarr, shadowzarr, readAndCompareStructs } = window.sz;
        const store = await shadowzarr.ReferenceStore.fromUrl(`${data}/${section.refs}`, {
          resolveUrl: async (u) => u.replace(section.placeholder, `${data}/`),
        });
        const decodeStruct = shadowzarr.decodeStruct;
        return readAndCompareStructs({ zarr, store, section, decodeStruct });
      },
      { data, section },
    );
    assert.deepEqual(failures, []);
  });

  test("headers not exposed: lengths are still checked, values still equal", async () => {
    const results = await compareInPage(servers.noexpose.url, {});
    for (const r of results) assert.deepEqual([r.error, r.failures], [undefined, []], r.refs);
  });

  test("merging across keys in the browser: request counts", async () => {
    const server = servers.full;
    const counts = {};
    for (const maxMergeSize of [0, 1024, 1 << 20]) {
      server.reset();
      const failure = await browser.page.evaluate(
        async ({ data, entry, maxMergeSize }) => {
          const { zarr, shadowzarr, compareResult, loadExpected } = window.sz;
          const store = await shadowzarr.ReferenceStore.fromUrl(`${data}/refs/raw.shadowzarr/`, {
            maxMergeSize,
            validateSources: false,
          });
          const array = await zarr.open.v3(zarr.root(store).resolve(entry.path), { kind: "array" });
          const result = await zarr.get(array, null);
          return compareResult(result, await loadExpected(data, entry), entry.shape);
        },
        {
          data: server.url,
          entry: manifest.raw.arrays.find((a) => a.path === "small_chunks"),
          maxMergeSize,
        },
      );
      assert.equal(failure, null);
      counts[maxMergeSize] = server.counters.ranges;
      // without If-Match, a single bytes=a-b range needs no preflight
      assert.equal(server.counters.options, 0);
    }
    assert.deepEqual(counts, { 0: 64, 1024: 8, [1 << 20]: 1 });
  });

  test("a server whose CORS does not allow If-Match: the documented error, or validateSources: false", async () => {
    const data = servers.rangeonly.url;
    const outcome = await browser.page.evaluate(
      async ({ data }) => {
        const { shadowzarr } = window.sz;
        const read = async (options) => {
          const store = await shadowzarr.ReferenceStore.fromUrl(
            `${data}/refs/raw.shadowzarr/`,
            options,
          );
          try {
            return { length: (await store.get("/small_chunks/c/0")).length };
          } catch (error) {
            return {
              name: error.name,
              message: error.message,
              isShadowzarr: error instanceof shadowzarr.SourceUnavailableError,
            };
          }
        };
        // keys as stored (groupedView: 0): the test reads one stored chunk
        const strict = await read({ groupedView: 0 });
        return { strict, off: await read({ validateSources: false, groupedView: 0 }) };
      },
      { data },
    );
    assert.equal(outcome.strict.name, "SourceUnavailableError");
    assert.ok(outcome.strict.isShadowzarr);
    assert.match(outcome.strict.message, /CORS/);
    assert.match(outcome.strict.message, /validateSources: false/);
    assert.deepEqual(outcome.off, { length: 128 });
  });

  test("ifMatch: false: no preflights, a changed file is still caught from the ETag", async () => {
    const server = servers.full;
    server.reset();
    const outcome = await browser.page.evaluate(
      async ({ data }) => {
        const { shadowzarr } = window.sz;
        const url = `${data}/refs/raw.shadowzarr/refs.json`;
        const rfs = await (await fetch(url)).json();
        const base = `${data}/refs/raw.shadowzarr/`;
        const good = new shadowzarr.ReferenceStore(rfs, {
          baseUrl: base,
          ifMatch: false,
          groupedView: 0,
        });
        const length = (await good.get("/small_chunks/c/0")).length;
        for (const info of Object.values(rfs.sources)) info.etag = '"changed"';
        const changed = new shadowzarr.ReferenceStore(rfs, {
          baseUrl: base,
          ifMatch: false,
          groupedView: 0,
        });
        try {
          await changed.get("/small_chunks/c/0");
          return { length, error: null };
        } catch (error) {
          return { length, error: error.name };
        }
      },
      { data: server.url },
    );
    assert.deepEqual(outcome, { length: 128, error: "SourceChangedError" });
    assert.equal(server.counters.options, 0);
    assert.equal(server.counters.status412, 0);
  });

  test("a server without CORS headers: SourceUnavailableError naming CORS", async () => {
    const outcome = await browser.page.evaluate(
      async ({ data }) => {
        try {
          await window.sz.shadowzarr.ReferenceStore.fromUrl(`${data}/refs/hdf5.json`);
          return { ok: true };
        } catch (error) {
          return { name: error.name, message: error.message };
        }
      },
      { data: servers.none.url },
    );
    assert.equal(outcome.name, "SourceUnavailableError");
    assert.match(outcome.message, /CORS/);
  });

  test("DANDI redirect in a browser: opaque, followed once with a 1-byte range request", async () => {
    const server = servers.full;
    server.reset();
    const result = await browser.page.evaluate(
      async ({ data }) => {
        const { shadowzarr } = window.sz;
        const dandi = "https://api.dandiarchive.org/api/assets/small_chunks.bin/download/";
        const routed = (request) =>
          fetch(
            new Request(
              request.url.replace("https://api.dandiarchive.org", `${data}/dandi`),
              request,
            ),
          );
        const refs = {
          version: 1,
          templates: { u0: dandi },
          refs: Object.fromEntries(
            Array.from({ length: 6 }, (_, i) => [`c${i}`, ["{{u0}}", i * 128, 128]]),
          ),
        };
        const store = new shadowzarr.ReferenceStore(refs, { fetch: routed });
        const a = await Promise.all([0, 1, 2].map((i) => store.get(`/c${i}`)));
        const b = await store.get("/c5");
        return { lengths: [...a, b].map((x) => x.length) };
      },
      { data: server.url },
    );
    assert.deepEqual(result.lengths, [128, 128, 128, 128]);
    // the manual probe (opaque to the page) and the 1-byte follow hit the redirect; the chunks
    // then go straight to the target: one merged request for c0..c2, one for c5
    assert.equal(server.counters.redirects, 2);
    assert.equal(server.counters.ranges, 3);
  });

  test("under a strict CSP (no 'unsafe-eval'): gen arithmetic, selections, padding still read", async () => {
    const csp = await openPage("page-csp.html");
    try {
      const outcome = await csp.page.evaluate(
        async ({ data, section }) => {
          const { zarr, shadowzarr, readAndCompareAll } = window.sz;
          // probed by the page's own module script: code the page runs is subject to its CSP
          const evalAllowed = window.__evalAllowed;
          const arrays = section.arrays.filter((a) =>
            ["records", "padded", "stacked", "transposed", "small_chunks"].includes(a.path),
          );
          const store = await shadowzarr.ReferenceStore.fromUrl(`${data}/${section.refs[0]}`);
          const r = await readAndCompareAll({ zarr, store, base: data, section: { arrays } });
          return { evalAllowed, ...r };
        },
        { data: servers.full.url, section: manifest.raw },
      );
      assert.equal(outcome.evalAllowed, false);
      assert.deepEqual(outcome.failures, []);
      assert.equal(outcome.checked, 5);
    } finally {
      await csp.close();
    }
  });
});
