"""shadowzarr-catalog: references for a whole archive (a folder, a bucket prefix, a list of
URLs or a DANDI dandiset), published with a catalog of every asset's outcome, resumable and
incremental."""

from __future__ import annotations

from shadowzarr_catalog.assets import Asset, AssetLeftOutWarning
from shadowzarr_catalog.row_objects import CatalogRowWarning
from shadowzarr_catalog.run import generate_catalog
from shadowzarr_catalog.summary import CatalogSummary

__version__ = "0.1.0"

__all__ = [
    "Asset",
    "AssetLeftOutWarning",
    "CatalogRowWarning",
    "CatalogSummary",
    "generate_catalog",
]
