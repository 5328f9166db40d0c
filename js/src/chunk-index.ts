/**
 * Chunk indexes: a Zarr v3 uint64 array of shape grid + [2] holding (offset, nbytes) of every data
 * chunk of an array in one file; 2^64-1 in both marks a chunk that was never written. Index
 * chunks are read lazily through zarrita itself (so blosc decodes as everywhere else) and kept
 * in a small LRU.
 */
import * as zarr from "zarrita";
import { normalizeMetadataText } from "./json.js";
import { utf8Decode, utf8Encode } from "./bytes.js";
import { ReferenceFormatError } from "./errors.js";

const MISSING = 0xffffffffffffffffn;

/** Reads files of the index array, e.g. `…/index/a/b/zarr.json`; undefined when absent. */
export type IndexFileReader = (
  url: string,
  signal?: AbortSignal,
) => Promise<Uint8Array | undefined>;

/** A read-only zarrita store over one folder URL. */
class FolderStore {
  constructor(
    private readonly base: string,
    private readonly readFile: IndexFileReader,
  ) {}

  async get(key: string, opts?: { signal?: AbortSignal }): Promise<Uint8Array | undefined> {
    const bytes = await this.readFile(
      new URL(key.replace(/^\//, ""), this.base).href,
      opts?.signal,
    );
    if (bytes !== undefined && key.endsWith("zarr.json")) {
      return utf8Encode(normalizeMetadataText(utf8Decode(bytes)));
    }
    return bytes;
  }
}

type IndexChunk = { data: BigUint64Array; stride: number[] };

class Lru<V> {
  readonly #map = new Map<string, V>();
  constructor(private readonly capacity: number) {}
  get(key: string): V | undefined {
    const v = this.#map.get(key);
    if (v !== undefined) {
      this.#map.delete(key);
      this.#map.set(key, v);
    }
    return v;
  }
  set(key: string, value: V): void {
    this.#map.delete(key);
    this.#map.set(key, value);
    while (this.#map.size > this.capacity) {
      this.#map.delete(this.#map.keys().next().value as string);
    }
  }
  delete(key: string): void {
    this.#map.delete(key);
  }
}

export interface ChunkLocation {
  readonly offset: number;
  readonly size: number;
}

export class ChunkIndex {
  #array: Promise<zarr.Array<zarr.DataType, FolderStore>> | undefined;
  readonly #chunks: Lru<Promise<IndexChunk>>;
  readonly #store: FolderStore;

  /** Index chunks fetched so far (for tests and diagnostics). */
  fetchedChunks = 0;

  constructor(
    readonly path: string,
    /** URL of the index array's folder, ending in "/". */
    readonly location: string,
    readFile: IndexFileReader,
    cacheSize: number,
  ) {
    this.#store = new FolderStore(location, readFile);
    this.#chunks = new Lru(cacheSize);
  }

  #open(): Promise<zarr.Array<zarr.DataType, FolderStore>> {
    this.#array ??= zarr.open.v3(zarr.root(this.#store), { kind: "array" }).then((array) => {
      if (array.dtype !== "uint64" || array.shape[array.shape.length - 1] !== 2) {
        throw new ReferenceFormatError(`index of ${this.path} must be uint64 with last axis 2`);
      }
      return array;
    });
    this.#array.catch(() => (this.#array = undefined));
    return this.#array;
  }

  /** Where data chunk `coords` is, or null when it was never written. */
  async locate(coords: readonly number[]): Promise<ChunkLocation | null> {
    const array = await this.#open();
    const grid = array.shape.slice(0, -1);
    const chunkShape = array.chunks;
    if (coords.length !== grid.length || coords.some((c, i) => c < 0 || c >= (grid[i] as number))) {
      throw new ReferenceFormatError(
        `chunk ${coords.join(",")} is outside the index of ${this.path}`,
      );
    }
    const indexCoords = coords.map((c, i) => Math.floor(c / (chunkShape[i] as number)));
    indexCoords.push(0);
    const cacheKey = indexCoords.join(",");
    let chunk = this.#chunks.get(cacheKey);
    if (chunk === undefined) {
      this.fetchedChunks++;
      // Shared by every caller, so one caller aborting must not cancel it: no signal.
      chunk = array.getChunk(indexCoords) as Promise<IndexChunk>;
      this.#chunks.set(cacheKey, chunk);
      chunk.catch(() => this.#chunks.delete(cacheKey));
    }
    const { data, stride } = await chunk;
    let at = 0;
    coords.forEach((c, i) => (at += (c % (chunkShape[i] as number)) * (stride[i] as number)));
    const offset = data[at] as bigint;
    const size = data[at + (stride[coords.length] as number)] as bigint;
    if (offset === MISSING && size === MISSING) return null;
    return { offset: Number(offset), size: Number(size) };
  }
}
