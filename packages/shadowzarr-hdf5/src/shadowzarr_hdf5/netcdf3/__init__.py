"""netCDF-3 files (classic, 64-bit offset, 64-bit data "CDF-5") as reference file systems.

Written from the netCDF file format specification: `header` parses (and bounds) the header,
`layout` says where each variable's bytes are, `attributes` hands attributes over as
netCDF4-python does, and `references` adds it all to an `RfsBuilder`. `generate_rfs` sends a
file here when its first bytes are a netCDF-3 magic number.
"""

from __future__ import annotations

from .header import NetCDF3FormatError, is_netcdf3
from .references import RangeReader, add_netcdf3

__all__ = ["NetCDF3FormatError", "RangeReader", "add_netcdf3", "is_netcdf3"]
