"""One HDF5 dataset → one Zarr array in the builder, flowing one way: ``emit(plan(dataset))``.

:mod:`.plan` reads and decides everything (type, attributes, layout, filters, fill value, chunk
grid and locations, inline bytes) into one frozen `DatasetPlan` and writes nothing; :mod:`.emit`
writes that plan into the builder, never looking at the dataset."""

from __future__ import annotations

import h5py
from shadowzarr_spec import RfsBuilder

from .context import Options, Source
from .emit.dataset import emit_dataset
from .header_reader.dataset import HeaderDataset
from .plan.dataset import plan_dataset, plan_decoded

__all__ = ["add_dataset", "add_decoded"]


def add_dataset(
    builder: RfsBuilder,
    path: str,
    dataset: h5py.Dataset | HeaderDataset,
    source: Source,
    options: Options,
    *,
    scalar_strings: bool = False,
) -> None:
    """Add ``dataset`` at ``path``. ``scalar_strings``: one-string arrays become scalars (the
    cached specifications of old HDMF files)."""
    emit_dataset(
        builder, plan_dataset(dataset, path, source, options, scalar_strings=scalar_strings)
    )


def add_decoded(
    builder: RfsBuilder, path: str, dataset: h5py.Dataset | HeaderDataset, source: Source
) -> None:
    """Add ``dataset`` with every value decoded by HDF5 and held in the references: the policy
    for a small dataset whose stored bytes no codec reads (see :mod:`.unsupported`)."""
    plan = plan_decoded(dataset, path, source)
    emit_dataset(builder, plan)
