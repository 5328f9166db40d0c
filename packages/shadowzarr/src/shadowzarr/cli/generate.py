"""``shadowzarr generate SOURCE -o OUT``: references for one source or many, in parallel.

Many sources run in worker processes; the workers draw nothing and send their counts (datasets
done, files done) to the parent through a queue, and the parent draws the one display: a bar of
files and a bar of datasets over every worker.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import queue
import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowzarr.cli.access import access_kwargs, add_access_arguments
from shadowzarr.cli.output import add_json_option, emit, output_folder_ready
from shadowzarr.cli.progress import Bars
from shadowzarr.cli.raw_binary import add_raw_binary_options, raw_binary_layout

if TYPE_CHECKING:
    from shadowzarr.cli.raw_binary import RawBinaryLayout

__all__ = ["Generated", "generate_one", "register"]

SUFFIXES = {"directory": ".shadowzarr", "json": ".shadowzarr.json"}

type Event = tuple[str, str, int, int]
"""(kind, source, done, total) sent by a worker: kind "datasets" as generation goes on."""

_events: Any = None  # the queue of a worker process (set by its initializer)


def register(
    subcommands: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
) -> None:
    parser = subcommands.add_parser(
        "generate",
        help="generate references for HDF5/NWB, netCDF, TIFF or NEO-readable sources",
        description="SOURCE is a file, a URL, a folder (every HDF5/TIFF file in it, or a "
        "recording NEO reads), @list.txt (one source per line) or a DANDI dandiset version URL "
        "(every asset). With one source OUT is the output; with several it is a folder. "
        "stdout lists what was written; failures go to stderr (exit status 1 if any).",
        epilog="examples:\n  shadowzarr generate data.nwb -o data.shadowzarr\n"
        "  shadowzarr generate https://host/data.nwb --local-path data.nwb -o data.json\n"
        "  shadowzarr generate Noise4Sam_g0/ --format neo:SpikeGLXRawIO -o ap.shadowzarr\n"
        "  shadowzarr generate rec.bin --dtype int16 --channels 8 --sampling-rate 30000 \\\n"
        "      --byte-offset 0 -o rec.shadowzarr",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    parser.add_argument("source", help="file, URL, folder, @list.txt or dandiset version URL")
    parser.add_argument("-o", "--output", required=True, help="output .json file or directory")
    parser.add_argument(
        "--parents",
        action="store_true",
        help="create OUTPUT's parent folders if missing (else a missing one is an error)",
    )
    parser.add_argument(
        "--format",
        default="auto",
        help="auto (from the first bytes), hdf5, netcdf3, tiff, neo or neo:<RawIO class name>",
    )
    parser.add_argument("--local-path", help="a local copy of SOURCE to read headers from")
    parser.add_argument(
        "--url-for",
        action="append",
        default=[],
        metavar="PREFIX=URL",
        help="map local paths starting with PREFIX to URL (repeatable)",
    )
    parser.add_argument(
        "--json-files",
        action="store_true",
        help="with many sources: write one .shadowzarr.json file each instead of directories",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=min(4, os.cpu_count() or 1),
        help="processes generating at once when SOURCE holds many files (default: %(default)s)",
    )
    parser.add_argument(
        "--manifest-threshold",
        type=int,
        default=1000,
        help="arrays with more chunks than this get a chunk manifest instead of one "
        "reference per chunk (directories only; default: %(default)s)",
    )
    parser.add_argument(
        "--chunk-index-threshold",  # deprecated alias of --manifest-threshold, hidden from help
        dest="manifest_threshold",
        type=int,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )
    add_raw_binary_options(parser)
    add_access_arguments(parser)
    add_json_option(parser)
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
    from shadowzarr_store.transport import TransportOptions

    from shadowzarr.cli.sources import expand_sources

    raw = raw_binary_layout(args)
    output_folder_ready(args.output, create=args.parents)
    access = access_kwargs(args)
    sources = expand_sources(args.source, TransportOptions(**access))
    mapping = [tuple(item.split("=", 1)) for item in args.url_for]
    if any(len(pair) != 2 for pair in mapping):
        raise ValueError("--url-for takes PREFIX=URL")
    options: dict[str, Any] = {
        "format": args.format,
        "url_for": mapping,
        "threshold": args.manifest_threshold,
        "raw": raw,
        "access": access,
    }
    if len(sources) == 1:
        return _one(args, sources[0], options)
    if args.local_path:
        raise ValueError("--local-path goes with a single SOURCE")
    return _many(args, sources, options)


def _one(args: argparse.Namespace, source: str, options: dict[str, Any]) -> int:
    with Bars() as bars:

        def datasets(done: int, total: int, _path: str = "") -> None:
            # Drawn from the first count on: generators that count nothing show no empty bar.
            if "datasets" not in bars:
                bars.add("datasets", total=total, unit="datasets", description="generate")
            bar = bars["datasets"]
            bar.set_total(total)
            bar.moveto(done)

        written = generate_one(
            source, args.output, local_path=args.local_path, progress=datasets, **options
        )
    emit(args, _document([written], []), written.summary().splitlines())
    return 0


def _many(args: argparse.Namespace, sources: list[str], options: dict[str, Any]) -> int:
    out_dir = Path(args.output)
    out_dir.mkdir(exist_ok=True)  # its parent exists (or --parents made it)
    suffix = SUFFIXES["json" if args.json_files else "directory"]
    written: list[Generated] = []
    failed: list[dict[str, str]] = []
    events: Any = multiprocessing.get_context().Queue()
    with Bars() as bars:
        files = bars.add("files", total=len(sources), unit="files", description="files")
        datasets = bars.add("datasets", total=0, unit="datasets", description="datasets")
        streaming = not bars.enabled and not args.json  # a pipe: each line as it happens
        with ProcessPoolExecutor(
            max_workers=max(1, args.workers),
            initializer=_worker_started,
            initargs=(events,),
        ) as pool:
            futures = {
                pool.submit(
                    _generate_in_worker, source, _output(out_dir, source, suffix), options
                ): source
                for source in sources
            }
            # Started once the workers exist: no thread of ours is running when they fork.
            drawer = threading.Thread(target=_draw, args=(events, datasets), daemon=True)
            drawer.start()
            for future in as_completed(futures):
                source = futures[future]
                try:
                    written.append(future.result())
                    if streaming:
                        print(written[-1].summary(), flush=True)
                except (OSError, ValueError, ImportError, LookupError) as exc:
                    message = " ".join(str(exc).split()) or type(exc).__name__
                    failed.append({"source": source, "error": message})
                    bars.write(f"shadowzarr generate: failed {source}: {message}")
                files.update(1)
        events.put(None)
        drawer.join(timeout=5)
    if args.json:
        emit(args, _document(written, failed), [])
    elif not streaming:
        for generated in sorted(written, key=lambda g: g.output):
            print(generated.summary())
    return 1 if failed else 0


def _document(written: list[Generated], failed: list[dict[str, str]]) -> dict[str, Any]:
    """The ``--json`` document: outputs written, sources that failed, and per output the
    datasets left out or inlined (only outputs that have some)."""
    ordered = sorted(written, key=lambda g: g.output)
    return {
        "written": [g.output for g in ordered],
        "failed": failed,
        "omitted": {g.output: g.omitted for g in ordered if g.omitted},
        "inlined": {g.output: g.inlined for g in ordered if g.inlined},
    }


def _output(out_dir: Path, source: str, suffix: str) -> str:
    return str(out_dir / (_stem(source) + suffix))


def _draw(events: Any, bar: Any) -> None:
    """The parent's drawing thread: every worker's dataset counts into one bar."""
    totals: dict[str, tuple[int, int]] = {}
    while True:
        try:
            event = events.get(timeout=0.5)
        except queue.Empty:
            continue
        except (EOFError, OSError):
            return
        if event is None:
            return
        _, source, done, total = event
        totals[source] = (done, total)
        bar.set_total(sum(t for _, t in totals.values()))
        bar.moveto(sum(d for d, _ in totals.values()))


def _worker_started(events: Any) -> None:
    global _events
    _events = events


def _generate_in_worker(source: str, output: str, options: dict[str, Any]) -> Generated:
    def report(done: int, total: int, _path: str = "") -> None:
        if _events is not None:
            _events.put(("datasets", source, done, total))

    return generate_one(source, output, progress=report, **options)


def generate_one(
    source: str,
    output: str,
    *,
    format: str = "auto",
    local_path: str | None = None,
    url_for: list[tuple[str, ...]] | None = None,
    threshold: int = 1000,
    raw: RawBinaryLayout | None = None,
    progress: Any = False,
    access: dict[str, Any] | None = None,
) -> Generated:
    """References for ``source`` written to ``output``; ``access`` holds ``headers``,
    ``allowed_urls`` and ``storage_options`` for every request (the format sniffing too)."""
    import warnings

    from shadowzarr_spec import UnsupportedDatasetWarning, write_rfs
    from shadowzarr_store.transport import TransportOptions

    from shadowzarr.cli.sources import command_format

    access = {k: v for k, v in (access or {}).items() if v is not None}
    sniff = TransportOptions(**access) if local_path is None else TransportOptions()
    kind = (
        command_format(local_path or source, sniff, raw_layout=raw is not None)
        if format == "auto"
        else format
    )
    with warnings.catch_warnings():
        # the summary names every dataset left out; the warning would say it twice
        warnings.simplefilter("ignore", UnsupportedDatasetWarning)
        generate = _generator(kind, raw, access)
        rfs = generate(source, local_path, _url_mapper(url_for or []), progress)
    write_rfs(rfs, output, manifest_threshold=threshold)
    inlined = {p: u.reason for p, u in rfs.unsupported.items() if u.outcome == "inlined"}
    return Generated(output, rfs.omitted, inlined)


def _generator(kind: str, raw: RawBinaryLayout | None, access: dict[str, Any]) -> Any:
    from shadowzarr._lazy import import_module_for

    if raw is not None and not kind.startswith("neo"):
        raise ValueError(
            f"--dtype/--channels/--sampling-rate/--byte-offset describe a raw binary recording, "
            f"not a {kind} source"
        )
    if kind in ("hdf5", "netcdf3"):  # one generator reads both
        module = import_module_for("shadowzarr_hdf5", "hdf5", "generating from HDF5")
        return lambda source, local, _url_for, progress: module.generate_rfs(
            source, local_hdf5_path=local, progress=progress, **access
        )
    if kind == "tiff":
        module = import_module_for("shadowzarr_tiff", "tiff", "generating from TIFF")
        return lambda source, local, _url_for, _progress: module.generate_rfs_tiff(
            source, local_path=local, **access
        )
    if kind == "neo" or kind.startswith("neo:"):
        module = import_module_for("shadowzarr_neo", "neo", "generating from NEO recordings")
        reader_name = kind.partition(":")[2] or None
        return lambda source, _local, url_for, _progress: module.generate_rfs_neo(
            _neo_reader(source, reader_name, raw), url_for=url_for
        )
    raise ValueError(f"unknown format {kind!r} (auto, hdf5, netcdf3, tiff, neo, neo:<RawIO class>)")


def _neo_reader(source: str, reader_name: str | None, raw: RawBinaryLayout | None) -> Any:
    import neo.rawio
    from shadowzarr_spec import SourceNotFoundError
    from shadowzarr_store.transport import is_local, local_path

    if is_local(source):  # a file:// URL is the file it names
        source = local_path(source)
    if not Path(source).exists():  # some NEO readers describe a missing file as empty
        raise SourceNotFoundError(f"no such file or folder: {source}")

    if reader_name:
        cls = getattr(neo.rawio, reader_name, None)
        if cls is None:
            raise ValueError(f"NEO has no raw reader {reader_name!r}")
    elif raw is not None:  # the layout given: a raw binary recording, whatever its suffix
        cls = neo.rawio.RawBinarySignalRawIO
    else:
        cls = neo.rawio.get_rawio(source)
        if cls is None:
            raise ValueError(
                f"no NEO raw reader recognises {source}; a raw binary recording needs "
                "--dtype, --channels and --sampling-rate"
            )
    options: dict[str, Any] = {}
    if cls is neo.rawio.RawBinarySignalRawIO:
        if raw is None:
            raise ValueError(
                f"{source} is read as a raw binary recording, whose layout the file does not "
                "record: give --dtype, --channels and --sampling-rate (and --byte-offset for a "
                "header; NEO's defaults, 2 int16 channels at 10 kHz, would be a guess)"
            )
        options = raw.neo_arguments()
    elif raw is not None:
        raise ValueError(f"{cls.__name__} reads its layout from the files; drop --dtype & co.")
    key = "dirname" if Path(source).is_dir() else "filename"
    reader = cls(**{key: source}, **options)
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
