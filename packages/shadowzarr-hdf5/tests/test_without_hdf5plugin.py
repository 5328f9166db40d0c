"""Small plugin-filtered datasets are inlined in a process that never imported hdf5plugin.

HDF5 would need the plugins to read them (``OSError: ... can't open directory``); the values are
decoded with the codecs the references would use instead, so generation needs no plugin.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import hdf5plugin
import numpy as np

FILTERS = {
    "zstd": hdf5plugin.Zstd(),
    "blosc": hdf5plugin.Blosc(cname="lz4"),
    "bitshuffle": hdf5plugin.Bitshuffle(cname="lz4"),
    "lz4": hdf5plugin.LZ4(),
    "bzip2": hdf5plugin.BZip2(),
    "blosc2": hdf5plugin.Blosc2(),
    "zfp": hdf5plugin.Zfp(reversible=True),
}

GENERATE = textwrap.dedent(
    """
    import json, sys
    sys.modules["hdf5plugin"] = None  # importing it now fails: HDF5 has no plugin filters
    import numpy as np
    from shadowzarr_hdf5 import generate_rfs
    from shadowzarr_store import open_rfs

    rfs = generate_rfs(sys.argv[1])
    root = open_rfs(rfs)
    out = {name: root[name][...].tolist() for name in root.array_keys()}
    kinds = {name: [c["name"] for c in root[name].metadata.to_dict()["codecs"]] for name in out}
    print(json.dumps({"values": out, "codecs": kinds, "unsupported": list(rfs.unsupported)}))
    """
)


def test_small_plugin_datasets_decode_without_plugins(tmp_path: Path) -> None:
    path = tmp_path / "small.h5"
    rng = np.random.default_rng(4)
    with h5py.File(path, "w") as f:
        for name, options in FILTERS.items():
            f.create_dataset(name, data=rng.normal(size=(10, 12)).astype("f4"), chunks=(4, 12),
                             **options)  # fmt: skip
        expected = {name: f[name][...] for name in FILTERS}
    result = subprocess.run(
        [sys.executable, "-c", GENERATE, str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "can't open directory" not in result.stderr
    found = json.loads(result.stdout)
    assert found["unsupported"] == []
    for name, values in expected.items():
        assert found["codecs"][name] == ["bytes"]  # inlined as plain values
        np.testing.assert_array_equal(np.array(found["values"][name], dtype="f4"), values)
