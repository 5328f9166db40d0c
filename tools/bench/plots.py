"""Benchmark results as pictures: one PNG per workload, beside the tables.

    uv run python tools/bench/plots.py tools/bench/results/2026-11-30.json

writes ``tools/bench/results/2026-11-30/<workload>.png``: for every case of the workload, a bar
per reader (time in seconds, log scale, shadowzarr's bars in blue, peers in grey, the raw limit
hatched), labelled with the requests and megabytes it moved, one column per network setting.
A reader that did not run is named with its reason, so a missing bar never looks like a fast
one. ``bench.py --plots`` draws them after a run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from collections import OrderedDict
from pathlib import Path
from typing import Any

__all__ = ["plot_results"]

OURS = "#1f77b4"
PEER = "#9e9e9e"
LIMIT = "#ffffff"


def plot_results(results: Path, folder: Path | None = None, *, dpi: int = 100) -> list[Path]:
    """Draw every workload of the results file ``results``; return the PNGs written."""
    from matplotlib.figure import Figure

    document = json.loads(results.read_text())
    settings = settings_of(document)
    folder = folder or results.with_suffix("")
    folder.mkdir(parents=True, exist_ok=True)
    workloads: OrderedDict[str, OrderedDict[str, list[str]]] = OrderedDict()
    for setting in settings:
        for row in setting["rows"]:
            cases = workloads.setdefault(row["workload"], OrderedDict())
            readers = cases.setdefault(row["case"], [])
            if row["reader"] not in readers:
                readers.append(row["reader"])
    written = []
    for workload, cases in workloads.items():
        heights = [len(settings) * len(readers) + 1.4 for readers in cases.values()]
        figure = Figure(figsize=(11.5, 0.27 * sum(heights) + 1.0), dpi=dpi, layout="constrained")
        axes_list = figure.subplots(len(cases), 1, gridspec_kw={"height_ratios": heights})
        axes_list = list(axes_list) if len(cases) > 1 else [axes_list]
        figure.suptitle(
            f"workload {workload}: time per reader (log scale; shorter is better), "
            f"median of {document.get('runs', 1)} run(s)",
            fontsize=12,
            fontweight="bold",
        )
        for axes, (case, readers) in zip(axes_list, cases.items(), strict=True):
            _case(axes, case, readers, settings, document.get("runs", 1))
        _legend(figure, settings, any(r.startswith("limit") for rs in cases.values() for r in rs))
        target = folder / f"{_file_name(workload)}.png"
        figure.savefig(target, dpi=dpi, facecolor="white")
        written.append(target)
    return written


def settings_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The network settings of a results document: its ``settings``, or, as reads.py writes a
    run of one setting, the document itself (its ``server`` naming the setting)."""
    if "settings" in document:
        return document["settings"]
    return [{**document, "network": document["server"]}]


def _legend(figure: Any, settings: list[dict[str, Any]], limit: bool) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(color=OURS, label="shadowzarr"), Patch(color=PEER, label="peers")]
    handles += [
        Patch(facecolor="white", edgecolor="#333333", hatch=_hatch(n), label=s["network"])
        for n, s in enumerate(settings)
    ]
    if limit:
        handles.append(
            Patch(facecolor=LIMIT, edgecolor="#333333", hatch="xx", label="limit (plain ranges)")
        )
    figure.legend(
        handles=handles,
        loc="outside lower center",
        ncol=min(len(handles), 3),
        fontsize=9,
        frameon=False,
    )


HATCHES = ("", "...", "\\\\", "//", "oo", "++")


def _hatch(number: int) -> str:
    """The hatch of network setting `number`; runs with more settings than hatches reuse them."""
    return HATCHES[number % len(HATCHES)]


def _runs_note(
    lookup: list[dict[tuple[str, str], Any]], case: str, readers: list[str], titled: int
) -> str:
    """The subtitle's note ``(median of N runs)`` for a case whose rows ran more times than the
    title's ``titled`` (reads.py runs its sequential rows 5 times)."""
    counts = {
        len(row.get("runs") or ())
        for table in lookup
        for reader in readers
        if (row := table.get((case, reader))) and row.get("seconds")
    }
    most = max(counts, default=0)
    return f" (median of {most} runs)" if most > titled else ""


def _case(
    axes: Any, case: str, readers: list[str], settings: list[dict[str, Any]], titled: int = 1
) -> None:
    """One bar per reader and network setting (the settings one under the other)."""
    band = len(settings)
    lookup = [{(r["case"], r["reader"]): r for r in s["rows"]} for s in settings]
    seconds = [
        row["seconds"]
        for table in lookup
        for reader in readers
        if (row := table.get((case, reader))) and row.get("seconds")
    ]
    low = min(seconds) if seconds else 0.01
    high = max(seconds) if seconds else 1.0
    left = 10 ** math.floor(math.log10(low / 2))
    right = 10 ** math.ceil(math.log10(high * 40))
    centres = []
    for index, reader in enumerate(readers):
        top = (len(readers) - 1 - index) * (band + 0.6)
        centres.append(top + (band - 1) / 2)
        for number, table in enumerate(lookup):
            position = top + (band - 1 - number)
            row = table.get((case, reader))
            if row is None or row.get("seconds") is None:
                reason = "not run" if row is None else " ".join((row.get("not_run") or "").split())
                axes.text(
                    left * 1.15,
                    position,
                    textwrap.shorten(f"not run: {reason}", 110),
                    va="center",
                    fontsize=7.5,
                    color="#b00020",
                )
                continue
            limit = reader.startswith("limit")
            axes.barh(
                position,
                row["seconds"] - left,
                left=left,
                color=OURS if row.get("ours") else (LIMIT if limit else PEER),
                edgecolor="#333333",
                linewidth=0.4,
                hatch=("xx" if limit else _hatch(number)) or None,
                height=0.82,
            )
            label = f"{_seconds(row['seconds'])} · {row.get('requests') or 0:,} requests · "
            label += f"{(row.get('bytes') or 0) / 1e6:,.1f} MB"
            if row.get("equal") is False:
                label += " · WRONG VALUES"
            axes.text(row["seconds"] * 1.15, position, label, va="center", fontsize=7.5)
    axes.set_xscale("log")
    axes.set_xlim(left, right)
    axes.set_ylim(-0.7, (len(readers) - 1) * (band + 0.6) + band - 0.3)
    axes.set_yticks(centres)
    axes.set_yticklabels([textwrap.shorten(reader, 46) for reader in readers], fontsize=8.5)
    for tick, reader in zip(axes.get_yticklabels(), readers, strict=True):
        if reader.startswith("shadowzarr"):
            tick.set_fontweight("bold")
    axes.set_title(case + _runs_note(lookup, case, readers, titled), fontsize=9.5, loc="left")
    axes.set_xlabel("seconds (log scale)", fontsize=8.5)
    axes.tick_params(axis="x", labelsize=8)
    axes.tick_params(axis="y", length=0)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _file_name(workload: str) -> str:
    return "-".join(workload.lower().replace("/", " ").split())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a results JSON written by bench.py --json")
    parser.add_argument("--out", type=Path, help="folder for the PNGs (default: beside it)")
    args = parser.parse_args(argv)
    for path in plot_results(args.results, args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
