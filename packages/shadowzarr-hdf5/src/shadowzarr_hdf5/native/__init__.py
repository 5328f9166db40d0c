"""Our own reading of HDF5 object headers: links, attributes and simple datasets.

h5py answers the same questions one library call at a time, and for files of many small objects
(NWB) those calls are most of the generation time. This package parses the headers directly
and answers for the structures it fully understands; for anything else it says so
(:class:`NotNative`) and the generator asks h5py, so coverage never depends on it.
"""

from .errors import NotNative
from .headers import HeaderFile

__all__ = ["HeaderFile", "NotNative"]
