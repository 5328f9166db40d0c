/**
 * Chunks listed in one reference file, held as a chunk manifest's columns (Python's
 * `ListedRefs` columns and `Resolver.listed_table`): for an array whose every chunk reference is
 * listed in `refs` as `[url, offset, size]` under a canonical chunk key, all into one file, the
 * offsets and sizes by chunk coordinates. Such an array reads like one with a chunk manifest,
 * and the grouped view packs its stored chunks as it packs a manifest's.
 *
 * Which arrays have a table is the Python reader's rule, condition for condition, so both stores
 * show the same grouped view of the same file:
 * - an entry is held in columns when its value is `[url, offset, size]` with a non-empty URL,
 *   integers `offset, size >= 0` whose sum is at most 2^53 - 1, its key at most 4,096
 *   characters and of the form `path/c/i/j…` (or `c/i/j…` for the root) with every coordinate
 *   written as zarr writes it (ASCII digits, no leading zero, at most 18 digits), and the same
 *   number of coordinates as the array's first such entry;
 * - an array keeps columns when at least `MIN_COLUMN_CHUNKS` entries are held so (fewer stay
 *   plain references);
 * - its table is used when no other key of `refs` lies under its chunk prefix (`path/c/`), its
 *   columns name one file (templates expanded), the references have no gen entries, and the
 *   array has neither a chunk manifest nor a selection.
 * Anything else (mixed files, an entry of another form among the chunks, too few chunks) leaves
 * the array's chunks read one reference at a time, as stored.
 */
import { checkKey, MAX_KEY_LENGTH } from "./keys.js";
import type { References } from "./references.js";
import { expandNamedTemplates } from "./template.js";

/** Arrays with fewer listed chunks keep them as plain references (Python's parse.py). */
export const MIN_COLUMN_CHUNKS = 64;

/** A lookup table over the coordinates' bounding box while it has at most this many cells per
 * chunk (plus `DENSE_SLACK`); sparser arrays use a map. */
const DENSE_FACTOR = 4;
const DENSE_SLACK = 1024;

/** One array's listed chunks as columns: row `i` is `sizes[i]` bytes at `offsets[i]` of `url`. */
export class ListedTable {
  readonly #extents: readonly number[];
  readonly #dense: Int32Array | undefined;
  readonly #rows: Map<string, number> | undefined;

  constructor(
    readonly path: string,
    /** The one file every chunk is in (templates expanded). */
    readonly url: string,
    readonly rank: number,
    /** (rows, rank) coordinates, flat; -1 for a coordinate beyond 2^53 - 1 (never asked for). */
    coords: Float64Array,
    readonly offsets: Float64Array,
    readonly sizes: Float64Array,
  ) {
    const count = offsets.length;
    const extents = new Array<number>(rank).fill(0);
    for (let row = 0; row < count; row++) {
      for (let axis = 0; axis < rank; axis++) {
        const c = coords[row * rank + axis] as number;
        if (c + 1 > (extents[axis] as number)) extents[axis] = c + 1;
      }
    }
    this.#extents = extents;
    const cells = extents.reduce((a, b) => a * b, 1);
    if (cells <= DENSE_FACTOR * count + DENSE_SLACK) {
      const table = new Int32Array(cells).fill(-1);
      for (let row = 0; row < count; row++) {
        const linear = this.#linear(coords.subarray(row * rank, row * rank + rank));
        if (linear >= 0) table[linear] = row;
      }
      this.#dense = table;
    } else {
      const rows = new Map<string, number>();
      for (let row = 0; row < count; row++) {
        const point = coords.subarray(row * rank, row * rank + rank);
        if (!point.includes(-1)) rows.set(point.join("/"), row);
      }
      this.#rows = rows;
    }
  }

  get length(): number {
    return this.offsets.length;
  }

