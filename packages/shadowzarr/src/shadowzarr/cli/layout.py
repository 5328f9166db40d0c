"""``shadowzarr layout REFS [ARRAY] [--select …] --png FILE``: where the chunks lie, and what a
read costs (the picture of `shadowzarr.plot.layout`, or its numbers with ``--json``)."""

from __future__ import annotations

import argparse

from shadowzarr.cli.output import add_json_option, emit

__all__ = ["register"]


def register(
    subcommands: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
) -> None:
    parser = subcommands.add_parser(
        "layout",
        help="draw where an array's chunks lie in its source file and what a selection costs",
        description="Draws the source file as a strip of bytes: the array's chunks, other "
        "arrays' chunks and the bytes no reference points to (headers, heaps, chunk indexes); "
        "an enlargement of the part a selection reads, with the range requests the store "
        "sends for it (as its request merger plans them, cold); and the numbered lookup of "
        "one chunk. Needs matplotlib for --png (pip install 'shadowzarr[plot]').",
        epilog="example: shadowzarr layout session.shadowzarr acquisition/ElectricalSeries/data "
        '--select "72000000:72020000, 17" --png layout.png',
        parents=[common],
    )
    parser.add_argument("refs", help="a .json reference file, a reference directory, or a URL")
    parser.add_argument(
        "array", nargs="?", help="the array to draw (default: the one with the most bytes)"
    )
    parser.add_argument(
        "--select", help='numpy-style selection whose cost to draw, e.g. "0:30000, 17"'
    )
    parser.add_argument("--png", help="write the picture to this PNG file")
    parser.add_argument(
        "--measure",
        action="store_true",
        help="also read the selection (cold) and report the requests and bytes really sent",
    )
    parser.add_argument(
        "--grouped-view",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="plan (and measure) the read through the store's grouped view, as open_rfs reads "
        "it by default (small chunks read as shards of them); --no-grouped-view: the chunks as "
        "stored, as open_rfs(..., grouped_view=0) reads them (default: the grouped view)",
    )
    parser.add_argument(
        "--no-context",
        action="store_true",
        help="do not look up where other arrays' chunks lie (faster with many arrays)",
    )
    parser.add_argument(
        "--width", type=float, default=12.0, help="width of the picture in inches (default: 12)"
    )
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shadowzarr_spec.units import format_bytes
    from shadowzarr_store import open_rfs_store

    from shadowzarr.plot.layout_data import layout_data
    from shadowzarr.plot.layout_figure import layout_figure, save_figure
    from shadowzarr.selection_text import parse_selection

    if args.png:
        from shadowzarr.plot import require_matplotlib

        require_matplotlib("shadowzarr layout --png")
    store = open_rfs_store(args.refs, grouped_view="auto" if args.grouped_view else 0)
    select = parse_selection(args.select) if args.select else None
    data = layout_data(store, args.array, select, context=not args.no_context, measure=args.measure)
    if args.png:
        save_figure(layout_figure(data, width=args.width), args.png)
    document = {
        "array": data.path,
        "url": data.url,
        "file_size": data.file_size,
        "chunks": len(data.chunks),
        "chunk_bytes": sum(c.size for c in data.chunks),
        "first_chunk_offset": min(c.start for c in data.chunks),
        "indexed": data.indexed,
        "selection": None if data.plan is None else data.plan.to_json(),
        "measured": None
        if data.measured is None
        else {
            "requests": data.measured.requests,
            "bytes": data.measured.bytes,
            "index_chunk_reads": data.measured.index_chunk_reads,
            "seconds": data.measured.seconds,
        },
        "png": args.png,
    }
    lines = [
        f"{data.path}: {len(data.chunks):,} chunks, "
        f"{format_bytes(document['chunk_bytes'])} of {data.url} ({format_bytes(data.file_size)}); "
        f"first chunk at byte {document['first_chunk_offset']:,}"
    ]
    if data.plan is not None:
        plan = data.plan
        lines.append(
            f"selection {plan.selection}: {len(plan.chunks)} chunks "
            f"({format_bytes(plan.chunk_bytes)}), {len(plan.index_chunks)} index chunks, "
            f"{len(plan.requests)} planned requests ({format_bytes(plan.request_bytes)})"
        )
    if data.measured is not None:
        lines.append(
            f"measured cold read: {data.measured.requests} requests "
            f"({format_bytes(data.measured.bytes)}) in {data.measured.seconds:.2f} s"
        )
    if args.png:
        lines.append(f"wrote {args.png}")
    emit(args, document, lines)
    return 0
