"""The policy for a dataset that no reference can describe: one dataset never costs the file.

1. ``strict``: the typed error is raised (``UnsupportedFeatureError`` naming dataset and reason).
2. Otherwise a dataset of at most ``inline_unsupported_below`` bytes that HDF5 itself decodes
   (hdf5plugin's filters loaded when installed) into a type Zarr holds is stored inline, decoded.
3. Everything else is left out. Either way the references record the dataset under
   ``unsupported`` (outcome and reason), and one ``UnsupportedDatasetWarning`` per file lists
   the omitted ones.
"""

from __future__ import annotations

import logging
import math
import warnings
from typing import Any

from shadowzarr_spec import RfsBuilder, UnsupportedDatasetWarning, UnsupportedFeatureError

from .context import Options, Source
from .datasets import add_decoded

__all__ = ["handle_unsupported", "warn_omitted"]

logger = logging.getLogger(__name__)


def handle_unsupported(
    builder: RfsBuilder,
    path: str,
    dataset: Any,
    source: Source,
    options: Options,
    error: UnsupportedFeatureError,
) -> None:
    """Apply the policy to ``dataset`` after ``error``; whatever it began is discarded first."""
    builder.discard(path)
    if options.strict:
        raise error
    reason = _reason(error, path)
    limit = options.inline_unsupported_below
    if limit and _stored_bytes(dataset) <= limit:
        try:
            add_decoded(builder, path, dataset, source)
        except UnsupportedFeatureError as exc:
            builder.discard(path)
            again = _reason(exc, path)
            reason = reason if again == reason else f"{reason}; not inlined either: {again}"
        else:
            builder.record_unsupported(path, "inlined", reason)
            logger.info("%s: inlined, decoded by HDF5 (%s)", path, reason)
            return
    builder.record_unsupported(path, "omitted", reason)


def warn_omitted(builder_omitted: dict[str, str], where: str) -> None:
    """One warning naming every dataset left out of the references of ``where``."""
    if not builder_omitted:
        return
    listed = "; ".join(f"{path}: {reason}" for path, reason in builder_omitted.items())
    warnings.warn(
        f"{where}: {len(builder_omitted)} dataset(s) left out of the references ({listed})",
        UnsupportedDatasetWarning,
        stacklevel=3,
    )


def _reason(error: UnsupportedFeatureError, path: str) -> str:
    """The error's message without the leading ``dataset 'path':`` (the key says it)."""
    text = str(error)
    prefix = f"dataset {path!r}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


def _stored_bytes(dataset: Any) -> int:
    shape = dataset.shape
    if shape is None:
        return 0
    return int(math.prod(shape)) * int(dataset.dtype.itemsize)