  /** The row holding the chunk at `coords`, or -1 (not listed). */
  row(coords: ArrayLike<number>): number {
    if (coords.length !== this.rank) return -1;
    if (this.#dense !== undefined) {
      const linear = this.#linear(coords);
      return linear < 0 ? -1 : (this.#dense[linear] as number);
    }
    for (let axis = 0; axis < this.rank; axis++) {
      const c = coords[axis] as number;
      if (!(c >= 0 && c < (this.#extents[axis] as number))) return -1;
    }
    return this.#rows?.get(Array.prototype.join.call(coords, "/")) ?? -1;
  }

  /** The C-order position of `coords` in the bounding box, or -1 outside it. */
  #linear(coords: ArrayLike<number>): number {
    let linear = 0;
    for (let axis = 0; axis < this.rank; axis++) {
      const c = coords[axis] as number;
      const extent = this.#extents[axis] as number;
      if (!(c >= 0 && c < extent)) return -1;
      linear = linear * extent + c;
    }
    return linear;
  }
}

/** The chunks of one array path met while scanning `refs`. */
interface Listing {
  rank: number;
  coords: number[];
  offsets: number[];
  sizes: number[];
  urls: Set<string>;
  /** Its first key failed `checkKey`, or a URL its templates cannot expand. */
  refused: boolean;
}

/**
 * The listed tables of every array that has one (see the module), from one pass over the keys
 * of `refs`. Empty when the references have gen entries.
 */
export function listedTables(references: References): Map<string, ListedTable> {
  const out = new Map<string, ListedTable>();
  if (references.gen.length > 0) return out;
  const refs = references.refs;
  const listings = new Map<string, Listing>();
  /** Array paths a key outside their columns lies under (their chunks are not all columns). */
  const spoiled = new Set<string>();
  /** Keys held in one array's columns that also lie under other arrays' chunk prefixes. */
  const nested: [string, string[]][] = [];
  const expanded = new Map<string, string | undefined>();
  for (const key of Object.keys(refs)) {
    const held = columnEntry(key, refs[key]);
    if (held === undefined) {
      for (const path of chunkPrefixesOf(key, -2)) spoiled.add(path);
      continue;
    }
    const { path, cut, coords, url, offset, size } = held;
    let listing = listings.get(path);
    if (listing === undefined) {
      let refused = false;
      try {
        checkKey(key);
      } catch {
        refused = true;
      }
      listing = {
        rank: coords.length,
        coords: [],
        offsets: [],
        sizes: [],
        urls: new Set(),
        refused,
      };
      listings.set(path, listing);
    }
    if (listing.rank !== coords.length) {
      // kept as a plain reference: it lies under this array's chunks, and maybe others'
      for (const p of chunkPrefixesOf(key, -2)) spoiled.add(p);
      continue;
    }
    const others = chunkPrefixesOf(key, cut);
    if (others.length > 0) nested.push([path, others]);
    let full = expanded.get(url);
    if (!expanded.has(url)) {
      try {
        full = expandNamedTemplates(url, references.templates, true);
      } catch {
        full = undefined;
      }
      expanded.set(url, full);
    }
    if (full === undefined) listing.refused = true;
    else listing.urls.add(full);
    for (const c of coords) listing.coords.push(c);
    listing.offsets.push(offset);
    listing.sizes.push(size);
  }
  // an array with too few listed chunks keeps them as plain references, under other prefixes too
  for (const [path, others] of nested) {
    if ((listings.get(path) as Listing).offsets.length < MIN_COLUMN_CHUNKS) {
      for (const p of others) spoiled.add(p);
    }
  }
  for (const [path, listing] of listings) {
    if (
      listing.offsets.length < MIN_COLUMN_CHUNKS ||
      listing.refused ||
      listing.urls.size !== 1 ||
      spoiled.has(path) ||
      references.indexes.has(path) ||
      references.selections.has(path)
    ) {
      continue;
    }
    const [url] = listing.urls as Set<string>;
    out.set(
      path,
      new ListedTable(
        path,
        url as string,
        listing.rank,
        Float64Array.from(listing.coords),
        Float64Array.from(listing.offsets),
        Float64Array.from(listing.sizes),
      ),
    );
  }
  return out;
}

/**
 * Where `value` at `key` goes in columns (Python's `_parse_refs`): the array path, where its
 * `/c/` starts in the key (-1: the root's `c/`), chunk coordinates (`coordinatesOf`), URL as
 * written, offset and size; undefined when it stays a plain reference.
 */
function columnEntry(
  key: string,
  value: unknown,
):
  | { path: string; cut: number; coords: number[]; url: string; offset: number; size: number }
  | undefined {
  if (!Array.isArray(value) || value.length !== 3 || key.length > MAX_KEY_LENGTH) return undefined;
  const [url, offset, size] = value as unknown[];
  if (typeof url !== "string" || url === "") return undefined;
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(size)) return undefined;
  const [o, s] = [offset as number, size as number];
  if (o < 0 || s < 0 || o + s > Number.MAX_SAFE_INTEGER) return undefined;
  const cut = key.lastIndexOf("/c/");
  if (cut < 0 && !key.startsWith("c/")) return undefined;
  const path = cut < 0 ? "" : key.slice(0, cut);
  const coords = coordinatesOf(key, cut < 0 ? 2 : cut + 3);
  if (coords === undefined) return undefined;
  return { path, cut, coords, url, offset: o, size: s };
}

/**
 * The chunk coordinates written from position `start` of `key` to its end (`i/j/…`), each as
 * zarr writes one (ASCII digits, no leading zero, at most 18 digits; -1 for one beyond
 * 2^53 - 1); undefined when the tail is written otherwise.
 */
function coordinatesOf(key: string, start: number): number[] | undefined {
  const coords: number[] = [];
  let value = 0;
  let digits = 0;
  let leadingZero = false;
  for (let i = start; i <= key.length; i++) {
    const code = i < key.length ? key.charCodeAt(i) : SLASH;
    if (code === SLASH) {
      if (digits === 0 || digits > 18 || (leadingZero && digits > 1)) return undefined;
      coords.push(Number.isSafeInteger(value) ? value : -1);
      value = 0;
      digits = 0;
    } else if (code >= ZERO && code <= ZERO + 9) {
      if (digits === 0) leadingZero = code === ZERO;
      value = value * 10 + (code - ZERO);
      digits++;
    } else {
      return undefined;
    }
  }
  return coords;
}

const SLASH = 47;
const ZERO = 48;

/**
 * The array paths whose chunk prefix (`path/c/`, `c/` for the root) `key` starts with, for
 * prefixes ending before position `before` of the key (-2: any).
 */
function chunkPrefixesOf(key: string, before: number): string[] {
  const out: string[] = [];
  const limit = before === -2 ? key.length : before;
  if (key.startsWith("c/") && limit >= 0) out.push("");
  for (let at = key.indexOf("/c/"); at >= 0 && at < limit; at = key.indexOf("/c/", at + 1)) {
    out.push(key.slice(0, at));
  }
  return out;
}
