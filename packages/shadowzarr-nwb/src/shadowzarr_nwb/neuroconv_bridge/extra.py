"""The generators the bridge calls (NEO, TIFF, HDF5) come with the ``neuroconv`` extra.

``shadowzarr-nwb`` alone writes virtual NWB files; virtualizing what NeuroConv built reads the
source files through the generator packages, installed by ``shadowzarr-nwb[neuroconv]`` (and by
``shadowzarr[nwb]``). Without them the bridge says which extra to install.
"""

from __future__ import annotations

__all__ = ["EXTRA_HINT", "missing_extra"]

EXTRA_HINT = "pip install 'shadowzarr-nwb[neuroconv]' (or 'shadowzarr[nwb]')"


def missing_extra(exc: ModuleNotFoundError, wanted: str) -> ImportError:
    """The error for a module the bridge needs that is not installed."""
    return ImportError(
        f"{wanted} needs the module {exc.name!r}, which is not installed: {EXTRA_HINT}"
    )
