// The format's conformance suite through the JS store, case by case; the Python side runs the
// same cases (packages/shadowzarr-spec/tests/test_conformance_expressions.py and
// packages/shadowzarr-store/tests/test_format_conformance.py). Reference directories are written
// from the case files and read from disk through the store's file: fetch, whose requests are
// logged to check that partial reads stay within the bytes a case allows.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import { MAX_DEPTH, MAX_EXPRESSION_LENGTH, MAX_MAGNITUDE } from "../../dist/arithmetic.js";
import { MAX_GEN_DIMENSIONS } from "../../dist/gen.js";
import { MAX_KEY_LENGTH } from "../../dist/keys.js";
import { caseCount, caseFiles, jsErrorName, load } from "../conformance.mjs";
import {
  attributes,
  documents,
  expectedRead,
  expression,
  malformed,
  types,
} from "../conformance-run.mjs";

const OUT = resolve(process.env.SHADOWZARR_FIXTURES ?? "test-output/fixtures", "..", "conformance");
rmSync(OUT, { recursive: true, force: true });

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
    const text = c.expression ?? JSON.stringify(c.expression_repeat);
    test(`${i}: ${JSON.stringify(text.slice(0, 60))}`, () => {
      const expected =
        "value" in c ? { value: c.value } : { error: jsErrorName(c.error), stage: c.stage };
      assert.deepEqual(expression(c, suite.variables), expected, c.why);
    });
  });
});

describe("documents", () => {
  load("documents").cases.forEach((c, i) => {
    test(`${i}: ${c.name}`, async () => {
      const outcomes = await documents(c, join(OUT, `documents-${i}`));
      const files = caseFiles(c);
      const failures = [];
      c.reads.forEach((read, r) => {
        const wanted = expectedRead(read, files, jsErrorName);
        try {
          assert.deepEqual(outcomes[r], wanted);
        } catch {
          failures.push({ key: read.key, range: read.range, got: outcomes[r], wanted });
        }
      });
      assert.deepEqual(failures, []);
    });
  });
});

describe("malformed documents", () => {
  load("malformed").cases.forEach((c, i) => {
    test(`${i}: ${c.name}`, async () => {
      const got = await malformed(c, join(OUT, `malformed-${i}`));
      assert.deepEqual(got, { error: jsErrorName(c.error) }, c.why);
    });
  });
});

describe("attributes", () => {
  load("attributes").cases.forEach((c, i) => {
    test(`${i}: ${c.name}`, async () => {
      const got = await attributes(c, join(OUT, `attributes-${i}`));
      const wanted = "error" in c.expect ? { error: jsErrorName(c.expect.error) } : c.expect;
      assert.deepEqual(got, wanted, c.why);
    });
  });
});

describe("types", () => {
  load("types").cases.forEach((c, i) => {
    test(`${i}: ${c.name}`, async () => {
      const got = await types(c, join(OUT, `types-${i}`));
      const wanted = "error" in c.expect ? { error: jsErrorName(c.expect.error) } : c.expect;
      assert.deepEqual(got, wanted, c.why);
    });
  });
});
