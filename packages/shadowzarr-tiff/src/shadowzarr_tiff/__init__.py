"""shadowzarr-tiff: Zarr v3 reference file systems for TIFF files, read with tifffile."""

from __future__ import annotations

from shadowzarr_tiff.block_file import BlockFile
from shadowzarr_tiff.codecs import register_tiff_codecs
from shadowzarr_tiff.generate import generate_rfs_tiff

__version__ = "0.1.0"

__all__ = ["BlockFile", "generate_rfs_tiff", "register_tiff_codecs"]
