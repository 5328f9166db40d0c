/**
 * ReferenceStore: a read-only zarrita store over a shadowzarr reference file system.
 */
import type { AbsolutePath, AsyncReadable, GetOptions, RangeQuery } from "zarrita";
import { type ArrayInfo, chunkCoordsFromKey } from "./array-metadata.js";
import { RangeBatcher } from "./batcher.js";
import {
  assembleSegments,
  clampRange,
  logicalSize,
  mapLogicalRange,
  padWithFill,
  sliceLogical,
  spansFor,
  type ValueRange,
} from "./byte-map.js";
import { utf8Decode, utf8Encode } from "./bytes.js";
import {
  checkChunkSize,
  checkShortBodies,
  checkStoredBound,
  isEmptyReference,
  verifiedFletcher32,
} from "./chunk-checks.js";
import { ChunkManifest } from "./chunk-manifest.js";
import { createDandiResolver, type FetchFunction, type UrlResolver } from "./dandi.js";
import { ReferenceFormatError, SourceError } from "./errors.js";
import { HttpReader, type SourceInfo } from "./http.js";
import { GroupedReads } from "./grouped-reads.js";
import { type GroupedViewSetting, type GroupLayout, shardBytesOf } from "./grouped-view.js";
import { parseJson } from "./json.js";
import { metadataForZarrita } from "./metadata-view.js";
import { type SequenceType, sequenceType } from "./sequences.js";
import { type FoundArray, isChunkKey, StoreArrays } from "./store-arrays.js";
import type { StructLayout } from "./struct.js";
import { type Reference, References, type RfsJson, stripSlashes } from "./references.js";

export interface ReferenceStoreOptions {
  /** Base for relative URLs in the references and for index paths (fromUrl sets it). */
  baseUrl?: string;
  /** Replaces `globalThis.fetch`: auth, counting, a fake server in tests. */
  fetch?: FetchFunction;
  /** Maps a reference URL to the URL to read; replaces the DANDI redirect resolution. */
  resolveUrl?: UrlResolver;
  /** Send If-Match with recorded ETags and compare sizes (default true). */
  validateSources?: boolean;
  /**
   * Send If-Match with the recorded ETag (default true). false still compares the ETag the
   * server answers with (when CORS exposes it) and saves a browser the CORS preflight that
   * If-Match costs on every cross-origin request.
   */
  ifMatch?: boolean;
  /** Largest gap between two reads of one file that are still fetched together (32 KiB). */
  mergeGap?: number;
  /** Largest merged request in bytes (1 MiB); 0 turns merging off. */
  maxMergeSize?: number;
  /** Range requests in flight at once (16). */
  concurrency?: number;
  /** Which reads are batched together: one microtask (default) or one setTimeout(0) window. */
  batchWindow?: "microtask" | "macrotask";
  /** Index chunks held in memory per indexed array (64). */
  indexCacheSize?: number;
  /**
   * Show struct arrays (HDF5 compound datasets), which zarrita 0.7.5 cannot open, as uint8 with
   * the bytes of one element as a last axis; `structOf` and `decodeStruct` read the fields
   * (default true).
   */
  structAsBytes?: boolean;
  /**
   * The grouped view, as the Python store's `grouped_view` (default `"auto"`): arrays of many
   * small chunks shown to zarrita as shards of them (grouped-view.ts), so a read costs a few
   * shard reads instead of one per chunk; a number sets the shard size in bytes; `0` or
   * `false` shows chunks as stored.
   */
  groupedView?: GroupedViewSetting;
}

export const DEFAULT_MERGE_GAP = 32 * 1024;
export const DEFAULT_MAX_MERGE_SIZE = 1024 * 1024;

const METADATA_NAMES = new Set(["zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"]);

function defaultFetch(request: Request): Promise<Response> {
  return globalThis.fetch(request);
}

function hasScheme(url: string): boolean {
  return /^[A-Za-z][A-Za-z0-9+.-]*:/.test(url);
}

