// The JS store's outcomes for the format's conformance suite in Node, reading each case's
// directory from disk: used by test/node/conformance.test.mjs, and run as a script
// (`node test/conformance-run.mjs OUTDIR`, after `npm run build`) it prints every outcome as JSON
// for tools/conformance_table.py.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import * as zarr from "zarrita";
import { compileExpression } from "../dist/arithmetic.js";
import * as shadowzarr from "../dist/node.js";
import { decodeAttributes, localFileFetch, ReferenceStore } from "../dist/node.js";
import { expectedBytes, load, writeCaseDirectory } from "./conformance.mjs";
import {
  attributeOutcome,
  documentOutcomes,
  expressionOutcome,
  hex,
  loggingFetch,
  malformedOutcome,
  typesOutcome,
} from "./conformance-outcomes.mjs";

/** `openCase` for cases written into `directory`. */
export function onDisk(directory) {
  return async (c) => {
    writeCaseDirectory(c, directory);
    const base = pathToFileURL(directory).href + "/";
    const requests = [];
    const fetch = loggingFetch(base, requests, localFileFetch());
    // keys as stored, as the Python side opens them (grouped_view=0)
    return { store: await ReferenceStore.fromUrl(base, { fetch, groupedView: 0 }), requests };
  };
}

/** The expected outcome of a read, in the form documentOutcomes returns. */
export function expectedRead(read, files, errorFor) {
  const expect = read.expect;
  const wanted =
    "bytes" in expect
      ? { bytes: hex(expectedBytes(expect.bytes, files)) }
      : "error" in expect
        ? { error: errorFor(expect.error) }
        : { missing: true };
  if (read.within !== undefined) wanted.within = true;
  return wanted;
}

export const expression = (c, variables) => expressionOutcome(compileExpression, c, variables);
export const documents = (c, directory) => documentOutcomes(onDisk(directory), c);
export const malformed = (c, directory) => malformedOutcome(onDisk(directory), c);
export const attributes = (c, directory) =>
  attributeOutcome(onDisk(directory), zarr, decodeAttributes, c);

export const types = (c, directory) => typesOutcome(onDisk(directory), zarr, shadowzarr, c);

/** Every outcome of the suite, keyed by suite, in case order. */
export async function allOutcomes(outDir) {
  rmSync(outDir, { recursive: true, force: true });
  const suite = load("gen_expressions");
  const result = { gen_expressions: suite.cases.map((c) => expression(c, suite.variables)) };
  for (const [name, run] of [
    ["documents", documents],
    ["malformed", malformed],
    ["attributes", attributes],
    ["types", types],
  ]) {
    result[name] = [];
    for (const [i, c] of load(name).cases.entries()) {
      result[name].push(await run(c, join(outDir, `${name}-${i}`)));
    }
  }
  return result;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const outDir = process.argv[2] ?? "test-output/conformance-run";
  process.stdout.write(JSON.stringify(await allOutcomes(outDir)));
}
