"""The options of `open_remote_array` (and ``shadowzarr.open_array``) under blosc2's names, and
one clear error for a name neither knows.

blosc2's ``RemoteArray`` takes ``cache_policy=``, ``cache_path=`` and ``refs=``; people coming
from it pass them here. Each has a clean counterpart: ``cache_policy`` is ``cache``;
``cache_path`` is the folder of the disk cache (`LocalCache`, an SQLite file inside it, where
blosc2 names one file) and, as in blosc2, means the disk policy; ``refs`` are the references
made beforehand for the source, opened instead of generating them. Any other unknown name is a
`TypeError` that names the function called and what to use instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from shadowzarr_store.options import StoreOptions
from shadowzarr_store.remote.policy import CachePolicy

__all__ = ["OPENER_OPTIONS", "check_option_names", "policy_of"]

OPENER_OPTIONS = frozenset(
    {
        "dataset",
        "source_format",
        "generators",
        "generator_tag",
        "cache",
        "max_cache_bytes",
        "cache_dir",
        "reference_cache",
        "assume_immutable",
        "offline",
        "max_concurrency",
        "memory_cache",
        "local_cache",
        "cache_policy",
        "cache_path",
        "refs",
    }
)
"""Keyword options of `open_remote_array` besides the `RfsStore` options."""

_HINTS = {
    "lazy": "arrays always open lazily here: drop lazy=",
    "mode": "arrays open read-only: drop mode=",
    "cache_size": "use max_cache_bytes= (bytes)",
    "urlpath": "pass the URL as the first argument",
    "storage": "use storage_options= (a dict) for object stores",
}


def check_option_names(options: Mapping[str, Any], function: str) -> None:
    """Refuse, naming ``function``, option names that are neither opener nor store options."""
    known = OPENER_OPTIONS | StoreOptions.keyword_names()
    unknown = sorted(set(options) - known)
    if not unknown:
        return
    advice = []
    for name in unknown:
        close = difflib.get_close_matches(name, sorted(known), n=1)
        if name in _HINTS:
            advice.append(f"{name}: {_HINTS[name]}")
        elif close:
            advice.append(f"{name}: did you mean {close[0]}=?")
    raise TypeError(
        f"{function}() got unknown option{'s' * (len(unknown) > 1)} {', '.join(unknown)}"
        + (f" ({'; '.join(advice)})" if advice else "")
        + "; caching: cache='none'|'memory'|'disk' (blosc2's cache_policy), cache_dir= or "
        "cache_path= (disk cache folder), max_cache_bytes=; references made beforehand: refs="
    )


def policy_of(value: Any) -> CachePolicy:
    """A cache policy from our `CachePolicy`, a string, or blosc2's ``CachePolicy`` (by name)."""
    if isinstance(value, CachePolicy):
        return value
    name = value if isinstance(value, str) else getattr(value, "name", None)
    try:
        return CachePolicy(str(name).lower())
    except ValueError:
        raise ValueError(
            f"cache policy {value!r}: use 'none', 'memory' or 'disk' (CachePolicy)"
        ) from None
