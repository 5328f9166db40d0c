// The grouped view (grouped-view.ts, grouped-reads.ts, grouped-shards.ts): the Python store's
// rule and metadata, the shard bytes zarrita's sharding codec asks for, and zarrita reading
// through it. The cross-reader test (tests-integration/test_js_grouped_view.py) compares whole
// zarr.json documents with the Python store's; every fixture array is also read through the
// view by store.test.mjs (it is on by default).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as zarr from "zarrita";
import { ReferenceStore } from "shadowzarr";
import {
  buildShardIndex,
  GroupLayout,
  groupedMetadata,
  groupLayout,
  shardBytesOf,
} from "../../dist/grouped-view.js";
import { FIXTURES } from "../fixtures.mjs";
import { startServer } from "../server.mjs";

const array = (shape, chunks, dataType, codecs) => ({
  zarr_format: 3,
  node_type: "array",
  shape,
  data_type: dataType,
  chunk_grid: { name: "regular", configuration: { chunk_shape: chunks } },
  chunk_key_encoding: { name: "default", configuration: { separator: "/" } },
  fill_value: 0,
  codecs,
  attributes: {},
});
const BYTES = [{ name: "bytes", configuration: { endian: "little" } }];
const GZIP = [...BYTES, { name: "gzip", configuration: { level: 1 } }];

describe("the layout rule is the Python store's (GroupedView.layout)", () => {
  // [document, chunks all from the chunk manifest, setting] -> what shadowzarr_store shows
  const cases = {
    plain: [array([20000, 32], [32, 16], "int16", BYTES), true, "auto", [32768, 32], [16384, 32]],
    listed: [array([20000, 32], [32, 16], "int16", BYTES), false, "auto", [16384, 32], [32, 16]],
    decoded: [array([20000, 8], [16, 8], "float32", GZIP), true, "auto", [20000, 8], [20000, 8]],
    edge: [array([10001, 3], [8, 3], "int8", BYTES), true, "auto", [10008, 3], [10008, 3]],
    threeD: [array([7, 50, 60], [1, 5, 6], "uint16", BYTES), false, "auto", [7, 50, 60], [1, 5, 6]],
    threeDPacked: [
      array([7, 50, 60], [1, 5, 6], "uint16", BYTES),
      true,
      "auto",
      [7, 50, 60],
      [7, 50, 60],
    ],
    smallSetting: [
      array([20000, 32], [32, 16], "int16", BYTES),
      false,
      65536,
      [1024, 32],
      [32, 16],
    ],
  };
  for (const [name, [document, indexOnly, setting, shard, inner]] of Object.entries(cases)) {
    test(name, () => {
      const layout = groupLayout(document, shardBytesOf(setting), indexOnly);
      assert.deepEqual([layout.shardShape, layout.innerShape], [shard, inner]);
    });
  }
  test("shown as stored: few chunks, large chunks, strings, codecs no view can hold", () => {
    const auto = shardBytesOf("auto");
    assert.equal(groupLayout(array([30], [10], "int32", BYTES), auto, true), undefined);
    const large = array([1000, 1000], [256, 256], "float32", BYTES);
    assert.equal(groupLayout(large, auto, true), undefined);
    const strings = array([100], [5], "string", [{ name: "vlen-utf8" }]);
    assert.equal(groupLayout(strings, auto, false), undefined);
    const struct = { ...array([100], [5], "int8", BYTES), data_type: { name: "struct" } };
    assert.equal(groupLayout(struct, auto, false), undefined);
  });
  test("a byte codec the Python store cannot bound keeps one stored chunk per inner chunk", () => {
    const odd = array([20000, 8], [16, 8], "float32", [...BYTES, { name: "made.up" }]);
    const layout = groupLayout(odd, shardBytesOf("auto"), true);
    assert.deepEqual([layout.innerShape, layout.kind], [[16, 8], null]);
  });
  test("settings: 'auto' or true, a size, 0 or false; anything else is refused", () => {
    assert.equal(shardBytesOf(undefined), 4 * 1024 * 1024);
    assert.equal(shardBytesOf(true), 4 * 1024 * 1024);
    assert.equal(shardBytesOf(65536), 65536);
    assert.equal(shardBytesOf(false), 0);
    assert.equal(shardBytesOf(0), 0);
    for (const bad of [-1, 1.5, "on", null]) assert.throws(() => shardBytesOf(bad), RangeError);
    assert.throws(
      () => new ReferenceStore({ version: 1, refs: {} }, { groupedView: -5 }),
      RangeError,
    );
  });
});

