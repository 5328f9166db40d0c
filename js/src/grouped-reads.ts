/**
 * The grouped view's reads of one store (the Python store's `GroupedReads`, with its
 * `GroupedView.layout` and `rewrite`): which arrays it shows as shards (their layouts,
 * grouped-view.ts), the zarr.json it shows for them, which keys name a shard, and each grouped
 * array's stored chunks, located from the references and read through the store as stored
 * (`StoredReads`). The shards' bytes are served by `GroupedShards` (grouped-shards.ts).
 */
import { type ArrayInfo, chunkCoordsFromKey } from "./array-metadata.js";
import { logicalSize, type ValueRange } from "./byte-map.js";
import { utf8Decode } from "./bytes.js";
import { isEmptyReference } from "./chunk-checks.js";
import {
  byteDecoder,
  type GroupedArray,
  GroupedShards,
  type StoredChunk,
} from "./grouped-shards.js";
import {
  fillChunk,
  type GroupLayout,
  groupedMetadata,
  groupLayout,
  indexedWithRefs,
  indexOnly,
} from "./grouped-view.js";
import { normalizeMetadataText, parseJson } from "./json.js";
import { type ListedTable, listedTables } from "./listed-table.js";
import type { Reference, References } from "./references.js";
import type { FoundArray } from "./store-arrays.js";

/** What the grouped view takes of the store: its reads of keys as stored. */
export interface StoredReads {
  /** The array a chunk key belongs to (the nearest node with a zarr.json), or undefined. */
  arrayOf(key: string): FoundArray | undefined;
  /** A chunk's reference from its array's chunk manifest; undefined if never written. */
  fromIndex(key: string): Promise<Reference | undefined>;
  /** The recorded size of the file a reference URL names (templates expanded), if recorded. */
  recordedSize(url: string): number | undefined;
  /** A stored key's bytes from its reference, as the store serves it (undefined: not stored). */
  readFound(
    key: string,
    ref: Reference,
    range: ValueRange,
    signal?: AbortSignal,
  ): Promise<Uint8Array | undefined>;
}

/** The grouped array and shard coordinates a key names. */
export interface NamedShard {
  readonly array: GroupedArray;
  readonly coords: number[];
}

export class GroupedReads {
  readonly #references: References;
  /** Target shard bytes (the view is on: > 0). */
  readonly #shardBytes: number;
  readonly #stored: StoredReads;
  readonly #layouts = new Map<string, GroupLayout | undefined>();
  readonly #shards = new GroupedShards();
  readonly #arrays = new Map<string, GroupedArray>();
  /** The last shard key read and what it names (zarrita reads a shard's inner chunks in a row). */
  #last: { key: string; shard: NamedShard } | undefined;
  #indexedWithRefs: Set<string> | undefined;
  #listedTables: Map<string, ListedTable> | undefined;

  constructor(references: References, shardBytes: number, stored: StoredReads) {
    this.#references = references;
    this.#shardBytes = shardBytes;
    this.#stored = stored;
  }

