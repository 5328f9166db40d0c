// Unit tests of the pure parts: arithmetic, templates, gen matching, byte mapping, padding,
// merging, JSON rewriting, attribute conventions, fletcher32, fill bytes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { compileExpression } from "../../dist/arithmetic.js";
import {
  fillElementBytes,
  arrayInfoFromMetadata,
  chunkCoordsFromKey,
} from "../../dist/array-metadata.js";
import { decodeAttributes } from "../../dist/attributes.js";
import {
  assembleSegments,
  logicalSize,
  mapLogicalRange,
  padWithFill,
  spansFor,
  validateSelection,
} from "../../dist/byte-map.js";
import {
  ChunkDecodeError,
  ChunkSizeError,
  GenExpressionError,
  ReferenceFormatError,
} from "../../dist/errors.js";
import { metadataForZarrita } from "../../dist/metadata-view.js";
import { decodeSequences, sequenceType, VlenBytesCodec } from "../../dist/sequences.js";
import { decodeStruct, recordLayout } from "../../dist/struct.js";
import { fletcher32, Fletcher32Codec } from "../../dist/fletcher32.js";
import { GenEntry } from "../../dist/gen.js";
import { parseJson, quoteLargeFillValues, quoteNonFinite } from "../../dist/json.js";
import { planMerges } from "../../dist/merge.js";
import { compileTemplate, expandNamedTemplates } from "../../dist/template.js";
import { isDandiDownloadUrl } from "../../dist/dandi.js";

const ev = (src, env = {}) => compileExpression(src).evaluate(env);

// The language itself (values, refusals, limits) is the conformance suite's (conformance.test.mjs).
test("arithmetic: evaluated in BigInt, exactly up to the limit and refused beyond it", () => {
  assert.equal(ev("2048 + i * 4194304", { i: 3 }), 2048n + 3n * 4194304n);
  assert.equal(ev("94906265 * 94906265"), 94906265n * 94906265n);
  assert.throws(() => ev("94906266 * 94906266"), GenExpressionError);
  assert.throws(() => ev("i", { i: 0.5 }), GenExpressionError);
  assert.throws(() => ev("i", { i: 2 ** 60 }), GenExpressionError);
  assert.ok(new GenExpressionError("x") instanceof ReferenceFormatError);
});

test("arithmetic: 20,000 nested parentheses are refused, never a stack overflow", () => {
  for (const text of ["(".repeat(20000) + "1" + ")".repeat(20000), "-".repeat(999) + "1"]) {
    assert.throws(() => compileExpression(text), GenExpressionError);
  }
});

test("templates: arithmetic from dimensions; named templates inserted as they are", () => {
  const t = compileTemplate("part{{i + 1}}.bin");
  assert.equal(t.render({ i: 4 }), "part5.bin");
  assert.deepEqual([...t.names], ["i"]);
  assert.equal(compileTemplate("{{2048 + i * 4}}").integer({ i: 2 }, "offset"), 2056);
  assert.equal(compileTemplate("64").integer({}, "length"), 64);
  assert.throws(() => compileTemplate("a{{i}}").integer({ i: 1 }, "offset"), GenExpressionError);
  assert.equal(expandNamedTemplates("{{ u }}/{{i}}", { u: "{x}" }, false), "{x}/{{i}}");
  assert.throws(() => expandNamedTemplates("{{v}}", { u: "x" }, true), ReferenceFormatError);
});

test("gen: key matching, dimension ranges and lists, evaluation", () => {
  const entry = new GenEntry(
    {
      key: "ts/c/{{i}}/{{j_k}}",
      url: "{{u0}}",
      offset: "{{2048 + i * 100 + j_k}}",
      length: "100",
      dimensions: { i: { start: 2, stop: 10, step: 2 }, j_k: [0, 5] },
    },
    { u0: "https://h/f" },
  );
  assert.deepEqual(entry.resolve("ts/c/4/5"), { url: "https://h/f", offset: 2453, size: 100 });
  assert.equal(entry.resolve("ts/c/3/5"), undefined); // off step
  assert.equal(entry.resolve("ts/c/10/5"), undefined); // stop excluded
  assert.equal(entry.resolve("ts/c/0/5"), undefined); // before start
  assert.equal(entry.resolve("ts/c/4/1"), undefined); // not in list
  assert.equal(entry.resolve("ts/c/04/5"), undefined); // not how integers render
  assert.equal(entry.resolve("ts/c/4/5/0"), undefined);
  assert.equal(entry.resolve("xts/c/4/5"), undefined);
  const dotted = new GenEntry({
    key: "a.b/{{i}}",
    url: "u",
    offset: "{{i}}",
    length: "1",
    dimensions: { i: { stop: 3 } },
  });
  assert.deepEqual(dotted.resolve("a.b/0"), { url: "u", offset: 0, size: 1 });
  assert.equal(dotted.resolve("aXb/0"), undefined); // the dot is literal
});

