/**
 * ReferenceStore: a read-only zarrita store over a shadowzarr reference file system.
 */
import type { AbsolutePath, AsyncReadable, GetOptions, RangeQuery } from "zarrita";
import {
  type ArrayInfo,
  arrayInfoFromMetadata,
  chunkCoordsFromKey,
  neededBytes,
} from "./array-metadata.js";
import { RangeBatcher } from "./batcher.js";
import {
  assembleSegments,
  logicalSize,
  mapLogicalRange,
  padWithFill,
  type Selection,
  spansFor,
} from "./byte-map.js";
import { utf8Decode, utf8Encode } from "./bytes.js";
import { ChunkManifest } from "./chunk-manifest.js";
import { createDandiResolver, type FetchFunction, type UrlResolver } from "./dandi.js";
import { ChunkDecodeError, ReferenceFormatError, SourceError } from "./errors.js";
import { HttpReader, type SourceInfo } from "./http.js";
import { fletcher32 } from "./fletcher32.js";
import {
  type GroupedArray,
  GroupedShards,
  type StoredChunk,
  byteDecoder,
} from "./grouped-reads.js";
import {
  fillChunk,
  type GroupedViewSetting,
  type GroupLayout,
  groupedMetadata,
  groupLayout,
  indexedWithRefs,
  indexOnly,
  shardBytesOf,
} from "./grouped-view.js";
import { normalizeMetadataText, parseJson } from "./json.js";
import { type ListedTable, listedTables } from "./listed-table.js";
import { metadataForZarrita } from "./metadata-view.js";
import { type SequenceType, sequenceType } from "./sequences.js";
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

