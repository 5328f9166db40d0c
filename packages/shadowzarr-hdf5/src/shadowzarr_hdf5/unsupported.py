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
import sys
import warnings
from typing import Any

from shadowzarr_spec import (
    BuilderError,
    ConventionTypeWarning,
    ReferenceFileSystem,
    RfsBuilder,
    ShadowzarrError,
    UnsupportedDatasetWarning,
    UnsupportedFeatureError,
)
from shadowzarr_spec.hdf5_types import convention_datasets

from .context import Options, Source
from .datasets import add_decoded

__all__ = [
    "as_unsupported",
    "handle_unsupported",
    "record_refused",
    "warn_conventions",
    "warn_omitted",
]

logger = logging.getLogger(__name__)


def as_unsupported(error: Exception, path: str) -> UnsupportedFeatureError | None:
    """The typed error for a failure that belongs to the dataset at ``path`` alone, or None when
    it must end generation: references the builder refuses, and HDF5's own errors (h5py raises
    OSError for a dataset the library cannot open or read); never a source read that failed
    (`SourceError`, which h5py passes through from a remote file) or any other error."""
    if isinstance(error, UnsupportedFeatureError):
        return error
    if isinstance(error, BuilderError):
        typed = UnsupportedFeatureError(f"dataset {path!r}: {error}")
    elif isinstance(error, OSError) and not isinstance(error, ShadowzarrError):
        typed = UnsupportedFeatureError(f"dataset {path!r}: HDF5 cannot read it ({error})")
    else:
        return None
    typed.__cause__ = error
    return typed


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
        except (UnsupportedFeatureError, BuilderError, OSError) as exc:
            typed = as_unsupported(exc, path)
            if typed is None:
                raise
            builder.discard(path)
            again = _reason(typed, path)
            reason = reason if again == reason else f"{reason}; not inlined either: {again}"
        else:
            builder.record_unsupported(path, "inlined", reason)
            logger.info("%s: inlined, decoded by HDF5 (%s)", path, reason)
            return
    builder.record_unsupported(path, "omitted", reason)


def record_refused(
    builder: RfsBuilder, path: str, options: Options, error: UnsupportedFeatureError
) -> None:
    """Leave out what ``path`` names (an object HDF5 cannot open, a link it cannot follow),
    recorded as omitted; ``strict`` raises ``error`` instead."""
    builder.discard(path)
    if options.strict:
        raise error
    builder.record_unsupported(path, "omitted", _reason(error, path))


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


def warn_conventions(rfs: ReferenceFileSystem, where: str) -> None:
    """One warning naming every dataset stored under a type convention (raw records with
    ``_STRUCTURED_DTYPE``, sequences with ``_VLEN_DTYPE``), which plain Zarr readers see as
    bytes."""
    found = convention_datasets(rfs)
    if not found:
        return
    listed = "; ".join(f"{path} ({attribute})" for path, attribute in found.items())
    warnings.warn(
        f"{where}: {len(found)} dataset(s) of types Zarr v3 cannot name, stored under a "
        f"shadowzarr convention that plain Zarr readers see as bytes ({listed}); "
        "shadowzarr_spec.hdf5_types.read_native reads them as h5py does",
        ConventionTypeWarning,
        stacklevel=3,
    )


def _reason(error: UnsupportedFeatureError, path: str) -> str:
    """The error's message without the leading ``dataset 'path':`` (the key says it)."""
    text = str(error)
    for what in ("dataset", "object", "link"):
        prefix = f"{what} {path!r}: "
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def _stored_bytes(dataset: Any) -> int:
    shape = dataset.shape
    if shape is None:
        return 0
    try:
        itemsize = int(dataset.dtype.itemsize)
    except (ValueError, TypeError):  # a type numpy lacks: HDF5 cannot decode it for us either
        return sys.maxsize
    return int(math.prod(shape)) * itemsize