test("selection mapping: records, reordered keep ranges, partial ranges", () => {
  const sel = validateSelection("x", {
    record_size: 8,
    keep: [
      [4, 6],
      [2, 4],
    ],
  });
  assert.equal(logicalSize(80, sel), 40);
  // whole first record: bytes 4-6 then 2-4 of record 0
  assert.deepEqual(mapLogicalRange(100, 0, 4, sel), [
    { offset: 104, length: 2 },
    { offset: 102, length: 2 },
  ]);
  // logical 3..9 = last byte of rec0 second range, rec1 both ranges, first byte of rec2
  assert.deepEqual(mapLogicalRange(0, 3, 9, sel), [
    { offset: 3, length: 1 },
    { offset: 12, length: 2 },
    { offset: 10, length: 2 },
    { offset: 20, length: 1 },
  ]);
  // contiguous keep ranges join across records
  const dense = validateSelection("y", { record_size: 4, keep: [[0, 4]] });
  assert.deepEqual(mapLogicalRange(10, 2, 14, dense), [{ offset: 12, length: 12 }]);
  assert.deepEqual(mapLogicalRange(10, 2, 14, undefined), [{ offset: 12, length: 12 }]);
  for (const bad of [
    { record_size: 0, keep: [[0, 1]] },
    { record_size: 4, keep: [[2, 5]] },
    { record_size: 4, keep: [] },
    { record_size: 4, keep: [[3, 3]] },
  ]) {
    assert.throws(() => validateSelection("z", bad), ReferenceFormatError);
  }
});

test("selection assembly equals a direct computation", () => {
  const file = Uint8Array.from({ length: 400 }, (_, i) => (i * 7) % 256);
  const sel = validateSelection("x", {
    record_size: 10,
    keep: [
      [6, 9],
      [0, 2],
    ],
  });
  const logical = [];
  for (let r = 0; r < 40; r++)
    for (const [a, b] of sel.keep) for (let k = a; k < b; k++) logical.push(file[r * 10 + k]);
  for (const [s, e] of [
    [0, 200],
    [3, 17],
    [199, 200],
    [50, 51],
    [0, 1],
  ]) {
    for (const gap of [0, 5, 1000]) {
      const segments = mapLogicalRange(0, s, e, sel);
      const spans = spansFor(segments, gap);
      const bodies = spans.map((sp) => file.slice(sp.offset, sp.end));
      assert.deepEqual(
        [...assembleSegments(segments, spans, bodies)],
        logical.slice(s, e),
        `${s}-${e} gap ${gap}`,
      );
    }
  }
  // a span that came back short (end of file): the result stops at the first missing byte
  const segments = mapLogicalRange(0, 0, 10, sel);
  const spans = spansFor(segments, 100);
  const out = assembleSegments(segments, spans, [file.slice(0, 12)]);
  assert.deepEqual([...out], logical.slice(0, 5)); // record 1 starts at byte 16, missing
});

test("padding with fill elements, aligned to the element", () => {
  const fill = Uint8Array.of(7, 0, 0, 0);
  assert.deepEqual(
    [...padWithFill(Uint8Array.of(1, 0, 0, 0, 2, 0), 0, 12, fill)],
    [1, 0, 0, 0, 2, 0, 0, 0, 7, 0, 0, 0],
  );
  // a range starting mid-element pads with the right bytes
  assert.deepEqual([...padWithFill(new Uint8Array(0), 2, 7, fill)], [0, 0, 7, 0, 0]);
  assert.throws(() => padWithFill(new Uint8Array(5), 0, 4, fill), ChunkSizeError);
  const exact = Uint8Array.of(1, 2, 3, 4);
  assert.equal(padWithFill(exact, 0, 4, fill), exact);
});

