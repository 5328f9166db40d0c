"""What an NWB writer is given as a dataset's data in place of a virtual array's values.

hdmf-zarr (``ZarrIO.write_dataset``) copies any numpy-like data with ``dset[:] = np.array(data)``,
which would allocate and write the whole array. A data chunk iterator, however, gets its dataset
created from ``recommended_data_shape()``, ``recommended_chunk_shape()`` and ``dtype`` and then
filled chunk by chunk from ``next()``: a placeholder that yields no chunk leaves a dataset with
metadata only, whose chunk locations the virtual NWB writer adds. So a :class:`Placeholder`
follows hdmf's ``AbstractDataChunkIterator`` protocol (and is registered as one when hdmf is
installed, so pynwb's type checks accept it), with ``shape``, ``dtype``, ``ndim`` and ``len``
like an array, and ``.virtual`` linking back to the :class:`VirtualArray`. It refuses
conversion to numpy, so nothing reads it by accident.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from shadowzarr_spec.errors import NotVirtualizable

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Placeholder"]


class _Described(Protocol):
    """What a placeholder asks of its array (a VirtualArray; named structurally so that this
    module and the array's do not import each other)."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def ndim(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def chunk_shape(self) -> tuple[int, ...]: ...
    def __len__(self) -> int: ...


class Placeholder[V: _Described]:
    """Shape, dtype and chunking of a :class:`VirtualArray`, without data."""

    __slots__ = ("__weakref__", "virtual")

    def __init__(self, virtual: V) -> None:
        _register_with_hdmf()
        self.virtual = virtual

    @property
    def shape(self) -> tuple[int, ...]:
        return self.virtual.shape

    @property
    def dtype(self) -> np.dtype:
        return self.virtual.dtype

    @property
    def ndim(self) -> int:
        return self.virtual.ndim

    @property
    def size(self) -> int:
        return self.virtual.size

    @property
    def maxshape(self) -> tuple[int, ...]:
        return self.virtual.shape

    def __len__(self) -> int:
        return len(self.virtual)

    def recommended_chunk_shape(self) -> tuple[int, ...]:
        return self.virtual.chunk_shape

    def recommended_data_shape(self) -> tuple[int, ...]:
        return self.virtual.shape

    def __iter__(self) -> Placeholder[V]:
        return self

    def __next__(self) -> NoReturn:
        raise StopIteration

    def __array__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotVirtualizable(
            "a virtual array's placeholder holds no data; read the written references instead"
        )

    def __repr__(self) -> str:
        return f"Placeholder(shape={self.shape}, dtype={self.dtype})"


def _register_with_hdmf() -> None:
    """Make ``isinstance(placeholder, AbstractDataChunkIterator)`` true, without importing hdmf
    unless it is installed."""
    if _registered:
        return
    with contextlib.suppress(ImportError):
        from hdmf.data_utils import AbstractDataChunkIterator

        AbstractDataChunkIterator.register(Placeholder)
    _registered.append(True)


_registered: list[bool] = []
