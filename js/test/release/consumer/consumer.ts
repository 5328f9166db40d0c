// Compiled by test/release/check.mjs under moduleResolution node10, bundler and nodenext: the
// public types of the packed tarball resolve, and they are the real ones (not `any`).
import * as zarr from "zarrita";
import {
  decodeAttributes,
  decodeStruct,
  ReferenceStore,
  SourceChangedError,
  type ReferenceStoreOptions,
  type StructLayout,
} from "shadowzarr";
import { localFileFetch, openLocal } from "shadowzarr/node";

export async function example(): Promise<string[]> {
  const options: ReferenceStoreOptions = { maxMergeSize: 0, fetch: localFileFetch() };
  const store: ReferenceStore = await openLocal("refs.json", options);
  const array = await zarr.open.v3(zarr.root(store).resolve("a/b"), { kind: "array" });
  const chunk = await zarr.get(array, [zarr.slice(0, 10), null]);
  const attrs = decodeAttributes(array.attrs);
  const layout: StructLayout | undefined = store.structOf("a/b");
  if (layout !== undefined) decodeStruct(chunk as never, layout);
  const bytes: Uint8Array | undefined = await store.getRange("/a/c/0", { suffixLength: 4 });
  // @ts-expect-error children() returns names, not a number: fails if the types were `any`
  const wrong: number = store.children("a");
  console.log(chunk.shape, attrs, bytes, wrong, SourceChangedError.name);
  return store.children("a");
}
