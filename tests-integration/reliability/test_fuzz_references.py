"""A bounded fuzzing run: hostile and mutated reference files give typed errors or right values.

Budget (seeded, about a minute on two loaded cores): the 80-odd hostile references of
``tools/fuzz/hostile.py`` and 240 reference files mutated from valid ones of both forms (80
each of plain kerchunk v1 JSON, v2 JSON with gen entries, templates, a selection and recorded
sizes, and a reference directory with index arrays written by shadowzarr and by zarr-python,
with Blosc, zstd, zlib and gzip data chunks and inline chunks). Each case runs in a child
process (a crash kills only it and is counted), under a timeout (a hang is counted), with
its address space capped and its Python heap measured against a 256 MiB budget. Every column of
the table must be zero: no crash, no hang, no exception outside ``shadowzarr_spec.errors``, no
wrong value for an array the mutation did not touch, no planted secret in an error or on stderr,
no stray "Task was destroyed" output, no task left running. The long run is
``tools/fuzz_references.py`` (its classes against nginx and the fault proxy too).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

from fuzz.cases import mutated_cases, remove_case  # noqa: E402
from fuzz.corpus import FORMS, build_corpus  # noqa: E402
from fuzz.hostile import hostile_cases  # noqa: E402
from fuzz.runner import Pool, Tally  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

MUTATED = 240
SEED = 7


def test_hostile_and_mutated_references_fail_only_with_typed_errors(tmp_path: Path) -> None:
    corpus = build_corpus(tmp_path / "corpus")
    hostile = hostile_cases(tmp_path / "hostile")
    classes: dict[str, str] = {}

    def cases():  # type: ignore[no-untyped-def]
        for number, case in enumerate(hostile):
            case["id"] = f"h{number}"
            classes[case["id"]] = "hostile"
            yield case
        for cls, case in mutated_cases(corpus, tmp_path / "mutated", MUTATED, SEED):
            classes[str(case["id"])] = cls
            yield case

    tally = Tally()
    typed = read = 0
    for case, result in Pool(2, 60, tmp_path / "workers.log").run(cases()):
        tally.add_result(classes[str(case["id"])], case, result)
        typed += result.get("typed", 0)
        read += result.get("read", 0)
        remove_case(case)
    report = tally.table() + "".join(
        f"\n{column}: " + "\n  ".join(examples) for column, examples in tally.examples.items()
    )
    assert tally.failures() == 0, report
    assert tally.rows["hostile"]["cases"] == len(hostile) >= 70
    for form in FORMS:
        assert tally.rows[f"mutated {form}"]["cases"] == MUTATED // len(FORMS)
    # The mutations reach both outcomes: arrays refused with our errors, and arrays read.
    assert typed > 200, report
    assert read > 800, report


def test_the_harness_sees_a_crash_and_a_hang(tmp_path: Path) -> None:
    """A worker killed by SIGSEGV is a crash, one that never answers a hang; the next case
    still runs in a new worker."""
    corpus = build_corpus(tmp_path / "corpus")
    path = str(corpus.forms["json-v1"])
    cases = [
        {"id": "crash", "path": path, "arrays": [], "actions": ["segfault"]},
        {"id": "hang", "path": path, "arrays": [], "actions": ["sleep"], "timeout": 5},
        {
            "id": "fine",
            "path": path,
            "arrays": ["plain"],
            "touched": [],
            "expected": str(corpus.expected_file),
        },
    ]
    results = {case["id"]: result for case, result in Pool(1, 60, tmp_path / "log").run(cases)}
    assert results["crash"]["crash"], results["crash"]
    assert results["hang"]["hang"], results["hang"]
    assert results["fine"]["read"] == 1
    assert not results["fine"]["untyped"]
    assert not results["fine"]["wrong"]


def test_a_run_stopped_by_a_signal_prints_its_table(tmp_path: Path) -> None:
    """A long run stopped early (SIGTERM, as a shared machine's time runs out) still reports
    the cases it ran, with exit status 2 (1 had any column but ``cases`` been non-zero)."""
    import signal
    import subprocess
    import time

    work = tmp_path / "work"
    command = [sys.executable, str(TOOLS / "fuzz_references.py"), "--cases", "20000"]
    command += ["--no-network", "--workers", "1", "--work", str(work)]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not (work / "hostile").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)  # a few cases under way
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 2, (out, err)
    assert out.startswith("class"), out
    total = next(line for line in out.splitlines() if line.startswith("total"))
    ran = int(total.split("|")[1])
    assert f"stopped before its end, after {ran} cases" in out
    assert ran < 20000
