// Compile-only check (npm run lint): the public types fit zarrita's store interface.
import * as zarr from "zarrita";
import { decodeAttributes, ReferenceStore, SourceChangedError } from "shadowzarr";
import { openLocal } from "shadowzarr/node";

export async function example(): Promise<void> {
  const store = await ReferenceStore.fromUrl("https://example.org/x.shadowzarr", {
    maxMergeSize: 0,
    fetch: (request: Request) => fetch(request),
  });
  const array = await zarr.open.v3(zarr.root(store).resolve("a/b"), { kind: "array" });
  const chunk = await zarr.get(array, [zarr.slice(0, 10), null]);
  const attrs = decodeAttributes(array.attrs);
  const names: string[] = store.children("a");
  const local = await openLocal("x.json");
  const bytes: Uint8Array | undefined = await local.getRange("/a/c/0", { suffixLength: 4 });
  console.log(chunk.shape, attrs, names, bytes, SourceChangedError.name);
}
