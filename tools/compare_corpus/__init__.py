"""The outside comparison of issue 44: every HDF5 file of a corpus, read by h5py and through
shadowzarr's references (both forms), dataset by dataset and attribute by attribute."""