test("merge planning: gap, span limit, off", () => {
  const r = (start, end) => ({ start, end });
  const ranges = [r(300, 400), r(0, 100), r(100, 200), r(1000, 1100), r(150, 250)];
  const plan = (gap, max) =>
    planMerges(ranges, gap, max).map((g) => [g.start, g.end, g.members.length]);
  assert.deepEqual(plan(0, 1e9), [
    [0, 250, 3],
    [300, 400, 1],
    [1000, 1100, 1],
  ]);
  assert.deepEqual(plan(50, 1e9), [
    [0, 400, 4],
    [1000, 1100, 1],
  ]);
  assert.deepEqual(plan(1000, 1e9), [[0, 1100, 5]]);
  assert.deepEqual(plan(1000, 400), [
    [0, 400, 4],
    [1000, 1100, 1],
  ]);
  assert.deepEqual(plan(1000, 0), [
    [0, 100, 1],
    [100, 200, 1],
    [150, 250, 1],
    [300, 400, 1],
    [1000, 1100, 1],
  ]);
  assert.deepEqual(
    planMerges([r(0, 5000)], 10, 100).map((g) => [g.start, g.end]),
    [[0, 5000]],
  );
});

test("JSON: bare non-finite tokens, large fill values", () => {
  const text = '{"a": NaN, "b": [Infinity, -Infinity], "s": "NaN Infinity \\" NaN", "NaN": 1}';
  assert.equal(
    quoteNonFinite(text),
    '{"a": "NaN", "b": ["Infinity", "-Infinity"], "s": "NaN Infinity \\" NaN", "NaN": 1}',
  );
  const parsed = parseJson(text);
  assert.ok(Number.isNaN(parsed.a));
  assert.deepEqual(parsed.b, [Infinity, -Infinity]);
  assert.equal(parsed.s, 'NaN Infinity " NaN');
  assert.equal(parsed.NaN, 1);
  assert.deepEqual(parseJson('{"x": "NaN"}'), { x: "NaN" });
  assert.throws(() => parseJson("{nope}"), ReferenceFormatError);
  assert.equal(
    quoteLargeFillValues('{"fill_value": 18446744073709551615, "n": 1}'),
    '{"fill_value": "18446744073709551615", "n": 1}',
  );
  assert.equal(
    quoteLargeFillValues('{"fill_value":-9223372036854775808}'),
    '{"fill_value":"-9223372036854775808"}',
  );
  assert.equal(
    quoteLargeFillValues('{"fill_value": 1234567890123456}'),
    '{"fill_value": 1234567890123456}',
  );
});

test("attributes: both conventions, only when registered, _str_ stripped once", () => {
  const conventions = [
    { uuid: "4b1b3f0e-6a5e-5d8a-9c57-8c1a6a0e2f11", name: "non-finite-attributes" },
    { uuid: "9d2c6a57-0b8e-5f3c-a1e4-3e7b5c2d9f40", name: "bytes-attributes" },
  ];
  const out = decodeAttributes({
    zarr_conventions: conventions,
    r: "NaN",
    l: ["Infinity", "-Infinity", 1],
    s: "_str_NaN",
    t: "_str__str_x",
    b: "base64:/wAB",
    nested: { v: "NaN", w: "plain" },
  });
  assert.ok(Number.isNaN(out.r));
  assert.deepEqual(out.l, [Infinity, -Infinity, 1]);
  assert.equal(out.s, "NaN");
  assert.equal(out.t, "_str_x");
  assert.deepEqual(out.b, Uint8Array.of(255, 0, 1));
  assert.ok(Number.isNaN(out.nested.v));
  const none = decodeAttributes({ r: "NaN", b: "base64:AA==", s: "_str_x" });
  assert.deepEqual(none, { r: "NaN", b: "base64:AA==", s: "_str_x" });
  const onlyBytes = decodeAttributes({
    zarr_conventions: [conventions[1]],
    r: "NaN",
    b: "base64:AA==",
  });
  assert.equal(onlyBytes.r, "NaN");
  assert.deepEqual(onlyBytes.b, Uint8Array.of(0));
});

