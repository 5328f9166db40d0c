"""Stream layouts of the NEO readers that do not describe their buffers, one module per format.

Each module has ``stream_layout(reader, block, segment, stream_index)``, returning where one
stream's samples are (:mod:`shadowzarr_neo.sources`) or the NotVirtualizable saying why they
cannot be referenced. The readers' memory maps and offsets are private to NEO, so each module
reads exactly the attributes its reader sets in ``_parse_header``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shadowzarr_spec.errors import NotVirtualizable

    from shadowzarr_neo.sources import Layout

type Outcome = Layout | NotVirtualizable
