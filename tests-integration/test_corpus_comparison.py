"""Issue 44's outside comparison over every file the repository's tests write (no download):
each dataset equal to h5py's read in both reference forms or recorded unsupported with its
reason, attributes equal in value, type and shape, no file refused whole."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"

pytestmark = [
    pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]


def test_written_corpus_reads_equal_to_h5py(tmp_path: Path) -> None:
    sys.path.insert(0, str(TOOLS))
    try:
        from compare_corpus.compare import compare_file
        from compare_corpus.summary import problem_lines, tally
        from compare_corpus.written import write_all
    finally:
        sys.path.remove(str(TOOLS))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        files = write_all(tmp_path / "written")
        results = [("written", compare_file(path, tmp_path / "work").to_json()) for path in files]
    summary = tally(results)
    total = summary["total"]
    assert total["files"] == len(files) > 100
    assert total["datasets"] > 500
    wrong = {k: total[k] for k in ("mismatches", "refused_whole", "attribute_mismatches")}
    assert wrong == dict.fromkeys(wrong, 0), "\n".join(problem_lines(summary))
    assert total["h5py_cannot_open"] == 0
    assert total["equal"] + total["unsupported"] + total["placeholders"] == total["datasets"]
    assert total["unsupported"] > 0  # the refused writers' datasets, each with its reason