test("attributes: the Attribute Types convention gives recorded shapes, then leaves", () => {
  const types = { uuid: "c3a7e1d2-4f6b-5a8c-9e0d-2b7f4c1a6e93", name: "attribute-types" };
  const nonFinite = { uuid: "4b1b3f0e-6a5e-5d8a-9c57-8c1a6a0e2f11", name: "non-finite-attributes" };
  const out = decodeAttributes({
    zarr_conventions: [nonFinite, types, { uuid: "other" }],
    scale_factor: 0.5,
    one: 3,
    nan_one: "NaN",
    grid: [1, 2, 3, 4],
    _ATTRIBUTE_TYPES: {
      scale_factor: { dtype: "<f4", shape: [] },
      one: { dtype: "<i2", shape: [1] },
      nan_one: { dtype: "<f4", shape: [1] },
      grid: { dtype: "|u1", shape: [2, 2] },
      absent: { dtype: "<f8", shape: [] },
    },
  });
  assert.equal(out.scale_factor, 0.5);
  assert.deepEqual(out.one, [3]);
  assert.equal(out.nan_one.length, 1);
  assert.ok(Number.isNaN(out.nan_one[0]));
  assert.deepEqual(out.grid, [
    [1, 2],
    [3, 4],
  ]);
  assert.ok(!("_ATTRIBUTE_TYPES" in out));
  assert.deepEqual(out.zarr_conventions, [{ uuid: "other" }]);
  const bad = (record, value) =>
    decodeAttributes({ zarr_conventions: [types], v: value, _ATTRIBUTE_TYPES: { v: record } });
  assert.throws(() => bad({ dtype: "<i4", shape: [2] }, [1, 2, 3]), /holds 3 numbers/);
  assert.throws(() => bad({ dtype: "<U4", shape: [] }, "text"), /dtype/);
  assert.throws(() => bad({ dtype: "<i4", shape: [-1] }, 1), /bad shape/);
  assert.throws(() => bad({ dtype: "<i4", shape: [] }, "text"), /does not hold numbers/);
  assert.throws(() => bad({ dtype: "<i4", shape: [1 << 13, 1 << 13] }, 1), /too large/);
});

test("fletcher32: numcodecs' known vector, and a flipped bit is an error", () => {
  // numcodecs test_known: int64 [1..10]? computed from the HDF5 definition here
  const data = new Uint8Array(new BigInt64Array([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 10n]).buffer);
  const sum = fletcher32(data);
  const encoded = new Uint8Array(data.length + 4);
  encoded.set(data);
  new DataView(encoded.buffer).setUint32(data.length, sum, true);
  const codec = Fletcher32Codec.fromConfig();
  assert.deepEqual(codec.decode(encoded), data);
  encoded[3] ^= 1;
  assert.throws(() => codec.decode(encoded), /fletcher32 checksum mismatch/);
  assert.equal(fletcher32(Uint8Array.of(1)), (1 << 8) | ((1 << 8) << 16));
});

test("fill bytes for the types the store pads", () => {
  assert.deepEqual([...fillElementBytes("int32", 7, 4, true)], [7, 0, 0, 0]);
  assert.deepEqual([...fillElementBytes("int16", -7, 2, false)], [0xff, 0xf9]);
  assert.deepEqual([...fillElementBytes("float32", "NaN", 4, true)], [0, 0, 0xc0, 0x7f]);
  assert.deepEqual([...fillElementBytes("float32", "0x7fc00001", 4, true)], [1, 0, 0xc0, 0x7f]);
  assert.deepEqual(
    [...fillElementBytes("uint64", "18446744073709551615", 8, true)],
    Array(8).fill(255),
  );
  assert.deepEqual([...fillElementBytes("bool", true, 1, true)], [1]);
  assert.deepEqual(
    [...fillElementBytes("complex64", [1, "NaN"], 8, true)],
    [0, 0, 0x80, 0x3f, 0, 0, 0xc0, 0x7f],
  );
  const struct = {
    name: "struct",
    configuration: {
      fields: [
        { name: "a", data_type: "int16" },
        { name: "b", data_type: "uint8" },
      ],
    },
  };
  assert.deepEqual([...fillElementBytes(struct, { a: 258, b: 3 }, 3, true)], [2, 1, 3]);
  const info = arrayInfoFromMetadata("x", {
    shape: [10, 4],
    data_type: "int16",
    fill_value: 1,
    chunk_grid: { configuration: { chunk_shape: [5, 4] } },
    codecs: [{ name: "bytes" }],
  });
  assert.equal(info.padding.chunkBytes, 40);
  assert.deepEqual(chunkCoordsFromKey(info, "c/1/0"), [1, 0]);
  assert.equal(chunkCoordsFromKey(info, "c/1"), undefined);
  assert.equal(chunkCoordsFromKey(info, "c/01/0"), undefined);
  const compressed = arrayInfoFromMetadata("y", {
    shape: [10],
    data_type: "int16",
    fill_value: 1,
    chunk_grid: { configuration: { chunk_shape: [5] } },
    codecs: [{ name: "bytes" }, { name: "numcodecs.zlib" }],
  });
  assert.equal(compressed.padding, undefined);
});

