"""The totals of a run, per source and overall, as a table and as JSON."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

COLUMNS = (
    "files", "datasets", "equal", "unsupported", "placeholders", "h5py_unreadable",
    "mismatches", "refused_whole", "attribute_mismatches",
)  # fmt: skip


def tally(results: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """``results``: (source, file result) pairs. Totals per source and overall, and the
    files with anything to look at."""
    sources: dict[str, dict[str, int]] = {}
    problems: list[dict[str, Any]] = []
    not_opened: list[str] = []
    reasons: dict[str, int] = {}
    for source, result in results:
        if not result["h5py_opens"]:
            not_opened.append(result["file"])
            continue
        row = sources.setdefault(source, dict.fromkeys(COLUMNS, 0))
        counts = result["counts"]
        row["files"] += 1
        for reason in result["unsupported"].values():
            reasons[reason] = reasons.get(reason, 0) + 1
        row["datasets"] += result["datasets"]
        row["equal"] += counts.get("equal", 0)
        row["unsupported"] += counts.get("unsupported", 0)
        row["placeholders"] += counts.get("placeholder", 0)
        row["h5py_unreadable"] += len(result["h5py_unreadable"])
        row["mismatches"] += counts.get("mismatch", 0)
        row["refused_whole"] += bool(result["refused_against_h5py"])
        row["attribute_mismatches"] += len(result["attribute_mismatches"])
        if (
            result["mismatches"]
            or result["attribute_mismatches"]
            or result["refused_whole"]
            or result["unrecorded_unreadable"]
        ):
            problems.append({k: v for k, v in result.items() if k != "statuses"})
    total = {column: sum(row[column] for row in sources.values()) for column in COLUMNS}
    unrecorded = sum(len(p["unrecorded_unreadable"]) for p in problems)
    return {
        "total": total | {"unrecorded_unreadable": unrecorded, "h5py_cannot_open": len(not_opened)},
        "sources": sources,
        "h5py_cannot_open": not_opened,
        "unsupported_reasons": dict(sorted(reasons.items(), key=lambda item: -item[1])),
        "problems": problems,
    }


def table(summary: dict[str, Any]) -> str:
    header = ["source", *COLUMNS]
    rows = [[name, *(str(row[c]) for c in COLUMNS)] for name, row in summary["sources"].items()]
    rows.append(["total", *(str(summary["total"][c]) for c in COLUMNS)])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [" | ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]
    head = " | ".join(cell.ljust(w) for cell, w in zip(header, widths, strict=True))
    return "\n".join([head, "-|-".join("-" * w for w in widths), *lines])


def problem_lines(summary: dict[str, Any], limit: int = 6) -> list[str]:
    """Each file with a mismatch, a refusal or an unrecorded unreadable dataset, and why."""
    lines: list[str] = []
    for problem in summary["problems"]:
        lines.append(problem["file"])
        if problem["refused_whole"]:
            lines.append(f"  refused whole: {problem['refused_whole']}")
        for kind in ("mismatches", "attribute_mismatches", "unrecorded_unreadable"):
            for entry in problem[kind][:limit]:
                lines.append(f"  {kind}: {entry}")
            if len(problem[kind]) > limit:
                lines.append(f"  {kind}: … {len(problem[kind]) - limit} more")
    return lines