export class ReferenceStore implements AsyncReadable {
  readonly references: References;
  readonly #options: Required<
    Omit<ReferenceStoreOptions, "baseUrl" | "resolveUrl" | "fetch" | "groupedView">
  >;
  readonly #baseUrl: string | undefined;
  readonly #http: HttpReader;
  readonly #batcher: RangeBatcher;
  readonly #resolveUrl: UrlResolver;
  readonly #sources = new Map<string, SourceInfo>();
  readonly #indexes = new Map<string, ChunkManifest>();
  readonly #urls = new Map<string, string>();
  /** Its arrays, as their inline zarr.json describes them (store-arrays.ts). */
  readonly #arrays: StoreArrays;
  /** The grouped view (grouped-reads.ts); undefined when it is off. */
  readonly #grouped: GroupedReads | undefined;
  #tree: Map<string, Set<string>> | undefined;

  /**
   * A store over references already loaded (the parsed JSON of refs.json or x.json). Pass
   * `baseUrl` when they hold relative URLs or chunk manifests.
   */
  constructor(rfs: RfsJson | string, options: ReferenceStoreOptions = {}) {
    this.references = new References((typeof rfs === "string" ? parseJson(rfs) : rfs) as RfsJson);
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
    for (const [url, info] of this.references.sources) this.#sources.set(this.#absolute(url), info);
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
  static async fromUrl(
    url: string | URL,
    options: ReferenceStoreOptions = {},
  ): Promise<ReferenceStore> {
    let href = new URL(url, (globalThis as { location?: { href: string } }).location?.href).href;
    if (!/\.json$/i.test(new URL(href).pathname)) href = href.replace(/\/?$/, "/") + "refs.json";
    const reader = new HttpReader({
      fetch: options.fetch ?? defaultFetch,
      validateSources: false,
      sourceInfo: () => undefined,
    });
    const bytes = (await reader.readWhole(href, href)) as Uint8Array;
    return new ReferenceStore(utf8Decode(bytes), {
      ...options,
      baseUrl: options.baseUrl ?? new URL(".", href).href,
    });
  }

  /** Range requests sent and logical range reads made so far. */
  get stats(): { requests: number; reads: number } {
    return { ...this.#batcher.stats };
  }

  /** Names of the groups and arrays directly inside the group at `path`, sorted. */
  children(path = ""): string[] {
    this.#tree ??= this.references.children();
    return [...(this.#tree.get(stripSlashes(path)) ?? [])].sort();
  }

  async get(key: AbsolutePath | string, opts?: GetOptions): Promise<Uint8Array | undefined> {
    return this.#read(key, null, opts?.signal);
  }

  getRange(
    key: AbsolutePath | string,
    range: RangeQuery,
    opts?: GetOptions,
  ): Promise<Uint8Array | undefined> {
    // not async: zarrita reads a shard's inner chunks here, one call per stored chunk
    try {
      const logical: ValueRange =
        "suffixLength" in range
          ? { suffix: range.suffixLength }
          : { start: range.offset, end: range.offset + range.length };
      if (this.#grouped !== undefined) {
        const raw = key.startsWith("/") ? key.slice(1) : key;
        const shard = this.#grouped.lastShard(raw);
        if (shard !== undefined) return this.#grouped.read(raw, shard, logical, opts?.signal);
      }
      return this.#read(key, logical, opts?.signal);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async #read(
    rawKey: string,
    range: ValueRange,
    signal?: AbortSignal,
  ): Promise<Uint8Array | undefined> {
    let key = rawKey.startsWith("/") ? rawKey.slice(1) : rawKey;
    const name = key.slice(key.lastIndexOf("/") + 1);
    if (METADATA_NAMES.has(name) && this.references.has(key)) {
      const ref = this.references.lookup(key) as Reference;
      if (isEmptyReference(key, ref)) return undefined;
      const raw =
        ref.kind === "inline"
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
      if (shard !== undefined) return this.#grouped.read(key, shard, range, signal);
    }
    return this.#readStored(key, range, signal);
  }

  /** A key as stored (a chunk, not a shard of the grouped view). */
  async #readStored(
    rawKey: string,
    range: ValueRange,
    signal?: AbortSignal,
  ): Promise<Uint8Array | undefined> {
    let key = rawKey;
    if (this.#options.structAsBytes) key = this.#arrays.storedKey(key);
    const ref =
      this.references.lookup(key) ?? this.references.generate(key) ?? (await this.#fromIndex(key));
    return this.#readFound(key, ref, range, signal);
  }

  /** A stored key's bytes from its reference (undefined: not stored). */
  async #readFound(
    key: string,
    ref: Reference | undefined,
    range: ValueRange,
    signal?: AbortSignal,
  ): Promise<Uint8Array | undefined> {
    const array = this.#arrays.arrayOf(key);
    if (ref === undefined || isEmptyReference(key, ref)) return this.#missing(key, array, range);
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
  #missing(
    key: string,
    array: { info: ArrayInfo } | undefined,
    range: ValueRange,
  ): Uint8Array | undefined {
    const info = array?.info;
    const struct = info?.struct;
    if (!this.#options.structAsBytes || struct === undefined || struct.fillByte !== undefined) {
      return undefined;
    }
    if (!isChunkKey(info as ArrayInfo, key)) return undefined;
    const padding = info?.padding;
    if (padding === undefined) {
      throw new ReferenceFormatError(
        `chunk ${key} was never written and its struct fill value cannot be shown as bytes ` +
          "of a compressed chunk; pass structAsBytes: false",
      );
    }
    const fill = padWithFill(new Uint8Array(0), 0, padding.chunkBytes, padding.fillElement);
    return sliceLogical(fill, range);
  }

  /**
   * Layout of the struct array at `path` (its fields), or of the records of a `raw_bytes` array
   * with `_STRUCTURED_DTYPE`; undefined for other arrays.
   */
  structOf(path: string): StructLayout | undefined {
    return this.#arrays.arrayInfo(stripSlashes(path))?.struct?.layout;
  }

  /**
   * The values' type of the sequence array at `path` (its `_VLEN_DTYPE`), for
   * `decodeSequences`; undefined for other arrays.
   */
  sequencesOf(path: string): SequenceType | undefined {
    const info = this.#arrays.arrayInfo(stripSlashes(path));
    return info?.vlenDtype === undefined ? undefined : sequenceType(info.vlenDtype);
  }

  /** The chunk's reference from its array's chunk manifest; undefined if never written. */
  async #fromIndex(key: string): Promise<Reference | undefined> {
    if (this.references.indexes.size === 0) return undefined;
    const array = this.#arrays.arrayOf(key);
    if (array === undefined) return undefined;
    const path = array.info.path;
    const entry = this.references.indexes.get(path);
    if (entry === undefined) return undefined;
    const coords = chunkCoordsFromKey(array.info, path === "" ? key : key.slice(path.length + 1));
    if (coords === undefined) return undefined;
    let index = this.#indexes.get(path);
    if (index === undefined) {
      const location = new URL(entry.index.replace(/\/?$/, "/"), this.#requireBase(path)).href;
      const info = array.info;
      const grid = info.shape.map((n, i) => {
        const c = info.chunkShape[i] as number;
        return c > 0 ? Math.ceil(n / c) : 0;
      });
      index = new ChunkManifest(
        path,
        location,
        grid,
        (url, signal) =>
          this.#batcher.limiter.run(() => this.#http.readWhole(url, url, signal, true)),
        this.#options.indexCacheSize,
        entry.files,
      );
      this.#indexes.set(path, index);
    }
    const where = await index.locate(coords);
    if (where === null) return undefined;
    return { kind: "range", url: entry.url, ...where };
  }

  /** Index chunks fetched so far for the array at `path` (diagnostics, tests). */
  indexChunksFetched(path: string): number {
    return this.#indexes.get(stripSlashes(path))?.fetchedChunks ?? 0;
  }

  /**
   * How the grouped view shows the array at `path` (its shard and inner chunk grid), or
   * undefined when it shows it as stored (or the view is off).
   */
  groupedLayout(path: string): GroupLayout | undefined {
    return this.#grouped?.layout(stripSlashes(path));
  }

  #requireBase(path: string): string {
    if (this.#baseUrl === undefined) {
      throw new ReferenceFormatError(`the index of ${path} is relative: pass baseUrl`);
    }
    return this.#baseUrl;
  }

  /** A reference URL (templates expanded) made absolute: a relative one against baseUrl. */
  #absolute(url: string): string {
    let out = this.#urls.get(url);
    if (out !== undefined) return out;
    if (hasScheme(url)) out = url;
    else if (this.#baseUrl !== undefined) out = new URL(url, this.#baseUrl).href;
    else throw new ReferenceFormatError(`relative URL ${url} needs the baseUrl option`);
    if (this.#urls.size > 10000) this.#urls.clear();
    this.#urls.set(url, out);
    return out;
  }

  /**
   * Read logical bytes `range` of a reference: through the array's selection, padded with fill
   * bytes when the array is uncompressed and the bytes are short. An inline value holds the
   * chunk's own bytes (no selection); a whole file read at once (`buffer`) is like a range.
   */
  async #readReference(
    key: string,
    ref: Reference | { readonly kind: "buffer"; readonly bytes: Uint8Array },
    range: ValueRange,
    array: FoundArray | undefined,
    signal?: AbortSignal,
  ): Promise<Uint8Array> {
    const selection = ref.kind === "inline" ? undefined : array?.selection;
    const padding = array?.info.padding;
    if (ref.kind === "file") {
      // A whole file of recorded size is a byte range: batched, checked, partially readable.
      const size = this.#sources.get(this.#absolute(ref.url))?.size;
      if (size !== undefined) {
        const whole: Reference = { kind: "range", url: ref.url, offset: 0, size };
        return this.#readReference(key, whole, range, array, signal);
      }
      const url = this.#absolute(ref.url);
      if (selection === undefined && padding === undefined) {
        if (range === null) {
          const physical = await this.#resolveUrl(url);
          return (await this.#batcher.limiter.run(() =>
            this.#http.readWhole(url, physical, signal),
          )) as Uint8Array;
        }
        return this.#readFileRange(url, range, signal);
      }
      const physical = await this.#resolveUrl(url);
      const whole = (await this.#batcher.limiter.run(() =>
        this.#http.readWhole(url, physical, signal),
      )) as Uint8Array;
      return this.#readReference(key, { kind: "buffer", bytes: whole }, range, array, signal);
    }
    const inMemory = ref.kind === "inline" || ref.kind === "buffer";
    const physicalSize = inMemory ? ref.bytes.length : ref.size;
    const fileSize = inMemory ? undefined : this.#sources.get(this.#absolute(ref.url))?.size;
    if (!inMemory && fileSize !== undefined && ref.offset + ref.size > fileSize) {
      throw new SourceError(
        `chunk ${key}: its reference (bytes ${ref.offset}-${ref.offset + ref.size - 1}) runs ` +
          `past the end of the file (${fileSize} bytes recorded); the references do not match ` +
          "the file",
        this.#absolute(ref.url),
      );
    }
    const available = logicalSize(physicalSize, selection);
    if (padding !== undefined && array !== undefined) {
      checkChunkSize(key, array.info, available, padding.chunkBytes);
    }
    checkStoredBound(key, array?.info, available);
    const total = padding?.chunkBytes ?? available;
    const [start, end] = clampRange(range, total);
    const dataEnd = Math.min(end, available);
    let data: Uint8Array;
    if (dataEnd <= start) {
      data = new Uint8Array(0);
    } else if (inMemory) {
      const segments = mapLogicalRange(0, start, dataEnd, selection);
      data = assembleSegments(segments, [{ offset: 0, end: ref.bytes.length }], [ref.bytes]);
    } else {
      const url = this.#absolute(ref.url);
      const segments = mapLogicalRange(ref.offset, start, dataEnd, selection);
      const spans = spansFor(segments, this.#options.mergeGap);
      const bodies = await Promise.all(
        spans.map((s) => this.#batcher.read(url, s.offset, s.end, signal).then((r) => r.bytes)),
      );
      checkShortBodies(key, url, spans, bodies, fileSize);
      data = assembleSegments(segments, spans, bodies);
      if (segments.length === 1 && data.length === (bodies[0] as Uint8Array).length) {
        data = bodies[0] as Uint8Array;
      }
    }
    if (padding !== undefined) return padWithFill(data, start, end, padding.fillElement);
    if (data.length !== dataEnd - start) {
      const where = ref.kind === "range" ? this.#absolute(ref.url) : undefined;
      throw new SourceError(
        `chunk ${key}: the file ended after ${data.length} of ${dataEnd - start} bytes`,
        where,
      );
    }
    return data;
  }

  async #readFileRange(
    url: string,
    range: Exclude<ValueRange, null>,
    signal?: AbortSignal,
  ): Promise<Uint8Array> {
    if ("suffix" in range) {
      const physical = await this.#resolveUrl(url);
      const result = await this.#batcher.limiter.run(() =>
        this.#http.readSuffix(url, physical, range.suffix, signal),
      );
      return result.bytes;
    }
    if (range.end <= range.start) return new Uint8Array(0);
    return (await this.#batcher.read(url, range.start, range.end, signal)).bytes;
  }
}
