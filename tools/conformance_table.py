"""The disagreement table of issue 23: every conformance case through both readers, side by side.

Runs each case of ``shadowzarr_spec.conformance`` through the Python reader (the spec's gen
evaluator, ``RfsStore``, zarr-python and ``decode_attributes``) and through the JavaScript store
(``js/test/conformance-run.mjs``, which needs ``npm ci`` and ``npm run build`` in ``js/``), and
prints where the two differ from each other and from what the case expects. The tests assert the
same thing case by case; this prints the table.

    uv run python tools/conformance_table.py [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import zarr
from shadowzarr_spec import ShadowzarrError, conformance, decode_attributes, read_local_rfs
from shadowzarr_spec.gen_expr import compile_expression
from shadowzarr_store import RfsStore, read_native
from zarr.abc.store import RangeByteRequest, SuffixByteRequest
from zarr.core.buffer import default_buffer_prototype
from zarr.errors import UnstableSpecificationWarning

JS_DIR = Path(__file__).resolve().parents[1] / "js"
ISSUE_EXPRESSIONS = [
    "1" * 30,
    "99999999999*99999999999",
    "+i",
    "\uff11",
    "i" + "*i" * 199,
    "(" * 20000 + "1" + ")" * 20000,
]


def _name(exc: BaseException) -> str:
    return conformance.js_error_name(conformance.error_class_name(exc) or type(exc).__name__)


def expression_outcome(case: dict[str, Any], variables: dict[str, int]) -> dict[str, Any]:
    try:
        expression = compile_expression(conformance.expression_text(case))
    except ShadowzarrError as exc:
        return {"error": _name(exc), "stage": "compile"}
    try:
        return {"value": expression(case.get("variables", variables))}
    except ShadowzarrError as exc:
        return {"error": _name(exc), "stage": "evaluate"}


def _store(directory: Path) -> RfsStore:
    """The store as the conformance tests build it: keys as stored, no grouped view (which
    would show a small-chunked array under other keys than the case reads)."""
    return RfsStore(read_local_rfs(directory), grouped_view=0)


def _request(spec: dict[str, int] | None) -> Any:
    if spec is None:
        return None
    if "suffix" in spec:
        return SuffixByteRequest(spec["suffix"])
    return RangeByteRequest(spec["offset"], spec["offset"] + spec["length"])


async def document_outcomes(case: dict[str, Any], directory: Path) -> list[dict[str, Any]]:
    conformance.write_case_directory(case, directory)
    store = _store(directory)
    out = []
    for read in case["reads"]:
        before = store.stats.snapshot()
        got: dict[str, Any]
        try:
            buffer = await store.get(
                read["key"], default_buffer_prototype(), _request(read.get("range"))
            )
        except ShadowzarrError as exc:
            got = {"error": _name(exc)}
        else:
            got = {"missing": True} if buffer is None else {"bytes": buffer.to_bytes().hex()}
        if "within" in read:
            _file, start, end = read["within"]
            got["within"] = (store.stats.snapshot() - before).bytes <= end - start
        out.append(got)
    return out


def expected_read(read: dict[str, Any], files: dict[str, bytes]) -> dict[str, Any]:
    expect = read["expect"]
    if "bytes" in expect:
        wanted: dict[str, Any] = {"bytes": conformance.expected_bytes(expect["bytes"], files).hex()}
    elif "error" in expect:
        wanted = {"error": conformance.js_error_name(expect["error"])}
    else:
        wanted = {"missing": True}
    if "within" in read:
        wanted["within"] = True
    return wanted


async def malformed_outcome(case: dict[str, Any], directory: Path) -> dict[str, Any]:
    conformance.write_case_directory(case, directory)
    try:
        store = _store(directory)
        if "read" in case:
            await store.get(case["read"], default_buffer_prototype())
    except ShadowzarrError as exc:
        return {"error": _name(exc)}
    return {"error": None}


def attribute_outcome(case: dict[str, Any], directory: Path) -> Any:
    conformance.write_case_directory(case, directory)
    try:
        node = zarr.open(_store(directory), path=case["node"], mode="r", zarr_format=3)
        return conformance.tagged_attribute(decode_attributes(node.attrs.asdict()))
    except ShadowzarrError as exc:
        return {"error": _name(exc)}


def types_outcome(case: dict[str, Any], directory: Path) -> Any:
    conformance.write_case_directory(case, directory)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnstableSpecificationWarning)
            array = zarr.open_array(_store(directory), path=case["node"], mode="r", zarr_format=3)
            return conformance.native_form(read_native(array))
    except ShadowzarrError as exc:
        return {"error": _name(exc)}


def python_outcomes(work: Path) -> dict[str, list[Any]]:
    expressions = conformance.load("gen_expressions")
    out: dict[str, list[Any]] = {
        "gen_expressions": [
            expression_outcome(c, expressions["variables"]) for c in expressions["cases"]
        ]
    }
    out["documents"] = [
        asyncio.run(document_outcomes(c, work / f"documents-{i}"))
        for i, c in enumerate(conformance.load("documents")["cases"])
    ]
    out["malformed"] = [
        asyncio.run(malformed_outcome(c, work / f"malformed-{i}"))
        for i, c in enumerate(conformance.load("malformed")["cases"])
    ]
    out["attributes"] = [
        attribute_outcome(c, work / f"attributes-{i}")
        for i, c in enumerate(conformance.load("attributes")["cases"])
    ]
    out["types"] = [
        types_outcome(c, work / f"types-{i}")
        for i, c in enumerate(conformance.load("types")["cases"])
    ]
    return out


def expected_outcomes(work: Path) -> dict[str, list[Any]]:
    expected: dict[str, list[Any]] = {"gen_expressions": []}
    for c in conformance.load("gen_expressions")["cases"]:
        if "value" in c:
            expected["gen_expressions"].append({"value": c["value"]})
        else:
            expected["gen_expressions"].append(
                {"error": conformance.js_error_name(c["error"]), "stage": c["stage"]}
            )
    expected["documents"] = []
    for i, c in enumerate(conformance.load("documents")["cases"]):
        files = conformance.write_case_directory(c, work / f"expected-{i}")
        expected["documents"].append([expected_read(r, files) for r in c["reads"]])
    expected["malformed"] = [
        {"error": conformance.js_error_name(c["error"])}
        for c in conformance.load("malformed")["cases"]
    ]
    expected["attributes"] = [
        {"error": conformance.js_error_name(c["expect"]["error"])}
        if "error" in c["expect"]
        else c["expect"]
        for c in conformance.load("attributes")["cases"]
    ]
    expected["types"] = [
        {"error": conformance.js_error_name(c["expect"]["error"])}
        if "error" in c["expect"]
        else c["expect"]
        for c in conformance.load("types")["cases"]
    ]
    return expected


def js_outcomes(work: Path) -> dict[str, list[Any]]:
    result = subprocess.run(
        ["node", "test/conformance-run.mjs", str(work)],
        cwd=JS_DIR,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _flat(outcomes: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Documents as one outcome per read, like the other suites' one per case."""
    return {
        k: ([r for reads in v for r in reads] if k == "documents" else v)
        for k, v in outcomes.items()
    }


