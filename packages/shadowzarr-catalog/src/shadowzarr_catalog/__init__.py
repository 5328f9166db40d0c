"""shadowzarr-catalog: references for a whole archive (a folder, a bucket prefix, a list of
URLs or a DANDI dandiset), published with a catalog of every asset's outcome, resumable and
incremental."""

from __future__ import annotations

from shadowzarr_catalog.assets import Asset
from shadowzarr_catalog.listing import DuplicateAssetWarning
from shadowzarr_catalog.row_objects import CatalogRowWarning
from shadowzarr_catalog.run import generate_catalog
from shadowzarr_catalog.summary import CatalogSummary

__version__ = "0.1.0"

__all__ = [
    "Asset",
    "CatalogRowWarning",
    "CatalogSummary",
    "DuplicateAssetWarning",
    "generate_catalog",
]
