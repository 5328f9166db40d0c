/**
 * The grouped view, as the Python store shows it by default (`grouped_view="auto"`,
 * `shadowzarr_store.views.grouped`): an array of many small stored chunks is shown to zarrita
 * as shards of them, so a dense read costs a few shard reads instead of one read per chunk.
 *
 * The rule and the metadata are the Python store's, constant for constant, so both stores show
 * the same zarr.json for the same references (a cross-reader test checks it): arrays of at least
 * `MIN_CHUNKS` stored chunks, each under `GROUP_BELOW_BYTES` decoded, get a chunk grid of blocks
 * of stored chunks (trailing axes whole first) and one `sharding_indexed` codec whose inner
 * chunks are the stored chunks with the array's codecs. Where every chunk comes from one table of
 * entries into one file (the array's chunk manifest, or its chunks listed in the references as
 * one table, listed-table.ts) and the array's codecs are `bytes` (then any bounded byte codecs),
 * an inner chunk packs a block of stored chunks of about `PACK_BYTES` in C order, decoded by
 * the store (byte codecs undone) and shown as plain `bytes`.
 *
 * One name differs: Python names shards of slabs `shadowzarr.sharding_indexed` (its faster
 * decoder of the same format); zarrita 0.7.5 recognises sharding only by the name
 * `sharding_indexed`, so this store always shows that name. See grouped-shards.ts for the
 * shard's bytes.
 */
import { fillElementBytes } from "./array-metadata.js";
import { ReferenceFormatError } from "./errors.js";
export const GROUP_BELOW_BYTES = 256 * 1024;
export const AUTO_SHARD_BYTES = 4 * 1024 * 1024;
export const MAX_INNER_CHUNKS = 1024;
export const MIN_CHUNKS = 4;
export const MAX_PACKED_FACTOR = 4;
export const PACK_BYTES = 1024 * 1024;
const SKIPPED_CODECS = new Set(["sharding_indexed", "vlen-utf8", "vlen-bytes", "vlen_utf8"]);
/** Item sizes of the data types numpy knows by these names (Python's `np.dtype(name)`). */
const ITEM_SIZES = {
    bool: 1,
    int8: 1,
    uint8: 1,
    int16: 2,
    uint16: 2,
    float16: 2,
    int32: 4,
    uint32: 4,
    float32: 4,
    int64: 8,
    uint64: 8,
    float64: 8,
    complex64: 8,
    complex128: 16,
};
/**
 * Byte codecs whose output size the Python store bounds (`codec_policy.compressed_bound` is not
 * None for their role), so it decodes them itself when packing. Any other codec after `bytes`
 * keeps one stored chunk per inner chunk.
 */