test("DANDI download URLs are recognised, other URLs are not", () => {
  assert.ok(isDandiDownloadUrl("https://api.dandiarchive.org/api/assets/5a9cc6f1-aeaf/download/"));
  assert.ok(isDandiDownloadUrl("https://api.sandbox.dandiarchive.org/api/assets/abc/download/"));
  assert.ok(isDandiDownloadUrl("https://api-staging.dandiarchive.org/api/assets/abc/download"));
  assert.ok(
    isDandiDownloadUrl(
      "https://api.dandiarchive.org/api/dandisets/000003/versions/draft/assets/abc/download/",
    ),
  );
  assert.ok(
    !isDandiDownloadUrl("https://api.dandiarchive.org.evil.example/api/assets/a/download/"),
  );
  assert.ok(!isDandiDownloadUrl("https://dandiarchive.s3.amazonaws.com/blobs/abc"));
  assert.ok(!isDandiDownloadUrl("https://api.dandiarchive.org/api/assets/abc/"));
});

test("DANDI resolution is cached for ten minutes, failures are not cached", async () => {
  const { createDandiResolver } = await import("../../dist/dandi.js");
  let calls = 0;
  let clock = 0;
  let fail = true;
  const fakeFetch = async (request) => {
    calls++;
    assert.equal(request.redirect, "manual");
    if (fail) return new Response(null, { status: 503 });
    return new Response(null, { status: 302, headers: { Location: "https://bucket/blob" } });
  };
  const resolve = createDandiResolver(fakeFetch, 600_000, () => clock);
  const url = "https://api.dandiarchive.org/api/assets/abc/download/";
  await assert.rejects(resolve(url));
  fail = false;
  assert.equal(await resolve(url), "https://bucket/blob");
  assert.equal(await resolve(url), "https://bucket/blob");
  assert.equal(calls, 2);
  clock = 599_999;
  await resolve(url);
  assert.equal(calls, 2);
  clock = 600_001;
  await resolve(url);
  assert.equal(calls, 3);
  assert.equal(await resolve("https://example.org/x.h5"), "https://example.org/x.h5");
  assert.equal(calls, 3);
});

test("the main entry is browser-safe: nothing it imports uses node: modules", async () => {
  const { readFileSync } = await import("node:fs");
  const { dirname, resolve } = await import("node:path");
  const { fileURLToPath } = await import("node:url");
  const dist = resolve(dirname(fileURLToPath(import.meta.url)), "../../dist");
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
      const spec = m[1];
      assert.ok(
        !spec.startsWith("node:") && spec !== "fs" && spec !== "path",
        `${file} imports ${spec}`,
      );
      if (spec.startsWith(".")) visit(resolve(dirname(file), spec));
    }
  };
  visit(resolve(dist, "index.js"));
  assert.ok(seen.size > 5);
  assert.ok(!seen.has(resolve(dist, "node.js")));
});

test("gen entries are never expanded: a billion keys cost nothing up front", () => {
  const entry = new GenEntry(
    {
      key: "big/c/{{i}}/{{j}}",
      url: "{{u0}}",
      offset: "{{i * 1000000 + j * 8}}",
      length: "8",
      dimensions: { i: { stop: 1_000_000 }, j: { stop: 1_000 } },
    },
    { u0: "u" },
  );
  const t0 = performance.now();
  for (let k = 0; k < 1000; k++) entry.resolve(`big/c/${k * 997}/${k}`);
  assert.ok(performance.now() - t0 < 1000);
  assert.deepEqual(entry.resolve("big/c/999999/999"), {
    url: "u",
    offset: 999999 * 1000000 + 999 * 8,
    size: 8,
  });
});

