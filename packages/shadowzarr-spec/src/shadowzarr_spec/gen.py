"""Kerchunk ``gen`` entries: many chunk references described by one template, looked up lazily.

A gen entry is never expanded up front: :meth:`GenEntry.lookup` matches one key against the key
template with a regular expression, checks each dimension's range and evaluates the URL, offset
and length for that key alone, in O(1). Listing is lazy too: :meth:`GenEntry.items` yields one
key at a time (a dimension of 10**12 values is never held in memory), and
:meth:`GenEntry.keys_in_grid` yields only the keys of a chunk-key template that fall inside an
array's chunk grid, so a small entry claiming 10**12 chunks of an 8-chunk array lists 8 keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from shadowzarr_spec.errors import GenExpressionError, ReferenceFormatError
from shadowzarr_spec.file_refs import FileRef
from shadowzarr_spec.gen_expr import (
    MAX_MAGNITUDE,
    Expression,
    expand_named_templates,
    is_name,
    render_integer,
    render_template,
    split_template,
)
from shadowzarr_spec.json_text import json_integer

__all__ = ["Dimension", "GenEntry"]

MAX_GEN_DIMENSIONS = 32


@dataclass(frozen=True, slots=True)
class Dimension:
    """The values one gen dimension takes: a range, or an explicit list."""

    start: int = 0
    stop: int = 0
    step: int = 1
    values: tuple[int, ...] | None = None
    _value_set: frozenset[int] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.values is not None:
            object.__setattr__(self, "_value_set", frozenset(self.values))

    def __len__(self) -> int:
        if self.values is not None:
            return len(self.values)
        return len(range(self.start, self.stop, self.step))

    def __contains__(self, value: object) -> bool:
        if self.values is not None:
            return value in self._value_set  # type: ignore[operator]
        return value in range(self.start, self.stop, self.step)

    def __iter__(self) -> Iterator[int]:
        if self.values is not None:
            return iter(self.values)
        return iter(range(self.start, self.stop, self.step))

    @classmethod
    def from_json(cls, name: str, value: object) -> Dimension:
        if isinstance(value, list):
            values = [_dimension_integer(name, v) for v in value]
            return cls(values=tuple(values))
        if json_integer(value) is not None:
            return cls(stop=_dimension_integer(name, value))
        if isinstance(value, dict):
            try:
                raw = value.get("start", 0), value["stop"], value.get("step", 1)
            except KeyError:
                raise ReferenceFormatError(f"gen dimension {name!r} has no 'stop'") from None
            start, stop, step = (_dimension_integer(name, part) for part in raw)
            if step == 0:
                raise ReferenceFormatError(f"gen dimension {name!r} has step 0")
            return cls(start=start, stop=stop, step=step)
        raise ReferenceFormatError(f"gen dimension {name!r} must be a dict, list or integer")

    def to_json(self) -> object:
        if self.values is not None:
            return list(self.values)
        out: dict[str, int] = {"stop": self.stop}
        if self.start:
            out["start"] = self.start
        if self.step != 1:
            out["step"] = self.step
        return out


class GenEntry:
    """One compiled gen entry."""

    __slots__ = (
        "_key_regex",
        "_length_parts",
        "_offset_parts",
        "_url_parts",
        "dimensions",
        "key",
        "length",
        "offset",
        "prefix",
        "url",
    )

    def __init__(
        self,
        key: str,
        url: str,
        offset: str | int,
        length: str | int,
        dimensions: Mapping[str, Dimension],
        templates: Mapping[str, str] | None = None,
    ) -> None:
        if not dimensions:
            raise ReferenceFormatError(f"gen entry {key!r} has no dimensions")
        if len(dimensions) > MAX_GEN_DIMENSIONS:
            raise ReferenceFormatError(f"gen entry {key!r} has too many dimensions")
        self.key = key
        templates = templates or {}
        shared = sorted(set(templates) & set(dimensions))
        if shared:
            raise ReferenceFormatError(f"gen entry {key!r}: {shared} are templates and dimensions")
        self.url = expand_named_templates(url, templates, strict=False)
        self.offset = str(offset)
        self.length = str(length)
        self.dimensions = dict(dimensions)
        self._key_regex, self.prefix = _compile_key(key, self.dimensions)
        self._url_parts = split_template(self.url)
        self._offset_parts = split_template(self.offset)
        self._length_parts = split_template(self.length)
        for parts, what in (
            (self._url_parts, "url"),
            (self._offset_parts, "offset"),
            (self._length_parts, "length"),
        ):
            for part in parts:
                if isinstance(part, Expression) and not part.names <= self.dimensions.keys():
                    unknown = sorted(part.names - self.dimensions.keys())
                    raise GenExpressionError(
                        f"gen entry {key!r}: its {what} uses {unknown}, which are not dimensions"
                    )

    @property
    def count(self) -> int:
        """How many keys this entry describes."""
        total = 1
        for dimension in self.dimensions.values():
            total *= len(dimension)
        return total

    def lookup(self, key: str) -> FileRef | None:
        """The reference for ``key``, or None if this entry does not describe it."""
        if not key.startswith(self.prefix):
            return None
        match = self._key_regex.fullmatch(key)
        if match is None:
            return None
        variables: dict[str, int] = {}
        for name, text in match.groupdict().items():
            if len(text) > 17:  # beyond 2**53 - 1, so in no dimension (and int() has a limit)
                return None
            value = int(text)
            if str(value) != text or value not in self.dimensions[name]:
                return None
            variables[name] = value
        return self.render(variables)

    def render(self, variables: Mapping[str, int]) -> FileRef:
        offset = render_integer(self._offset_parts, variables, "offset")
        length = render_integer(self._length_parts, variables, "length")
        if offset + length > MAX_MAGNITUDE:
            raise GenExpressionError(f"gen entry {self.key!r}: offset + length beyond 2**53 - 1")
        return FileRef(render_template(self._url_parts, variables), offset, length)

    def items(self) -> Iterator[tuple[str, FileRef]]:
        """Every (key, reference) this entry describes, one at a time (for writing version 1
        files and for listing keys outside any chunk grid)."""
        key_parts = split_template(self.key)
        for variables in _assignments(list(self.dimensions.items()), {}):
            yield render_template(key_parts, variables), self.render(variables)

    def chunk_template(self) -> tuple[str, tuple[str | int, ...]] | None:
        """``(array path, one part per axis)`` when the key is ``<path>/c/<part>/...`` with each
        part a bare dimension name or an integer; None for any other key template."""
        literal, separator, rest = self.key.partition("/c/")
        if not separator or "{{" in literal:
            return None
        parts: list[str | int] = []
        for segment in rest.split("/"):
            match = re.fullmatch(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", segment)
            if match is not None and match.group(1) in self.dimensions:
                parts.append(match.group(1))
            elif segment.isdigit() and str(int(segment)) == segment:
                parts.append(int(segment))
            else:
                return None
        return literal, tuple(parts)

    def keys_in_grid(self, grid: tuple[int, ...]) -> Iterator[str] | None:
        """The keys of this entry inside a chunk ``grid``, lazily, without visiting the others;
        None when the key is not a chunk-key template (see `chunk_template`)."""
        template = self.chunk_template()
        if template is None:
            return None
        _, parts = template
        if len(parts) != len(grid):
            return iter(())
        bounds: dict[str, int] = {}
        for part, extent in zip(parts, grid, strict=True):
            if isinstance(part, int):
                if part >= extent:
                    return iter(())
            else:
                bounds[part] = min(bounds.get(part, extent), extent)
        ranges = [(name, _within(self.dimensions[name], bounds[name])) for name in bounds]
        key_parts = split_template(self.key)
        return (render_template(key_parts, v) for v in _assignments(ranges, {}))

    def to_json(self, url: str | None = None) -> dict[str, object]:
        return {
            "key": self.key,
            "url": self.url if url is None else url,
            "offset": self.offset,
            "length": self.length,
            "dimensions": {n: d.to_json() for n, d in self.dimensions.items()},
        }

    @classmethod
    def from_json(cls, entry: object, templates: Mapping[str, str]) -> GenEntry:
        if not isinstance(entry, dict):
            raise ReferenceFormatError("a gen entry must be an object")
        try:
            key, url, offset, length = (entry[k] for k in ("key", "url", "offset", "length"))
            raw_dimensions = entry["dimensions"]
        except KeyError as exc:
            raise ReferenceFormatError(f"gen entry lacks {exc.args[0]!r}") from None
        if not isinstance(key, str) or not isinstance(url, str):
            raise ReferenceFormatError("gen entry key and url must be strings")
        if not isinstance(offset, str):
            offset = json_integer(offset)
        if not isinstance(length, str):
            length = json_integer(length)
        if offset is None or length is None:
            raise ReferenceFormatError(f"gen entry {key!r}: offset and length must be text")
        if not isinstance(raw_dimensions, dict):
            raise ReferenceFormatError(f"gen entry {key!r}: dimensions must be an object")
        dimensions = {str(n): Dimension.from_json(str(n), v) for n, v in raw_dimensions.items()}
        return cls(key, url, offset, length, dimensions, templates)

    def __repr__(self) -> str:
        return f"GenEntry(key={self.key!r}, count={self.count})"


def _assignments(
    dimensions: list[tuple[str, Iterable[int]]], chosen: dict[str, int]
) -> Iterator[dict[str, int]]:
    """Every combination of dimension values, lazily (``itertools.product`` would first copy
    each dimension into a tuple)."""
    if not dimensions:
        yield dict(chosen)
        return
    (name, values), rest = dimensions[0], dimensions[1:]
    for value in values:
        chosen[name] = value
        yield from _assignments(rest, chosen)
    chosen.pop(name, None)


def _within(dimension: Dimension, extent: int) -> Iterable[int]:
    """The values of ``dimension`` in ``[0, extent)``, computed, not searched."""
    if dimension.values is not None:
        return [v for v in dimension.values if 0 <= v < extent]
    whole = range(dimension.start, dimension.stop, dimension.step)
    step = whole.step
    if step > 0:
        skip = -(whole.start // step) if whole.start < 0 else 0  # values below 0
        first = whole.start + skip * step
        return range(first, min(whole.stop, extent), step)
    skip = max(0, -((extent - 1 - whole.start) // -step))  # values above extent - 1
    first = whole.start + skip * step
    return range(first, max(whole.stop, -1), step)


def _compile_key(key: str, dimensions: Mapping[str, Dimension]) -> tuple[re.Pattern[str], str]:
    """Turn ``a/c/{{i}}/{{j}}`` into a regex with one named group per dimension."""
    pattern: list[str] = []
    prefix: str | None = None
    seen: set[str] = set()
    for part in split_template(key):
        if isinstance(part, str):
            pattern.append(re.escape(part))
            continue
        name = part.source
        if name not in dimensions or not is_name(name):
            raise GenExpressionError(
                f"gen key {key!r} may use only bare dimension names in '{{{{ }}}}', got {name!r}"
            )
        if prefix is None:
            prefix = "".join(p for p in pattern)
        pattern.append(f"(?P<{name}>-?[0-9]+)" if name not in seen else f"(?P={name})")
        seen.add(name)
    if prefix is None:
        raise GenExpressionError(f"gen key {key!r} uses no dimension")
    literal_prefix = key[: key.index("{{")]
    return re.compile("".join(pattern)), literal_prefix


def _dimension_integer(name: str, value: object) -> int:
    integer = json_integer(value)
    if integer is None or abs(integer) > MAX_MAGNITUDE:
        raise ReferenceFormatError(
            f"gen dimension {name!r} must hold integers of magnitude at most 2**53 - 1"
        )
    return integer
