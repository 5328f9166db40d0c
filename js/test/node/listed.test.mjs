// Chunks listed in one JSON file, held as a chunk manifest's columns (listed-table.ts): which
// arrays get a table is the Python reader's rule (`ListedRefs`, `Resolver.listed_table`), the
// grouped view packs their stored chunks as it packs a manifest's, and a hostile listing (mixed
// files, missing entries, entries of another form, bad sizes) never shows wrong values: the
// array is shown as stored or the read fails with a typed error, as the stored read does.
// tests-integration/test_js_grouped_view.py compares the zarr.json documents with Python's.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import * as zarr from "zarrita";
import {
  ChunkDecodeError,
  parseJson,
  ReferenceFormatError,
  ReferenceStore,
  SourceError,
} from "shadowzarr";
import { listedTables, MIN_COLUMN_CHUNKS } from "../../dist/listed-table.js";
import { References } from "../../dist/references.js";
import { startServer } from "../server.mjs";

const CHUNKS = 100; // stored chunks of 8 int32 (32 bytes): one pack of all of them
const CHUNK = 8;
const metadata = (
  shape,
  chunks,
  codecs = [{ name: "bytes", configuration: { endian: "little" } }],
) =>
  JSON.stringify({
    zarr_format: 3,
    node_type: "array",
    shape,
    data_type: "int32",
    chunk_grid: { name: "regular", configuration: { chunk_shape: chunks } },
    chunk_key_encoding: { name: "default", configuration: { separator: "/" } },
    fill_value: -7,
    codecs,
    attributes: {},
  });

/** References of array `a` (CHUNKS chunks stored in reverse order in `url`). */
function listing(url, path = "a") {
  const refs = { "zarr.json": JSON.stringify({ zarr_format: 3, node_type: "group" }) };
  refs[path === "" ? "zarr.json" : `${path}/zarr.json`] = metadata([CHUNKS * CHUNK], [CHUNK]);
  for (let i = 0; i < CHUNKS; i++) {
    const key = path === "" ? `c/${i}` : `${path}/c/${i}`;
    refs[key] = [url, (CHUNKS - 1 - i) * CHUNK * 4, CHUNK * 4];
  }
  return { version: 1, refs };
}

