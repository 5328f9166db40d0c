"""Markdown tables of a recorded benchmark result file (`bench.py --json`, `reads.py --json`).

The documentation's performance page renders its tables from the files in `results/` with this
module when the site is built, so the published figures are the recorded ones, never retyped.

    uv run python tools/bench/results_table.py tools/bench/results/2026-12-03-reads-slab.json
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["conditions", "load", "markdown", "settings", "targets"]


def load(path: str | Path) -> dict[str, Any]:
    """A result document: `bench.py` writes `settings` (one per network setting), `reads.py`
    writes one setting at the top level; both are returned in `bench.py`'s shape."""
    document: dict[str, Any] = json.loads(Path(path).read_text())
    if "settings" not in document:
        setting = {key: document[key] for key in ("server", "rows") if key in document}
        setting["network"] = document.get("server", "")
        document = {**document, "settings": [setting]}
    document["name"] = Path(path).name
    return document


def settings(document: dict[str, Any]) -> list[dict[str, Any]]:
    return list(document["settings"])


def conditions(document: dict[str, Any]) -> str:
    """One sentence: the command, the runs, and the machine's size and load where recorded."""
    command = re.sub(r"--json \S+", "--json FILE", str(document.get("command", "?")))
    parts = [f"`{document['name']}`", f"`uv run python {command}`"]
    runs = document.get("runs")
    if runs:
        parts.append(f"median of {runs} run{'s' if runs != 1 else ''}")
    start, end = document.get("load_average_start"), document.get("load_average_end")
    if start and end:
        parts.append(f"load average {start[0]:.2f} at the start, {end[0]:.2f} at the end")
    return "; ".join(parts) + "."


def targets(setting: dict[str, Any]) -> Iterator[str]:
    for target in setting.get("targets", []):
        verdict = "met" if target.get("met") else "not met"
        yield f"- {target['target']}: **{verdict}**, {target.get('detail', '')}"


def markdown(
    setting: dict[str, Any],
    *,
    workloads: Iterable[str] | None = None,
    cases: Iterable[str] | None = None,
) -> str:
    """A table of one setting's rows: case, reader, time, requests, round trips, MB, note.

    ``workloads`` and ``cases`` keep rows whose workload or case starts with one of them."""
    wanted_workloads = tuple(workloads or ())
    wanted_cases = tuple(cases or ())
    rows = [
        row
        for row in setting["rows"]
        if (not wanted_workloads or row["workload"].startswith(wanted_workloads))
        and (not wanted_cases or row["case"].startswith(wanted_cases))
    ]
    trips = any(row.get("round_trips") is not None for row in rows)
    head = ["case", "reader", "time", "requests"] + (["round trips"] if trips else []) + ["MB"]
    lines = [
        "| " + " | ".join([*head, "note"]) + " |",
        "| " + " | ".join(["---", "---"] + ["---:"] * (len(head) - 2) + ["---"]) + " |",
    ]
    for row in rows:
        reader = f"**{row['reader']}**" if row.get("ours") else row["reader"]
        if row.get("not_run"):
            cells = [
                row["case"],
                reader,
                *[""] * (len(head) - 2),
                f"not run: {_short(row['not_run'])}",
            ]
        else:
            cells = [
                row["case"],
                reader,
                _seconds(row["seconds"]),
                f"{row['requests']:,}",
                *([_count(row.get("round_trips"))] if trips else []),
                f"{row['bytes'] / 1e6:.2f}",
                _note(row),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _short(text: str, limit: int = 110) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _count(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def _note(row: dict[str, Any]) -> str:
    note = str(row.get("note") or "")
    # bench.py repeats the network setting in every note; the table's heading says it once.
    if note.endswith("]") and "[" in note:
        note = note[: note.rindex("[")].strip()
    if row.get("equal") is False:
        note = f"values differ from the source; {note}".rstrip("; ")
    return note


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--workloads", default="", help="comma list of workload prefixes")
    args = parser.parse_args()
    document = load(args.results)
    print(conditions(document))
    for setting in settings(document):
        print(f"\n### {setting['network']}\n")
        print(markdown(setting, workloads=[w for w in args.workloads.split(",") if w]))
        for line in targets(setting):
            print(line)


if __name__ == "__main__":
    main()
