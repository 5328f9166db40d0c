"""The HDF5 file format, read from bytes: no h5py, no network.

Every module reads one structure of the HDF5 File Format Specification from whatever fetches
byte ranges (`byte_source.RangeFetcher`: the store's transport, a ``RemoteFile``, a memory map):

==========================  ================================================================
``superblock``              the superblock's fields (versions 0-3)
``superblock_extension``    the superblock with its extension's B-tree K (an object header)
``object_header``           object headers v1/v2 and their continuation blocks
``messages``                link, attribute, fill value and filter pipeline messages
``dataspace``               the dataspace message (index geometry; h5py's shape)
``datatypes``               the datatype message → numpy types
``data_layout``             the data layout message: compact, contiguous, chunked
``heaps``                   local and global heaps
``groups``                  a group's links (symbol table or compact link messages)
``values``                  stored element bytes → values
``btree_v1``, ``btree_v2``  chunk B-trees (version 1 nodes; version 2 header and nodes)
``fixed_array``             fixed array index (header, data block, pages)
``extensible_array``        extensible array index (header, index/secondary/data blocks)
``index_walk``              level-at-a-time walks of those indexes, driven in lockstep
``chunk_index``             a dataset's chunk index → its `ChunkTable`
``binary``, ``checksum``    little-endian fields; Jenkins lookup3 checksums
``errors``                  `Hdf5FormatError`, `NotChunkedError`, `NotNative`
==========================  ================================================================
"""