test("an index entry's files: text or base64 bytes by relative key, anything else refused", async () => {
  const { References } = await import("../../dist/references.js");
  const entry = (files) => ({
    version: 2,
    refs: { "zarr.json": '{"zarr_format":3,"node_type":"group"}' },
    indexes: { a: { url: "https://example.org/x.h5", index: "index/a", files } },
  });
  const parsed = new References(entry({ "zarr.json": "{}", "c/0/0": "base64:AAEC" }));
  const files = parsed.indexes.get("a").files;
  assert.deepEqual([...files.get("c/0/0")], [0, 1, 2]);
  assert.equal(new TextDecoder().decode(files.get("zarr.json")), "{}");
  assert.equal(new References(entry(undefined)).indexes.get("a").files.size, 0);
  for (const bad of [[], { "c/0": 3 }, { "../x": "a" }, { "/abs": "a" }, { "c/0": "base64:!!" }]) {
    assert.throws(() => new References(entry(bad)), ReferenceFormatError, JSON.stringify(bad));
  }
});

test("an index array's layout comes from its own zarr.json; what the format forbids is refused", async () => {
  const { manifestLayoutFromMetadata } = await import("../../dist/manifest-layout.js");
  const meta = (over = {}) => ({
    zarr_format: 3,
    node_type: "array",
    shape: [1200, 2, 2],
    data_type: "uint64",
    chunk_grid: { name: "regular", configuration: { chunk_shape: [600, 2, 2] } },
    chunk_key_encoding: { name: "v2", configuration: { separator: "." } },
    fill_value: "18446744073709551615",
    codecs: [
      { name: "transpose", configuration: { order: [2, 0, 1] } },
      { name: "bytes", configuration: { endian: "big" } },
      { name: "numcodecs.zlib", configuration: { level: 1 } },
    ],
    attributes: { x: 1 },
    ...over,
  });
  const layout = manifestLayoutFromMetadata(meta(), [1200, 2], "here");
  assert.deepEqual(layout.chunkShape, [600, 2, 2]);
  assert.deepEqual(layout.metadata.chunk_key_encoding, {
    name: "v2",
    configuration: { separator: "." },
  });
  assert.deepEqual(
    layout.metadata.codecs.map((c) => c.name),
    ["transpose", "bytes", "zlib"],
  );
  assert.deepEqual(layout.metadata.attributes, {});
  const refused = [
    { shape: [1200, 3, 2] }, // not the data array's grid
    { data_type: "int64" },
    { zarr_format: 2 },
    { chunk_grid: { name: "rectilinear", configuration: {} } },
    { chunk_grid: { name: "regular", configuration: { chunk_shape: [600, 0, 2] } } },
    {
      shape: [9000, 1000, 2],
      chunk_grid: { name: "regular", configuration: { chunk_shape: [9000, 1000, 2] } },
    }, // 144 MB a chunk
    { chunk_key_encoding: { name: "default", configuration: { separator: "-" } } },
    { codecs: [{ name: "sharding_indexed", configuration: {} }] },
    { codecs: [{ name: "bytes" }, { name: "gzip" }, { name: "zstd" }] },
    { codecs: [{ name: "bytes" }, { name: "numcodecs.bz2" }] },
    { codecs: [{ name: "bytes", configuration: { endian: "middle" } }] },
    { codecs: [{ name: "transpose", configuration: { order: [0, 0, 1] } }, { name: "bytes" }] },
    { storage_transformers: [{ name: "x" }] },
    { fill_value: -1 },
    { fill_value: "NaN" },
  ];
  for (const over of refused) {
    const grid = over.shape ? over.shape.slice(0, -1) : [1200, 2];
    if (over.shape?.[1] === 3) grid[1] = 2;
    assert.throws(
      () => manifestLayoutFromMetadata(meta(over), grid, "here"),
      ReferenceFormatError,
      JSON.stringify(over),
    );
  }
});

/** numcodecs' vlen-bytes framing of `items`. */
function vlenFrame(items) {
  const size = 4 + items.reduce((n, item) => n + 4 + item.length, 0);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, items.length, true);
  let at = 4;
  for (const item of items) {
    view.setUint32(at, item.length, true);
    out.set(item, at + 4);
    at += 4 + item.length;
  }
  return out;
}

