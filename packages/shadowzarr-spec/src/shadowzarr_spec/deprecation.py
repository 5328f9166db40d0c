"""Keyword arguments renamed in a later version, still accepted under their old name for a while.

`renamed_keyword` lets callers written for the old name keep working: the value moves to the new
keyword and a `DeprecationWarning` names the new one. Passing both names is an error, since one
of them would be silently ignored.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

__all__ = ["renamed_keyword"]

P = ParamSpec("P")
R = TypeVar("R")


def renamed_keyword(old: str, new: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Accept keyword ``old`` as ``new``, warning (``DeprecationWarning``) that it was renamed."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if old in kwargs:
                if new in kwargs:
                    raise TypeError(
                        f"{function.__qualname__}() got both {old!r} and {new!r}; "
                        f"{old!r} is the old name of {new!r}"
                    )
                warnings.warn(
                    f"{function.__qualname__}(): {old!r} is deprecated, use {new!r}",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        renamed = dict(getattr(function, "__renamed_keywords__", {}))
        renamed[old] = new
        wrapper.__renamed_keywords__ = renamed  # type: ignore[attr-defined]
        return wrapper

    return decorate
