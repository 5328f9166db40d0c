/**
 * The arrays of one store's references, as their inline zarr.json documents describe them
 * (`ArrayInfo`, array-metadata.ts): the array a key belongs to, each made once, and the stored
 * key behind a chunk key of a struct array's uint8 view.
 */
import { arrayInfoFromMetadata, chunkCoordsFromKey } from "./array-metadata.js";
import { utf8Decode } from "./bytes.js";
import { normalizeMetadataText, parseJson } from "./json.js";
export class StoreArrays {
    #references;
    #arrays = new Map();
    #arraysOf = new Map();
    constructor(references) {
        this.#references = references;
    }
    /** The array a chunk key belongs to (the nearest node with a zarr.json), or undefined. */
    arrayOf(key) {
        // the answer depends on the key's folder only: kept per folder (a chunk read asks 3 times)
        const cut0 = key.lastIndexOf("/");
        const folder = cut0 < 0 ? "\u0000" : key.slice(0, cut0);
        if (this.#arraysOf.has(folder))
            return this.#arraysOf.get(folder);
        if (this.#arraysOf.size >= 4096)
            this.#arraysOf.clear();
        const found = this.#findArrayOf(key);
        this.#arraysOf.set(folder, found);
        return found;
    }
    #findArrayOf(key) {
        let cut = key.lastIndexOf("/");
        while (cut >= -1) {
            const path = cut < 0 ? "" : key.slice(0, cut);
            const metaKey = path === "" ? "zarr.json" : `${path}/zarr.json`;
            if (this.#references.has(metaKey)) {
                const info = this.arrayInfo(path);
                if (info === null)
                    return undefined;
                return { info, selection: this.#references.selections.get(path) };
            }
            if (cut < 0)
                break;
            cut = key.lastIndexOf("/", cut - 1);
        }
        return undefined;
    }
    /**
     * The array at `path` as its inline zarr.json describes it (made once); null: not an array,
     * or its zarr.json is not inline.
     */
    arrayInfo(path) {
        let info = this.#arrays.get(path);
        if (info !== undefined)
            return info;
        info = null;
        const ref = this.#references.lookup(path === "" ? "zarr.json" : `${path}/zarr.json`);
        if (ref?.kind === "inline") {
            const meta = parseJson(normalizeMetadataText(utf8Decode(ref.bytes)));
            if (meta?.node_type === "array")
                info = arrayInfoFromMetadata(path, meta);
        }
        this.#arrays.set(path, info);
        return info;
    }
    /**
     * The stored key of a chunk of a struct array's uint8 view: the view has one more axis (the
     * element's bytes) of one chunk, so its chunk keys end in one more coordinate, always 0.
     */
    storedKey(key) {
        const info = this.arrayOf(key)?.info;
        if (info?.struct === undefined || isChunkKey(info, key))
            return key;
        const suffix = info.path === "" ? key : key.slice(info.path.length + 1);
        const view = { ...info, shape: [...info.shape, info.struct.layout.itemSize] };
        const coords = chunkCoordsFromKey(view, suffix);
        if (coords === undefined || coords.pop() !== 0)
            return key;
        const sep = info.separator;
        const tail = info.defaultEncoding
            ? ["c", ...coords].join(sep)
            : coords.length > 0
                ? coords.join(sep)
                : "0";
        return info.path === "" ? tail : `${info.path}/${tail}`;
    }
}
/** Whether `key` is a chunk key of the array `info` describes. */
export function isChunkKey(info, key) {
    const suffix = info.path === "" ? key : key.slice(info.path.length + 1);
    return chunkCoordsFromKey(info, suffix) !== undefined;
}
