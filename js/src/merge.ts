/**
 * Plan which byte ranges of one file to fetch together: sorted by offset, a range joins the
 * current group while the gap to it is at most `mergeGap` and the group spans at most
 * `maxMergeSize` bytes. `maxMergeSize` 0 turns merging off.
 */
export interface ByteRange {
  readonly start: number;
  readonly end: number;
}

export interface MergedRange<T extends ByteRange> {
  readonly start: number;
  readonly end: number;
  readonly members: T[];
}

export function planMerges<T extends ByteRange>(
  ranges: readonly T[],
  mergeGap: number,
  maxMergeSize: number,
): MergedRange<T>[] {
  const sorted = [...ranges].sort((a, b) => a.start - b.start || a.end - b.end);
  const groups: { start: number; end: number; members: T[] }[] = [];
  for (const range of sorted) {
    const current = groups[groups.length - 1];
    if (
      current !== undefined &&
      maxMergeSize > 0 &&
      range.start - current.end <= mergeGap &&
      Math.max(current.end, range.end) - current.start <= maxMergeSize
    ) {
      current.end = Math.max(current.end, range.end);
      current.members.push(range);
    } else {
      groups.push({ start: range.start, end: range.end, members: [range] });
    }
  }
  return groups;
}
