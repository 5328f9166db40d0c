export function planMerges(ranges, mergeGap, maxMergeSize) {
    const sorted = [...ranges].sort((a, b) => a.start - b.start || a.end - b.end);
    const groups = [];
    for (const range of sorted) {
        const current = groups[groups.length - 1];
        if (current !== undefined &&
            maxMergeSize > 0 &&
            range.start - current.end <= mergeGap &&
            Math.max(current.end, range.end) - current.start <= maxMergeSize) {
            current.end = Math.max(current.end, range.end);
            current.members.push(range);
        }
        else {
            groups.push({ start: range.start, end: range.end, members: [range] });
        }
    }
    return groups;
}
