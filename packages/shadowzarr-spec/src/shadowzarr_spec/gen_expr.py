"""The template language of reference files: ``{{ … }}`` placeholders and gen arithmetic.

Kerchunk renders ``{{ … }}`` with jinja2; we accept only what references need (integers, names,
``+ - * // %``, parentheses, unary ``+``/``-``) and never call ``eval``. The language is defined
once, in the README of shadowzarr-spec ("Templates and gen expressions"), with its limits; the
JavaScript store implements the same definition and both run the conformance cases in
``shadowzarr_spec/conformance/gen_expressions.json``. Expressions are compiled once into a tree
(for analyses) and a postfix program (for evaluation without recursion), and evaluated per key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from shadowzarr_spec.errors import GenExpressionError, ReferenceFormatError

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPRESSION_LENGTH",
    "MAX_MAGNITUDE",
    "Expression",
    "compile_expression",
    "expand_named_templates",
    "is_name",
    "render_integer",
    "render_template",
    "split_template",
]

MAX_EXPRESSION_LENGTH: Final = 1000
"""Characters between ``{{`` and ``}}``."""
MAX_DEPTH: Final = 50
"""Parentheses and unary operators open at once."""
MAX_MAGNITUDE: Final = 2**53 - 1
"""Largest absolute value of a literal, a name's value and every intermediate result: what a
JavaScript number holds exactly, so both readers compute the same thing."""

_WHITESPACE: Final = frozenset(" \t\n\r")
_DIGITS: Final = frozenset("0123456789")
_NAME_START: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_REST: Final = _NAME_START | _DIGITS
_OPERATORS: Final = frozenset("+-*%()")
# The shortest text up to the next "}}", across lines.
_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RENDERED_INTEGER = re.compile(r"[0-9]+")

# A compiled node: ("n", value) | ("v", name) | ("neg", node) | (op, left, right)
type Node = tuple[object, ...]
# One postfix instruction: ("n", value) | ("v", name) | ("neg",) | (op,)
type Instruction = tuple[object, ...]


class Expression:
    """A compiled integer expression over named variables."""

    __slots__ = ("_program", "_tree", "names", "source")

    def __init__(
        self, source: str, tree: Node, program: tuple[Instruction, ...], names: frozenset[str]
    ) -> None:
        self.source = source
        self._tree = tree
        self._program = program
        self.names = names

    @property
    def tree(self) -> Node:
        """The compiled tree, for analyses such as checking that an offset is affine."""
        return self._tree

    def __call__(self, variables: Mapping[str, int]) -> int:
        return _run(self._program, variables, self.source)

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


def compile_expression(source: str) -> Expression:
    """Compile ``source`` (the text between ``{{`` and ``}}``) or raise GenExpressionError."""
    if len(source) > MAX_EXPRESSION_LENGTH:
        raise GenExpressionError(f"gen expression longer than {MAX_EXPRESSION_LENGTH} characters")
    parser = _Parser(_tokenize(source), source)
    tree = parser.sum(0)
    if parser.position != len(parser.tokens):
        raise GenExpressionError(
            f"unexpected {parser.tokens[parser.position][1]!r} in gen expression {source!r}"
        )
    program: list[Instruction] = []
    _emit(tree, program)
    return Expression(_strip(source), tree, tuple(program), frozenset(parser.names))


def split_template(template: str) -> list[str | Expression]:
    """Split ``a{{i * 2}}b`` into literal strings and compiled expressions."""
    parts: list[str | Expression] = []
    position = 0
    for match in _PLACEHOLDER.finditer(template):
        if match.start() > position:
            parts.append(_literal(template[position : match.start()], template))
        parts.append(compile_expression(match.group(1)))
        position = match.end()
    if position < len(template):
        parts.append(_literal(template[position:], template))
    return parts


def render_template(parts: list[str | Expression], variables: Mapping[str, int]) -> str:
    """Render the parts of :func:`split_template` with integer variables."""
    return "".join(p if isinstance(p, str) else str(p(variables)) for p in parts)


def render_integer(parts: list[str | Expression], variables: Mapping[str, int], what: str) -> int:
    """A gen entry's offset or length: the rendering must be ASCII digits, at most 2**53 - 1."""
    text = render_template(parts, variables)
    digits = text.lstrip("0") or "0"
    if _RENDERED_INTEGER.fullmatch(text) is None or len(digits) > 16 or int(digits) > MAX_MAGNITUDE:
        raise GenExpressionError(
            f"gen {what} renders as {text[:40]!r}, not an integer from 0 to {MAX_MAGNITUDE}"
        )
    return int(digits)


def expand_named_templates(text: str, templates: Mapping[str, str], *, strict: bool) -> str:
    """Replace each ``{{ name }}`` naming one of ``templates`` by its value (never re-scanned).

    ``strict``: every placeholder must name a template (reference and index URLs); otherwise
    the others are left for gen arithmetic.
    """
    start = text.find("{{")
    if start < 0:
        return text
    end = text.find("}}", start + 2)
    if end >= 0 and text.find("{{", start + 2) < 0:  # one placeholder: most URLs, a million times
        name = text[start + 2 : end]
        value = templates.get(name)
        if value is None:
            value = templates.get(_strip(name))
        if value is not None:
            return text[:start] + value + text[end + 2 :]

    def replace(match: re.Match[str]) -> str:
        name = _strip(match.group(1))
        value = templates.get(name)
        if value is not None:
            return value
        if strict:
            raise ReferenceFormatError(f"URL {text[:200]!r} uses an undefined template {name!r}")
        return match.group(0)

    parts: list[str] = []
    position = 0
    for match in _PLACEHOLDER.finditer(text):
        parts.append(_literal(text[position : match.start()], text))
        parts.append(replace(match))
        position = match.end()
    parts.append(_literal(text[position:], text))
    return "".join(parts)