test("packs are the C-order block of their stored chunks", () => {
  // 2x2 stored chunks of 2x3 int8 (values: member * 10 + element) packed into one 4x6 block
  const layout = new GroupLayout([2, 3], [2, 2], [2, 2], [2, 2], 1, "plain");
  assert.deepEqual([layout.innerShape, layout.members, layout.count], [[4, 6], 4, 1]);
  const members = [0, 1, 2, 3].map((m) => Uint8Array.from({ length: 6 }, (_, e) => m * 10 + e));
  assert.deepEqual(
    [...layout.packBytes(members)],
    [0, 1, 2, 10, 11, 12, 3, 4, 5, 13, 14, 15, 20, 21, 22, 30, 31, 32, 23, 24, 25, 33, 34, 35],
  );
  // stored chunks past the grid's end are not stored (null) in a shard that overhangs it
  const overhang = new GroupLayout([2, 3], [3, 1], [4, 1], [2, 1], 1, "plain");
  assert.deepEqual(overhang.innerChunks([0, 0]), [[0, 0], [1, 0], [2, 0], null]);
  assert.deepEqual(overhang.innerChunks([1, 0]), [null, null, null, null]);
  // a pack stacked along the first axis only takes each member whole, in order
  const stacked = new GroupLayout([2, 3], [4, 1], [4, 1], [4, 1], 1, "plain");
  const four = [0, 1, 2, 3].map((m) => Uint8Array.from({ length: 6 }, (_, e) => m * 10 + e));
  assert.deepEqual(
    [...stacked.packBytes(four)],
    four.flatMap((m) => [...m]),
  );
  // long rows (over 64 bytes) move as one piece: the same block
  const wide = new GroupLayout([2, 40], [2, 2], [2, 2], [2, 2], 2, "plain");
  const wideMembers = [0, 1, 2, 3].map((m) =>
    Uint8Array.from({ length: 160 }, (_, e) => (m * 160 + e) % 251),
  );
  const block = wide.packBytes(wideMembers);
  for (let m = 0; m < 4; m++) {
    for (let row = 0; row < 2; row++) {
      const at = ((m >> 1) * 2 + row) * 160 + (m & 1) * 80;
      assert.deepEqual(
        [...block.subarray(at, at + 80)],
        [...wideMembers[m].subarray(row * 80, row * 80 + 80)],
      );
    }
  }
});

test("zarr.json: the node and its consolidated entries rewritten; nothing else touched", () => {
  const child = array([20000, 32], [32, 16], "int16", BYTES);
  const root = {
    zarr_format: 3,
    node_type: "group",
    attributes: { a: 1 },
    consolidated_metadata: {
      kind: "inline",
      metadata: { "g/x": child, "g/few": array([30], [10], "int32", BYTES) },
    },
  };
  const layoutOf = (path) => groupLayout(path === "g/x" ? child : {}, shardBytesOf("auto"), false);
  const shown = JSON.parse(groupedMetadata(JSON.stringify(root), "zarr.json", layoutOf));
  const x = shown.consolidated_metadata.metadata["g/x"];
  assert.deepEqual(x.chunk_grid.configuration.chunk_shape, [16384, 32]);
  assert.equal(x.codecs[0].name, "sharding_indexed");
  assert.deepEqual(x.codecs[0].configuration.codecs, BYTES);
  assert.deepEqual(
    shown.consolidated_metadata.metadata["g/few"],
    root.consolidated_metadata.metadata["g/few"],
  );
  assert.deepEqual(shown.attributes, { a: 1 });
  const text = JSON.stringify(array([30], [10], "int32", BYTES));
  assert.equal(
    groupedMetadata(text, "few/zarr.json", () => undefined),
    text,
  ); // as it was
});

test("a shard index: inner chunks after the index, empty ones marked 2^64-1", () => {
  const index = buildShardIndex([5, -1, 7, 3], 1, 0);
  const view = new DataView(index.index.buffer);
  const pairs = [0, 1, 2, 3].map((j) => [
    view.getBigUint64(16 * j, true),
    view.getBigUint64(16 * j + 8, true),
  ]);
  const MAX = 2n ** 64n - 1n;
  assert.deepEqual(pairs, [
    [64n, 5n],
    [MAX, MAX],
    [69n, 7n],
    [76n, 3n],
  ]);
  assert.equal(index.total, 64 + 15 + 64); // the index, the chunks, the index again
  const packed = buildShardIndex([-1, -1, 4, -1, -1, -1], 2, 100);
  assert.deepEqual(
    [packed.sizes, packed.offsets],
    [
      [0, 100, 0],
      [48, 48, 148],
    ],
  );
  assert.equal(buildShardIndex([-1, -1], 1, 0).empty, true);
});