describe("which arrays have a listed table (Python's rule)", () => {
  const tables = (rfs) => [...listedTables(new References(rfs)).keys()];
  const url = "http://example.test/data.bin";

  test("every chunk listed into one file, at least 64 of them", () => {
    const rfs = listing(url);
    assert.deepEqual(tables(rfs), ["a"]);
    const table = listedTables(new References(rfs)).get("a");
    assert.equal(table.length, CHUNKS);
    assert.equal(table.url, url);
    assert.equal(table.row([3]), 3);
    assert.deepEqual([table.offsets[3], table.sizes[3]], [(CHUNKS - 4) * 32, 32]);
    assert.deepEqual([table.row([CHUNKS]), table.row([0, 0]), table.row([-1])], [-1, -1, -1]);
    assert.deepEqual(tables(listing(url, "")), [""]); // the root array: keys c/i
    // a canonical coordinate beyond 2^53 - 1 (18 digits) is listed, never asked for
    const far = listing(url);
    far.refs["a/c/999999999999999999"] = [url, 0, 32];
    assert.deepEqual(tables(far), ["a"]);
    assert.equal(listedTables(new References(far)).get("a").length, CHUNKS + 1);
  });

  test("a float-spelled integer is the integer (JSON has one number type)", () => {
    // as the Python reader holds `[url, 3008.0, 32.0]` in its columns (shadowzarr_spec.parse);
    // the text is parsed as the store parses a reference file's
    const text = JSON.stringify(listing(url)).replace(
      `"a/c/5":["${url}",3008,32]`,
      `"a/c/5":["${url}",3008.0,32.0]`,
    );
    assert.match(text, /3008\.0,32\.0/);
    const rfs = parseJson(text);
    assert.deepEqual(tables(rfs), ["a"]);
    const table = listedTables(new References(rfs)).get("a");
    assert.deepEqual([table.offsets[5], table.sizes[5]], [3008, 32]);
  });

  test("templates are expanded before the one-file rule", () => {
    const rfs = listing("{{u}}");
    rfs.templates = { u: url, v: url };
    rfs.refs["a/c/7"][0] = "{{v}}";
    assert.deepEqual(tables(rfs), ["a"]);
    assert.equal(listedTables(new References(rfs)).get("a").url, url);
    rfs.refs["a/c/8"][0] = "{{missing}}"; // an undefined template: read key by key (an error)
    assert.deepEqual(tables(rfs), []);
  });

  test("too few, two files, gen entries, a manifest or a selection: no table", () => {
    const few = listing(url);
    for (let i = MIN_COLUMN_CHUNKS - 1; i < CHUNKS; i++) delete few.refs[`a/c/${i}`];
    assert.deepEqual(tables(few), []);
    const enough = listing(url);
    for (let i = MIN_COLUMN_CHUNKS; i < CHUNKS; i++) delete enough.refs[`a/c/${i}`];
    assert.deepEqual(tables(enough), ["a"]); // missing chunks are fine
    const mixed = listing(url);
    mixed.refs["a/c/5"][0] = "http://example.test/other.bin";
    assert.deepEqual(tables(mixed), []);
    const generated = listing(url);
    generated.gen = [
      { key: "b/c/{{i}}", url, offset: "{{i * 4}}", length: "4", dimensions: { i: 2 } },
    ];
    assert.deepEqual(tables(generated), []);
    const selected = { ...listing(url), version: 2 };
    selected.selections = { a: { record_size: 4, keep: [[0, 4]] } };
    assert.deepEqual(tables(selected), []);
  });

  test("any other key under the array's chunks: no table", () => {
    const variants = {
      inline: "base64:AAAAAA==",
      wholeFile: [url],
      negative: [url, -1, 32],
      fraction: [url, 1.5, 32],
      emptyUrl: ["", 0, 32],
    };
    for (const [name, value] of Object.entries(variants)) {
      const rfs = listing(url);
      rfs.refs["a/c/5"] = value;
      assert.deepEqual(tables(rfs), [], name);
    }
    for (const key of ["a/c/01", "a/c/5/0", "a/c/x", "a/c/1234567890123456789"]) {
      const rfs = listing(url);
      rfs.refs[key] = [url, 0, 32]; // not a canonical key, or another rank than the first
      assert.deepEqual(tables(rfs), [], key);
    }
    // keys of another array whose path runs through this one's chunk prefix
    const nested = listing(url);
    nested.refs["a/c/0/c/1"] = [url, 0, 32]; // too few for a table of a/c/0: a plain reference
    assert.deepEqual(tables(nested), []);
    const nestedTable = listing(url);
    for (let i = 0; i < MIN_COLUMN_CHUNKS; i++) nestedTable.refs[`a/c/0/c/${i}`] = [url, 0, 32];
    assert.deepEqual(tables(nestedTable).sort(), ["a", "a/c/0"]); // columns of their own array
  });
});

