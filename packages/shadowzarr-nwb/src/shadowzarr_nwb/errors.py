"""Errors of shadowzarr-nwb, in shadowzarr's one hierarchy.

::

    ShadowzarrError
    └── BuilderError (ValueError)
        └── VirtualDatasetMismatch    hdmf-zarr created a placeholder's dataset with another
                                      shape or data type than its VirtualArray's
"""

from __future__ import annotations

from shadowzarr_spec.errors import BuilderError, NotVirtualizable

__all__ = ["NotVirtualizable", "VirtualDatasetMismatch"]


class VirtualDatasetMismatch(BuilderError):
    """The dataset hdmf-zarr created does not have its VirtualArray's shape or data type."""
