"""HDF5 object headers read by `shadowzarr_hdf5.format`, answered in h5py's form.

h5py answers the same questions one library call at a time, and for files of many small objects
(NWB) those calls are most of the generation time. This package parses the headers directly
and answers for the structures it fully understands; for anything else it says so
(:class:`NotNative`) and the generator asks h5py, so coverage never depends on it.
"""

from ..format.errors import NotNative
from .file import HeaderFile

__all__ = ["HeaderFile", "NotNative"]
