"""``shadowzarr generate SOURCE -o OUT``: references for one source or many, in parallel."""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shadowzarr_store.transport import TransportOptions

from shadowzarr.cli.access import access_kwargs, add_access_arguments
from shadowzarr.cli.progress import Progress
from shadowzarr.cli.sources import detect_format, expand_sources

__all__ = ["Generated", "generate_one", "register"]

SUFFIXES = {"directory": ".shadowzarr", "json": ".shadowzarr.json"}


def register(subcommands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subcommands.add_parser(
        "generate",
        help="generate references for HDF5/NWB, TIFF or NEO-readable sources",
        description="SOURCE is a file, a URL, a folder (every HDF5/TIFF file in it, or a "
        "recording NEO reads), @list.txt (one source per line) or a DANDI dandiset version URL "
        "(every asset). With one source OUT is the output; with several it is a folder.",
        epilog="examples:\n  shadowzarr generate data.nwb -o data.shadowzarr\n"
        "  shadowzarr generate https://host/data.nwb --local-path data.nwb -o data.json\n"
        "  shadowzarr generate Noise4Sam_g0/ --format neo:SpikeGLXRawIO -o ap.shadowzarr",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("source")
    parser.add_argument("-o", "--output", required=True, help="output .json file or directory")
    parser.add_argument(
        "--format", default="auto", help="auto, hdf5, tiff, neo or neo:<RawIO class name>"
    )
    parser.add_argument("--local-path", help="a local copy of SOURCE to read headers from")
    parser.add_argument(
        "--url-for",
        action="append",
        default=[],
        metavar="PREFIX=URL",
        help="map local paths starting with PREFIX to URL (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="with many sources: one JSON file each")
    parser.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--chunk-index-threshold", type=int, default=1000)
    add_access_arguments(parser)
    parser.set_defaults(run=run)


@dataclass(frozen=True, slots=True)
class Generated:
    """What one generation wrote, and the datasets it could not reference."""

    output: str
    omitted: dict[str, str] = field(default_factory=dict)
    """Path → reason of the datasets left out."""
    inlined: dict[str, str] = field(default_factory=dict)
    """Path → reason of the datasets held inline, decoded, because no codec reads them."""

    def summary(self) -> str:
        lines = [f"wrote {self.output}"]
        for label, found in (("omitted", self.omitted), ("inlined (decoded)", self.inlined)):
            if found:
                lines.append(f"  {len(found)} dataset(s) {label}:")
                lines.extend(f"    {path}: {reason}" for path, reason in found.items())
        return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    access = access_kwargs(args)
    sources = expand_sources(args.source, TransportOptions(**access))
    mapping = [tuple(item.split("=", 1)) for item in args.url_for]
    if any(len(pair) != 2 for pair in mapping):
        raise ValueError("--url-for takes PREFIX=URL")
    options = {
        "format": args.format,
        "url_for": mapping,
        "threshold": args.chunk_index_threshold,
        "access": access,
    }
    if len(sources) == 1:
        written = generate_one(sources[0], args.output, local_path=args.local_path, **options)
        print(written.summary())
        return 0
    if args.local_path:
        raise ValueError("--local-path goes with a single SOURCE")
    out_dir = Path(args.output)
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = SUFFIXES["json" if args.json else "directory"]
    progress = Progress("generate")
    failures = 0
    with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
        futures = {
            pool.submit(generate_one, source, str(out_dir / (_stem(source) + suffix)), **options): source
            for source in sources
        }
        for done, future in enumerate(as_completed(futures), 1):
            try:
                print(future.result().summary())
            except (OSError, ValueError, ImportError) as exc:
                failures += 1
                print(f"failed {futures[future]}: {' '.join(str(exc).split())}")
            progress.update(done, len(futures))
    progress.close()
    return 1 if failures else 0


def generate_one(
    source: str,
    output: str,
    *,
    format: str = "auto",
    local_path: str | None = None,
    url_for: list[tuple[str, ...]] | None = None,
    threshold: int = 1000,
    access: dict[str, Any] | None = None,
) -> Generated:
    """References for ``source`` written to ``output``; ``access`` holds ``headers``,
    ``allowed_urls`` and ``storage_options`` for every request (the format sniffing too)."""
    import warnings

    from shadowzarr_spec import UnsupportedDatasetWarning, write_rfs

    access = {k: v for k, v in (access or {}).items() if v is not None}
    sniff = TransportOptions(**access) if local_path is None else TransportOptions()
    kind = detect_format(local_path or source, sniff) if format == "auto" else format
    with warnings.catch_warnings():
        # the summary names every dataset left out; the warning would say it twice
        warnings.simplefilter("ignore", UnsupportedDatasetWarning)
        rfs = _generator(kind, access)(source, local_path, _url_mapper(url_for or []))
    write_rfs(rfs, output, chunk_index_threshold=threshold)
    inlined = {p: u.reason for p, u in rfs.unsupported.items() if u.outcome == "inlined"}
    return Generated(output, rfs.omitted, inlined)


def _generator(kind: str, access: dict[str, Any]) -> Any:
    from shadowzarr._lazy import import_module_for

    if kind == "hdf5":
        module = import_module_for("shadowzarr_hdf5", "hdf5", "generating from HDF5")
        return lambda source, local, _url_for: module.generate_rfs(
            source, local_hdf5_path=local, **access
        )
    if kind == "tiff":
        module = import_module_for("shadowzarr_tiff", "tiff", "generating from TIFF")
        return lambda source, local, _url_for: module.generate_rfs_tiff(
            source, local_path=local, **access
        )
    if kind == "neo" or kind.startswith("neo:"):
        module = import_module_for("shadowzarr_neo", "neo", "generating from NEO recordings")
        reader_name = kind.partition(":")[2] or None
        return lambda source, _local, url_for: module.generate_rfs_neo(
            _neo_reader(source, reader_name), url_for=url_for
        )
    raise ValueError(f"unknown format {kind!r} (auto, hdf5, tiff, neo, neo:<RawIO class>)")


def _neo_reader(source: str, reader_name: str | None) -> Any:
    import neo.rawio

    if reader_name:
        cls = getattr(neo.rawio, reader_name, None)
        if cls is None:
            raise ValueError(f"NEO has no raw reader {reader_name!r}")
    else:
        cls = neo.rawio.get_rawio(source)
        if cls is None:
            raise ValueError(f"no NEO raw reader recognises {source}")
    key = "dirname" if Path(source).is_dir() else "filename"
    reader = cls(**{key: source})
    reader.parse_header()
    return reader


def _url_mapper(mapping: list[tuple[str, ...]]) -> Any:
    if not mapping:
        return None

    def url_for(path: str) -> str:
        absolute = os.path.abspath(path)
        for prefix, url in mapping:
            if absolute.startswith(os.path.abspath(prefix)):
                relative = os.path.relpath(absolute, os.path.abspath(prefix)).replace(os.sep, "/")
                return url.rstrip("/") + "/" + relative
        return path

    return url_for


def _stem(source: str) -> str:
    name = source.rstrip("/").rsplit("/", 1)[-1]
    if name == "download" and "/assets/" in source:
        name = source.rstrip("/").split("/assets/")[1].split("/")[0]
    return Path(name).stem or "source"