describe("shards served as zarrita's sharding codec asks for them", () => {
  let server;
  before(async () => {
    server = await startServer({ root: FIXTURES });
  });
  after(() => server.close());
  const open = (options = {}) =>
    ReferenceStore.fromUrl(`${server.url}/refs/raw.shadowzarr/`, options);

  test("zarr.json shows shards; groupedView: 0 shows the stored grid", async () => {
    const grouped = JSON.parse(
      new TextDecoder().decode(await (await open()).get("/small_chunks/zarr.json")),
    );
    const stored = await open({ groupedView: 0 });
    const plain = JSON.parse(new TextDecoder().decode(await stored.get("/small_chunks/zarr.json")));
    assert.deepEqual(grouped.chunk_grid.configuration.chunk_shape, [4096]);
    assert.deepEqual(grouped.codecs, [
      {
        name: "sharding_indexed",
        configuration: {
          chunk_shape: [64],
          codecs: plain.codecs,
          index_codecs: [{ name: "bytes", configuration: { endian: "little" } }],
          index_location: "start",
        },
      },
    ]);
    assert.deepEqual(plain.chunk_grid.configuration.chunk_shape, [64]);
    assert.equal(stored.groupedLayout("small_chunks"), undefined);
    assert.deepEqual((await open()).groupedLayout("/small_chunks/").shardShape, [4096]);
  });

  test("the index at the start and, for zarrita's suffix read, at the end; inner chunks as stored", async () => {
    const store = await open();
    const stored = await open({ groupedView: 0 });
    const count = 64;
    server.reset();
    const suffix = await store.getRange("/small_chunks/c/0", { suffixLength: 16 * count });
    assert.equal(server.counters.requests, 0); // computed from the references, never fetched
    const head = await store.getRange("/small_chunks/c/0", { offset: 0, length: 16 * count });
    assert.deepEqual(suffix, head);
    const view = new DataView(head.buffer, head.byteOffset);
    for (const j of [0, 5, 63]) {
      const offset = Number(view.getBigUint64(16 * j, true));
      const length = Number(view.getBigUint64(16 * j + 8, true));
      assert.deepEqual([offset, length], [16 * count + 128 * j, 128]);
      const inner = await store.getRange("/small_chunks/c/0", { offset, length });
      assert.deepEqual(inner, await stored.get(`/small_chunks/c/${j}`));
    }
    const whole = await store.get("/small_chunks/c/0");
    assert.equal(whole.length, 2 * 16 * count + 128 * count);
    assert.equal(await store.get("/small_chunks/c/1"), undefined); // past the shard grid
  });

  test("zarrita reads equal values through the view, in fewer store calls where packed", async () => {
    for (const [refs, path, packed] of [
      ["raw.shadowzarr", "small_chunks", false],
      ["raw.shadowzarr", "records", false], // through a selection
      ["raw.shadowzarr", "padded", false], // a short last chunk, a missing chunk
      ["rechunked_index.shadowzarr", "cells", true],
      ["hdf5.shadowzarr", "chunked_gzip", true], // packs of decoded chunks
      ["hdf5.json", "fletcher", false],
    ]) {
      const counts = {};
      const values = {};
      for (const [name, options] of [
        ["grouped", {}],
        ["stored", { groupedView: 0 }],
      ]) {
        const store = await ReferenceStore.fromUrl(`${server.url}/refs/${refs}`, options);
        let calls = 0;
        const counted = {
          get: (k, o) => (calls++, store.get(k, o)),
          getRange: (k, r, o) => (calls++, store.getRange(k, r, o)),
        };
        const a = await zarr.open.v3(zarr.root(counted).resolve(path), { kind: "array" });
        server.reset();
        calls = 0;
        values[name] = await zarr.get(a, null);
        counts[name] = { calls, requests: server.counters.requests };
      }
      assert.deepEqual(values.grouped, values.stored, path);
      assert.ok(counts.grouped.requests <= counts.stored.requests, JSON.stringify(counts));
      if (packed) assert.ok(counts.grouped.calls < counts.stored.calls);
    }
  });
});
