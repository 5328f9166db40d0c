"""Strict base64, the one rule for ``base64:`` values in references and attributes.

Canonical RFC 4648 (standard alphabet, padded, no whitespace). ``base64.b64decode(validate=True)``
alone accepts a few other forms (``"YWJj===="``), which a JavaScript reader would refuse.
"""

from __future__ import annotations

import base64
import re

from shadowzarr_spec.errors import ReferenceFormatError

__all__ = ["decode_base64"]

_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def decode_base64(text: str, what: str) -> bytes:
    """The bytes of ``text``, or ReferenceFormatError naming ``what`` (a key, an attribute)."""
    if _BASE64.fullmatch(text) is None:
        raise ReferenceFormatError(f"{what}: {text[:40]!r} is not base64")
    return base64.b64decode(text)