  /**
   * How the view shows the array at `path` (its shard and inner chunk grid), or undefined when
   * it shows it as stored.
   */
  layout(path: string): GroupLayout | undefined {
    if (this.#layouts.has(path)) return this.#layouts.get(path);
    let layout: GroupLayout | undefined;
    const ref = this.#references.lookup(path === "" ? "zarr.json" : `${path}/zarr.json`);
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
    this.#layouts.set(path, layout);
    return layout;
  }

  /** `text`, the zarr.json at `key` as zarrita is shown it, with its grouped arrays as shards. */
  rewrite(key: string, text: string): string {
    return groupedMetadata(text, key, (path) => this.layout(path));
  }

  /** The shard `key` names, when it is the last shard key read (no lookup). */
  lastShard(key: string): NamedShard | undefined {
    return this.#last?.key === key ? this.#last.shard : undefined;
  }

  /** The grouped array and shard coordinates a key names, when it is a shard of the view. */
  shardOf(key: string): NamedShard | undefined {
    if (this.#last?.key === key) return this.#last.shard;
    const shard = this.#findShard(key);
    if (shard !== undefined) this.#last = { key, shard };
    return shard;
  }

  /** Bytes `range` of the shard at `key` (undefined: no chunk of it is stored). */
  read(
    key: string,
    shard: NamedShard,
    range: ValueRange,
    signal?: AbortSignal,
  ): Promise<Uint8Array | undefined> {
    return this.#shards.read(key, shard.array, shard.coords, range, signal);
  }

  /**
   * Whether every chunk of `path` comes from one table of entries (Python's `manifest_only`):
   * its chunk manifest, or its chunks listed in the references as one table (`#listedTable`).
   */
  #indexOnly(path: string): boolean {
    this.#indexedWithRefs ??= indexedWithRefs(this.#references);
    return (
      indexOnly(this.#references, path, this.#indexedWithRefs) ||
      this.#listedTable(path) !== undefined
    );
  }

  /** The listed table of `path` (listed-table.ts): every table made in one pass, when first asked. */
  #listedTable(path: string): ListedTable | undefined {
    this.#listedTables ??= listedTables(this.#references);
    return this.#listedTables.get(path);
  }

  #findShard(key: string): NamedShard | undefined {
    const found = this.#stored.arrayOf(key);
    if (found === undefined) return undefined;
    const info = found.info;
    const layout = this.layout(info.path);
    if (layout === undefined) return undefined;
    const coords = chunkCoordsFromKey(
      info,
      info.path === "" ? key : key.slice(info.path.length + 1),
    );
    if (coords === undefined) return undefined;
    return { array: this.#groupedArray(info, layout), coords };
  }

  /** What the view's shards need of the array `info` describes (made once). */
  #groupedArray(info: ArrayInfo, layout: GroupLayout): GroupedArray {
    const path = info.path;
    let array = this.#arrays.get(path);
    if (array !== undefined) return array;
    const ref = this.#references.lookup(path === "" ? "zarr.json" : `${path}/zarr.json`);
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
      read: (chunk, signal) =>
        this.#stored.readFound(chunk.key, chunk.ref as Reference, null, signal),
      decode: (key, bytes) => decode(bytes, `chunk ${key}`),
      fill: () => fill,
    };
    this.#arrays.set(path, array);
    return array;
  }

  /**
   * A stored chunk of a shard of the view: its reference and logical length (what `get`
   * returns for it), found once; null: not stored. Synchronous unless it is in a chunk manifest.
   */
  #locateStored(key: string): StoredChunk | null | Promise<StoredChunk | null> {
    const ref = this.#references.lookup(key) ?? this.#references.generate(key);
    if (ref !== undefined) return this.#located(key, ref);
    if (this.#references.indexes.size === 0) return null;
    return this.#stored
      .fromIndex(key)
      .then((found) => (found === undefined ? null : this.#located(key, found)));
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
    return this.#stored
      .readFound(key, ref, null)
      .then((bytes) => (bytes === undefined ? null : { key, ref, length: bytes.length }));
  }

  /** A stored chunk's logical length from its reference, where that says it. */
  #knownLength(key: string, ref: Reference): number | undefined {
    const array = this.#stored.arrayOf(key);
    const info = array?.info;
    let size: number | undefined;
    if (ref.kind === "inline") size = ref.bytes.length;
    else {
      const recorded = ref.kind === "range" ? ref.size : this.#stored.recordedSize(ref.url);
      if (recorded !== undefined) size = logicalSize(recorded, array?.selection);
    }
    if (info?.checksummed && size !== undefined) size = size >= 4 ? size - 4 : undefined;
    if (size === undefined) return undefined;
    const full = info?.padding?.chunkBytes;
    return full !== undefined && size <= full ? full : size;
  }
}
