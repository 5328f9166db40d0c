"""Zarr v3 codecs that decode HDF5 filters no standard codec reproduces byte for byte.

=========================== ============ ==========================================
codec name                  HDF5 filter  decodes with
=========================== ============ ==========================================
``shadowzarr.hdf5_scaleoffset`` 6 scale-offset numpy (the filter's bit packing and its fill)
``shadowzarr.hdf5_nbit``        5 N-bit        numpy (integers, sign-extended as HDF5 converts)
``shadowzarr.hdf5_bitshuffle``  32008        imagecodecs (bitshuffle, LZ4, Zstd blocks)
``shadowzarr.hdf5_zfp``         32013 H5Z-ZFP  imagecodecs (zfp; the header kept in cd_values)
``shadowzarr.hdf5_blosc2``      32026 Blosc2   imagecodecs (a B2ND frame per chunk, untyped items)
=========================== ============ ==========================================

They are registered with zarr-python through the ``zarr.codecs`` entry points of
shadowzarr-store, so any zarr-python that has shadowzarr-store installed reads them; readers
without it (zarrita.js, fsspec-only readers, other languages) do not. imagecodecs is an optional
dependency (``pip install 'shadowzarr-store[codecs]'``): without it only the arrays that need it
fail, at their first read, saying what to install. Every codec checks the decoded size against
the chunk it decodes into and refuses a stream that claims more (``ChunkDecodeError``), so the
store's decode limits hold for them too.
"""

from __future__ import annotations

from shadowzarr_store.hdf5_codecs.bitshuffle import Hdf5Bitshuffle
from shadowzarr_store.hdf5_codecs.blosc2 import Hdf5Blosc2
from shadowzarr_store.hdf5_codecs.nbit import Hdf5Nbit
from shadowzarr_store.hdf5_codecs.scale_offset import Hdf5ScaleOffset
from shadowzarr_store.hdf5_codecs.zfp import Hdf5Zfp

__all__ = ["Hdf5Bitshuffle", "Hdf5Blosc2", "Hdf5Nbit", "Hdf5ScaleOffset", "Hdf5Zfp"]
