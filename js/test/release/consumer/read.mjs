// Run in Node by check.mjs from the consumer project: read every array of the fixtures'
// reference directories through the installed tarball and compare with what h5py/numpy read.
import * as zarr from "zarrita";
import { openLocal } from "shadowzarr/node";
import { pathToFileURL } from "node:url";

const [fixtures, compareModule] = process.argv.slice(2);
const { readAndCompareAll } = await import(pathToFileURL(compareModule).href);
const { readFile } = await import("node:fs/promises");
const manifest = JSON.parse(await readFile(`${fixtures}/expected/manifest.json`, "utf8"));
const fetchImpl = async (request) => new Response(await readFile(new URL(request.url)));
const out = [];
for (const [name, section] of Object.entries(manifest)) {
  if (section.arrays === undefined || section.placeholder) continue;
  for (const refs of [section.refs].flat()) {
    const store = await openLocal(`${fixtures}/${refs}`);
    const base = pathToFileURL(fixtures).href;
    const result = await readAndCompareAll({ zarr, store, base, section, fetchImpl });
    out.push({ name, refs, checked: result.checked, failures: result.failures });
  }
}
console.log(JSON.stringify(out));
