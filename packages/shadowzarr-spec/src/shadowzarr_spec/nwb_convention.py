"""Names of the unified Zarr v3 convention for HDF5/NWB concepts, shared by every generator.

hdmf-zarr 0.14 reads these (see the seed's "Unified convention" table); one definition here keeps
generators and the NWB writer from drifting apart.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DTYPE_ATTR",
    "EXTERNAL_ARRAY_LINK_ATTR",
    "LINKS_ATTR",
    "OBJECT_REFERENCE_DTYPE",
    "REFERENCE_FIELDS_ATTR",
    "REFERENCE_KEY",
    "SPECIFICATIONS_GROUP",
    "SPECLOC_ATTR",
    "STRING_DTYPE",
    "link_entry",
    "reference_value",
]

DTYPE_ATTR: Final = "_DTYPE"
"""On non-compound arrays: the numpy type name ("float64"), "str" or "object_reference"."""
LINKS_ATTR: Final = "_LINKS"
"""On a group: a list of soft links ``{"name", "source", "path"}``."""
REFERENCE_KEY: Final = "_REFERENCE"
"""An attribute holding an object reference: ``{"_REFERENCE": {"source": ".", "path": "/x"}}``."""
REFERENCE_FIELDS_ATTR: Final = "_REFERENCE_FIELDS"
"""On compound arrays: the names of fields that hold object references (as target paths)."""
EXTERNAL_ARRAY_LINK_ATTR: Final = "_EXTERNAL_ARRAY_LINK"
SPECLOC_ATTR: Final = ".specloc"
SPECIFICATIONS_GROUP: Final = "specifications"
OBJECT_REFERENCE_DTYPE: Final = "object_reference"
STRING_DTYPE: Final = "str"


def reference_value(path: str, source: str = ".") -> dict[str, dict[str, str]]:
    """The attribute value of an object reference to ``path`` in the same file."""
    return {REFERENCE_KEY: {"source": source, "path": path}}


def link_entry(name: str, path: str, source: str = ".") -> dict[str, str]:
    """One entry of a group's ``_LINKS`` list."""
    return {"name": name, "source": source, "path": path}
