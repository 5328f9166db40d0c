"""tools/conformance_table.py reads every conformance case through the Python store as the
conformance tests do (keys as stored, no grouped view), so its Python column agrees with what
each case expects: a table built otherwise reports disagreements that are not there."""

from __future__ import annotations

import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def test_python_outcomes_equal_what_every_case_expects(tmp_path: Path) -> None:
    sys.path.insert(0, str(TOOLS))
    try:
        import conformance_table as table
    finally:
        sys.path.remove(str(TOOLS))
    python = table._flat(table.python_outcomes(tmp_path / "python"))
    expected = table._flat(table.expected_outcomes(tmp_path / "expected"))
    assert python.keys() == expected.keys()
    wrong = {
        suite: [
            i for i, (p, e) in enumerate(zip(python[suite], expected[suite], strict=True)) if p != e
        ]
        for suite in python
    }
    assert wrong == {suite: [] for suite in python}
