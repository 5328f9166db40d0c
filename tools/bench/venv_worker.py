"""Runs inside a peer's own environment (lindi needs zarr 2): one JSON command per stdin line,
one JSON answer per stdout line, so the parent can read the proxy's counters between steps.

Commands (JSON objects, key "op"):
- ``open``: ``how`` ("remfile", "lindi" or "parquet"), ``url``, optional ``dataset`` to open;
- ``read``: ``dataset``, ``rows`` [a, b], ``column`` (or null): times ``dataset[a:b, column]``
  and saves the values to ``out`` (.npy) for the parent to check;
- ``generate``: lindi's reference file system of ``url`` with every chunk listed;
- ``write_parquet``: kerchunk JSON references at ``json`` to Parquet at ``out``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from measure import PeakSampler


def main() -> None:
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
            elif command["op"] == "generate":
                answer.update(generate_lindi(command["url"]))
            seconds = answer.pop("seconds", time.perf_counter() - start)
        print(json.dumps({"seconds": seconds, "peak_mb": sampler.mb, **answer}), flush=True)


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
    import h5py

    if how == "remfile":
        import remfile

        return h5py.File(remfile.File(url), "r")
    import lindi

    return lindi.LindiH5pyFile.from_hdf5_file(url)


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
