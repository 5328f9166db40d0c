"""tools/bench/first_touch.py runs end to end in quick mode: every fill timed, for each pause, a
fresh array and a touched one (numbers are not judged: they are the machine's)."""

from __future__ import annotations

import json
from pathlib import Path

from shadowzarr_testing.scripts import run_script

FIRST_TOUCH = Path(__file__).resolve().parents[1] / "tools" / "bench" / "first_touch.py"


def test_quick_first_touch_times_fresh_and_touched_fills(tmp_path: Path) -> None:
    out = tmp_path / "touch.json"
    completed = run_script(FIRST_TOUCH, "--quick", "--json", str(out), timeout=120)
    document = json.loads(out.read_text())
    assert document["bytes"] == 8_000_000
    assert [row["pause_s"] for row in document["rows"]] == [0.0, 0.1]
    for row in document["rows"]:
        assert len(row["fresh_ms"]) == len(row["touched_ms"]) == 3
        assert min(row["fresh_ms"]) > 0
        assert min(row["touched_ms"]) > 0
    assert "a fresh array against one already touched" in completed.stdout
