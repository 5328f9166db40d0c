"""Which ETags a reference file may record: values a reader sends back in ``If-Match``.

A source's ETag travels from a reference file into a request head, so it must stay on its
line: an ETag is an RFC 9110 entity-tag, ``"opaque"`` or ``W/"opaque"``, whose opaque part
holds visible ASCII other than ``"`` (0x21, 0x23-0x7E). Servers that send an ETag without the
quotes are common enough that an unquoted run of those characters is accepted too. No
whitespace, no control byte, no non-ASCII (``obs-text``), at most `MAX_ETAG_LENGTH` characters.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MAX_ETAG_LENGTH", "is_entity_tag"]

MAX_ETAG_LENGTH: Final = 1024
_ENTITY_TAG: Final = re.compile(r'(?:W/)?"[\x21\x23-\x7e]*"|[\x21\x23-\x7e]+')


def is_entity_tag(value: str) -> bool:
    """Whether ``value`` is an ETag a reference may record (see the module docstring)."""
    return len(value) <= MAX_ETAG_LENGTH and _ENTITY_TAG.fullmatch(value) is not None
