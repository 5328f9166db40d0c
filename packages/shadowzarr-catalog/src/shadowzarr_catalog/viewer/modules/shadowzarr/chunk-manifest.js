/**
 * Chunk manifests: a Zarr v3 uint64 array of shape grid + [2] holding (offset, nbytes) of every data
 * chunk of an array in one file; 2^64-1 in both marks a chunk that was never written, and so do
 * offset 0 and size 0 (VirtualiZarr's missing chunk); size 0 at another offset is malformed. As
 * in the Python reader, an index array is read as its own zarr.json describes it
 * (manifest-layout.ts): a stranger's index may be chunked any way. The zarr.json is fetched once,
 * together with the index chunk that `write_rfs`'s layout (a function of the chunk grid) would
 * put the first lookup in; that guess is used only when the zarr.json describes exactly that
 * layout, so a cold lookup costs one round trip, and otherwise the chunk is read again as the
 * zarr.json says. Index chunks are read through zarrita (so Blosc decodes as everywhere else),
 * a few kept in a small LRU. A missing or damaged index chunk is an error, never a run of
 * missing chunks.
 */
import * as zarr from "zarrita";
import { utf8Decode, utf8Encode } from "./bytes.js";
import { ReferenceFormatError, SourceUnavailableError } from "./errors.js";
import { manifestLayoutFromMetadata } from "./manifest-layout.js";
import { normalizeMetadataText, parseJson } from "./json.js";
const MISSING = 0xffffffffffffffffn;
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);
/** Data chunks one index chunk covers, about. */
export const CHUNKS_PER_INDEX_CHUNK = 65536;
/** Keep trailing grid axes whole while they fit `target`; cut the next one to fit. */
export function indexChunkShape(grid, target = CHUNKS_PER_INDEX_CHUNK) {
    const shape = grid.map(() => 1);
    let covered = 1;
    for (let axis = grid.length - 1; axis >= 0; axis--) {
        const extent = Math.max(1, grid[axis]);
        if (covered * extent <= target) {
            shape[axis] = extent;
            covered *= extent;
        }
        else {
            shape[axis] = Math.max(1, Math.floor(target / covered));
            break;
        }
    }
    return [...shape, 2];
}
/** The zarr.json `write_rfs` writes for the index of an array of chunk grid `grid`. */
function writtenMetadata(grid) {
    return {
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
        storage_transformers: [],
    };
}
/** A read-only zarrita store over one index folder URL, showing zarrita the checked layout. */
class FolderStore {
    base;
    readFile;
    carried;
    /** The metadata zarrita is shown, once the index's own zarr.json has been checked. */
    metadata;
    /** Index chunks fetched on a guess, handed over once if the guess turns out right. */
    early = new Map();
    constructor(base, readFile, carried) {
        this.base = base;
        this.readFile = readFile;
        this.carried = carried;
    }
    /** Whether the file `key` (relative to the index array) came with refs.json. */
    carries(key) {
        return this.carried.has(key);
    }
    /** The file `relative` of the index array: carried in refs.json, or fetched. */
    async file(relative, signal) {
        const carried = this.carried.get(relative);
        if (carried !== undefined)
            return carried;
        const url = new URL(relative, this.base).href;
        const bytes = await this.readFile(url, signal);
        if (bytes === undefined) {
            throw new SourceUnavailableError(`the index file ${url} does not exist`, url, 404);
        }
        return bytes;
    }
    async get(key, opts) {
        if (key === "/zarr.json")
            return this.metadata;
        const relative = key.replace(/^\//, "");
        const early = this.early.get(relative);
        if (early !== undefined) {
            this.early.delete(relative);
            return early;
        }
        return this.file(relative, opts?.signal);
    }
}
class Lru {
    capacity;
    #map = new Map();
    constructor(capacity) {
        this.capacity = capacity;
    }
    get(key) {
        const v = this.#map.get(key);
        if (v !== undefined) {
            this.#map.delete(key);
            this.#map.set(key, v);
        }
        return v;
    }
    set(key, value) {
        this.#map.delete(key);
        this.#map.set(key, value);
        while (this.#map.size > this.capacity) {
            this.#map.delete(this.#map.keys().next().value);
        }
    }
    delete(key) {
        this.#map.delete(key);
    }
}
export class ChunkManifest {
    path;
    location;
    grid;
    #array;
    #chunks;
    #store;
    /** Index chunks fetched so far (for tests and diagnostics). */
    fetchedChunks = 0;
    constructor(path, 
    /** URL of the index array's folder, ending in "/". */
    location, 
    /** The data array's chunk grid. */
    grid, readFile, cacheSize, 
    /** Files of the index array carried in refs.json (`IndexEntry.files`). */
    carried = new Map()) {
        this.path = path;
        this.location = location;
        this.grid = grid;
        this.#store = new FolderStore(location, readFile, carried);
        this.#chunks = new Lru(cacheSize);
    }
    /** The index array as its zarr.json describes it; `first` is the first lookup's chunk. */
    #open(first) {
        this.#array ??= this.#load(first);
        this.#array.catch(() => (this.#array = undefined));
        return this.#array;
    }
    async #load(first) {
        const where = `index of ${this.path} (${this.location})`;
        const guess = manifestLayoutFromMetadata(writtenMetadata(this.grid), this.grid, where);
        const guessedKey = `c/${this.#blockOf(guess, [...first, 0]).join("/")}`;
        // Shared by every caller, so one caller aborting must not cancel it: no signal.
        const early = this.#fetchCounted(guessedKey);
        early.catch(() => undefined); // read again (and refused) below if the guess is right
        let layout;
        try {
            const text = normalizeMetadataText(utf8Decode(await this.#store.file("zarr.json")));
            layout = manifestLayoutFromMetadata(parseJson(text), this.grid, where);
        }
        catch (error) {
            if (error instanceof SourceUnavailableError || error instanceof ReferenceFormatError) {
                throw error;
            }
            throw new ReferenceFormatError(`${where}: its zarr.json is not valid UTF-8 JSON`, {
                cause: error,
            });
        }
        const metadata = JSON.stringify(layout.metadata);
        if (metadata === JSON.stringify(guess.metadata))
            this.#store.early.set(guessedKey, early);
        this.#store.metadata = utf8Encode(metadata);
        return zarr.open.v3(zarr.root(this.#store), { kind: "array" });
    }
    #fetchCounted(key) {
        if (!this.#store.carries(key))
            this.fetchedChunks++;
        return this.#store.file(key);
    }
    /** The index chunk holding `element` of the index array under `layout`. */
    #blockOf(layout, element) {
        return element.map((e, i) => Math.floor(e / layout.chunkShape[i]));
    }
    /** One index chunk, decoded; a chunk that is not what the zarr.json says is refused. */
    async #readChunk(array, coords) {
        let chunk;
        try {
            chunk = (await array.getChunk(coords));
        }
        catch (error) {
            if (error instanceof SourceUnavailableError)
                throw error;
            throw new ReferenceFormatError(`index chunk ${coords} of ${this.path} cannot be decoded as its zarr.json says`, { cause: error });
        }
        const expected = array.chunks.reduce((a, b) => a * b, 1);
        if (!(chunk.data instanceof BigUint64Array) || chunk.data.length !== expected) {
            throw new ReferenceFormatError(`index chunk ${coords} of ${this.path} has the wrong size`);
        }
        return chunk;
    }
    /** The decoded index chunk `block`, from the LRU or read once for every caller. */
    #chunk(array, block) {
        const cacheKey = block.join(",");
        let chunk = this.#chunks.get(cacheKey);
        if (chunk === undefined) {
            const key = `c/${block.join("/")}`;
            if (!this.#store.early.has(key) && !this.#store.carries(key))
                this.fetchedChunks++;
            // Shared by every caller, so one caller aborting must not cancel it: no signal.
            chunk = this.#readChunk(array, block);
            this.#chunks.set(cacheKey, chunk);
            chunk.catch(() => this.#chunks.delete(cacheKey));
        }
        return chunk;
    }
    /** Element `element` of the index array. */
    async #entry(array, element) {
        const block = this.#blockOf({ chunkShape: array.chunks }, element);
        const { data, stride } = await this.#chunk(array, block);
        let at = 0;
        element.forEach((e, i) => (at += (e % array.chunks[i]) * stride[i]));
        return data[at];
    }
    /**
     * Where data chunk `coords` is, or null when it was never written (2^64-1 twice, or offset 0
     * and size 0). A row of size 0 elsewhere, or one beyond 2^53 - 1, is refused.
     */
    async locate(coords) {
        if (coords.length !== this.grid.length ||
            coords.some((c, i) => c < 0 || c >= this.grid[i])) {
            return null; // outside the grid: never written
        }
        const array = await this.#open(coords);
        const [offset, size] = await Promise.all([
            this.#entry(array, [...coords, 0]),
            this.#entry(array, [...coords, 1]),
        ]);
        if (offset === MISSING && size === MISSING)
            return null;
        if (offset === 0n && size === 0n)
            return null;
        const where = `the index of ${this.path} (${this.location}), chunk ${coords}`;
        if (size === 0n) {
            throw new ReferenceFormatError(`${where}: a row of size 0 at offset ${offset} (only 0, 0 is a missing chunk)`);
        }
        if (offset > SAFE || size > SAFE || offset + size > SAFE) {
            throw new ReferenceFormatError(`${where}: offset ${offset} and size ${size} run beyond 2^53 - 1`);
        }
        return { offset: Number(offset), size: Number(size) };
    }
}
