"""Views of a store's arrays other than as stored: the grouped view (many small chunks shown as
shards of them) and the sharded view (large uncompressed chunks shown as shards of blocks).

The store (`RfsStore`) serves the references as they are; it composes these when asked
(``grouped_view``, ``sharded_view``), and ``stored_view()`` leaves them out."""

from shadowzarr_store.views.grouped import GroupedView, GroupLayout, ShardIndex
from shadowzarr_store.views.grouped_reads import GroupedReads, pack_kind
from shadowzarr_store.views.shard_indexes import ShardIndexes
from shadowzarr_store.views.sharded import ShardedView, ShardLayout
from shadowzarr_store.views.sharded_reads import ShardedReads
from shadowzarr_store.views.slab_shards import SLAB_SHARDING, SlabShardingCodec

__all__ = [
    "SLAB_SHARDING",
    "GroupLayout",
    "GroupedReads",
    "GroupedView",
    "ShardIndex",
    "ShardIndexes",
    "ShardLayout",
    "ShardedReads",
    "ShardedView",
    "SlabShardingCodec",
    "pack_kind",
]