const BOUNDED_BYTE_CODECS = new Set([
    "numcodecs.shuffle",
    "crc32c",
    "numcodecs.crc32",
    "numcodecs.crc32c",
    "numcodecs.adler32",
    "numcodecs.fletcher32",
    "numcodecs.jenkins_lookup3",
    "numcodecs.zlib",
    "numcodecs.gzip",
    "gzip",
    "numcodecs.bz2",
    "numcodecs.lzma",
    "blosc",
    "numcodecs.blosc",
    "imagecodecs_blosc",
    "zstd",
    "numcodecs.zstd",
    "imagecodecs_zstd",
    "numcodecs.lz4",
    "imagecodecs_lz4h5",
    "imagecodecs_zlib",
    "imagecodecs_deflate",
    "imagecodecs_lz4",
    "imagecodecs_lzma",
    "imagecodecs_bz2",
    "imagecodecs_lzw",
    "imagecodecs_packbits",
    "imagecodecs_lzf",
]);
const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
/** The shard size in bytes a setting asks for; 0: the view is off. */
export function shardBytesOf(setting) {
    if (setting === undefined || setting === "auto" || setting === true)
        return AUTO_SHARD_BYTES;
    if (setting === false || setting === 0)
        return 0;
    if (typeof setting === "number" && Number.isSafeInteger(setting) && setting > 0)
        return setting;
    throw new RangeError(`groupedView must be 0 or false (off), "auto" or true, or a target shard size in bytes, ` +
        `got ${JSON.stringify(setting)}`);
}
/** One array's view: shards of `factors` stored chunks, each inner chunk `pack` of them. */
export class GroupLayout {
    chunkShape;
    grid;
    factors;
    pack;
    itemsize;
    kind;
    members;
    packs;
    count;
    innerShape;
    shardShape;
    chunkNbytes;
    constructor(chunkShape, 
    /** The stored chunk grid. */
    grid, factors, 
    /** Stored chunks per inner chunk along each axis (all 1: the stored chunks themselves). */
    pack, itemsize, 
    /** How packs are made: plain bytes, stored chunks decoded by the store, or no packs. */
    kind) {
        this.chunkShape = chunkShape;
        this.grid = grid;
        this.factors = factors;
        this.pack = pack;
        this.itemsize = itemsize;
        this.kind = kind;
        this.members = product(pack);
        this.packs = factors.map((f, i) => Math.floor(f / pack[i]));
        this.count = product(this.packs);
        this.innerShape = chunkShape.map((c, i) => c * pack[i]);
        this.shardShape = chunkShape.map((c, i) => c * factors[i]);
        this.chunkNbytes = product(chunkShape) * itemsize;
    }
    get indexBytes() {
        return 16 * this.count;
    }
    /**
     * The stored chunk coordinates of `shard`: inner chunks in C order, and within each its
     * `members` stored chunks in C order (null: outside the stored grid, or no such shard).
     */
    innerChunks(shard) {
        const ndim = this.grid.length;
        const total = this.count * this.members;
        if (shard.length !== ndim ||
            shard.some((s, i) => s < 0 || s * this.factors[i] >= this.grid[i])) {
            return new Array(total).fill(null);
        }
        const inner = cOrder(this.pack);
        const out = [];
        for (const o of cOrder(this.packs)) {
            // the first stored chunk of inner chunk o, then its members at offsets m
            const corner = shard.map((s, i) => s * this.factors[i] + o[i] * this.pack[i]);
            for (const m of inner) {
                const point = new Array(ndim);
                let outside = false;
                for (let i = 0; i < ndim; i++) {
                    const p = corner[i] + m[i];
                    point[i] = p;
                    if (p >= this.grid[i])
                        outside = true;
                }
                out.push(outside ? null : point);
            }
        }
        return out;
    }
    /**
     * An inner chunk's bytes from its members' (each `chunkNbytes`, C order over `pack`): the
     * block of `innerShape` in C order. A row of a stored chunk (its last axis) moves whole.
     */
    packBytes(members) {
        const out = new Uint8Array(this.members * this.chunkNbytes);
        members.forEach((source, n) => this.packInto(out, n, source));
        return out;
    }
    /**
     * Put member `n`'s bytes (`chunkNbytes`, C order) where they go in the pack `out` (an inner
     * chunk's `members * chunkNbytes` bytes): in one piece when the pack stacks its members along
     * the first axis only, else row by row (a row: the stored chunk's last axis).
     */
    packInto(out, n, source) {
        const place = (this.#placement ??= this.#place());
        const base = place.bases[n];
        if (place.rows === null) {
            out.set(source, base);
            return;
        }
        const rowBytes = place.rowBytes;
        const rows = place.rows;
        for (let k = 0, from = 0; k < rows.length; k++, from += rowBytes) {
            const at = base + rows[k];
            if (rowBytes > 64)
                out.set(source.subarray(from, from + rowBytes), at);
            else
                for (let b = 0; b < rowBytes; b++)
                    out[at + b] = source[from + b];
        }
    }
    #placement;
    /** Where each member starts in a pack, and each of its rows relative to that (once). */
    #place() {
        const ndim = this.chunkShape.length;
        const rowBytes = this.chunkShape[ndim - 1] * this.itemsize;
        // byte strides of the packed block (innerShape in C order)
        const strides = new Array(ndim).fill(this.itemsize);
        for (let axis = ndim - 2; axis >= 0; axis--) {
            strides[axis] = strides[axis + 1] * this.innerShape[axis + 1];
        }
        const bases = cOrder(this.pack).map((m) => {
            let base = 0;
            for (let axis = 0; axis < ndim; axis++) {
                base += m[axis] * this.chunkShape[axis] * strides[axis];
            }
            return base;
        });
        if (this.pack.every((p, axis) => axis === 0 || p === 1))
            return { bases, rows: null, rowBytes };
        const rows = cOrder(this.chunkShape.slice(0, -1)).map((r) => {
            let at = 0;
            for (let axis = 0; axis < ndim - 1; axis++)
                at += r[axis] * strides[axis];
            return at;
        });
        return { bases, rows, rowBytes };
    }
}
/**
 * The grouped layout of the array whose stored zarr.json is `document`, or undefined when it is
 * shown as stored. `indexOnly`: every chunk of it comes from one table of entries (its chunk
 * manifest with no refs, gen entries or selection, or its listed table), so its stored chunks
 * may be packed (`packKindOf`).
 */
