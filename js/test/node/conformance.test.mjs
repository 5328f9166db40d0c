// The format's conformance suite through the JS store, case by case; the Python side runs the
// same cases (packages/shadowzarr-spec/tests/test_conformance_expressions.py and
// packages/shadowzarr-store/tests/test_format_conformance.py). Reference directories are written
// from the case files and read from disk through the store's file: fetch, whose requests are
// logged to check that partial reads stay within the bytes a case allows.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, test } from "node:test";
import * as zarr from "zarrita";
import { compileExpression, MAX_DEPTH, MAX_EXPRESSION_LENGTH } from "../../dist/arithmetic.js";
import { MAX_MAGNITUDE } from "../../dist/arithmetic.js";
import { MAX_GEN_DIMENSIONS } from "../../dist/gen.js";
import { MAX_KEY_LENGTH } from "../../dist/keys.js";
import { decodeAttributes, localFileFetch, ReferenceStore } from "../../dist/node.js";
import {
  caseCount,
  expectedBytes,
  expressionText,
  jsErrorName,
  load,
  tagged,
  writeCaseDirectory,
} from "../conformance.mjs";

const OUT = resolve(process.env.SHADOWZARR_FIXTURES ?? "test-output/fixtures", "..", "conformance");
rmSync(OUT, { recursive: true, force: true });

const errorName = (error) => error?.name ?? String(error);

/** A store over a case's directory; `requests` collects [fileName, start, end] per request. */
async function openCase(c, index) {
  const directory = join(OUT, `${c.suite}-${index}`);
  const files = writeCaseDirectory(c, directory);
  const base = pathToFileURL(directory).href + "/";
  const requests = [];
  const local = localFileFetch();
  const fetch = (request) => {
    const name = request.url.startsWith(base) ? request.url.slice(base.length) : request.url;
    const m = /^bytes=(\d+)-(\d+)$/.exec(request.headers.get("range") ?? "");
    requests.push(m ? [name, Number(m[1]), Number(m[2]) + 1] : [name, 0, Infinity]);
    return local(request);
  };
  const store = await ReferenceStore.fromUrl(base, { fetch });
  return { store, files, requests };
}

test("the suite's limits are the store's", () => {
  const limits = load("limits");
  assert.equal(limits.max_expression_length, MAX_EXPRESSION_LENGTH);
  assert.equal(limits.max_depth, MAX_DEPTH);
  assert.equal(BigInt(limits.max_magnitude), MAX_MAGNITUDE);
  assert.equal(limits.max_gen_dimensions, MAX_GEN_DIMENSIONS);
  assert.equal(limits.max_key_length, MAX_KEY_LENGTH);
  assert.ok(caseCount() > 300, `${caseCount()} cases`);
});

describe("gen expressions", () => {
  const suite = load("gen_expressions");
  suite.cases.forEach((c, i) => {
    const text = expressionText(c);
    test(`${i}: ${JSON.stringify(text.slice(0, 60))}`, () => {
      let got;
      let compiled;
      try {
        compiled = compileExpression(text);
      } catch (error) {
        got = { error: errorName(error), stage: "compile" };
      }
      if (compiled !== undefined) {
        try {
          const value = compiled.evaluate(c.variables ?? suite.variables);
          got = { value: Number(value) };
        } catch (error) {
          got = { error: errorName(error), stage: "evaluate" };
        }
      }
      const expected =
        "value" in c ? { value: c.value } : { error: jsErrorName(c.error), stage: c.stage };
      assert.deepEqual(got, expected, c.why);
    });
  });
});

async function readOne(store, read) {
  const key = `/${read.key}`;
  const range = read.range;
  if (range === undefined) return store.get(key);
  if ("suffix" in range) return store.getRange(key, { suffixLength: range.suffix });
  return store.getRange(key, { offset: range.offset, length: range.length });
}

describe("documents", () => {
  load("documents").cases.forEach((c, i) => {
    test(`${i}: ${c.name}`, async () => {
      const { store, files, requests } = await openCase({ ...c, suite: "documents" }, i);
      const failures = [];
      for (const read of c.reads) {
        requests.length = 0;
        let got;
        try {
          const bytes = await readOne(store, read);
          got = bytes === undefined ? { missing: true } : Buffer.from(bytes).toString("hex");
        } catch (error) {
          got = { error: errorName(error) };
        }
        const expect = read.expect;
        const wanted =
          "bytes" in expect
            ? Buffer.from(expectedBytes(expect.bytes, files)).toString("hex")
            : "error" in expect
              ? { error: jsErrorName(expect.error) }
              : expect;
        try {
          assert.deepEqual(got, wanted);
        } catch {
          failures.push({ key: read.key, range: read.range, got, wanted });
          continue;
        }
        if (read.within !== undefined) {
          const [name, start, end] = read.within;
          const outside = requests.filter(([n, a, b]) => n === name && (a < start || b > end));
          if (outside.length > 0) failures.push({ key: read.key, within: read.within, requests });
        }
      }
      assert.deepEqual(failures, []);
    });
  });
});

describe("malformed documents", () => {
  load("malformed").cases.forEach((c, i) => {
    test(`${i}: ${c.name}`, async () => {
      let got = "no error";
      try {
        const { store } = await openCase({ ...c, suite: "malformed" }, i);
        if (c.read !== undefined) await store.get(`/${c.read}`);
      } catch (error) {
        got = errorName(error);
      }
      assert.equal(got, jsErrorName(c.error), c.why);
    });
  });
});

describe("attributes", () => {
  load("attributes").cases.forEach((c, i) => {
    test(`${i}: ${c.name}`, async () => {
      let got;
      try {
        const { store } = await openCase({ ...c, suite: "attributes" }, i);
        const node = await zarr.open.v3(zarr.root(store).resolve(c.node));
        got = tagged(decodeAttributes(node.attrs));
      } catch (error) {
        got = { error: errorName(error) };
      }
      const wanted = "error" in c.expect ? { error: jsErrorName(c.expect.error) } : c.expect;
      assert.deepEqual(got, wanted, c.why);
    });
  });
});
