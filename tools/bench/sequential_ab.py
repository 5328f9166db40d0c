"""Store options compared on the sequential read, run by run (issue 25): paired, not in turn.

reads.py runs each reader's rows one after another, so a slow minute of this shared 2-core
machine lands on one row; its single sequential figures moved by 20-40 ms between runs, as much as
the changes being judged. Here every round reads the whole 4 KiB-chunk recording once per
variant (``RfsStore`` options as JSON) and reference location, in an order that rotates per
round, after one plain-ranges read (the limit). Each row gives the median and quartiles, the share
of the limit, and the median of the per-round differences from the first variant, which is what
to judge a change by. Same server and file as reads.py (single-range server, 20 ms per request,
zarr's defaults; each variant's options over ``grouped_view="auto"``, as reads.py's); every
read is checked against the values written.

    uv run python tools/bench/sequential_ab.py --variant default='{}' \\
        --variant shards-8MiB='{"grouped_view": 8388608}'
    uv run python tools/bench/sequential_ab.py --quick     # 3 s of recording, 3 rounds
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np
import reads
from reading import plain_ranges
from server import BenchServer

WHERE = ("remote", "local")
"""Reference locations read per variant: refs.json served over HTTP, or on this disk."""


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """``name=JSON`` (the options object of `open_rfs`)."""
    name, sep, options = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=JSON, as default='{{}}'")
    try:
        parsed = json.loads(options)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{name}: options are not JSON ({exc})") from exc
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(f"{name}: options must be a JSON object")
    return name, parsed


def run(
    server: BenchServer,
    refs: dict[str, Any],
    expected: np.ndarray,
    variants: list[tuple[str, dict[str, Any]]],
    rounds: int,
) -> dict[str, Any]:
    """Every round: the limit, then each (variant, location) once, rotated by one per round."""
    from shadowzarr_store import open_rfs

    cases = [(name, options, where) for name, options in variants for where in WHERE]
    for _, options, where in cases:  # untimed: memory the timed reads reuse
        open_rfs(refs[where], **{"grouped_view": "auto", **options})[reads.RECORDING][:]
    plain_ranges(refs["url"], refs["size"])
    limit: list[float] = []
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {(n, w): [] for n, _, w in cases}
    for turn in range(rounds):
        started = time.perf_counter()
        plain_ranges(refs["url"], refs["size"])
        limit.append(time.perf_counter() - started)
        shift = turn % len(cases)
        for name, options, where in cases[shift:] + cases[:shift]:
            server.reset()
            started = time.perf_counter()
            values = open_rfs(refs[where], **{"grouped_view": "auto", **options})[reads.RECORDING][
                :
            ]
            seconds = time.perf_counter() - started
            counts = server.counts()
            runs[(name, where)].append(
                {
                    "ms": seconds * 1000,
                    "requests": counts.requests,
                    "round_trips": counts.round_trips,
                    "equal": bool(np.array_equal(values, expected)),
                }
            )
    return {"limit_ms": [s * 1000 for s in limit], "runs": runs}


def summarize(result: dict[str, Any], variants: list[str]) -> list[dict[str, Any]]:
    """Per (variant, location): median, quartiles, share of the limit, paired difference."""
    limit = statistics.median(result["limit_ms"])
    rows = []
    for (name, where), measured in result["runs"].items():
        ms = [m["ms"] for m in measured]
        first = [m["ms"] for m in result["runs"][(variants[0], where)]]
        quartiles = statistics.quantiles(ms, n=4) if len(ms) > 1 else [ms[0]] * 3
        rows.append(
            {
                "variant": name,
                "refs": where,
                "median_ms": statistics.median(ms),
                "quartiles_ms": [quartiles[0], quartiles[2]],
                "of_limit": limit / statistics.median(ms),
                "paired_ms": statistics.median(a - b for a, b in zip(ms, first, strict=True)),
                "requests": statistics.median(m["requests"] for m in measured),
                "round_trips": statistics.median(m["round_trips"] for m in measured),
                "equal": all(m["equal"] for m in measured),
            }
        )
    return rows


def print_table(rows: list[dict[str, Any]], limit: float, first: str) -> None:
    print(f"limit (plain concurrent ranges of the file): {limit:.1f} ms, median")
    print(
        f"{'variant':<24}{'refs':<8}{'median':>9}{'quartiles':>17}{'of limit':>10}"
        f"{f'vs {first}':>14}{'requests':>10}{'rtt':>5}  equal"
    )
    for row in rows:
        low, high = row["quartiles_ms"]
        print(
            f"{row['variant']:<24}{row['refs']:<8}{row['median_ms']:>7.1f}ms"
            f"{f'{low:.0f}-{high:.0f} ms':>17}{row['of_limit']:>10.0%}"
            f"{row['paired_ms']:>+12.1f}ms{row['requests']:>10g}{row['round_trips']:>5g}"
            f"  {row['equal']}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--variant",
        action="append",
        type=parse_variant,
        help="NAME=JSON store options (repeat; the first is the baseline; default: default='{}')",
    )
    parser.add_argument("--rounds", type=int, default=None, help="default 21 (3 with --quick)")
    parser.add_argument("--quick", action="store_true", help="3 s of recording, 3 rounds")
    parser.add_argument("--latency", type=float, default=20.0, help="ms per request")
    parser.add_argument("--json", type=Path, default=None, help="write every run here")
    args = parser.parse_args(argv)
    variants = args.variant or [("default", {})]
    names = [name for name, _ in variants]
    if len(set(names)) != len(names):
        parser.error(f"variant names repeat: {names}")
    sizes = reads.Sizes.quick() if args.quick else reads.Sizes()
    rounds = args.rounds or (3 if args.quick else 21)
    with reads.served_recording(sizes, args.latency, "shadowzarr-ab-") as (server, refs, expected):
        result = run(server, refs, expected, variants, rounds)
    rows = summarize(result, names)
    limit = statistics.median(result["limit_ms"])
    print_table(rows, limit, names[0])
    if args.json is not None:
        document = {
            "latency_ms": args.latency,
            "rounds": rounds,
            "variants": dict(variants),
            "limit_ms": result["limit_ms"],
            "rows": rows,
            "runs": {f"{n} {w}": m for (n, w), m in result["runs"].items()},
        }
        args.json.write_text(json.dumps(document, indent=1))
    return 0 if all(row["equal"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
