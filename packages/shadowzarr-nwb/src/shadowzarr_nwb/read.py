"""read_nwb: an NWBFile from references (or a remote NWB HDF5 file) in one call.

pynwb's ``read_nwb`` takes neither a Zarr store nor a reference directory; reading references
takes ``NWBZarrIO(RfsStore(load_rfs(...)), mode="r")`` and keeping that IO open while the file
is used. Here the IO is kept by the NWBFile itself (hdmf's ``nwbfile.read_io``), so it stays open
exactly as long as the NWBFile is in use and is released with it; `open_nwb` closes it at the end
of a ``with`` block, and ``nwbfile.read_io.close()`` closes it at any time (the store's HTTP
sessions included).
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from hdmf_zarr import NWBZarrIO
from shadowzarr_spec import ReferenceFileSystem
from shadowzarr_store import RfsStore, open_rfs_store
from shadowzarr_store.notebook_display import node_html
from shadowzarr_store.options import StoreOptions
from shadowzarr_store.recognise import is_v3_reference_path
from shadowzarr_store.remote.errors import SourceFormatError
from shadowzarr_store.remote.opener import ACCESS_OPTIONS
from shadowzarr_store.remote.sniff import read_head, sniff_format
from shadowzarr_store.transport import redact

if TYPE_CHECKING:
    from pynwb import NWBFile
    from shadowzarr_store.store_tree import Traffic

__all__ = ["NotAnNWBSource", "ReferencesNWBZarrIO", "open_nwb", "read_nwb"]

type NWBSource = str | os.PathLike[str] | ReferenceFileSystem | dict[str, Any] | RfsStore


class NotAnNWBSource(SourceFormatError):
    """The address is neither references nor an HDF5 file."""


class ReferencesNWBZarrIO(NWBZarrIO):  # type: ignore[misc]
    """`NWBZarrIO` over an `RfsStore` it owns: ``close()`` also closes the store's sessions.

    In a notebook each dataset of the NWBFile shows the store's row for it (shape, data type,
    chunks as stored and as read, codecs, the bytes its references point at and their files),
    then what reading the file has cost so far (`traffic`).
    """

    _shadowzarr_store: RfsStore | None = None

    @property
    def traffic(self) -> Traffic | None:
        """What reading this file through its references has cost so far (requests, bytes,
        rounds, cache hits); None when the file is not read over an `RfsStore`."""
        store = self.path
        return store.traffic if isinstance(store, RfsStore) else None

    def generate_dataset_html(self, dataset: Any) -> str:
        """hdmf's display of one dataset: the store's tree row for it and the file's traffic,
        or hdmf-zarr's table for a dataset not read through references."""
        shown = node_html(dataset)
        if shown is None:
            return str(NWBZarrIO.generate_dataset_html(dataset))
        traffic = self.traffic
        return shown + (traffic._repr_html_() if traffic is not None else "")

    def close(self) -> None:
        store = getattr(self, "_shadowzarr_store", None)
        super().close()
        if store is not None:
            self._shadowzarr_store = None
            store.close()


def read_nwb(source: NWBSource, **store_options: Any) -> NWBFile:
    """Read an NWB file through references, keeping its IO open while the NWBFile is used.

    Parameters
    ----------
    source
        A reference directory or ``.json`` file, a URL to either, references in memory, an open
        `RfsStore`, or a local or remote NWB HDF5 file (a DANDI ``…/download/`` URL as it is),
        for which references are generated first (needs ``shadowzarr-hdf5``).
    **store_options
        `RfsStore` options (``headers``, ``local_cache``, ``merge_gap``…).

    Returns
    -------
    NWBFile
        ``nwbfile.read_io`` is the IO; ``nwbfile.read_io.close()`` closes it (`open_nwb` does it
        at the end of a ``with`` block); otherwise it is released with the NWBFile.
    """
    store, owned = _store(source, store_options)
    io = ReferencesNWBZarrIO(store, mode="r")
    if owned:
        io._shadowzarr_store = store
    try:
        nwbfile: NWBFile = io.read()
    except BaseException:
        io.close()
        raise
    return nwbfile


@contextlib.contextmanager
def open_nwb(source: NWBSource, **store_options: Any) -> Iterator[NWBFile]:
    """``with open_nwb(source) as nwbfile:`` — `read_nwb`, closed at the end of the block."""
    nwbfile = read_nwb(source, **store_options)
    try:
        yield nwbfile
    finally:
        nwbfile.read_io.close()


def _store(source: NWBSource, options: dict[str, Any]) -> tuple[RfsStore, bool]:
    if isinstance(source, RfsStore):
        if options:
            raise ValueError("store options go with an address or references, not an RfsStore")
        return source, False
    if isinstance(source, ReferenceFileSystem | dict):
        return open_rfs_store(source, **options), True
    text = os.fspath(source)
    if is_v3_reference_path(text) or _named_like_references(text):
        return open_rfs_store(text, **options), True
    # The first bytes and any generation are asked for as the store's reads will be: with the
    # caller's headers, allowed URLs and object-store settings.
    transport = StoreOptions.from_kwargs(options).transport(allow_local_files=True)
    kind = sniff_format(read_head(text, options=transport))
    if kind == "references":
        return open_rfs_store(text, **options), True
    if kind != "hdf5":
        raise NotAnNWBSource(
            f"{redact(text)}: neither references (a .shadowzarr directory or JSON) nor an HDF5 file"
        )
    try:
        hdf5 = importlib.import_module("shadowzarr_hdf5")
    except ModuleNotFoundError as exc:
        raise ImportError(
            f"{redact(text)} is an HDF5 file: reading it needs shadowzarr-hdf5 to generate "
            "references (pip install 'shadowzarr[nwb]')"
        ) from exc
    access = {name: options[name] for name in ACCESS_OPTIONS if name in options}
    return RfsStore(hdf5.generate_rfs(text, progress=False, **access), **options), True


def _named_like_references(text: str) -> bool:
    bare = text.split("?", 1)[0].rstrip("/").lower()
    return bare.endswith((".json", ".shadowzarr"))