export function groupLayout(document, shardBytes, indexOnly) {
    if (document.node_type !== "array")
        return undefined;
    const grid0 = document.chunk_grid;
    if (!isObject(grid0) || grid0.name !== "regular" || !isObject(grid0.configuration)) {
        return undefined;
    }
    const shape = integers(document.shape, 0);
    const chunkShape = integers(grid0.configuration.chunk_shape, 1);
    const codecs = document.codecs ?? [];
    if (shape === undefined || chunkShape === undefined || shape.length !== chunkShape.length) {
        return undefined;
    }
    if (chunkShape.length === 0 || typeof document.data_type !== "string")
        return undefined;
    if (!Array.isArray(codecs) || !codecs.every(isObject))
        return undefined;
    if (codecs.some((c) => SKIPPED_CODECS.has(c.name)))
        return undefined;
    const itemsize = ITEM_SIZES[document.data_type];
    if (itemsize === undefined)
        return undefined;
    const chunkNbytes = product(chunkShape) * itemsize;
    const grid = shape.map((n, i) => Math.ceil(n / chunkShape[i]));
    if (!(chunkNbytes > 0 && chunkNbytes < GROUP_BELOW_BYTES))
        return undefined;
    if (product(grid) < MIN_CHUNKS)
        return undefined;
    let pack = [];
    let kind = null;
    if (Math.floor(PACK_BYTES / chunkNbytes) >= 2)
        kind = packKindOf(codecs, indexOnly);
    if (kind !== null) {
        pack = factorsOf(grid, Math.floor(PACK_BYTES / chunkNbytes));
        if (product(pack) < 2)
            pack = [];
    }
    const scale = pack.length > 0 ? MAX_PACKED_FACTOR : 1;
    let factors = factorsOf(grid, Math.min(MAX_INNER_CHUNKS * scale, Math.floor((shardBytes * scale) / chunkNbytes)));
    if (product(factors) < 2)
        return undefined;
    if (pack.length > 0) {
        factors = factors.map((f, i) => wholePacks(f, pack[i], grid[i]));
    }
    return new GroupLayout(chunkShape, grid, factors, pack.length > 0 ? pack : chunkShape.map(() => 1), itemsize, pack.length > 0 ? kind : null);
}
/**
 * How an array's stored chunks may be packed (Python's `pack_kind`): only when every chunk
 * comes from one table of entries (`indexOnly`); `plain` for `bytes` alone, `decoded` for `bytes`
 * followed by byte codecs whose output the Python store bounds.
 */
export function packKindOf(codecs, indexOnly) {
    if (!indexOnly || codecs.length === 0 || codecs[0]?.name !== "bytes")
        return null;
    if (codecs.length === 1)
        return "plain";
    return codecs.slice(1).every((c) => BOUNDED_BYTE_CODECS.has(c.name)) ? "decoded" : null;
}
/**
 * Whether every chunk of `path` comes from its chunk manifest (the first half of Python's
 * `manifest_only`; the store adds listed tables): no gen entries, no selection, and no
 * reference under its chunk keys (`withRefs`, from `indexedWithRefs`).
 */
export function indexOnly(references, path, withRefs) {
    if (!references.indexes.has(path) || references.gen.length > 0)
        return false;
    return !references.selections.has(path) && !withRefs.has(path);
}
/** The indexed arrays some of whose chunk keys (`path/c/…`) are also in `refs`. */
export function indexedWithRefs(references) {
    const out = new Set();
    if (references.indexes.size === 0)
        return out;
    const indexed = [...references.indexes.keys()].map((p) => [p, p === "" ? "c/" : `${p}/c/`]);
    for (const key of Object.keys(references.refs)) {
        for (const [path, prefix] of indexed)
            if (key.startsWith(prefix))
                out.add(path);
    }
    return out;
}
/** A stored chunk of fill elements, the bytes of a pack's member that is not stored. */
export function fillChunk(document, layout) {
    const codecs = document.codecs;
    const endian = codecs[0]?.configuration?.endian;
    const element = fillElementBytes(document.data_type, document.fill_value, layout.itemsize, endian !== "big") ??
        new Uint8Array(layout.itemsize);
    const out = new Uint8Array(layout.chunkNbytes);
    for (let at = 0; at < out.length; at += element.length)
        out.set(element, at);
    return out;
}
/** The sharding codec document both stores show (Python's `sharding_codec`). */
export function shardingCodec(innerShape, codecs) {
    return {
        name: "sharding_indexed",
        configuration: {
            chunk_shape: [...innerShape],
            codecs: [...codecs],
            index_codecs: [{ name: "bytes", configuration: { endian: "little" } }],
            index_location: "start",
        },
    };
}
/**
 * `text`, the zarr.json at `key` as zarrita is shown it, with every array in it (the node and
 * its consolidated entries) that `layoutOf(path)` groups shown as shards; unchanged otherwise.
 */