def is_name(text: str) -> bool:
    """Whether ``text`` is a name of the language (ASCII letters, digits, ``_``)."""
    return _NAME.fullmatch(text) is not None


def _literal(text: str, template: str) -> str:
    if "{{" in text:
        raise GenExpressionError(f"unbalanced '{{{{' in template {template[:200]!r}")
    return text


def _strip(text: str) -> str:
    return text.strip(" \t\n\r")


def _tokenize(source: str) -> list[tuple[str, str]]:
    """Tokens ("n", digits) | ("v", name) | ("o", operator); ASCII only, by design."""
    tokens: list[tuple[str, str]] = []
    position, end = 0, len(source)
    while position < end:
        char = source[position]
        if char in _WHITESPACE:
            position += 1
            continue
        start = position
        if char in _DIGITS:
            while position < end and source[position] in _DIGITS:
                position += 1
            tokens.append(("n", source[start:position]))
        elif char in _NAME_START:
            while position < end and source[position] in _NAME_REST:
                position += 1
            tokens.append(("v", source[start:position]))
        elif source.startswith("//", position):
            position += 2
            tokens.append(("o", "//"))
        elif char in _OPERATORS:
            position += 1
            tokens.append(("o", char))
        else:
            raise GenExpressionError(
                f"gen expression {source[:80]!r} holds {source[position : position + 20]!r}, "
                "which is not integer arithmetic (only integers, names, + - * // % and "
                "parentheses)"
            )
    if not tokens:
        raise GenExpressionError("empty gen expression")
    return tokens


class _Parser:
    """Recursive descent; ``depth`` counts the parentheses and unary operators open."""

    def __init__(self, tokens: list[tuple[str, str]], source: str) -> None:
        self.tokens = tokens
        self.source = source
        self.position = 0
        self.names: set[str] = set()

    def _peek_operator(self, operators: tuple[str, ...]) -> str | None:
        if self.position < len(self.tokens):
            kind, text = self.tokens[self.position]
            if kind == "o" and text in operators:
                return text
        return None

    def sum(self, depth: int) -> Node:
        left = self.product(depth)
        while (op := self._peek_operator(("+", "-"))) is not None:
            self.position += 1
            left = (op, left, self.product(depth))
        return left

    def product(self, depth: int) -> Node:
        left = self.unary(depth)
        while (op := self._peek_operator(("*", "//", "%"))) is not None:
            self.position += 1
            left = (op, left, self.unary(depth))
        return left

    def unary(self, depth: int) -> Node:
        op = self._peek_operator(("+", "-"))
        if op is None:
            return self.primary(depth)
        self.position += 1
        operand = self.unary(self._deeper(depth))
        return ("neg", operand) if op == "-" else operand

    def primary(self, depth: int) -> Node:
        if self.position >= len(self.tokens):
            raise GenExpressionError(f"gen expression {self.source[:80]!r} ends too early")
        kind, text = self.tokens[self.position]
        self.position += 1
        if kind == "n":
            value = int(text)
            if value > MAX_MAGNITUDE:
                raise GenExpressionError(
                    f"integer {text[:30]!r} in gen expression is larger than {MAX_MAGNITUDE}"
                )
            return ("n", value)
        if kind == "v":
            self.names.add(text)
            return ("v", text)
        if text == "(":
            inner = self.sum(self._deeper(depth))
            if self._peek_operator((")",)) is None:
                raise GenExpressionError(f"missing ')' in gen expression {self.source[:80]!r}")
            self.position += 1
            return inner
        raise GenExpressionError(f"unexpected {text!r} in gen expression {self.source[:80]!r}")

    def _deeper(self, depth: int) -> int:
        if depth + 1 > MAX_DEPTH:
            raise GenExpressionError(
                f"gen expression {self.source[:80]!r} nests more than {MAX_DEPTH} levels"
            )
        return depth + 1


def _emit(tree: Node, program: list[Instruction]) -> None:
    """Postfix instructions for ``tree``, with an explicit stack (trees may be 500 deep)."""
    stack: list[tuple[Node, bool]] = [(tree, False)]
    while stack:
        node, children_done = stack.pop()
        tag = node[0]
        if tag in ("n", "v"):
            program.append(node)
        elif children_done:
            program.append((tag,))
        elif tag == "neg":
            stack.append((node, True))
            stack.append((node[1], False))  # type: ignore[arg-type]
        else:
            stack.append((node, True))
            stack.append((node[2], False))  # type: ignore[arg-type]
            stack.append((node[1], False))  # type: ignore[arg-type]


def _run(program: tuple[Instruction, ...], variables: Mapping[str, int], source: str) -> int:
    stack: list[int] = []
    for instruction in program:
        tag = instruction[0]
        if tag == "n":
            stack.append(instruction[1])  # type: ignore[arg-type]
            continue
        if tag == "v":
            name = instruction[1]
            try:
                value = variables[name]  # type: ignore[index]
            except KeyError:
                raise GenExpressionError(
                    f"unknown name {name!r} in gen expression {source[:80]!r}"
                ) from None
        elif tag == "neg":
            value = -stack.pop()
        else:
            right = stack.pop()
            left = stack.pop()
            value = _apply(str(tag), left, right, source)
        if abs(value) > MAX_MAGNITUDE:
            raise GenExpressionError(
                f"gen expression {source[:80]!r} overflows (a value beyond {MAX_MAGNITUDE})"
            )
        stack.append(value)
    return stack[0]


def _apply(op: str, left: int, right: int, source: str) -> int:
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        raise GenExpressionError(f"division by zero in gen expression {source[:80]!r}")
    return left // right if op == "//" else left % right
