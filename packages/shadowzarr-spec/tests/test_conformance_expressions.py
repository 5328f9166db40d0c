"""The conformance suite's gen expressions and limits, through shadowzarr_spec's own evaluator.

The JavaScript store runs the same cases (``js/test/node/conformance.test.mjs``); the document,
malformed and attribute cases run through RfsStore in shadowzarr-store's tests.
"""

from __future__ import annotations

from typing import Any

import pytest

from shadowzarr_spec import ShadowzarrError, conformance, gen, gen_expr, keys
from shadowzarr_spec.gen_expr import compile_expression

SUITE = conformance.load("gen_expressions")


def test_the_limits_are_the_evaluators() -> None:
    limits = conformance.load("limits")
    assert limits["max_expression_length"] == gen_expr.MAX_EXPRESSION_LENGTH
    assert limits["max_depth"] == gen_expr.MAX_DEPTH
    assert limits["max_magnitude"] == gen_expr.MAX_MAGNITUDE == 2**53 - 1
    assert limits["max_gen_dimensions"] == gen.MAX_GEN_DIMENSIONS
    assert limits["max_key_length"] == keys.MAX_KEY_LENGTH


def test_every_python_error_named_has_a_js_name() -> None:
    named = {
        case.get("error") or case.get("expect", {}).get("error")
        for suite in ("gen_expressions", "malformed", "attributes")
        for case in conformance.load(suite)["cases"]
    }
    named |= {
        read["expect"].get("error")
        for case in conformance.load("documents")["cases"]
        for read in case["reads"]
    }
    for name in named - {None}:
        assert conformance.js_error_name(name)
    assert conformance.case_count() > 300


@pytest.mark.parametrize(
    "case",
    SUITE["cases"],
    ids=[f"{i}-{conformance.expression_text(c)[:40]!r}" for i, c in enumerate(SUITE["cases"])],
)
def test_gen_expression(case: dict[str, Any]) -> None:
    text = conformance.expression_text(case)
    try:
        expression = compile_expression(text)
    except ShadowzarrError as exc:
        got: dict[str, Any] = {"error": conformance.error_class_name(exc), "stage": "compile"}
    else:
        try:
            got = {"value": expression(case.get("variables", SUITE["variables"]))}
        except ShadowzarrError as exc:
            got = {"error": conformance.error_class_name(exc), "stage": "evaluate"}
    expected = {k: case[k] for k in ("value", "error", "stage") if k in case}
    assert got == expected, case.get("why")