describe("the grouped view packs listed chunks; hostile listings never show wrong values", () => {
  let server;
  let dir;
  let url;
  const want = Int32Array.from({ length: CHUNKS * CHUNK }, (_, i) => i * 3 - 500);
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "listed-"));
    // chunk i at (CHUNKS - 1 - i) * 32: the file holds the chunks in reverse order
    const file = new Int32Array(CHUNKS * CHUNK);
    for (let i = 0; i < CHUNKS; i++) {
      file.set(want.subarray(i * CHUNK, (i + 1) * CHUNK), (CHUNKS - 1 - i) * CHUNK);
    }
    writeFileSync(join(dir, "data.bin"), new Uint8Array(file.buffer));
    writeFileSync(join(dir, "copy.bin"), new Uint8Array(file.buffer));
    server = await startServer({ root: dir });
    url = `${server.url}/data.bin`;
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The array `a` read through the view and as stored: values, inner shape, counts. */
  async function readBoth(rfs) {
    const out = {};
    for (const [name, options] of [
      ["grouped", {}],
      ["stored", { groupedView: 0 }],
    ]) {
      const store = new ReferenceStore(structuredClone(rfs), options);
      let calls = 0;
      const counted = {
        get: (k, o) => (calls++, store.get(k, o)),
        getRange: (k, r, o) => (calls++, store.getRange(k, r, o)),
      };
      const array = await zarr.open.v3(zarr.root(counted).resolve("a"), { kind: "array" });
      server.reset();
      calls = 0;
      const values = await zarr.get(array, null);
      const inner = store.groupedLayout("a")?.innerShape;
      out[name] = { values: values.data, inner, calls, requests: server.counters.requests };
    }
    assert.deepEqual(out.grouped.values, out.stored.values);
    assert.ok(out.grouped.requests <= out.stored.requests, JSON.stringify(out));
    return out;
  }

  test("every chunk listed into one file: one pack of all of them", async () => {
    const read = await readBoth(listing(url));
    assert.deepEqual(read.grouped.values, want);
    assert.deepEqual(read.grouped.inner, [CHUNKS * CHUNK]);
    assert.ok(read.grouped.calls < 5 && read.stored.calls === CHUNKS, JSON.stringify(read));
  });

  test("missing entries are fill values in the pack", async () => {
    const rfs = listing(url);
    const gone = [0, 17, 99];
    for (const i of gone) delete rfs.refs[`a/c/${i}`];
    rfs.refs["a/c/50"] = [url, 0, 0]; // [url, 0, 0]: a missing chunk too
    const read = await readBoth(rfs);
    assert.deepEqual(read.grouped.inner, [CHUNKS * CHUNK]);
    const expected = Int32Array.from(want);
    for (const i of [...gone, 50]) expected.fill(-7, i * CHUNK, (i + 1) * CHUNK);
    assert.deepEqual(read.grouped.values, expected);
  });

  test("two files, or an entry of another form: shown as stored inside the shards", async () => {
    const mixed = listing(url);
    mixed.refs["a/c/5"][0] = `${server.url}/copy.bin`;
    const inline = listing(url);
    inline.refs["a/c/6"] =
      `base64:${Buffer.from(want.slice(6 * CHUNK, 7 * CHUNK).buffer).toString("base64")}`;
    for (const rfs of [mixed, inline]) {
      const read = await readBoth(rfs);
      assert.deepEqual(read.grouped.values, want);
      assert.deepEqual(read.grouped.inner, [CHUNK]);
    }
  });

  /** The typed error a read of `a` fails with, through the view and as stored. */
  async function failures(rfs) {
    const out = [];
    for (const options of [{}, { groupedView: 0 }]) {
      const store = new ReferenceStore(structuredClone(rfs), options);
      const array = await zarr.open.v3(zarr.root(store).resolve("a"), { kind: "array" });
      const error = await zarr.get(array, null).then(
        () => assert.fail("read bad references"),
        (e) => e,
      );
      out.push(error instanceof Error && error.cause instanceof Error ? error.cause : error);
    }
    return out;
  }

  test("bad sizes fail the read with the stored read's typed error", async () => {
    const short = listing(url);
    short.refs["a/c/40"][2] = 31; // an uncompressed chunk in the middle, a byte short
    const long = listing(url);
    long.refs["a/c/41"][2] = 33;
    for (const rfs of [short, long]) {
      const [grouped, stored] = await failures(rfs);
      assert.ok(grouped instanceof ChunkDecodeError, String(grouped));
      assert.ok(stored instanceof ChunkDecodeError, String(stored));
    }
    const empty = listing(url);
    empty.refs["a/c/42"] = [url, 64, 0]; // size 0 anywhere but offset 0 is malformed
    for (const error of await failures(empty)) {
      assert.ok(error instanceof ReferenceFormatError, String(error));
    }
    const past = listing(url);
    past.sources = { [url]: { size: CHUNKS * CHUNK * 4 } };
    past.refs["a/c/43"] = [url, CHUNKS * CHUNK * 4 - 16, 32]; // runs past the recorded end
    for (const error of await failures(past)) {
      assert.ok(error instanceof SourceError, String(error));
    }
  });
});
