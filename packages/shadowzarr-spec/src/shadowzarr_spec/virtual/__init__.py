"""Virtual arrays: arrays stored in other files, sliced, stacked and transposed without data.

Modules: :mod:`.array` (VirtualArray) with :mod:`.file_layouts` (where its constructors' bytes
are), :mod:`.strided` (arrays whose every element's byte is known), :mod:`.layout` (where chunks
are), :mod:`.indexing` (index expressions), :mod:`.stacking`, :mod:`.memmap`, :mod:`.rfs_source`,
:mod:`.emit` (into an RfsBuilder), :mod:`.placeholder`.
"""

from __future__ import annotations

from shadowzarr_spec.virtual.array import VirtualArray
from shadowzarr_spec.virtual.indexing import NeedsDataError
from shadowzarr_spec.virtual.placeholder import Placeholder
from shadowzarr_spec.virtual.stacking import concatenate, stack

__all__ = ["NeedsDataError", "Placeholder", "VirtualArray", "concatenate", "stack"]
