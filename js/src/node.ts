/**
 * Node-only entry (`shadowzarr/node`): open references on the local disk. Local files are read
 * through a `fetch` that answers `file:` URLs from the file system with the same status codes
 * and headers an HTTP server would send, so the store validates them the same way.
 *
 * @module
 */
import { open, stat } from "node:fs/promises";
import { pathToFileURL, fileURLToPath } from "node:url";
import type { FetchFunction } from "./dandi.js";
import { ReferenceStore, type ReferenceStoreOptions } from "./store.js";

export * from "./index.js";

const RANGE = /^bytes=(\d*)-(\d*)$/;

async function fileResponse(request: Request): Promise<Response> {
  const path = fileURLToPath(request.url);
  let size: number;
  try {
    const info = await stat(path);
    if (!info.isFile()) return new Response(null, { status: 404, statusText: "Not a file" });
    size = info.size;
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") {
      return new Response(null, { status: 404, statusText: "Not Found" });
    }
    throw error;
  }
  const range = request.headers.get("range");
  let start = 0;
  let end = size;
  let status = 200;
  const headers = new Headers();
  if (range !== null) {
    const m = RANGE.exec(range.trim());
    if (m === null) return new Response(null, { status: 416 });
    if (m[1] === "") {
      start = Math.max(0, size - Number(m[2]));
    } else {
      start = Number(m[1]);
      end = m[2] === "" ? size : Math.min(size, Number(m[2]) + 1);
    }
    if (start >= size) {
      headers.set("Content-Range", `bytes */${size}`);
      return new Response(null, { status: 416, headers });
    }
    status = 206;
    headers.set("Content-Range", `bytes ${start}-${end - 1}/${size}`);
  }
  const body = new Uint8Array(end - start);
  const handle = await open(path, "r");
  try {
    let at = 0;
    while (at < body.length) {
      const { bytesRead } = await handle.read(body, at, body.length - at, start + at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
  } finally {
    await handle.close();
  }
  headers.set("Content-Length", String(body.length));
  return new Response(body, { status, headers });
}

/** A fetch that reads `file:` URLs from disk and hands everything else to `fallback`. */
export function localFileFetch(
  fallback: FetchFunction = (r) => globalThis.fetch(r),
): FetchFunction {
  return (request) => (request.url.startsWith("file:") ? fileResponse(request) : fallback(request));
}

/**
 * Open references on the local disk: a .json file or a folder holding refs.json and its chunk
 * manifests. Relative and `file:` URLs in them are read from disk, http(s) ones with fetch.
 */
export async function openLocal(
  path: string,
  options: ReferenceStoreOptions = {},
): Promise<ReferenceStore> {
  const info = await stat(path);
  const url = pathToFileURL(path).href + (info.isDirectory() ? "/" : "");
  return ReferenceStore.fromUrl(url, { ...options, fetch: localFileFetch(options.fetch) });
}