test("vlen-bytes frames decode to their items; a frame not holding them is ChunkDecodeError", () => {
  const codec = VlenBytesCodec.fromConfig({}, { shape: [3] });
  const items = [Uint8Array.of(1, 2), new Uint8Array(0), Uint8Array.of(3)];
  assert.deepEqual(codec.decode(vlenFrame(items)).data, items);
  assert.throws(() => codec.decode(vlenFrame(items.slice(0, 2))), ChunkDecodeError); // count
  const long = vlenFrame(items);
  new DataView(long.buffer).setUint32(4, 1000, true); // an item past the end
  assert.throws(() => codec.decode(long), ChunkDecodeError);
  const trailing = Uint8Array.from([...vlenFrame(items), 9]);
  assert.throws(() => codec.decode(trailing), ChunkDecodeError);
  assert.throws(() => codec.decode(new Uint8Array(2)), ChunkDecodeError);
});

test("sequences follow _VLEN_DTYPE's byte order; a type that is not a number is refused", () => {
  const type = sequenceType(">i4");
  const data = [Uint8Array.of(0, 0, 1, 0, 0xff, 0xff, 0xff, 0xfe), new Uint8Array(0), ""];
  const { shape, sequences } = decodeSequences({ data, shape: [3], stride: [1] }, type);
  assert.deepEqual(shape, [3]);
  assert.deepEqual(sequences, [Int32Array.of(256, -2), new Int32Array(0), new Int32Array(0)]);
  for (const bad of ["<U4", "|S4", "<c8", "f4x", 4, null]) {
    assert.throws(() => sequenceType(bad), ReferenceFormatError, String(bad));
  }
  const odd = { data: [Uint8Array.of(1, 2, 3)], shape: [1], stride: [1] };
  assert.throws(() => decodeSequences(odd, sequenceType("<i2")), ReferenceFormatError);
});

test("a variable_length_bytes array is shown to zarrita as strings of the registered codec", () => {
  const meta = {
    zarr_format: 3,
    node_type: "array",
    shape: [2],
    data_type: "variable_length_bytes",
    chunk_grid: { name: "regular", configuration: { chunk_shape: [2] } },
    chunk_key_encoding: { name: "default", configuration: { separator: "/" } },
    fill_value: "",
    codecs: [{ name: "vlen-bytes", configuration: {} }, { name: "zstd" }],
    attributes: { _VLEN_DTYPE: "<f4" },
  };
  const shown = JSON.parse(metadataForZarrita(JSON.stringify(meta), { structAsBytes: true }));
  assert.equal(shown.data_type, "string");
  assert.deepEqual(shown.codecs, [{ name: "shadowzarr.vlen-bytes" }, { name: "zstd" }]);
});

test("_STRUCTURED_DTYPE layouts: offsets, orders, array and nested fields; malformed ones refused", () => {
  const layout = recordLayout({
    names: ["a", "v", "s"],
    formats: [
      ">u2",
      ["<i1", [2, 2]],
      { names: ["x"], formats: ["<f4"], offsets: [0], itemsize: 4 },
    ],
    offsets: [0, 4, 8],
    itemsize: 12,
  });
  const record = Uint8Array.of(1, 2, 0, 0, 1, 0xff, 3, 4, 0, 0, 0x20, 0x40);
  const decoded = decodeStruct({ data: record, shape: [1, 12], stride: [12, 1] }, layout);
  assert.deepEqual(decoded.fields.a, Uint16Array.of(0x0102));
  assert.deepEqual(decoded.fields.v, Int8Array.of(1, -1, 3, 4));
  assert.deepEqual(decoded.fields.s, { shape: [1], fields: { x: Float32Array.of(2.5) } });
  const base = { names: ["a"], formats: ["<f8"], offsets: [0], itemsize: 8 };
  const bad = [
    { ...base, offsets: [4] }, // past the record
    { ...base, formats: ["<U2"] },
    { ...base, formats: [["<f8", [-1]]] },
    { ...base, formats: [[["<f8", [2]], [2]]] },
    { ...base, names: [1] },
    { ...base, itemsize: "8" },
    { names: ["a"], formats: [], offsets: [0], itemsize: 8 },
  ];
  for (const descr of bad) assert.throws(() => recordLayout(descr), ReferenceFormatError);
  let deep = base;
  for (let i = 0; i < 40; i++) deep = { names: ["n"], formats: [deep], offsets: [0], itemsize: 8 };
  assert.throws(() => recordLayout(deep), ReferenceFormatError);
});
