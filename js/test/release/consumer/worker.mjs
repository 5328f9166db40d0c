// Bundled with esbuild by check.mjs and run as a module Web Worker in Chromium: the installed
// tarball read over HTTP from another origin, values compared with what h5py/numpy read.
import * as zarr from "zarrita";
import { ReferenceStore } from "shadowzarr";
import { readAndCompareAll } from "./compare.mjs";

self.onmessage = async ({ data: { base, manifest } }) => {
  const out = [];
  try {
    for (const [name, section] of Object.entries(manifest)) {
      if (section.arrays === undefined || section.placeholder) continue;
      for (const refs of [section.refs].flat()) {
        const store = await ReferenceStore.fromUrl(`${base}/${refs}`);
        const result = await readAndCompareAll({ zarr, store, base, section });
        out.push({ name, refs, checked: result.checked, failures: result.failures });
      }
    }
    self.postMessage({ out });
  } catch (error) {
    self.postMessage({ error: `${error?.name}: ${error?.message}` });
  }
};
