import { chunkCoordsFromKey } from "./array-metadata.js";
import { RangeBatcher } from "./batcher.js";
import { assembleSegments, clampRange, logicalSize, mapLogicalRange, padWithFill, sliceLogical, spansFor, } from "./byte-map.js";
import { utf8Decode, utf8Encode } from "./bytes.js";
import { checkChunkSize, checkShortBodies, checkStoredBound, isEmptyReference, verifiedFletcher32, } from "./chunk-checks.js";
import { ChunkManifest } from "./chunk-manifest.js";
import { createDandiResolver } from "./dandi.js";
import { ReferenceFormatError, SourceError } from "./errors.js";
import { HttpReader } from "./http.js";
import { GroupedReads } from "./grouped-reads.js";
import { shardBytesOf } from "./grouped-view.js";
import { parseJson } from "./json.js";
import { metadataForZarrita } from "./metadata-view.js";
import { sequenceType } from "./sequences.js";
import { isChunkKey, StoreArrays } from "./store-arrays.js";
import { References, stripSlashes } from "./references.js";
export const DEFAULT_MERGE_GAP = 32 * 1024;
export const DEFAULT_MAX_MERGE_SIZE = 1024 * 1024;
const METADATA_NAMES = new Set(["zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"]);
function defaultFetch(request) {
    return globalThis.fetch(request);
}
function hasScheme(url) {
    return /^[A-Za-z][A-Za-z0-9+.-]*:/.test(url);
}
export class ReferenceStore {
    references;
    #options;
    #baseUrl;
    #http;
    #batcher;
    #resolveUrl;
    #sources = new Map();
    #indexes = new Map();
    #urls = new Map();
    /** Its arrays, as their inline zarr.json describes them (store-arrays.ts). */
    #arrays;
    /** The grouped view (grouped-reads.ts); undefined when it is off. */
    #grouped;
    #tree;
    /**
     * A store over references already loaded (the parsed JSON of refs.json or x.json). Pass
     * `baseUrl` when they hold relative URLs or chunk manifests.
     */
    constructor(rfs, options = {}) {
        this.references = new References((typeof rfs === "string" ? parseJson(rfs) : rfs));
        this.#options = {
            validateSources: options.validateSources ?? true,
            ifMatch: options.ifMatch ?? true,
            mergeGap: options.mergeGap ?? DEFAULT_MERGE_GAP,
            maxMergeSize: options.maxMergeSize ?? DEFAULT_MAX_MERGE_SIZE,
            concurrency: options.concurrency ?? 16,
            batchWindow: options.batchWindow ?? "microtask",
            indexCacheSize: options.indexCacheSize ?? 64,
            structAsBytes: options.structAsBytes ?? true,
        };
        this.#arrays = new StoreArrays(this.references);
        this.#baseUrl = options.baseUrl;
        const fetchFn = options.fetch ?? defaultFetch;
        this.#resolveUrl = options.resolveUrl ?? createDandiResolver(fetchFn);
        for (const [url, info] of this.references.sources)
            this.#sources.set(this.#absolute(url), info);
        this.#http = new HttpReader({
            fetch: fetchFn,
            validateSources: this.#options.validateSources,
            ifMatch: this.#options.ifMatch,
            sourceInfo: (url) => this.#sources.get(url),
        });
        this.#batcher = new RangeBatcher(this.#http, this.#resolveUrl, this.#options);
        const shardBytes = shardBytesOf(options.groupedView);
        this.#grouped =
            shardBytes === 0
                ? undefined
                : new GroupedReads(this.references, shardBytes, {
                    arrayOf: (key) => this.#arrays.arrayOf(key),
                    fromIndex: (key) => this.#fromIndex(key),
                    recordedSize: (url) => this.#sources.get(this.#absolute(url))?.size,
                    readFound: (key, ref, range, signal) => this.#readFound(key, ref, range, signal),
                });
    }
    /**
     * Open the references at `url`: a refs.json (or any .json) file, or the folder holding a
     * refs.json together with its chunk manifests.
     */
    static async fromUrl(url, options = {}) {
        let href = new URL(url, globalThis.location?.href).href;
        if (!/\.json$/i.test(new URL(href).pathname))
            href = href.replace(/\/?$/, "/") + "refs.json";
        const reader = new HttpReader({
            fetch: options.fetch ?? defaultFetch,
            validateSources: false,
            sourceInfo: () => undefined,
        });
        const bytes = (await reader.readWhole(href, href));
        return new ReferenceStore(utf8Decode(bytes), {
            ...options,
            baseUrl: options.baseUrl ?? new URL(".", href).href,
        });
    }
    /** Range requests sent and logical range reads made so far. */
    get stats() {
        return { ...this.#batcher.stats };
    }
    /** Names of the groups and arrays directly inside the group at `path`, sorted. */
    children(path = "") {
        this.#tree ??= this.references.children();
        return [...(this.#tree.get(stripSlashes(path)) ?? [])].sort();
    }
    async get(key, opts) {
        return this.#read(key, null, opts?.signal);
    }
    getRange(key, range, opts) {
        // not async: zarrita reads a shard's inner chunks here, one call per stored chunk
        try {
            const logical = "suffixLength" in range
                ? { suffix: range.suffixLength }
                : { start: range.offset, end: range.offset + range.length };
            if (this.#grouped !== undefined) {
                const raw = key.startsWith("/") ? key.slice(1) : key;
                const shard = this.#grouped.lastShard(raw);
                if (shard !== undefined)
                    return this.#grouped.read(raw, shard, logical, opts?.signal);
            }
            return this.#read(key, logical, opts?.signal);
        }
        catch (error) {
            return Promise.reject(error);
        }
    }
    async #read(rawKey, range, signal) {
        let key = rawKey.startsWith("/") ? rawKey.slice(1) : rawKey;
        const name = key.slice(key.lastIndexOf("/") + 1);
        if (METADATA_NAMES.has(name) && this.references.has(key)) {
            const ref = this.references.lookup(key);
            if (isEmptyReference(key, ref))
                return undefined;
            const raw = ref.kind === "inline"
                ? ref.bytes
                : await this.#readReference(key, ref, null, undefined, signal);
            let text = metadataForZarrita(utf8Decode(raw), this.#options, key);
            if (this.#grouped !== undefined && name === "zarr.json") {
                text = this.#grouped.rewrite(key, text);
            }
            return sliceLogical(utf8Encode(text), range);
        }
        if (this.#grouped !== undefined) {
            const shard = this.#grouped.shardOf(key);
            if (shard !== undefined)
                return this.#grouped.read(key, shard, range, signal);
        }
        return this.#readStored(key, range, signal);
    }
    /** A key as stored (a chunk, not a shard of the grouped view). */
    async #readStored(rawKey, range, signal) {
        let key = rawKey;
        if (this.#options.structAsBytes)
            key = this.#arrays.storedKey(key);
        const ref = this.references.lookup(key) ?? this.references.generate(key) ?? (await this.#fromIndex(key));
        return this.#readFound(key, ref, range, signal);
    }
    /** A stored key's bytes from its reference (undefined: not stored). */
    async #readFound(key, ref, range, signal) {
        const array = this.#arrays.arrayOf(key);
        if (ref === undefined || isEmptyReference(key, ref))
            return this.#missing(key, array, range);
        if (array?.info.checksummed && isChunkKey(array.info, key)) {
            const stored = await this.#readReference(key, ref, null, array, signal);
            const where = ref.kind === "inline" ? "inline reference" : this.#absolute(ref.url);
            return sliceLogical(verifiedFletcher32(key, where, stored), range);
        }
        return this.#readReference(key, ref, range, array, signal);
    }
    /**
     * A chunk the references do not hold: missing (zarrita fills it), except in the uint8 view of
     * a struct array whose fill element is not one repeated byte, where the store writes the fill
     * elements itself (uncompressed arrays) or refuses.
     */
    #missing(key, array, range) {
        const info = array?.info;
        const struct = info?.struct;
        if (!this.#options.structAsBytes || struct === undefined || struct.fillByte !== undefined) {
            return undefined;
        }
        if (!isChunkKey(info, key))
            return undefined;
        const padding = info?.padding;
        if (padding === undefined) {
            throw new ReferenceFormatError(`chunk ${key} was never written and its struct fill value cannot be shown as bytes ` +
                "of a compressed chunk; pass structAsBytes: false");
        }
        const fill = padWithFill(new Uint8Array(0), 0, padding.chunkBytes, padding.fillElement);
        return sliceLogical(fill, range);
    }
    /**
     * Layout of the struct array at `path` (its fields), or of the records of a `raw_bytes` array
     * with `_STRUCTURED_DTYPE`; undefined for other arrays.
     */
    structOf(path) {
        return this.#arrays.arrayInfo(stripSlashes(path))?.struct?.layout;
    }
    /**
     * The values' type of the sequence array at `path` (its `_VLEN_DTYPE`), for
     * `decodeSequences`; undefined for other arrays.
     */
    sequencesOf(path) {
        const info = this.#arrays.arrayInfo(stripSlashes(path));
        return info?.vlenDtype === undefined ? undefined : sequenceType(info.vlenDtype);
    }
    /** The chunk's reference from its array's chunk manifest; undefined if never written. */
    async #fromIndex(key) {
        if (this.references.indexes.size === 0)
            return undefined;
        const array = this.#arrays.arrayOf(key);
        if (array === undefined)
            return undefined;
        const path = array.info.path;
        const entry = this.references.indexes.get(path);
        if (entry === undefined)
            return undefined;
        const coords = chunkCoordsFromKey(array.info, path === "" ? key : key.slice(path.length + 1));
        if (coords === undefined)
            return undefined;
        let index = this.#indexes.get(path);
        if (index === undefined) {
            const location = new URL(entry.index.replace(/\/?$/, "/"), this.#requireBase(path)).href;
            const info = array.info;
            const grid = info.shape.map((n, i) => {
                const c = info.chunkShape[i];
                return c > 0 ? Math.ceil(n / c) : 0;
            });
            index = new ChunkManifest(path, location, grid, (url, signal) => this.#batcher.limiter.run(() => this.#http.readWhole(url, url, signal, true)), this.#options.indexCacheSize, entry.files);
            this.#indexes.set(path, index);
        }
        const where = await index.locate(coords);
        if (where === null)
            return undefined;
        return { kind: "range", url: entry.url, ...where };
    }
    /** Index chunks fetched so far for the array at `path` (diagnostics, tests). */
    indexChunksFetched(path) {
        return this.#indexes.get(stripSlashes(path))?.fetchedChunks ?? 0;
    }
    /**
     * How the grouped view shows the array at `path` (its shard and inner chunk grid), or
     * undefined when it shows it as stored (or the view is off).
     */
    groupedLayout(path) {
        return this.#grouped?.layout(stripSlashes(path));
    }
    #requireBase(path) {
        if (this.#baseUrl === undefined) {
            throw new ReferenceFormatError(`the index of ${path} is relative: pass baseUrl`);
        }
        return this.#baseUrl;
    }
    /** A reference URL (templates expanded) made absolute: a relative one against baseUrl. */
    #absolute(url) {
        let out = this.#urls.get(url);
        if (out !== undefined)
            return out;
        if (hasScheme(url))
            out = url;
        else if (this.#baseUrl !== undefined)
            out = new URL(url, this.#baseUrl).href;
        else
            throw new ReferenceFormatError(`relative URL ${url} needs the baseUrl option`);
        if (this.#urls.size > 10000)
            this.#urls.clear();
        this.#urls.set(url, out);
        return out;
    }
    /**
     * Read logical bytes `range` of a reference: through the array's selection, padded with fill
     * bytes when the array is uncompressed and the bytes are short. An inline value holds the
     * chunk's own bytes (no selection); a whole file read at once (`buffer`) is like a range.
     */
    async #readReference(key, ref, range, array, signal) {
        const selection = ref.kind === "inline" ? undefined : array?.selection;
        const padding = array?.info.padding;
        if (ref.kind === "file") {
            // A whole file of recorded size is a byte range: batched, checked, partially readable.
            const size = this.#sources.get(this.#absolute(ref.url))?.size;
            if (size !== undefined) {
                const whole = { kind: "range", url: ref.url, offset: 0, size };
                return this.#readReference(key, whole, range, array, signal);
            }
            const url = this.#absolute(ref.url);
            if (selection === undefined && padding === undefined) {
                if (range === null) {
                    const physical = await this.#resolveUrl(url);
                    return (await this.#batcher.limiter.run(() => this.#http.readWhole(url, physical, signal)));
                }
                return this.#readFileRange(url, range, signal);
            }
            const physical = await this.#resolveUrl(url);
            const whole = (await this.#batcher.limiter.run(() => this.#http.readWhole(url, physical, signal)));
            return this.#readReference(key, { kind: "buffer", bytes: whole }, range, array, signal);
        }
        const inMemory = ref.kind === "inline" || ref.kind === "buffer";
        const physicalSize = inMemory ? ref.bytes.length : ref.size;
        const fileSize = inMemory ? undefined : this.#sources.get(this.#absolute(ref.url))?.size;
        if (!inMemory && fileSize !== undefined && ref.offset + ref.size > fileSize) {
            throw new SourceError(`chunk ${key}: its reference (bytes ${ref.offset}-${ref.offset + ref.size - 1}) runs ` +
                `past the end of the file (${fileSize} bytes recorded); the references do not match ` +
                "the file", this.#absolute(ref.url));
        }
        const available = logicalSize(physicalSize, selection);
        if (padding !== undefined && array !== undefined) {
            checkChunkSize(key, array.info, available, padding.chunkBytes);
        }
        checkStoredBound(key, array?.info, available);
        const total = padding?.chunkBytes ?? available;
        const [start, end] = clampRange(range, total);
        const dataEnd = Math.min(end, available);
        let data;
        if (dataEnd <= start) {
            data = new Uint8Array(0);
        }
        else if (inMemory) {
            const segments = mapLogicalRange(0, start, dataEnd, selection);
            data = assembleSegments(segments, [{ offset: 0, end: ref.bytes.length }], [ref.bytes]);
        }
        else {
            const url = this.#absolute(ref.url);
            const segments = mapLogicalRange(ref.offset, start, dataEnd, selection);
            const spans = spansFor(segments, this.#options.mergeGap);
            const bodies = await Promise.all(spans.map((s) => this.#batcher.read(url, s.offset, s.end, signal).then((r) => r.bytes)));
            checkShortBodies(key, url, spans, bodies, fileSize);
            data = assembleSegments(segments, spans, bodies);
            if (segments.length === 1 && data.length === bodies[0].length) {
                data = bodies[0];
            }
        }
        if (padding !== undefined)
            return padWithFill(data, start, end, padding.fillElement);
        if (data.length !== dataEnd - start) {
            const where = ref.kind === "range" ? this.#absolute(ref.url) : undefined;
            throw new SourceError(`chunk ${key}: the file ended after ${data.length} of ${dataEnd - start} bytes`, where);
        }
        return data;
    }
    async #readFileRange(url, range, signal) {
        if ("suffix" in range) {
            const physical = await this.#resolveUrl(url);
            const result = await this.#batcher.limiter.run(() => this.#http.readSuffix(url, physical, range.suffix, signal));
            return result.bytes;
        }
        if (range.end <= range.start)
            return new Uint8Array(0);
        return (await this.#batcher.read(url, range.start, range.end, signal)).bytes;
    }
}
