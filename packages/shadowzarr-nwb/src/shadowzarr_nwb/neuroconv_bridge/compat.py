"""NeuroConv 0.10 with zarr 3: the one-line workaround for ``zarr.codec_registry``.

NeuroConv's Zarr backend configuration reads ``zarr.codec_registry`` when it is imported; zarr 3
removed that name. numcodecs keeps the same registry, so pointing the old name at it lets
NeuroConv import (its Zarr backend configuration is not used by the bridge).
"""

from __future__ import annotations

__all__ = ["allow_zarr3"]


def allow_zarr3() -> None:
    """Give zarr 3 the ``codec_registry`` NeuroConv 0.10 reads at import. Call before importing
    neuroconv; harmless when zarr already has one."""
    import numcodecs.registry
    import zarr

    if not hasattr(zarr, "codec_registry"):
        zarr.codec_registry = numcodecs.registry.codec_registry  # type: ignore[attr-defined]
