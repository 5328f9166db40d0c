"""Which datasets of an NWB file are virtual: placeholders found in hdmf's builder tree.

pynwb turns every container into hdmf builders before hdmf-zarr writes them; a dataset builder
whose data is a :class:`~shadowzarr_spec.virtual.Placeholder` (bare, or wrapped in a DataIO that
carries I/O settings) is one whose chunk locations come from a VirtualArray. The builder's path
is the dataset's path in the Zarr store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shadowzarr_spec.virtual import Placeholder

if TYPE_CHECKING:
    from collections.abc import Iterator

    from hdmf.build import GroupBuilder
    from shadowzarr_spec import VirtualArray

__all__ = ["find_placeholder", "virtual_datasets"]

_ROOT = "root"


def find_placeholder(data: Any) -> Placeholder[VirtualArray] | None:
    """The placeholder behind a dataset's data, through any number of DataIO wrappers."""
    seen = 0
    while not isinstance(data, Placeholder):
        inner = getattr(data, "data", None)
        # DataIO wrappers expose the wrapped data as ``.data``; anything else is real data.
        if inner is None or inner is data or seen > 8 or not _is_data_io(data):
            return None
        data = inner
        seen += 1
    return data


def virtual_datasets(root: GroupBuilder) -> dict[str, VirtualArray]:
    """Store path (``acquisition/es/data``) → VirtualArray of every placeholder dataset."""
    found: dict[str, VirtualArray] = {}
    for path, data in _datasets(root):
        placeholder = find_placeholder(data)
        if placeholder is not None:
            found[path] = placeholder.virtual
    return found


def _datasets(group: GroupBuilder) -> Iterator[tuple[str, Any]]:
    stack = [group]
    while stack:
        current = stack.pop()
        for dataset in current.datasets.values():
            yield _store_path(dataset.path), dataset.data
        stack.extend(current.groups.values())


def _store_path(builder_path: str) -> str:
    parts = builder_path.split("/")
    if parts and parts[0] == _ROOT:
        parts = parts[1:]
    return "/".join(parts)


def _is_data_io(data: Any) -> bool:
    try:
        from hdmf.data_utils import DataIO
    except ImportError:  # pragma: no cover - hdmf is a dependency
        return False
    return isinstance(data, DataIO)