def _show(outcome: Any) -> str:
    text = json.dumps(outcome, ensure_ascii=True)
    return text if len(text) <= 60 else text[:57] + "..."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="conformance-table-") as tmp:
        work = Path(tmp)
        python = _flat(python_outcomes(work / "python"))
        js = _flat(js_outcomes(work / "js"))
        expected = _flat(expected_outcomes(work / "expected"))
    counts = {}
    for suite in conformance.SUITES:
        triples = list(zip(python[suite], js[suite], expected[suite], strict=True))
        counts[suite] = {
            "cases": len(triples),
            "python_vs_js_differences": sum(p != j for p, j, _ in triples),
            "python_wrong": sum(p != e for p, _, e in triples),
            "js_wrong": sum(j != e for _, j, e in triples),
        }
    if args.json:
        print(json.dumps(counts, indent=1))
    else:
        variables = conformance.load("gen_expressions")["variables"]
        print("The expressions issue 23 lists (i = 7):")
        for text in ISSUE_EXPRESSIONS:
            case = {"expression": text}
            js_case = next(
                (
                    o
                    for c, o in zip(
                        conformance.load("gen_expressions")["cases"],
                        js["gen_expressions"],
                        strict=True,
                    )
                    if conformance.expression_text(c) == text
                ),
                None,
            )
            shown = text if len(text) <= 24 else f"{text[:12]}…({len(text)} chars)"
            print(
                f"  {shown!r:34} Python {_show(expression_outcome(case, variables)):46} "
                f"JS {_show(js_case)}"
            )
        print()
        print(f"{'suite':16} {'cases':>6} {'Python≠JS':>10} {'Python wrong':>13} {'JS wrong':>9}")
        for suite, c in counts.items():
            print(
                f"{suite:16} {c['cases']:>6} {c['python_vs_js_differences']:>10} "
                f"{c['python_wrong']:>13} {c['js_wrong']:>9}"
            )
        total = sum(c["cases"] for c in counts.values())
        differing = sum(c["python_vs_js_differences"] for c in counts.values())
        print(f"{'total':16} {total:>6} {differing:>10}")
        for suite in conformance.SUITES:
            for i, (p, j) in enumerate(zip(python[suite], js[suite], strict=True)):
                if p != j:
                    print(f"  {suite}[{i}]: Python {_show(p)}  JS {_show(j)}")
    return 0 if all(c["python_vs_js_differences"] == 0 for c in counts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
