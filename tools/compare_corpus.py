"""Compare every HDF5 file of a corpus with h5py through shadowzarr's references (issue 44's
outside comparison): each dataset equal, or recorded unsupported with its reason; attributes
equal in value, type and shape; no file refused whole where h5py reads any dataset.

    uv run python tools/compare_corpus.py --cache ~/.cache/shadowzarr-corpus           # all
    uv run python tools/compare_corpus.py --cache DIR --offline                        # cached
    uv run python tools/compare_corpus.py --cache DIR --no-downloads                   # in-repo

The corpus: every file the repository's tests write (the HDF5 corpus's writers at both library
versions and its refusals, the writers' corpus, the HDF5-based NEO recordings), written under
``--cache``/written, and the HDF5 files other projects ship in their source distributions on
PyPI (downloaded once into ``--cache``/sdists; ``--offline`` uses what is there). Each file is
compared in both reference forms (JSON, every chunk listed, nothing inlined; a directory with
the default options). Columns: datasets h5py lists; equal in both forms; unsupported (recorded
with a reason: inlined ones must read equal, omitted ones be absent); netCDF dimension
placeholders (no variable); datasets h5py cannot read itself; mismatches (values, dtype,
shape or fill differ, or absent without a record); files refused whole where h5py reads a
dataset; attribute mismatches (per node). The exit status is 1 when mismatches, refusals or
attribute mismatches are not zero. The figures of the full run are in
``tools/compare_corpus/RESULTS.md``. The machine is shared: run it with ``nice``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_corpus.downloads import PACKAGES, sdist_files
from compare_corpus.runner import compare_all
from compare_corpus.summary import problem_lines, table, tally
from compare_corpus.written import write_all


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, required=True, help="downloads and written files")
    parser.add_argument("--offline", action="store_true", help="use cached downloads only")
    parser.add_argument("--no-downloads", action="store_true", help="the in-repo corpus only")
    parser.add_argument("--packages", nargs="*", default=list(PACKAGES))
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per file")
    parser.add_argument("--json", type=Path, help="write the summary here")
    parser.add_argument("--match", help="only files whose path contains this")
    arguments = parser.parse_args()
    started = time.perf_counter()
    corpus = corpus_files(arguments)
    if arguments.match:
        corpus = [(s, p) for s, p in corpus if arguments.match in str(p)]
    print(f"{len(corpus)} files", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="shadowzarr-compare-") as work:
        for (source, path), result in zip(
            corpus, compare_all([p for _, p in corpus], Path(work), arguments.timeout), strict=True
        ):
            results.append((source, result))
            flag = "" if _clean(result) else "  <-- look"
            print(f"  {source}: {_short(path, arguments.cache)}{flag}", flush=True)
    summary = tally(results)
    summary["command"] = shlex.join(["tools/compare_corpus.py", *sys.argv[1:]])
    summary["seconds"] = round(time.perf_counter() - started)
    print(table(summary))
    print("\n".join(problem_lines(summary)))
    print("unsupported, by outcome and reason:")
    for reason, count in summary["unsupported_reasons"].items():
        print(f"  {count:5d}  {reason[:200]}")
    print(json.dumps(summary["total"]))
    if arguments.json:
        arguments.json.write_text(json.dumps(summary, indent=1) + "\n")
    total = summary["total"]
    failed = total["mismatches"] or total["refused_whole"] or total["attribute_mismatches"]
    return 1 if failed else 0


def corpus_files(arguments: argparse.Namespace) -> list[tuple[str, Path]]:
    """(source, path) of every file: the written ones first, then each package's."""
    files = [("written", path) for path in write_all(arguments.cache / "written")]
    if not arguments.no_downloads:
        packages = tuple(arguments.packages)
        for package, paths in sdist_files(arguments.cache, packages, arguments.offline).items():
            files.extend((package, path) for path in paths)
    return files


def _clean(result: dict) -> bool:
    return not (
        result["mismatches"] or result["attribute_mismatches"] or result["refused_against_h5py"]
    )


def _short(path: Path, cache: Path) -> str:
    try:
        return str(path.relative_to(cache))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
