"""Runs inside a peer's own environment (lindi needs zarr 2): one JSON command per stdin line,
one JSON answer per stdout line, so the parent can read the proxy's counters between steps.

Commands (JSON objects, key "op"):
- ``open``: ``how`` ("remfile", "lindi", "parquet" or "async-hdf5"), ``url``, optional
  ``dataset`` to open;
- ``read``: ``dataset``, ``rows`` [a, b], ``column`` (or null): times ``dataset[a:b, column]``
  and saves the values to ``out`` (.npy) for the parent to check;
- ``chunks``: ``dataset``, ``starts``, ``length``: times reading ``length`` values at each of
  ``starts`` of a one-dimensional dataset (h5py: a slice at a time; a zarr array: one
  ``vindex`` selection) and saves them, concatenated, to ``out``;
- ``generate``: ``how`` ("lindi", the default, or "async-hdf5"): every chunk of ``url`` listed
  (lindi: its reference file system; async-hdf5: the chunk index of every dataset); answers
  ``chunk_refs``, the number of chunks found;
- ``write_parquet``: kerchunk JSON references at ``json`` to Parquet at ``out``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from measure import PeakSampler

_PRELOADED = ("h5py", "zarr", "lindi", "remfile", "async_hdf5.zarr", "virtualizarr.codecs")
"""Imported before the first command (those this environment has), so no timed step pays for
importing its library: the workspace's readers are imported before they are timed too."""


def main() -> None:
    for module in _PRELOADED:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    handle = None
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        with PeakSampler() as sampler:
            start = time.perf_counter()
            answer: dict = {}
            if command["op"] == "open":
                handle = open_file(command["how"], command["url"])
                if command.get("dataset"):
                    handle = {command["dataset"]: handle[command["dataset"]]}
            elif command["op"] == "write_parquet":
                write_parquet(command["json"], command["out"])
            elif command["op"] == "read":
                selection = slice(*command["rows"])
                dataset = handle[command["dataset"]]
                if command.get("column") is None:
                    values = dataset[selection]
                else:
                    values = dataset[selection, command["column"]]
                answer["seconds"] = time.perf_counter() - start
                np.save(command["out"], np.asarray(values))
            elif command["op"] == "chunks":
                dataset = handle[command["dataset"]]
                values = read_chunks(dataset, command["starts"], command["length"])
                answer["seconds"] = time.perf_counter() - start
                np.save(command["out"], values)
            elif command["op"] == "generate":
                how = command.get("how", "lindi")
                generate = generate_async_hdf5 if how == "async-hdf5" else generate_lindi
                answer.update(generate(command["url"]))
            seconds = answer.pop("seconds", time.perf_counter() - start)
        print(json.dumps({"seconds": seconds, "peak_mb": sampler.mb, **answer}), flush=True)


def read_chunks(dataset, starts: list[int], length: int) -> np.ndarray:
    """``length`` values at each of ``starts``, concatenated: zarr arrays in one pointwise
    selection, h5py datasets a slice at a time (h5py has no pointwise read)."""
    if hasattr(dataset, "vindex"):
        points = (np.asarray(starts)[:, None] + np.arange(length)).ravel()
        return np.asarray(dataset.vindex[points])
    return np.concatenate([np.asarray(dataset[s : s + length]) for s in starts])


def open_file(how: str, url: str):
    if how == "parquet":
        import fsspec
        import zarr
        from zarr.storage import FsspecStore

        # the Parquet files are read synchronously by LazyReferenceMapper, the chunks async
        fs = fsspec.filesystem(
            "reference",
            fo=url,
            target_protocol="http",
            remote_protocol="http",
            remote_options={"asynchronous": True},
            asynchronous=True,
        )
        store = FsspecStore(fs, read_only=True, path="")
        return zarr.open_group(store, mode="r", zarr_format=2)
    if how == "async-hdf5":
        return open_async_hdf5(url)
    import h5py

    if how == "remfile":
        import remfile

        return h5py.File(remfile.File(url), "r")
    import lindi

    return lindi.LindiH5pyFile.from_hdf5_file(url)


def _obstore_http(url: str) -> tuple[object, str]:
    """An obstore HTTP store of ``url``'s folder and the file's name in it (what async-hdf5's
    documentation uses: any obspec store; plain HTTP needs ``allow_http``)."""
    import warnings

    from obstore.store import HTTPStore

    # async-hdf5 rebuilds the store in its own extension module and says so each time.
    warnings.filterwarnings("ignore", "Successfully reconstructed a store", RuntimeWarning)

    base, name = url.rsplit("/", 1)
    return HTTPStore.from_url(base + "/", client_options={"allow_http": True}), name


class _AsyncHdf5File:
    """``file[path]``: the zarr array of a dataset, through async-hdf5's read-only zarr v3 store
    of the dataset's group (its store lists one group's members; chunk indexes are parsed when
    first read). Chunks are read and decoded by zarr through that store."""

    def __init__(self, url: str) -> None:
        self.store, self.name = _obstore_http(url)
        self._groups: dict[str, object] = {}

    def __getitem__(self, path: str):
        import asyncio

        import zarr
        from async_hdf5.zarr import open_hdf5

        parent, _, leaf = path.strip("/").rpartition("/")
        if parent not in self._groups:
            hdf5_store = asyncio.run(
                open_hdf5(path=self.name, store=self.store, group=parent or None)
            )
            self._groups[parent] = zarr.open_group(hdf5_store, mode="r", zarr_format=3)
        return self._groups[parent][leaf]


def open_async_hdf5(url: str) -> _AsyncHdf5File:
    return _AsyncHdf5File(url)


def generate_async_hdf5(url: str) -> dict:
    """Every group and dataset of the file visited with async-hdf5 (siblings concurrently),
    attributes read, and the chunk index of every chunked dataset built (its default 8 MiB
    read-ahead blocks)."""
    import asyncio

    from async_hdf5 import HDF5File

    async def walk(group, counts: list[int]) -> None:
        await group.attributes()
        datasets = [group.dataset(name) for name in await group.dataset_names()]
        subgroups = [group.group(name) for name in await group.group_names()]

        async def one(pending) -> None:
            dataset = await pending
            await dataset.attributes()
            if dataset.chunk_shape is not None:
                counts.append(len(await dataset.chunk_index()))

        async def below(pending) -> None:
            await walk(await pending, counts)

        await asyncio.gather(*(one(d) for d in datasets))
        await asyncio.gather(*(below(g) for g in subgroups))

    async def run() -> list[int]:
        store, name = _obstore_http(url)
        file = await HDF5File.open(name, store=store)
        counts: list[int] = []
        await walk(await file.root_group(), counts)
        return counts

    counts = asyncio.run(run())
    return {"references": len(counts), "chunk_refs": sum(counts)}


def write_parquet(source: str, out: str) -> None:
    from kerchunk.df import refs_to_dataframe

    with open(source) as stream:
        refs_to_dataframe(json.load(stream), out)


def generate_lindi(url: str) -> dict:
    import lindi

    opts = lindi.LindiH5ZarrStoreOpts(num_dataset_chunks_threshold=None)
    with lindi.LindiH5ZarrStore.from_file(url, opts=opts) as store:
        refs = store.to_reference_file_system()["refs"]
    chunk_refs = sum(1 for v in refs.values() if isinstance(v, list) and len(v) == 3)
    return {"references": len(refs), "chunk_refs": chunk_refs}


if __name__ == "__main__":
    main()
