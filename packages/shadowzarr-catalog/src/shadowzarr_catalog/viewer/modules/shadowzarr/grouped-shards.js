/**
 * Serving the shards of the grouped view (grouped-view.ts) as zarrita's sharding codec asks for
 * them: a shard's index, computed from the references (never fetched), and byte ranges of its
 * inner chunks, each read from the stored chunks it shows, all at once so the batcher merges
 * them into a few range requests.
 *
 * A shard's value is the index (`count` little-endian uint64 pairs of offset and length), the
 * inner chunks one after the other in C order, and the index once more. The metadata says
 * `index_location: "start"` (as the Python store's does), and the offsets point after the
 * leading index; zarrita 0.7.5 ignores `index_location` and reads the index as the last bytes
 * of the shard (`{suffixLength}`), which the trailing copy answers. Both readings of the value
 * are right, and the sharding format allows bytes no index entry points to.
 */
import * as zarr from "zarrita";
import { ChunkDecodeError } from "./errors.js";
import { clampRange } from "./byte-map.js";
import { buildShardIndex } from "./grouped-view.js";
/** Shards kept: each holds its index and its stored chunks' references (up to 4,096). */
const SHARDS_KEPT = 64;
/** The grouped view's shards of one store: their indexes kept, their bytes read on demand. */
export class GroupedShards {
    #shards = new Map();
    /** Bytes `range` of the shard at `shard` of `array` (undefined: no chunk of it is stored). */
    read(key, array, shard, range, signal) {
        const entry = this.#shard(key, array, shard);
        const built = entry.value;
        if (built === undefined || range === null || !("start" in range)) {
            return entry.promise.then((value) => this.#read(value, array, range, signal));
        }
        return this.#read(built, array, range, signal);
    }
    /** (Not async: zarrita's read of one inner chunk goes straight to its stored chunk's.) */
    #read(built, array, range, signal) {
        const index = built.index;
        if (index.empty)
            return Promise.resolve(undefined);
        const [start, end] = clampRange(range, index.total);
        const first = Math.max(0, lastAtOrBefore(index.offsets, start));
        const size0 = index.sizes[first];
        if (index.offsets[first] === start && start + size0 === end && size0 > 0) {
            // one whole inner chunk, as zarrita's sharding codec asks: its bytes as they are
            return this.#inner(array, built.chunks, first, size0, signal);
        }
        return this.#parts(built, array, start, end, first, signal);
    }
    /** Bytes [start, end) of the shard's value: parts of the index and of inner chunks. */
    async #parts(built, array, start, end, first, signal) {
        const index = built.index;
        const out = new Uint8Array(end - start);
        const head = index.index;
        const tail = index.total - head.length;
        copyPart(out, start, end, 0, head);
        copyPart(out, start, end, tail, head);
        const reads = [];
        for (let j = first; j < index.offsets.length; j++) {
            const offset = index.offsets[j];
            const size = index.sizes[j];
            if (offset >= end)
                break;
            if (size === 0 || offset + size <= start)
                continue;
            reads.push(this.#inner(array, built.chunks, j, size, signal).then((bytes) => copyPart(out, start, end, offset, bytes)));
        }
        await Promise.all(reads);
        return out;
    }
    /** The shard's index and stored chunks, located once for all the reads of it. */
    #shard(key, array, shard) {
        let found = this.#shards.get(key);
        if (found === undefined) {
            const promise = this.#build(array, shard);
            const entry = { promise };
            promise.then((value) => (entry.value = value), () => this.#shards.get(key) === entry && this.#shards.delete(key));
            if (this.#shards.size >= SHARDS_KEPT) {
                this.#shards.delete(this.#shards.keys().next().value);
            }
            this.#shards.set(key, entry);
            found = entry;
        }
        return found;
    }
    async #build(array, shard) {
        const layout = array.layout;
        const found = layout.innerChunks(shard).map((c) => (c === null ? null : array.locate(c)));
        // stored chunks listed in the references are located at once; only index lookups wait
        const chunks = found.some((c) => c instanceof Promise) ? await Promise.all(found) : found;
        const located = chunks;
        const lengths = located.map((c) => (c === null ? -1 : c.length));
        if (layout.members === 1) {
            const empty = lengths.findIndex((n) => n === 0);
            if (empty >= 0) {
                throw new ChunkDecodeError(`stored chunk ${located[empty]?.key} of array ${array.path} holds no bytes; no chunk ` +
                    "of its array decodes from nothing");
            }
        }
        const index = buildShardIndex(lengths, layout.members, layout.members * layout.chunkNbytes);
        return { index, chunks: located };
    }
    /** Inner chunk `j`'s bytes: its one stored chunk as read, or the pack of its members. */
    #inner(array, chunks, j, size, signal) {
        if (array.layout.members > 1)
            return this.#pack(array, chunks, j, signal);
        const chunk = chunks[j];
        return array.read(chunk, signal).then((bytes) => {
            if (bytes === undefined || bytes.length !== size) {
                throw new ChunkDecodeError(`stored chunk ${chunk.key} of array ${array.path} changed size while read ` +
                    `(${bytes?.length ?? "missing"} bytes, ${size} in its shard's index)`);
            }
            return bytes;
        });
    }
    /** A pack: its members read together, each put in its place in one buffer as it arrives. */
    async #pack(array, chunks, j, signal) {
        const layout = array.layout;
        const out = new Uint8Array(layout.members * layout.chunkNbytes);
        const place = (m, key, bytes) => {
            if (bytes.length !== layout.chunkNbytes) {
                throw new ChunkDecodeError(`stored chunk ${key} of array ${array.path} holds ${bytes.length} bytes decoded, ` +
                    `not the ${layout.chunkNbytes} of a chunk`);
            }
            layout.packInto(out, m, bytes);
        };
        const decoded = layout.kind === "decoded";
        const reads = [];
        for (let m = 0, at = j * layout.members; m < layout.members; m++, at++) {
            const chunk = chunks[at];
            if (chunk === null) {
                layout.packInto(out, m, array.fill());
                continue;
            }
            const read = array.read(chunk, signal);
            reads.push(decoded
                ? read.then(async (stored) => place(m, chunk.key, stored === undefined ? array.fill() : await array.decode(chunk.key, stored)))
                : read.then((stored) => place(m, chunk.key, stored ?? array.fill())));
        }
        await Promise.all(reads);
        return out;
    }
}
/**
 * A decoder of stored chunks' bytes with the byte codecs `codecs` (the array's codecs after
 * `bytes`) undone through zarrita's codec registry, as the Python store decodes a pack's
 * members. The codecs are loaded and configured once, on the first chunk, for all of them.
 */
