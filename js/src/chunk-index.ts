/**
 * Chunk indexes: a Zarr v3 uint64 array of shape grid + [2] holding (offset, nbytes) of every data
 * chunk of an array in one file; 2^64-1 in both marks a chunk that was never written. The layout
 * is fixed by the format (`shadowzarr_spec.chunk_index`): the index chunk shape follows from the
 * grid, the codecs are bytes + Blosc. Like the Python reader, the store takes the layout from the
 * data array's grid, never from the index's own zarr.json, and reads index chunks through zarrita
 * (so Blosc decodes as everywhere else), keeping a few in a small LRU. A missing or damaged index
 * chunk is an error, never a run of missing chunks.
 */
import * as zarr from "zarrita";
import { utf8Encode } from "./bytes.js";
import { ReferenceFormatError, SourceUnavailableError } from "./errors.js";

const MISSING = 0xffffffffffffffffn;
/** Data chunks one index chunk covers, about. */
export const CHUNKS_PER_INDEX_CHUNK = 65536;

/** Reads files of the index array, e.g. `…/index/a/b/c/0/0`; undefined when absent. */
export type IndexFileReader = (
  url: string,
  signal?: AbortSignal,
) => Promise<Uint8Array | undefined>;

/** Keep trailing grid axes whole while they fit `target`; cut the next one to fit. */
export function indexChunkShape(
  grid: readonly number[],
  target = CHUNKS_PER_INDEX_CHUNK,
): number[] {
  const shape = grid.map(() => 1);
  let covered = 1;
  for (let axis = grid.length - 1; axis >= 0; axis--) {
    const extent = Math.max(1, grid[axis] as number);
    if (covered * extent <= target) {
      shape[axis] = extent;
      covered *= extent;
    } else {
      shape[axis] = Math.max(1, Math.floor(target / covered));
      break;
    }
  }
  return [...shape, 2];
}

function indexMetadata(grid: readonly number[]): string {
  return JSON.stringify({
    zarr_format: 3,
    node_type: "array",
    shape: [...grid, 2],
    data_type: "uint64",
    chunk_grid: { name: "regular", configuration: { chunk_shape: indexChunkShape(grid) } },
    chunk_key_encoding: { name: "default", configuration: { separator: "/" } },
    fill_value: "18446744073709551615",
    codecs: [
      { name: "bytes", configuration: { endian: "little" } },
      {
        name: "blosc",
        configuration: { cname: "zstd", clevel: 5, shuffle: "shuffle", typesize: 8, blocksize: 0 },
      },
    ],
    attributes: {},
  });
}

/** A read-only zarrita store over one index folder URL, with the format's metadata. */
class FolderStore {
  constructor(
    private readonly base: string,
    private readonly grid: readonly number[],
    private readonly readFile: IndexFileReader,
    private readonly carried: ReadonlyMap<string, Uint8Array>,
  ) {}

  /** Whether the file `key` (relative to the index array) came with refs.json. */
  carries(key: string): boolean {
    return this.carried.has(key);
  }

  async get(key: string, opts?: { signal?: AbortSignal }): Promise<Uint8Array | undefined> {
    if (key === "/zarr.json") return utf8Encode(indexMetadata(this.grid));
    const relative = key.replace(/^\//, "");
    const carried = this.carried.get(relative);
    if (carried !== undefined) return carried;
    const url = new URL(relative, this.base).href;
    const bytes = await this.readFile(url, opts?.signal);
    if (bytes === undefined) {
      throw new SourceUnavailableError(`the index chunk ${url} does not exist`, url, 404);
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
    /** The data array's chunk grid. */
    grid: readonly number[],
    readFile: IndexFileReader,
    cacheSize: number,
    /** Files of the index array carried in refs.json (`IndexEntry.files`). */
    carried: ReadonlyMap<string, Uint8Array> = new Map(),
  ) {
    this.#store = new FolderStore(location, grid, readFile, carried);
    this.#chunks = new Lru(cacheSize);
  }

  #open(): Promise<zarr.Array<zarr.DataType, FolderStore>> {
    this.#array ??= zarr.open.v3(zarr.root(this.#store), { kind: "array" });
    this.#array.catch(() => (this.#array = undefined));
    return this.#array;
  }

  /** One index chunk, decoded; a chunk that is not the format's Blosc data is refused. */
  async #readChunk(
    array: zarr.Array<zarr.DataType, FolderStore>,
    coords: number[],
  ): Promise<IndexChunk> {
    let chunk: IndexChunk;
    try {
      chunk = (await array.getChunk(coords)) as IndexChunk;
    } catch (error) {
      if (error instanceof SourceUnavailableError) throw error;
      throw new ReferenceFormatError(
        `index chunk ${coords} of ${this.path} is not valid Blosc data`,
        {
          cause: error,
        },
      );
    }
    const expected = array.chunks.reduce((a, b) => a * b, 1);
    if (!(chunk.data instanceof BigUint64Array) || chunk.data.length !== expected) {
      throw new ReferenceFormatError(`index chunk ${coords} of ${this.path} has the wrong size`);
    }
    return chunk;
  }

  /** Where data chunk `coords` is, or null when it was never written. */
  async locate(coords: readonly number[]): Promise<ChunkLocation | null> {
    const array = await this.#open();
    const grid = array.shape.slice(0, -1);
    const chunkShape = array.chunks;
    if (coords.length !== grid.length || coords.some((c, i) => c < 0 || c >= (grid[i] as number))) {
      return null; // outside the grid: never written
    }
    const indexCoords = coords.map((c, i) => Math.floor(c / (chunkShape[i] as number)));
    indexCoords.push(0);
    const cacheKey = indexCoords.join(",");
    let chunk = this.#chunks.get(cacheKey);
    if (chunk === undefined) {
      if (!this.#store.carries(`c/${indexCoords.join("/")}`)) this.fetchedChunks++;
      // Shared by every caller, so one caller aborting must not cancel it: no signal.
      chunk = this.#readChunk(array, indexCoords);
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
