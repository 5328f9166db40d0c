"""The catalog's Parquet file: its schema whatever the rows, wrong types refused, and no pandas
imported to write it (pyarrow imports pandas to convert Python objects: seconds of a run)."""

from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import pyarrow.parquet as pq
import pytest

from shadowzarr_catalog.assets import Asset
from shadowzarr_catalog.job import base_row
from shadowzarr_catalog.table import SCHEMA, catalog_parquet


def _row(name: str, /, **changes: Any) -> dict[str, Any]:
    row = base_row(Asset(name, f"sub-1/{name}.nwb", f"https://host/{name}", 12, "e"))
    row.update(
        status="partial",
        generated_at="2026-12-07T19:00:00.123456+00:00",
        unsupported=[{"name": "a/b", "outcome": "omitted", "reason": 'vlen "é"\n'}],
        datasets=3,
        chunks=2**40,
        generation_seconds=0.25,
    )
    row.update(changes)
    return row


def test_rows_are_written_sorted_with_the_schema_and_their_values() -> None:
    rows = [_row("b"), _row("a", generated_at="2026-12-07T21:00:00+02:00", unsupported=[])]
    table = pq.read_table(io.BytesIO(catalog_parquet(rows)))
    assert table.schema == SCHEMA
    got = table.to_pylist()
    assert [r["asset_id"] for r in got] == ["a", "b"]
    assert got[1]["unsupported"] == rows[0]["unsupported"]
    assert got[1]["chunks"] == 2**40
    assert got[0]["generated_at"].isoformat() == "2026-12-07T19:00:00+00:00"
    assert got[1]["generated_at"].isoformat() == "2026-12-07T19:00:00.123456+00:00"
    assert pq.read_table(io.BytesIO(catalog_parquet([]))).schema == SCHEMA


def test_a_row_longer_than_a_parser_block_is_written() -> None:
    many = [{"name": f"d{i}", "outcome": "omitted", "reason": "x" * 200} for i in range(8000)]
    table = pq.read_table(io.BytesIO(catalog_parquet([_row("a", unsupported=many)])))
    assert table.column("unsupported")[0].as_py() == many


@pytest.mark.parametrize(
    "wrong",
    [
        {"etag": 123},
        {"size": "12"},
        {"size": 1.5},
        {"size": 10**30},
        {"retry": 1},
        {"generated_at": "yesterday"},
        {"asset_id": None},
        {"generation_seconds": float("nan")},
        {"unsupported": [{"name": "a", "outcome": "o", "reason": "r", "more": 1}]},
    ],
)
def test_a_value_of_another_type_is_refused(wrong: dict[str, Any]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 (pyarrow's ArrowInvalid or json's ValueError)
        catalog_parquet([_row("a", **wrong)])


def test_writing_a_catalog_imports_no_pandas() -> None:
    script = (
        "import sys\n"
        "from shadowzarr_catalog.table import catalog_parquet\n"
        "data = catalog_parquet([{'asset_id': 'a', 'path': 'p', 'status': 'ok', 'retry': False}])\n"
        "assert len(data) > 100\n"
        "print('pandas' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "False"