export function byteDecoder(codecs, meta) {
    let loaded;
    const load = async () => Promise.all(codecs.map(async (codec) => {
        const name = String(codec.name);
        const loader = zarr.registry.get(name);
        if (loader === undefined)
            return { name, codec: new Error(`codec ${name} is not known to zarrita`) };
        const Codec = (await loader());
        try {
            return {
                name,
                codec: Codec.fromConfig(codec.configuration ?? {}, { ...meta, codecs: [...codecs] }),
            };
        }
        catch (cause) {
            return { name, codec: new Error(`codec ${name} failed to decode it: ${String(cause)}`) };
        }
    }));
    return async (bytes, where) => {
        const chain = await (loaded ??= load());
        let out = bytes;
        for (let i = chain.length - 1; i >= 0; i--) {
            const { name, codec } = chain[i];
            if (codec instanceof Error)
                throw new ChunkDecodeError(`${where}: ${codec.message}`);
            try {
                out = (await codec.decode(out));
            }
            catch (cause) {
                throw new ChunkDecodeError(`${where}: codec ${name} failed to decode it: ${String(cause)}`);
            }
        }
        return out;
    };
}
/** The last position of `sorted` whose value is at most `value` (-1: none). */
function lastAtOrBefore(sorted, value) {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (sorted[mid] <= value)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}
/** Copy the part of `bytes` (at `at` in the value) that falls in [start, end) into `out`. */
function copyPart(out, start, end, at, bytes) {
    const from = Math.max(start, at);
    const to = Math.min(end, at + bytes.length);
    if (to > from)
        out.set(bytes.subarray(from - at, to - at), from - start);
}