/** A logical byte range of a chunk: [start, end), or the last `suffix` bytes. */
type LogicalRange = { start: number; end: number } | { suffix: number } | null;

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
  readonly #arrays = new Map<string, ArrayInfo | null>();
  readonly #indexes = new Map<string, ChunkManifest>();
  readonly #urls = new Map<string, string>();
  /** Target shard bytes of the grouped view (0: off), its arrays' layouts and shards. */
  readonly #shardBytes: number;
  readonly #groupLayouts = new Map<string, GroupLayout | undefined>();
  readonly #shards = new GroupedShards();
  readonly #groupedArrays = new Map<string, GroupedArray>();
  readonly #arraysOf = new Map<string, { info: ArrayInfo; selection?: Selection } | undefined>();
  /** The last shard key read and what it names (zarrita reads a shard's inner chunks in a row). */
  #lastShard: { key: string; shard: { array: GroupedArray; coords: number[] } } | undefined;
  #indexedWithRefs: Set<string> | undefined;
  #listedTables: Map<string, ListedTable> | undefined;
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
    this.#shardBytes = shardBytesOf(options.groupedView);
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
      const logical: LogicalRange =
        "suffixLength" in range
          ? { suffix: range.suffixLength }
          : { start: range.offset, end: range.offset + range.length };
      if (this.#shardBytes > 0) {
        const raw = key.startsWith("/") ? key.slice(1) : key;
        const shard = this.#lastShard?.key === raw ? this.#lastShard.shard : undefined;
        if (shard !== undefined) {
          return this.#shards.read(raw, shard.array, shard.coords, logical, opts?.signal);
        }
      }
      return this.#read(key, logical, opts?.signal);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async #read(
    rawKey: string,
    range: LogicalRange,
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
      if (this.#shardBytes > 0 && name === "zarr.json") {
        text = groupedMetadata(text, key, (path) => this.groupedLayout(path));
      }
      return sliceLogical(utf8Encode(text), range);
    }
    const shard = this.#shardBytes > 0 ? this.#shardOf(key) : undefined;
    if (shard !== undefined) {
      return this.#shards.read(key, shard.array, shard.coords, range, signal);
    }
    return this.#readStored(key, range, signal);
  }

  /** A key as stored (a chunk, not a shard of the grouped view). */
  async #readStored(
    rawKey: string,
    range: LogicalRange,
    signal?: AbortSignal,
  ): Promise<Uint8Array | undefined> {
    let key = rawKey;
    if (this.#options.structAsBytes) key = this.#storedKey(key);
    const ref =
      this.references.lookup(key) ?? this.references.generate(key) ?? (await this.#fromIndex(key));
    return this.#readFound(key, ref, range, signal);
  }

  /** A stored key's bytes from its reference (undefined: not stored). */
  async #readFound(
    key: string,
    ref: Reference | undefined,
    range: LogicalRange,
    signal?: AbortSignal,
  ): Promise<Uint8Array | undefined> {
    const array = this.#arrayOf(key);
    if (ref === undefined || isEmptyReference(key, ref)) return this.#missing(key, array, range);
    if (array?.info.checksummed && this.#isChunkKey(array.info, key)) {
      const stored = await this.#readReference(key, ref, null, array, signal);
      return sliceLogical(this.#verifiedFletcher32(key, ref, stored), range);
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
    range: LogicalRange,
  ): Uint8Array | undefined {
    const info = array?.info;
    const struct = info?.struct;
    if (!this.#options.structAsBytes || struct === undefined || struct.fillByte !== undefined) {
      return undefined;
    }
    if (!this.#isChunkKey(info as ArrayInfo, key)) return undefined;
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
    return this.#arrayInfo(stripSlashes(path))?.struct?.layout;
  }

  /**
   * The values' type of the sequence array at `path` (its `_VLEN_DTYPE`), for
   * `decodeSequences`; undefined for other arrays.
   */
  sequencesOf(path: string): SequenceType | undefined {
    const info = this.#arrayInfo(stripSlashes(path));
    return info?.vlenDtype === undefined ? undefined : sequenceType(info.vlenDtype);
  }

  /**
   * The stored key of a chunk of a struct array's uint8 view: the view has one more axis (the
   * element's bytes) of one chunk, so its chunk keys end in one more coordinate, always 0.
   */
  #storedKey(key: string): string {
    const info = this.#arrayOf(key)?.info;
    if (info?.struct === undefined || this.#isChunkKey(info, key)) return key;
    const suffix = info.path === "" ? key : key.slice(info.path.length + 1);
    const view = { ...info, shape: [...info.shape, info.struct.layout.itemSize] };
    const coords = chunkCoordsFromKey(view, suffix);
    if (coords === undefined || coords.pop() !== 0) return key;
    const sep = info.separator;
    const tail = info.defaultEncoding
      ? ["c", ...coords].join(sep)
      : coords.length > 0
        ? coords.join(sep)
        : "0";
    return info.path === "" ? tail : `${info.path}/${tail}`;
  }

  #isChunkKey(info: ArrayInfo, key: string): boolean {
    const suffix = info.path === "" ? key : key.slice(info.path.length + 1);
    return chunkCoordsFromKey(info, suffix) !== undefined;
  }

  /** A chunk without its Fletcher-32 checksum, which must match (the metadata zarrita sees
   * lists no fletcher32 codec: see metadata-view.ts). */
  #verifiedFletcher32(key: string, ref: Reference, stored: Uint8Array): Uint8Array {
    const where = ref.kind === "inline" ? "inline reference" : this.#absolute(ref.url);
    if (stored.length < 4) {
      throw new ChunkDecodeError(`${where}: chunk ${key} is shorter than its fletcher32 checksum`);
    }
    const n = stored.length - 4;
    const expected = new DataView(stored.buffer, stored.byteOffset + n, 4).getUint32(0, true);
    if (fletcher32(stored.subarray(0, n)) !== expected) {
      throw new ChunkDecodeError(`${where}: chunk ${key} failed its fletcher32 checksum`);
    }
    return stored.slice(0, n);
  }

  /** The chunk's reference from its array's chunk manifest; undefined if never written. */
  async #fromIndex(key: string): Promise<Reference | undefined> {
    if (this.references.indexes.size === 0) return undefined;
    const array = this.#arrayOf(key);
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
    if (this.#shardBytes === 0) return undefined;
    path = stripSlashes(path);
    if (this.#groupLayouts.has(path)) return this.#groupLayouts.get(path);
    let layout: GroupLayout | undefined;
    const ref = this.references.lookup(path === "" ? "zarr.json" : `${path}/zarr.json`);
    if (ref?.kind === "inline") {
      const document = parseJson(normalizeMetadataText(utf8Decode(ref.bytes)));
      if (document !== null && typeof document === "object" && !Array.isArray(document)) {
        layout = groupLayout(
          document as Record<string, unknown>,
          this.#shardBytes,
          this.#indexOnly(path),
        );
      }
    }
    this.#groupLayouts.set(path, layout);
    return layout;
  }

  /**
   * Whether every chunk of `path` comes from one table of entries (Python's `manifest_only`):
   * its chunk manifest, or its chunks listed in the references as one table (`#listedTable`).
   */
  #indexOnly(path: string): boolean {
    this.#indexedWithRefs ??= indexedWithRefs(this.references);
    return (
      indexOnly(this.references, path, this.#indexedWithRefs) ||
      this.#listedTable(path) !== undefined
    );
  }

  /** The listed table of `path` (listed-table.ts): every table made in one pass, when first asked. */
  #listedTable(path: string): ListedTable | undefined {
    this.#listedTables ??= listedTables(this.references);
    return this.#listedTables.get(path);
  }

  /** The grouped array and shard coordinates a key names, when it is a shard of the view. */
  #shardOf(key: string): { array: GroupedArray; coords: number[] } | undefined {
    if (this.#lastShard?.key === key) return this.#lastShard.shard;
    const shard = this.#findShard(key);
    if (shard !== undefined) this.#lastShard = { key, shard };
    return shard;
  }

  #findShard(key: string): { array: GroupedArray; coords: number[] } | undefined {
    const found = this.#arrayOf(key);
    if (found === undefined) return undefined;
    const info = found.info;
    const layout = this.groupedLayout(info.path);
    if (layout === undefined) return undefined;
    const coords = chunkCoordsFromKey(
      info,
      info.path === "" ? key : key.slice(info.path.length + 1),
    );
    if (coords === undefined) return undefined;
    return { array: this.#groupedArray(info, layout), coords };
  }

  /** What the grouped view's shards need of the array `info` describes (made once). */
  #groupedArray(info: ArrayInfo, layout: GroupLayout): GroupedArray {
    const path = info.path;
    let array = this.#groupedArrays.get(path);
    if (array !== undefined) return array;
    const ref = this.references.lookup(path === "" ? "zarr.json" : `${path}/zarr.json`);
    const document = parseJson(
      normalizeMetadataText(utf8Decode((ref as { bytes: Uint8Array }).bytes)),
    ) as Record<string, unknown>;
    // the byte codecs as zarrita is shown them: fletcher32 is verified by the store apart
    let codecs = (document.codecs as Record<string, unknown>[]).slice(1);
    if (info.checksummed) codecs = codecs.slice(0, -1);
    const meta = {
      dataType: document.data_type as string,
      shape: info.chunkShape,
      fillValue: document.fill_value,
    };
    const fill = fillChunk(document, layout);
    const decode = byteDecoder(codecs, meta);
    const keyOf = (coords: readonly number[]): string => {
      const tail = info.defaultEncoding
        ? ["c", ...coords].join(info.separator)
        : coords.join(info.separator);
      return path === "" ? tail : `${path}/${tail}`;
    };
    const table = this.#listedTable(path);
    array = {
      path,
      layout,
      locate:
        table === undefined
          ? (coords) => this.#locateStored(keyOf(coords))
          : (coords) => this.#locateListed(table, coords),
      read: (chunk, signal) => this.#readFound(chunk.key, chunk.ref as Reference, null, signal),
      decode: (key, bytes) => decode(bytes, `chunk ${key}`),
      fill: () => fill,
    };
    this.#groupedArrays.set(path, array);
    return array;
  }

  /**
   * A stored chunk of a shard of the grouped view: its reference and logical length (what `get`
   * returns for it), found once; null: not stored. Synchronous unless it is in a chunk manifest.
   */
  #locateStored(key: string): StoredChunk | null | Promise<StoredChunk | null> {
    const ref = this.references.lookup(key) ?? this.references.generate(key);
    if (ref !== undefined) return this.#located(key, ref);
    if (this.references.indexes.size === 0) return null;
    return this.#fromIndex(key).then((found) =>
      found === undefined ? null : this.#located(key, found),
    );
  }

  /**
   * A stored chunk of an array with a listed table (listed-table.ts), located from its columns by
   * coordinates, as the Python store reads them (`Resolver.entries`); named by its listed key.
   */
  #locateListed(
    table: ListedTable,
    coords: readonly number[],
  ): StoredChunk | null | Promise<StoredChunk | null> {
    const row = table.row(coords);
    if (row < 0) return null;
    const tail = `c/${coords.join("/")}`;
    const key = table.path === "" ? tail : `${table.path}/${tail}`;
    const ref: Reference = {
      kind: "range",
      url: table.url,
      offset: table.offsets[row] as number,
      size: table.sizes[row] as number,
    };
    return this.#located(key, ref);
  }

  #located(key: string, ref: Reference): StoredChunk | null | Promise<StoredChunk | null> {
    if (isEmptyReference(key, ref)) return null;
    const length = this.#knownLength(key, ref);
    if (length !== undefined) return { key, ref, length };
    // a whole file of unknown size, or a chunk shorter than its checksum: read (and checked)
    return this.#readFound(key, ref, null).then((bytes) =>
      bytes === undefined ? null : { key, ref, length: bytes.length },
    );
  }

  /** A stored chunk's logical length from its reference, where that says it. */
  #knownLength(key: string, ref: Reference): number | undefined {
    const array = this.#arrayOf(key);
    const info = array?.info;
    let size: number | undefined;
    if (ref.kind === "inline") size = ref.bytes.length;
    else {
      const recorded =
        ref.kind === "range" ? ref.size : this.#sources.get(this.#absolute(ref.url))?.size;
      if (recorded !== undefined) size = logicalSize(recorded, array?.selection);
    }
    if (info?.checksummed && size !== undefined) size = size >= 4 ? size - 4 : undefined;
    if (size === undefined) return undefined;
    const full = info?.padding?.chunkBytes;
    return full !== undefined && size <= full ? full : size;
  }

  #requireBase(path: string): string {
    if (this.#baseUrl === undefined) {
      throw new ReferenceFormatError(`the index of ${path} is relative: pass baseUrl`);
    }
    return this.#baseUrl;
  }

  /** The array a chunk key belongs to (the nearest node with a zarr.json), or undefined. */
  #arrayOf(key: string): { info: ArrayInfo; selection?: Selection } | undefined {
    // the answer depends on the key's folder only: kept per folder (a chunk read asks 3 times)
    const cut0 = key.lastIndexOf("/");
    const folder = cut0 < 0 ? "\u0000" : key.slice(0, cut0);
    if (this.#arraysOf.has(folder)) return this.#arraysOf.get(folder);
    if (this.#arraysOf.size >= 4096) this.#arraysOf.clear();
    const found = this.#findArrayOf(key);
    this.#arraysOf.set(folder, found);
    return found;
  }

  #findArrayOf(key: string): { info: ArrayInfo; selection?: Selection } | undefined {
    let cut = key.lastIndexOf("/");
    while (cut >= -1) {
      const path = cut < 0 ? "" : key.slice(0, cut);
      const metaKey = path === "" ? "zarr.json" : `${path}/zarr.json`;
      if (this.references.has(metaKey)) {
        const info = this.#arrayInfo(path);
        if (info === null) return undefined;
        return { info, selection: this.references.selections.get(path) };
      }
      if (cut < 0) break;
      cut = key.lastIndexOf("/", cut - 1);
    }
    return undefined;
  }

  #arrayInfo(path: string): ArrayInfo | null {
    let info = this.#arrays.get(path);
    if (info !== undefined) return info;
    info = null;
    const ref = this.references.lookup(path === "" ? "zarr.json" : `${path}/zarr.json`);
    if (ref?.kind === "inline") {
      const meta = parseJson(normalizeMetadataText(utf8Decode(ref.bytes))) as Record<
        string,
        unknown
      >;
      if (meta?.node_type === "array") info = arrayInfoFromMetadata(path, meta);
    }
    this.#arrays.set(path, info);
    return info;
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
    range: LogicalRange,
    array: { info: ArrayInfo; selection?: Selection } | undefined,
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
      this.#checkChunkSize(key, array.info, available, padding.chunkBytes);
    }
    const bound = array?.info.storedBound;
    if (bound !== undefined && available > bound) {
      throw new ChunkDecodeError(
        `chunk ${key}: its reference holds ${available} bytes, more than the ${bound} bytes any ` +
          "chunk of its array compresses to; the references are damaged",
      );
    }
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

  /**
   * The format's short-chunk rule for a chunk of an uncompressed array: at most a chunk's bytes,
   * and fewer only where the elements left out all lie past the array's end (`neededBytes`),
   * whatever part of the chunk is read. Never padded otherwise: a short chunk in the middle of
   * an array is damage, not fill values.
   */
  #checkChunkSize(key: string, info: ArrayInfo, available: number, chunkBytes: number): void {
    const name = info.path === "" ? "the root array" : `array ${info.path}`;
    if (available > chunkBytes) {
      throw new ChunkDecodeError(
        `${name}: chunk ${key} holds ${available} bytes, more than the ${chunkBytes} of a chunk`,
      );
    }
    if (available === chunkBytes) return;
    const suffix = info.path === "" ? key : key.slice(info.path.length + 1);
    const coords = chunkCoordsFromKey(info, suffix);
    if (coords === undefined) return;
    const need = neededBytes(info, coords);
    if (available < need) {
      throw new ChunkDecodeError(
        `${name}: chunk ${key} holds ${available} bytes; a chunk holds ${chunkBytes}, and ` +
          `fewer only where the elements left out lie past the array's end (at least ${need} ` +
          "here): the references are damaged",
      );
    }
  }

  async #readFileRange(
    url: string,
    range: Exclude<LogicalRange, null>,
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

