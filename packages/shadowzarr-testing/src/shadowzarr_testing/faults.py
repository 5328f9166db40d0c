"""Which request the proxy breaks, and how: fault rules and the seeded plan that applies them.

A fault plan is either a list of rules (each optionally limited to a path, a method and a
number of requests) or a probability with which any request gets a fault drawn from a set of
kinds. Both draw from one ``random.Random(seed)`` so a failing run can be replayed.
"""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = ["DEFAULT_RANDOM_KINDS", "FaultKind", "FaultPlan", "FaultRule", "parse_single_range"]

FaultKind = Literal[
    "reset",
    "500",
    "503",
    "429",
    "truncate",
    "stall",
    "trickle",
    "ignore_range",
    "wrong_range",
    "ignore_if_match",
    "short_end",
]
FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)
_SINGLE_RANGE = re.compile(r"^bytes=(?P<start>\d+)-(?P<end>\d*)$")

#: Kinds drawn when ``faults`` is a probability: everything a client must retry or detect
#: quickly (``stall`` costs a client timeout, so it is opt-in).
DEFAULT_RANDOM_KINDS: tuple[FaultKind, ...] = ("reset", "500", "503", "429", "truncate")


@dataclass(frozen=True, slots=True)
class FaultRule:
    """One way to break requests.

    Kinds: ``reset`` aborts the connection (TCP RST) before any response; ``500``, ``503``
    answer that status; ``429`` answers with ``Retry-After: retry_after``; ``truncate`` sends
    the real headers (full ``Content-Length``) but only part of the body, then closes;
    ``stall`` hangs ``stall_seconds`` (before the headers, or after ``after_bytes`` body bytes)
    and then drops the connection; ``trickle`` sends the body one byte every ``stall_seconds``
    (a server that never times a socket read out but never finishes either);
    ``ignore_if_match`` drops the ``If-Match`` header, as a server that ignores it would (the
    answer then carries the file's new ETag); ``ignore_range`` drops the ``Range`` header so
    the client gets 200 and the whole file; ``wrong_range`` answers 206 for the range shifted by
    ``shift`` bytes with a ``Content-Range`` that claims the requested range (``honest=False``)
    or truthfully names the shifted one (``honest=True``); ``short_end`` answers 206 with the
    first half of the range and a ``Content-Range`` claiming the file ends there (a well-formed
    answer a client cannot tell from a short file unless it knows the size). ``ignore_range``
    only matches requests with a ``Range`` header, ``wrong_range`` and ``short_end`` only
    ``bytes=start-[end]`` ones.
    """

    kind: FaultKind
    path: str | None = None
    """Regular expression searched in the request path (``None``: every path)."""
    method: str | None = None
    times: int | None = None
    """Break only this many matching requests, then retire (``None``: every one)."""
    probability: float = 1.0
    retry_after: int = 1
    stall_seconds: float = 30.0
    after_bytes: int | None = None
    """``truncate``: body bytes sent before closing (default: half); ``stall``: bytes first."""
    shift: int = 1
    honest: bool = False

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {FAULT_KINDS}")
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError(f"probability must be within [0, 1], not {self.probability}")
        if self.times is not None and self.times < 0:
            raise ValueError(f"times must be >= 0 or None, not {self.times}")

    def matches(self, method: str, path: str, range_header: str | None) -> bool:
        if self.method is not None and self.method.upper() != method.upper():
            return False
        if self.path is not None and re.search(self.path, path) is None:
            return False
        return _applies_to_range(self.kind, range_header)


def _applies_to_range(kind: str, range_header: str | None) -> bool:
    if kind == "ignore_range":
        return range_header is not None
    if kind in ("wrong_range", "short_end"):
        return parse_single_range(range_header) is not None
    return True


def parse_single_range(header: str | None) -> tuple[int, int | None] | None:
    """``(start, end)`` of ``bytes=start-end`` (``end`` ``None`` for ``bytes=start-``), else
    ``None`` (no header, a suffix range, several ranges)."""
    if header is None:
        return None
    match = _SINGLE_RANGE.match(header.strip())
    if match is None:
        return None
    return int(match["start"]), int(match["end"]) if match["end"] else None


@dataclass(slots=True)
class _ActiveRule:
    rule: FaultRule
    remaining: int | None = field(default=None)


class FaultPlan:
    """Thread-safe: tests change the plan while the proxy's loop thread consults it."""

    def __init__(self, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._random = random.Random(seed)
        self._rules: list[_ActiveRule] = []
        self._probability = 0.0
        self._random_kinds: tuple[FaultKind, ...] = DEFAULT_RANDOM_KINDS

    def configure(
        self,
        faults: float | FaultRule | Sequence[FaultRule] | None,
        kinds: Iterable[FaultKind] = DEFAULT_RANDOM_KINDS,
    ) -> None:
        """Replace the plan: ``None``, a probability, one rule, or a list of rules."""
        rules: list[FaultRule]
        probability = 0.0
        if faults is None:
            rules = []
        elif isinstance(faults, FaultRule):
            rules = [faults]
        elif isinstance(faults, int | float):
            probability = float(faults)
            if not 0.0 <= probability <= 1.0:
                raise ValueError(f"fault probability must be within [0, 1], not {faults}")
            rules = []
        else:
            rules = list(faults)
            for rule in rules:
                if not isinstance(rule, FaultRule):
                    raise TypeError(f"faults must hold FaultRule objects, not {rule!r}")
        chosen = tuple(kinds)
        for kind in chosen:
            if kind not in FAULT_KINDS:
                raise ValueError(f"unknown fault kind {kind!r}; expected one of {FAULT_KINDS}")
        with self._lock:
            self._rules = [_ActiveRule(rule, rule.times) for rule in rules]
            self._probability = probability
            self._random_kinds = chosen

    def add(self, rule: FaultRule) -> None:
        with self._lock:
            self._rules.append(_ActiveRule(rule, rule.times))

    def reseed(self, seed: int) -> None:
        with self._lock:
            self._random.seed(seed)

    @property
    def rules(self) -> list[FaultRule]:
        """Rules that can still fire."""
        with self._lock:
            return [active.rule for active in self._rules if active.remaining != 0]

    def choose(self, method: str, path: str, range_header: str | None) -> FaultRule | None:
        """The fault for this request, or ``None``; consumes one use of a limited rule."""
        with self._lock:
            for active in self._rules:
                if active.remaining == 0 or not active.rule.matches(method, path, range_header):
                    continue
                if active.rule.probability < 1.0 and (
                    self._random.random() >= active.rule.probability
                ):
                    continue
                if active.remaining is not None:
                    active.remaining -= 1
                return active.rule
            if self._probability > 0.0 and self._random.random() < self._probability:
                kinds = [
                    kind for kind in self._random_kinds if _applies_to_range(kind, range_header)
                ]
                if kinds:
                    return FaultRule(self._random.choice(kinds))
        return None
