"""The gen evaluator beyond the conformance cases: random agreement with Python's own integers,
the compiled tree other code analyses, templates and the named-template expansion."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shadowzarr_spec.errors import GenExpressionError, ReferenceFormatError
from shadowzarr_spec.gen_expr import (
    MAX_MAGNITUDE,
    compile_expression,
    expand_named_templates,
    render_integer,
    render_template,
    split_template,
)


@given(
    a=st.integers(-(2**30), 2**30),
    b=st.integers(-(2**30), 2**30),
    c=st.integers(1, 2**20),
)
def test_agrees_with_python(a: int, b: int, c: int) -> None:
    source = "(a + b) * c - a // c + b % c"
    assert compile_expression(source)({"a": a, "b": b, "c": c}) == (a + b) * c - a // c + b % c


@given(a=st.integers(-(2**60), 2**60), b=st.integers(-(2**60), 2**60))
def test_results_beyond_the_limit_are_refused_never_rounded(a: int, b: int) -> None:
    values = {"a": a, "b": b}
    expected = a * b
    if max(abs(a), abs(b), abs(expected)) > MAX_MAGNITUDE:
        with pytest.raises(GenExpressionError):
            compile_expression("a * b")(values)
    else:
        assert compile_expression("a * b")(values) == expected


def test_tree_for_analyses() -> None:
    assert compile_expression("2048 + -i * 4").tree == (
        "+",
        ("n", 2048),
        ("*", ("neg", ("v", "i")), ("n", 4)),
    )
    assert compile_expression("+i").tree == ("v", "i")
    assert compile_expression(" (i) ").source == "(i)"


def test_a_long_flat_expression_evaluates_without_recursion() -> None:
    source = "1" + " + 1" * 249
    assert compile_expression(source)({}) == 250


def test_templates_render_literal_and_expression_parts() -> None:
    parts = split_template("file_{{i}}_{{i * 2 + 1}}.bin")
    assert render_template(parts, {"i": 3}) == "file_3_7.bin"
    assert render_template(split_template("{{\ni\n}}"), {"i": 3}) == "3"
    with pytest.raises(GenExpressionError):
        split_template("a{{i}")
    with pytest.raises(GenExpressionError):
        split_template("{{i}}{{")


def test_offsets_render_as_plain_digits() -> None:
    assert render_integer(split_template("00{{i}}"), {"i": 12}, "offset") == 12
    for text in ("-1", " 1", "+1", "1.0", "1_0", "\uff11", str(MAX_MAGNITUDE + 1), "9" * 5000):
        with pytest.raises(GenExpressionError):
            render_integer(split_template(text), {}, "offset")


def test_named_templates_are_inserted_as_they_are() -> None:
    templates = {"u": "https://h/{x}", "v": "s3://b"}
    assert expand_named_templates("{{u}}/{{ v }}", templates, strict=True) == "https://h/{x}/s3://b"
    assert expand_named_templates("{{u}}/{{i}}", templates, strict=False) == "https://h/{x}/{{i}}"
    with pytest.raises(ReferenceFormatError):
        expand_named_templates("{{w}}", templates, strict=True)
    with pytest.raises(GenExpressionError):
        expand_named_templates("{{u}}{{", templates, strict=True)
