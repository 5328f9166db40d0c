"""``shadowzarr.nwb``: the public names of ``shadowzarr_nwb`` (with ``shadowzarr[nwb]``)."""

from __future__ import annotations

from typing import Any

from shadowzarr._lazy import import_module_for

_module = import_module_for("shadowzarr_nwb", "nwb", "shadowzarr.nwb")


def __getattr__(name: str) -> Any:
    return getattr(_module, name)


def __dir__() -> list[str]:
    return sorted(getattr(_module, "__all__", dir(_module)))
