"""One HDF5 dataset → one Zarr array in the builder, flowing one way: ``emit(plan(dataset))``.

:mod:`.plan` reads and checks (type, attributes, layout, filters, fill value, chunk locations)
and writes nothing; :mod:`.emit` writes the plan and decides nothing."""

from __future__ import annotations

import math

import h5py
from shadowzarr_spec import RfsBuilder, UnsupportedFeatureError
from shadowzarr_spec.metadata import bytes_codec

from .context import Options, Source
from .emit.inline import add_inline
from .emit.stored import emit_storage
from .emit.values import add_converted, add_empty, as_storage
from .header_reader.dataset import HeaderDataset
from .native_decode import decoded_values
from .netcdf_dimensions import netcdf_shape
from .plan.description import describe_dataset
from .plan.storage import fill_value, plan_storage

__all__ = ["add_dataset", "add_decoded"]


def add_dataset(
    builder: RfsBuilder,
    path: str,
    dataset: h5py.Dataset,
    source: Source,
    options: Options,
    *,
    scalar_strings: bool = False,
) -> None:
    """Add ``dataset`` at ``path``. ``scalar_strings``: one-string arrays become scalars (the
    cached specifications of old HDMF files)."""
    plan, attributes, names = describe_dataset(dataset, path, source)
    if dataset.shape is None:  # null dataspace: no elements at all
        add_empty(builder, path, plan, (0,), attributes, None)
        return
    shape = netcdf_shape(dataset, source) + plan.extra_shape
    if names is not None:
        names = names + [None] * len(plan.extra_shape)
    if not plan.stored:
        add_converted(builder, path, dataset, source, plan, attributes, names, scalar_strings)
        return
    if math.prod(shape) == 0:
        add_empty(builder, path, plan, shape, attributes, names)
        return
    storage = plan_storage(dataset, path, source, options, plan, shape)
    emit_storage(builder, path, dataset, source, options, storage, attributes, names)


def add_decoded(
    builder: RfsBuilder, path: str, dataset: h5py.Dataset | HeaderDataset, source: Source
) -> None:
    """Add ``dataset`` with every value decoded by HDF5 and held in the references: the policy
    for a small dataset whose stored bytes no codec reads (see :mod:`.unsupported`)."""
    plan, attributes, names = describe_dataset(dataset, path, source)
    if not plan.stored or dataset.shape is None:
        raise UnsupportedFeatureError(f"dataset {path!r}: its values cannot be held inline")
    shape = tuple(dataset.shape) + plan.extra_shape
    if names is not None:
        names = names + [None] * len(plan.extra_shape)
    opened = dataset.h5py() if isinstance(dataset, HeaderDataset) else dataset
    values = as_storage(decoded_values(opened, path), plan.storage)
    chunks = opened.chunks
    chunk_shape = (
        (*chunks, *plan.extra_shape) if chunks is not None else tuple(max(1, n) for n in shape)
    )
    codecs = [bytes_codec(plan.storage)]
    fill = fill_value(opened, plan.storage)
    builder.add_array(
        path, shape=shape, data_type=plan.storage, chunk_shape=chunk_shape, codecs=codecs,
        fill_value=fill, attributes=attributes, dimension_names=names,
    )  # fmt: skip
    add_inline(
        builder, path, values, shape=shape, data_type=plan.storage, chunk_shape=chunk_shape,
        codecs=codecs, fill_value=fill,
    )  # fmt: skip
