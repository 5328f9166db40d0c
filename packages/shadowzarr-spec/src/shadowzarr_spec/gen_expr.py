"""A small, safe evaluator for the integer arithmetic in kerchunk ``gen`` templates.

Kerchunk renders ``{{ ... }}`` with jinja2; we accept only what references need (integers,
names, ``+ - * // %``, parentheses, unary minus) and never call ``eval``. Expressions are compiled
once into a tree of tuples and evaluated per key, with bounded length, depth and magnitude so a
hostile reference file cannot exhaust memory or time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from shadowzarr_spec.errors import GenExpressionError

__all__ = ["Expression", "compile_expression", "render_template", "split_template"]

MAX_EXPRESSION_LENGTH: Final = 1000
MAX_DEPTH: Final = 50
MAX_MAGNITUDE: Final = 2**70

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(//|[-+*%()]))")
_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}")

# A compiled node: ("n", value) | ("v", name) | ("neg", node) | (op, left, right)
type Node = tuple[object, ...]


class Expression:
    """A compiled integer expression over named variables."""

    __slots__ = ("_tree", "names", "source")

    def __init__(self, source: str, tree: Node, names: frozenset[str]) -> None:
        self.source = source
        self._tree = tree
        self.names = names

    @property
    def tree(self) -> Node:
        """The compiled tree, for analyses such as checking that an offset is affine."""
        return self._tree

    def __call__(self, variables: Mapping[str, int]) -> int:
        return _evaluate(self._tree, variables, self.source)

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


def compile_expression(source: str) -> Expression:
    """Compile ``source`` (the text between ``{{`` and ``}}``) or raise GenExpressionError."""
    if len(source) > MAX_EXPRESSION_LENGTH:
        raise GenExpressionError(f"gen expression longer than {MAX_EXPRESSION_LENGTH} characters")
    tokens = _tokenize(source)
    parser = _Parser(tokens, source)
    tree = parser.expression(0)
    if parser.position != len(tokens):
        raise GenExpressionError(
            f"unexpected {tokens[parser.position]!r} in gen expression {source!r}"
        )
    return Expression(source.strip(), tree, frozenset(parser.names))


def split_template(template: str) -> list[str | Expression]:
    """Split ``a{{i * 2}}b`` into literal strings and compiled expressions."""
    parts: list[str | Expression] = []
    position = 0
    for match in _PLACEHOLDER.finditer(template):
        if match.start() > position:
            parts.append(template[position : match.start()])
        parts.append(compile_expression(match.group(1)))
        position = match.end()
    if position < len(template):
        parts.append(template[position:])
    if "{{" in "".join(p for p in parts if isinstance(p, str)):
        raise GenExpressionError(f"unbalanced '{{{{' in template {template!r}")
    return parts


def render_template(parts: list[str | Expression], variables: Mapping[str, int]) -> str:
    """Render the parts of :func:`split_template` with integer variables."""
    return "".join(p if isinstance(p, str) else str(p(variables)) for p in parts)


def _tokenize(source: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    stripped_end = len(source.rstrip())
    while position < stripped_end:
        match = _TOKEN.match(source, position)
        if match is None:
            raise GenExpressionError(
                f"gen expression {source!r} holds {source[position:].strip()[:20]!r}, which is "
                "not integer arithmetic (only integers, names, + - * // % and parentheses)"
            )
        number, name, op = match.groups()
        if number is not None:
            tokens.append(("n", number))
        elif name is not None:
            tokens.append(("v", name))
        else:
            tokens.append(("o", op))
        position = match.end()
    if not tokens:
        raise GenExpressionError("empty gen expression")
    return tokens


_BINARY_POWER: Final = {"+": 10, "-": 10, "*": 20, "//": 20, "%": 20}


class _Parser:
    """Precedence climbing over the token list."""

    def __init__(self, tokens: list[tuple[str, str]], source: str) -> None:
        self.tokens = tokens
        self.source = source
        self.position = 0
        self.names: set[str] = set()

    def expression(self, min_power: int, depth: int = 0) -> Node:
        if depth > MAX_DEPTH:
            raise GenExpressionError(f"gen expression {self.source!r} is nested too deeply")
        left = self.operand(depth)
        while self.position < len(self.tokens):
            kind, text = self.tokens[self.position]
            power = _BINARY_POWER.get(text) if kind == "o" else None
            if power is None or power <= min_power:
                break
            self.position += 1
            right = self.expression(power, depth + 1)
            left = (text, left, right)
        return left

    def operand(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise GenExpressionError(f"gen expression nested too deeply: {self.source[:80]!r}")
        if self.position >= len(self.tokens):
            raise GenExpressionError(f"gen expression {self.source!r} ends too early")
        kind, text = self.tokens[self.position]
        self.position += 1
        if kind == "n":
            if len(text) > 22:
                raise GenExpressionError(f"number too large in gen expression {self.source!r}")
            return ("n", int(text))
        if kind == "v":
            self.names.add(text)
            return ("v", text)
        if text == "-":
            return ("neg", self.operand(depth + 1))
        if text == "+":
            return self.operand(depth + 1)
        if text == "(":
            inner = self.expression(0, depth + 1)
            if self.position >= len(self.tokens) or self.tokens[self.position][1] != ")":
                raise GenExpressionError(f"missing ')' in gen expression {self.source!r}")
            self.position += 1
            return inner
        raise GenExpressionError(f"unexpected {text!r} in gen expression {self.source!r}")


def _evaluate(node: Node, variables: Mapping[str, int], source: str) -> int:
    tag = node[0]
    if tag == "n":
        return node[1]  # type: ignore[return-value]
    if tag == "v":
        try:
            return variables[node[1]]  # type: ignore[index]
        except KeyError:
            raise GenExpressionError(
                f"unknown name {node[1]!r} in gen expression {source!r}"
            ) from None
    if tag == "neg":
        return -_evaluate(node[1], variables, source)  # type: ignore[arg-type]
    left = _evaluate(node[1], variables, source)  # type: ignore[arg-type]
    right = _evaluate(node[2], variables, source)  # type: ignore[arg-type]
    if tag == "+":
        value = left + right
    elif tag == "-":
        value = left - right
    elif tag == "*":
        value = left * right
    elif right == 0:
        raise GenExpressionError(f"division by zero in gen expression {source!r}")
    elif tag == "//":
        value = left // right
    else:
        value = left % right
    if abs(value) > MAX_MAGNITUDE:
        raise GenExpressionError(f"gen expression {source!r} overflows")
    return value
