"""The gen evaluator computes integer arithmetic exactly and refuses everything else."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shadowzarr_spec.errors import GenExpressionError
from shadowzarr_spec.gen_expr import compile_expression, render_template, split_template


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("2048 + i * 4194304", 2048 + 7 * 4194304),
        ("i", 7),
        ("(i + 1) * 3 - 2", 22),
        ("i // 2", 3),
        ("i % 4", 3),
        ("-i + 10", 3),
        ("10 - 3 - 2", 5),
        ("100 // 7 // 2", 7),
        ("2 * (3 + j) * i", 2 * (3 + 5) * 7),
        ("  i  ", 7),
    ],
)
def test_arithmetic(source: str, expected: int) -> None:
    assert compile_expression(source)({"i": 7, "j": 5}) == expected


@given(
    a=st.integers(-(2**40), 2**40),
    b=st.integers(-(2**40), 2**40),
    c=st.integers(1, 2**20),
)
def test_agrees_with_python(a: int, b: int, c: int) -> None:
    source = "(a + b) * c - a // c + b % c"
    assert compile_expression(source)({"a": a, "b": b, "c": c}) == (a + b) * c - a // c + b % c


@pytest.mark.parametrize(
    "source",
    [
        "__import__('os')",
        "i.__class__",
        "i ** 2",
        "i / 2",
        "lambda: 1",
        "[i]",
        "i if i else 0",
        "'text'",
        "i; i",
        "",
        "(i",
        "i +",
        "1" * 30,
        "f(i)",
    ],
)
def test_refuses_anything_but_arithmetic(source: str) -> None:
    with pytest.raises(GenExpressionError):
        compile_expression(source)({"i": 1})


def test_refuses_deep_nesting_and_long_text() -> None:
    with pytest.raises(GenExpressionError):
        compile_expression("(" * 100 + "1" + ")" * 100)
    with pytest.raises(GenExpressionError):
        compile_expression("1 + " * 400 + "1")


def test_refuses_overflow_and_division_by_zero() -> None:
    with pytest.raises(GenExpressionError, match="overflows"):
        compile_expression("i * i * i * i * i")({"i": 2**20})
    with pytest.raises(GenExpressionError, match="division by zero"):
        compile_expression("10 // (i - 1)")({"i": 1})


def test_unknown_name_is_an_error() -> None:
    with pytest.raises(GenExpressionError, match="unknown name"):
        compile_expression("k + 1")({"i": 1})


def test_templates_render_literal_and_expression_parts() -> None:
    parts = split_template("file_{{i}}_{{i * 2 + 1}}.bin")
    assert render_template(parts, {"i": 3}) == "file_3_7.bin"
    with pytest.raises(GenExpressionError):
        split_template("a{{i}")