/**
 * Refuse bodies shorter than asked. References never run past the recorded end of a file (that
 * is refused before any request), so a short answer is a fault or a changed file, never fill.
 */
function checkShortBodies(
  key: string,
  url: string,
  spans: readonly { offset: number; end: number }[],
  bodies: readonly Uint8Array[],
  fileSize: number | undefined,
): void {
  spans.forEach((span, n) => {
    const got = (bodies[n] as Uint8Array).length;
    if (got === span.end - span.offset) return;
    const recorded =
      fileSize === undefined
        ? "no size is recorded for the file, and a short read cannot be told from a fault"
        : `the file's recorded size (${fileSize} bytes) says they are there`;
    throw new SourceError(
      `chunk ${key}: bytes ${span.offset}-${span.end - 1} returned ${got} bytes; ${recorded}`,
      url,
    );
  });
}

/**
 * The format's size-0 rule: `[url, 0, 0]` is a missing chunk (true: the key reads as absent, as
 * VirtualiZarr writes missing chunks); size 0 at any other offset is malformed.
 */
function isEmptyReference(key: string, ref: Reference): boolean {
  if (ref.kind !== "range" || ref.size !== 0) return false;
  if (ref.offset === 0) return true;
  throw new ReferenceFormatError(
    `reference ${key}: size 0 at offset ${ref.offset} (only [url, 0, 0], a missing chunk, may ` +
      "hold no bytes)",
  );
}

function clampRange(range: LogicalRange, total: number): [number, number] {
  if (range === null) return [0, total];
  if ("suffix" in range) return [Math.max(0, total - range.suffix), total];
  const start = Math.min(Math.max(0, range.start), total);
  return [start, Math.max(start, Math.min(range.end, total))];
}

function sliceLogical(bytes: Uint8Array, range: LogicalRange): Uint8Array {
  if (range === null) return bytes;
  const [start, end] = clampRange(range, bytes.length);
  return bytes.slice(start, end);
}
