/**
 * The one place that turns a logical byte range of a chunk into physical byte ranges of a file:
 * through a selection (records of `recordSize` bytes of which the `keep` ranges are joined) or
 * one to one; that pads a short result with fill bytes; and that clamps a logical range (a
 * zarrita range query) to a value's size.
 */
import { ChunkDecodeError, ReferenceFormatError } from "./errors.js";

export interface Selection {
  readonly recordSize: number;
  readonly keep: ReadonlyArray<readonly [number, number]>;
}

/** `size` physical bytes starting at `offset`, which become logical bytes in the listed order. */
export interface Segment {
  readonly offset: number;
  readonly length: number;
}

export function validateSelection(path: string, raw: unknown): Selection {
  const s = raw as { record_size?: unknown; keep?: unknown };
  const recordSize = s?.record_size;
  if (typeof recordSize !== "number" || !Number.isInteger(recordSize) || recordSize <= 0) {
    throw new ReferenceFormatError(`selection of ${path}: record_size must be a positive integer`);
  }
  if (!Array.isArray(s.keep) || s.keep.length === 0) {
    throw new ReferenceFormatError(`selection of ${path}: keep must list [start, stop) ranges`);
  }
  const keep = s.keep.map((range: unknown) => {
    const [a, b] = Array.isArray(range) && range.length === 2 ? range : [];
    if (!Number.isInteger(a) || !Number.isInteger(b) || a < 0 || b <= a || b > recordSize) {
      throw new ReferenceFormatError(
        `selection of ${path}: bad keep range ${JSON.stringify(range)}`,
      );
    }
    return [a, b] as const;
  });
  return { recordSize, keep };
}

export function keptPerRecord(selection: Selection): number {
  return selection.keep.reduce((n, [a, b]) => n + (b - a), 0);
}

/** Logical size of a reference of `physicalSize` bytes (whole records) through a selection. */
export function logicalSize(physicalSize: number, selection: Selection | undefined): number {
  if (selection === undefined) return physicalSize;
  return Math.floor(physicalSize / selection.recordSize) * keptPerRecord(selection);
}

/**
 * Physical segments, in logical order, holding logical bytes [start, end) of a reference that
 * begins at `physicalOffset`. Neighbouring segments that touch are joined.
 */
export function mapLogicalRange(
  physicalOffset: number,
  start: number,
  end: number,
  selection: Selection | undefined,
): Segment[] {
  if (end <= start) return [];
  if (selection === undefined) return [{ offset: physicalOffset + start, length: end - start }];
  const kept = keptPerRecord(selection);
  const segments: Segment[] = [];
  const push = (offset: number, length: number) => {
    const last = segments[segments.length - 1];
    if (last !== undefined && last.offset + last.length === offset) {
      segments[segments.length - 1] = { offset: last.offset, length: last.length + length };
    } else {
      segments.push({ offset, length });
    }
  };
  let record = Math.floor(start / kept);
  let within = start - record * kept;
  let remaining = end - start;
  while (remaining > 0) {
    const recordStart = physicalOffset + record * selection.recordSize;
    let skipped = 0;
    for (const [a, b] of selection.keep) {
      if (remaining === 0) break;
      const width = b - a;
      if (within >= skipped + width) {
        skipped += width;
        continue;
      }
      const from = a + (within - skipped);
      const take = Math.min(b - from, remaining);
      push(recordStart + from, take);
      remaining -= take;
      within += take;
      skipped += width;
    }
    record++;
    within = 0;
  }
  return segments;
}

/**
 * A physical range to fetch and the segments it serves. Segments are grouped into spans when the
 * gap between them is at most `gap`, so a dense selection costs one span.
 */
export interface Span {
  readonly offset: number;
  readonly end: number;
}

export function spansFor(segments: readonly Segment[], gap: number): Span[] {
  const sorted = [...segments].sort((x, y) => x.offset - y.offset);
  const spans: { offset: number; end: number }[] = [];
  for (const s of sorted) {
    const last = spans[spans.length - 1];
    const end = s.offset + s.length;
    if (last !== undefined && s.offset - last.end <= gap) last.end = Math.max(last.end, end);
    else spans.push({ offset: s.offset, end });
  }
  return spans;
}

/**
 * Copy the segments out of the fetched spans in logical order. A span may come back shorter
 * than asked (the file ended); the result then stops at the first byte that is missing.
 */
export function assembleSegments(
  segments: readonly Segment[],
  spans: readonly Span[],
  bodies: readonly Uint8Array[],
): Uint8Array {
  // What the bodies hold, up to the first missing byte: a reference may claim far more than its
  // file has (allocating what it claims would fail), and the result is what is there.
  const pieces: Uint8Array[] = [];
  let total = 0;
  for (const s of segments) {
    const i = findSpan(spans, s.offset);
    const span = spans[i] as Span;
    const body = bodies[i] as Uint8Array;
    const from = s.offset - span.offset;
    const available = Math.max(0, Math.min(s.length, body.length - from));
    pieces.push(body.subarray(from, from + available));
    total += available;
    if (available < s.length) break;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}

function findSpan(spans: readonly Span[], offset: number): number {
  let lo = 0;
  let hi = spans.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((spans[mid] as Span).offset <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Pad `data`, the logical bytes [start, start + data.length) of a chunk, with fill elements up
 * to `end`; an uncompressed chunk that runs past the end of its file reads as fill there.
 */
export function padWithFill(
  data: Uint8Array,
  start: number,
  end: number,
  fillElement: Uint8Array,
): Uint8Array {
  const want = end - start;
  if (data.length > want) {
    throw new ChunkDecodeError(`chunk bytes are ${data.length - want} bytes longer than the chunk`);
  }
  if (data.length === want) return data;
  const out = new Uint8Array(want);
  out.set(data);
  const n = fillElement.length;
  if (fillElement.some((b) => b !== 0)) {
    for (let i = data.length; i < want; i++) out[i] = fillElement[(start + i) % n] as number;
  }
  return out;
}

/** A logical byte range of a value: [start, end), or the last `suffix` bytes; null: all. */
export type ValueRange = { start: number; end: number } | { suffix: number } | null;

/** `range` of a value of `total` bytes as [start, end), clamped to the value. */
export function clampRange(range: ValueRange, total: number): [number, number] {
  if (range === null) return [0, total];
  if ("suffix" in range) return [Math.max(0, total - range.suffix), total];
  const start = Math.min(Math.max(0, range.start), total);
  return [start, Math.max(start, Math.min(range.end, total))];
}

/** Bytes `range` of a value held whole. */
export function sliceLogical(bytes: Uint8Array, range: ValueRange): Uint8Array {
  if (range === null) return bytes;
  const [start, end] = clampRange(range, bytes.length);
  return bytes.slice(start, end);
}
