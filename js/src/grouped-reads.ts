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
import { buildShardIndex, type GroupLayout, type ShardIndex } from "./grouped-view.js";

/** A logical byte range of a value: [start, end), or the last `suffix` bytes. */
export type ValueRange = { start: number; end: number } | { suffix: number } | null;

/** What the grouped view needs of the store about one array and its stored chunks. */
export interface GroupedArray {
  readonly path: string;
  readonly layout: GroupLayout;
  /** The key of the stored chunk at `coords`. */
  keyOf(coords: readonly number[]): string;
  /** A stored chunk's logical length without reading it where possible (-1: not stored). */
  lengthOf(key: string): Promise<number>;
  /** A stored chunk's bytes as the store serves it unsharded (undefined: not stored). */
  read(key: string, signal?: AbortSignal): Promise<Uint8Array | undefined>;
  /** For packs of decoded chunks: a stored chunk's bytes with its byte codecs undone. */
  decode(key: string, bytes: Uint8Array): Promise<Uint8Array>;
  /** The bytes of a stored chunk that is not stored (fill elements), for packs. */
  fill(): Uint8Array;
}

const INDEXES_KEPT = 256;

/** The grouped view's shards of one store: their indexes kept, their bytes read on demand. */
export class GroupedShards {
  readonly #indexes = new Map<string, Promise<ShardIndex>>();

  /** Bytes `range` of the shard at `shard` of `array` (undefined: no chunk of it is stored). */
  async read(
    key: string,
    array: GroupedArray,
    shard: readonly number[],
    range: ValueRange,
    signal?: AbortSignal,
  ): Promise<Uint8Array | undefined> {
    const layout = array.layout;
    const index = await this.#shard(key, array, shard);
    const membersOf = (j: number) =>
      layout.membersOf(shard, j).map((c) => (c === null ? null : array.keyOf(c)));
    if (index.empty) return undefined;
    const [start, end] = window(range, index.total);
    const first = Math.max(0, lastAtOrBefore(index.offsets, start));
    const size0 = index.sizes[first] as number;
    if (index.offsets[first] === start && start + size0 === end && size0 > 0) {
      // one whole inner chunk, as zarrita's sharding codec asks: its bytes as they are
      return this.#inner(array, membersOf(first), size0, signal);
    }
    const out = new Uint8Array(end - start);
    const head = index.index;
    const tail = index.total - head.length;
    copyPart(out, start, end, 0, head);
    copyPart(out, start, end, tail, head);
    const reads: Promise<void>[] = [];
    for (let j = first; j < index.offsets.length; j++) {
      const offset = index.offsets[j] as number;
      const size = index.sizes[j] as number;
      if (offset >= end) break;
      if (size === 0 || offset + size <= start) continue;
      reads.push(
        this.#inner(array, membersOf(j), size, signal).then((bytes) =>
          copyPart(out, start, end, offset, bytes),
        ),
      );
    }
    await Promise.all(reads);
    return out;
  }

  /**
   * The shard's index, built once for all the reads of it (the keys of its stored chunks are
   * made again per inner chunk read: a shard has up to 4,096, and 256 indexes are kept).
   */
  #shard(key: string, array: GroupedArray, shard: readonly number[]): Promise<ShardIndex> {
    let found = this.#indexes.get(key);
    if (found === undefined) {
      found = this.#build(array, shard);
      found.catch(() => this.#indexes.delete(key));
      if (this.#indexes.size >= INDEXES_KEPT) {
        this.#indexes.delete(this.#indexes.keys().next().value as string);
      }
      this.#indexes.set(key, found);
    }
    return found;
  }

  async #build(array: GroupedArray, shard: readonly number[]): Promise<ShardIndex> {
    const layout = array.layout;
    const keys = layout.innerChunks(shard).map((c) => (c === null ? null : array.keyOf(c)));
    const lengths = await Promise.all(keys.map((k) => (k === null ? -1 : array.lengthOf(k))));
    if (layout.members === 1) {
      const empty = lengths.findIndex((n) => n === 0);
      if (empty >= 0) {
        throw new ChunkDecodeError(
          `stored chunk ${keys[empty]} of array ${array.path} holds no bytes; no chunk of its ` +
            "array decodes from nothing",
        );
      }
    }
    return buildShardIndex(lengths, layout.members, layout.members * layout.chunkNbytes);
  }

  /** An inner chunk's bytes: its one stored chunk, or the pack of its members. */
  async #inner(
    array: GroupedArray,
    members: readonly (string | null)[],
    size: number,
    signal?: AbortSignal,
  ): Promise<Uint8Array> {
    const layout = array.layout;
    if (layout.members === 1) {
      const bytes = await array.read(members[0] as string, signal);
      if (bytes === undefined || bytes.length !== size) {
        throw new ChunkDecodeError(
          `stored chunk ${members[0]} of array ${array.path} changed size while read ` +
            `(${bytes?.length ?? "missing"} bytes, ${size} in its shard's index)`,
        );
      }
      return bytes;
    }
    const parts = await Promise.all(
      members.map(async (k) => {
        if (k === null) return array.fill();
        const stored = await array.read(k, signal);
        if (stored === undefined) return array.fill();
        const bytes = layout.kind === "decoded" ? await array.decode(k, stored) : stored;
        if (bytes.length !== layout.chunkNbytes) {
          throw new ChunkDecodeError(
            `stored chunk ${k} of array ${array.path} holds ${bytes.length} bytes decoded, ` +
              `not the ${layout.chunkNbytes} of a chunk`,
          );
        }
        return bytes;
      }),
    );
    return layout.packBytes(parts);
  }
}

/**
 * A stored chunk's bytes with the byte codecs `codecs` (the array's codecs after `bytes`)
 * undone through zarrita's codec registry, as the Python store decodes a pack's members.
 */
export async function undoByteCodecs(
  codecs: readonly Record<string, unknown>[],
  meta: { dataType: string; shape: readonly number[]; fillValue: unknown },
  bytes: Uint8Array,
  where: string,
): Promise<Uint8Array> {
  let out = bytes;
  for (let i = codecs.length - 1; i >= 0; i--) {
    const codec = codecs[i] as Record<string, unknown>;
    const name = String(codec.name);
    const load = zarr.registry.get(name);
    if (load === undefined) {
      throw new ChunkDecodeError(`${where}: codec ${name} is not known to zarrita`);
    }
    const Codec = (await load()) as unknown as {
      fromConfig(config: unknown, meta: unknown): { decode(b: Uint8Array): unknown };
    };
    try {
      const c = Codec.fromConfig(codec.configuration ?? {}, { ...meta, codecs: [...codecs] });
      out = (await c.decode(out)) as Uint8Array;
    } catch (cause) {
      throw new ChunkDecodeError(`${where}: codec ${name} failed to decode it: ${String(cause)}`);
    }
  }
  return out;
}

/** The last position of `sorted` whose value is at most `value` (-1: none). */
function lastAtOrBefore(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as number) <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

function window(range: ValueRange, total: number): [number, number] {
  if (range === null) return [0, total];
  if ("suffix" in range) return [Math.max(0, total - range.suffix), total];
  const start = Math.min(Math.max(0, range.start), total);
  return [start, Math.max(start, Math.min(range.end, total))];
}

/** Copy the part of `bytes` (at `at` in the value) that falls in [start, end) into `out`. */
function copyPart(
  out: Uint8Array,
  start: number,
  end: number,
  at: number,
  bytes: Uint8Array,
): void {
  const from = Math.max(start, at);
  const to = Math.min(end, at + bytes.length);
  if (to > from) out.set(bytes.subarray(from - at, to - at), from - start);
}
