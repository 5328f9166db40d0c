"""``from shadowzarr.builder import RfsBuilder, columns_selection`` (the seed's import path)."""

from __future__ import annotations

from shadowzarr_spec import RfsBuilder, columns_selection, write_rfs

__all__ = ["RfsBuilder", "columns_selection", "write_rfs"]
