"""The table and the targets: shadowzarr's rows against the best peer of the same case."""

from __future__ import annotations

from typing import Any

from context import Context
from measure import Row


def best_peer(rows: list[Row], row: Row, key: str = "seconds") -> Row | None:
    """The peer with the lowest ``key`` in ``row``'s case (the limit row and a tool reading the
    file from local disk are no peers)."""
    peers = [
        r
        for r in rows
        if r.case == row.case
        and not r.ours
        and r.not_run is None
        and getattr(r, key) is not None
        and not r.reader.startswith("limit")
        and "no network" not in r.reader
    ]
    return min(peers, key=lambda r: getattr(r, key)) if peers else None


def print_table(label: str, rows: list[Row], ctx: Context) -> None:
    print(f"\n### {label}; median of {ctx.runs} run(s) (workload 5 at full size: 1 run)\n")
    print(
        "| workload | case | reader | time (s) | requests | round trips | MB | peak MB "
        "| vs best peer | values |"
    )
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for row in rows:
        if row.not_run is not None:
            reason = " ".join(row.not_run.split())
            print(f"| {row.workload} | {row.case} | {row.reader} | not run: {reason} | | | | | | |")
            continue
        ratio = ""
        best = best_peer(rows, row)
        if row.ours and best is not None and row.seconds:
            ratio = (
                f"{best.seconds / row.seconds:.1f}× faster"
                if best.seconds >= row.seconds
                else (f"{row.seconds / best.seconds:.1f}× slower")
            )
        name = f"**{row.reader}**" if row.ours else row.reader
        note = f" ({row.note.split(' [')[0]})" if row.note and not row.note.startswith("[") else ""
        print(
            f"| {row.workload} | {row.case} | {name}{note} | {row.seconds:.3f} | {row.requests} | "
            f"{'' if row.round_trips is None else row.round_trips} | "
            f"{(row.bytes or 0) / 1e6:.2f} | {_mb(row.peak_mb)} | {ratio} | "
            f"{'equal' if row.equal else 'WRONG'} |"
        )
    print()
    for target in targets(rows, ctx):
        print(
            f"- {'MET' if target['met'] else 'NOT MET' if target['met'] is False else 'n/a'}: "
            f"{target['target']} — {target['detail']}"
        )


def _mb(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}"


def _ours(rows: list[Row], workload: str, case_part: str, reader_part: str = "") -> list[Row]:
    return [
        r
        for r in rows
        if r.ours
        and r.workload.startswith(workload)
        and case_part in r.case
        and reader_part in r.reader
        and r.not_run is None
    ]


def targets(rows: list[Row], ctx: Context) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def add(target: str, met: bool | None, detail: str) -> None:
        found.append({"target": target, "met": met, "detail": detail})

    server = getattr(ctx.server, "kind", "nginx")
    for row in _ours(rows, "1", ""):
        best = best_peer(rows, row)
        name = f"generation ≥10× faster than the best peer ({row.case}, {server} server)"
        if server == "s3" and row.case.startswith("fragmented"):
            name = (
                "fragmented-file generation on the single-range server ≤ 1/10 of the best "
                "peer's time, including async-hdf5"
            )
        if best is None:
            add(name, None, "no peer ran")
            continue
        speed = best.seconds / row.seconds
        detail = f"{speed:.1f}× ({row.seconds:.2f} s vs {best.reader} {best.seconds:.2f} s)"
        async_hdf5 = [
            r
            for r in rows
            if r.case == row.case and r.reader.startswith("async-hdf5") and r.not_run is None
        ]
        if async_hdf5:
            detail += f"; async-hdf5 {async_hdf5[0].seconds:.2f} s"
        elif server == "s3":
            detail += "; async-hdf5 did not run"
        add(name, speed >= 10 and (bool(async_hdf5) or server != "s3"), detail)
    for row in _ours(rows, "2", "open (", "directory"):
        add(
            "opening a 2M-chunk set < 0.1 s and ≤ 2 requests",
            row.seconds < 0.1 and row.requests <= 2,
            f"{row.seconds * 1000:.0f} ms, {row.requests} request(s) ({row.case})",
        )
    for row in _ours(rows, "2", "read 1 chunk", "directory"):
        whole = [
            r
            for r in rows
            if r.workload == row.workload
            and r.case == row.case
            and r.reader == "shadowzarr single JSON"
            and r.bytes
        ]
        if whole:
            add(
                "opening never loads every reference",
                row.bytes * 10 < whole[0].bytes,
                f"open + read 1 chunk moved {row.bytes / 1e3:.0f} kB vs {whole[0].bytes / 1e6:.1f} "
                f"MB for all references; peak {_mb(row.peak_mb)} MB vs {_mb(whole[0].peak_mb)} MB",
            )
    latency = ctx.server.latency
    bandwidth = ctx.server.bandwidth
    limit = [r for r in rows if r.workload.startswith("5") and r.reader.startswith("limit")]
    if not bandwidth and limit and limit[0].seconds:  # uncapped: the measured raw throughput
        bandwidth = (limit[0].bytes or 0) / limit[0].seconds
    for row in _ours(rows, "3", "cold", "RfsStore"):
        transfer = (row.bytes or 0) / bandwidth if bandwidth else 0.0
        bound = 2 * latency + transfer
        add(
            f"cold read ≤ 2 round trips + transfer ({row.case})",
            row.seconds <= bound,
            f"{row.seconds * 1000:.0f} ms vs bound {bound * 1000:.0f} ms "
            f"({row.requests} requests, {(row.bytes or 0) / 1e6:.1f} MB)",
        )
    for row in _ours(rows, "4", "", "RfsStore"):
        if "merging off" in row.reader:
            continue
        best = best_peer(rows, row, key="requests")
        if best is not None and row.requests:
            add(
                f"≥3× fewer requests than the best peer on small chunks ({row.case})",
                best.requests >= 3 * row.requests,
                f"{row.requests} vs {best.requests} ({best.reader})",
            )
    for row in _ours(rows, "5", "", "RfsStore"):
        if limit and limit[0].seconds:
            share = limit[0].seconds / row.seconds
            add(
                "sequential throughput ≥ 80% of the limit",
                share >= 0.8,
                f"{share * 100:.0f}% ({row.note.split(' [')[0]} vs {limit[0].note.split(' [')[0]})",
            )
    return found