export function groupedMetadata(text, key, layoutOf) {
    const path = key.slice(0, -"zarr.json".length).replace(/\/+$/, "");
    let document;
    try {
        document = JSON.parse(text);
    }
    catch {
        return text;
    }
    if (!isObject(document))
        return text;
    const visit = (path, node) => {
        let changed = false;
        if (node.node_type === "array") {
            const layout = layoutOf(path);
            if (layout !== undefined) {
                const grid = node.chunk_grid;
                node.chunk_grid = {
                    name: "regular",
                    configuration: { ...grid.configuration, chunk_shape: [...layout.shardShape] },
                };
                const codecs = node.codecs;
                node.codecs = [
                    shardingCodec(layout.innerShape, layout.kind === "decoded" ? codecs.slice(0, 1) : codecs),
                ];
                changed = true;
            }
        }
        const consolidated = node.consolidated_metadata;
        if (isObject(consolidated) && isObject(consolidated.metadata)) {
            for (const [child, doc] of Object.entries(consolidated.metadata)) {
                if (isObject(doc))
                    changed = visit(path === "" ? child : `${path}/${child}`, doc) || changed;
            }
        }
        return changed;
    };
    return visit(path, document) ? JSON.stringify(document) : text;
}
function integers(value, minimum) {
    if (!Array.isArray(value))
        return undefined;
    if (!value.every((v) => Number.isSafeInteger(v) && v >= minimum))
        return undefined;
    return value;
}
function product(values) {
    return values.reduce((a, b) => a * b, 1);
}
/** Every index of `shape` in C order. */
function cOrder(shape) {
    let out = [[]];
    for (const n of shape) {
        const next = [];
        for (const prefix of out)
            for (let i = 0; i < n; i++)
                next.push([...prefix, i]);
        out = next;
    }
    return out;
}
/** Python's `_whole_packs`: a shard's stored chunks along one axis rounded to whole packs. */
function wholePacks(factor, pack, grid) {
    if (factor >= grid)
        return Math.ceil(grid / pack) * pack;
    return Math.max(pack, Math.floor(factor / pack) * pack);
}
/** Python's `_factors`: trailing axes whole first, then as many of the leading as fit. */
function factorsOf(grid, budget) {
    const factors = grid.map(() => 1);
    for (let axis = grid.length - 1; axis >= 0; axis--) {
        if (budget < 2)
            break;
        factors[axis] = Math.max(1, Math.min(grid[axis], budget));
        budget = Math.floor(budget / factors[axis]);
    }
    return factors;
}
/**
 * The index of a shard from its stored chunks' logical lengths (-1: not stored), as Python's
 * `ShardIndex.build`: inner chunks one after the other after the index, in C order; an inner
 * chunk of several stored chunks holds `innerNbytes` when any of them is stored.
 */
export function buildShardIndex(lengths, members, innerNbytes) {
    const count = Math.floor(lengths.length / members);
    const index = new Uint8Array(16 * count);
    const view = new DataView(index.buffer);
    const offsets = [];
    const sizes = [];
    let at = 16 * count;
    for (let j = 0; j < count; j++) {
        let present = false;
        for (let m = 0; m < members; m++)
            present ||= lengths[j * members + m] >= 0;
        const size = !present ? 0 : members > 1 ? innerNbytes : lengths[j];
        if (!Number.isSafeInteger(size) || size < 0) {
            throw new ReferenceFormatError(`a shard's inner chunk ${j} has an invalid size ${size}`);
        }
        offsets.push(at);
        sizes.push(size);
        // uint64 as two uint32 halves (no BigInt per entry); every value is below 2^53
        if (present) {
            view.setUint32(16 * j, at % 2 ** 32, true);
            view.setUint32(16 * j + 4, Math.floor(at / 2 ** 32), true);
            view.setUint32(16 * j + 8, size % 2 ** 32, true);
            view.setUint32(16 * j + 12, Math.floor(size / 2 ** 32), true);
        }
        else {
            index.fill(0xff, 16 * j, 16 * j + 16);
        }
        at += size;
        if (!Number.isSafeInteger(at + 16 * count)) {
            throw new ReferenceFormatError(`a shard's stored chunks hold more than 2^53 - 1 bytes together: the references are damaged`);
        }
    }
    return {
        offsets,
        sizes,
        index,
        total: at + 16 * count,
        empty: sizes.every((s) => s === 0),
    };
}
