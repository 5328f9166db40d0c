/**
 * The format's rules for one stored chunk, checked before zarrita sees its bytes: the size-0
 * rule of a reference, the short-chunk rule of an uncompressed array, the bound on a compressed
 * chunk's stored size, bodies no shorter than asked, and the Fletcher-32 checksum (the Python
 * store's `ArrayChecks` and `CheckedReads` where the concept is the same). Each failure is a
 * typed error naming the chunk.
 */
import { type ArrayInfo, chunkCoordsFromKey, neededBytes } from "./array-metadata.js";
import { ChunkDecodeError, ReferenceFormatError, SourceError } from "./errors.js";
import { fletcher32 } from "./fletcher32.js";
import type { Reference } from "./references.js";

/**
 * The format's size-0 rule: `[url, 0, 0]` is a missing chunk (true: the key reads as absent, as
 * VirtualiZarr writes missing chunks); size 0 at any other offset is malformed.
 */
export function isEmptyReference(key: string, ref: Reference): boolean {
  if (ref.kind !== "range" || ref.size !== 0) return false;
  if (ref.offset === 0) return true;
  throw new ReferenceFormatError(
    `reference ${key}: size 0 at offset ${ref.offset} (only [url, 0, 0], a missing chunk, may ` +
      "hold no bytes)",
  );
}

/**
 * The format's short-chunk rule for a chunk of an uncompressed array: at most a chunk's bytes,
 * and fewer only where the elements left out all lie past the array's end (`neededBytes`),
 * whatever part of the chunk is read. Never padded otherwise: a short chunk in the middle of
 * an array is damage, not fill values.
 */
export function checkChunkSize(
  key: string,
  info: ArrayInfo,
  available: number,
  chunkBytes: number,
): void {
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

/** A compressed chunk holds at most what any chunk of its array compresses to (`storedBound`). */
export function checkStoredBound(
  key: string,
  info: ArrayInfo | undefined,
  available: number,
): void {
  const bound = info?.storedBound;
  if (bound !== undefined && available > bound) {
    throw new ChunkDecodeError(
      `chunk ${key}: its reference holds ${available} bytes, more than the ${bound} bytes any ` +
        "chunk of its array compresses to; the references are damaged",
    );
  }
}

/**
 * Refuse bodies shorter than asked. References never run past the recorded end of a file (that
 * is refused before any request), so a short answer is a fault or a changed file, never fill.
 */
export function checkShortBodies(
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
 * A chunk without its Fletcher-32 checksum, which must match (the metadata zarrita sees lists no
 * fletcher32 codec: see metadata-view.ts); `where`: the chunk's source, for errors.
 */
export function verifiedFletcher32(key: string, where: string, stored: Uint8Array): Uint8Array {
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
