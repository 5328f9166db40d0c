"""Replace a source file by one of the same size and other bytes, in one of the ways a file
gets replaced: renamed over (a new inode) or rewritten in place, its modification time put back
(``same mtime``), left as the rewrite set it, or moved on by 10 s (``later mtime``: nginx's ETag
counts whole seconds). No imports of the fuzz package: the worker runs this too."""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["LOCAL_WAYS", "REMOTE_WAYS", "replace_source"]

LOCAL_WAYS = ("rename", "rename same mtime", "in place", "in place same mtime")
REMOTE_WAYS = ("rename later mtime", "in place later mtime")
TICK = 0.05
"""Seconds waited first: a rewrite within one tick of the file system's clock keeps the ctime
of the version a store checked (the store README says so), which is not what is tested."""


def replace_source(path: str | Path, how: str) -> None:
    victim = Path(path)
    time.sleep(TICK)
    before = victim.stat()
    replaced = bytes(b ^ 0x5A for b in victim.read_bytes())  # same size, every byte other
    if how.startswith("rename"):
        spare = victim.with_name(victim.name + ".replacement")
        spare.write_bytes(replaced)
        os.replace(spare, victim)
    else:
        with victim.open("r+b") as stream:
            stream.write(replaced)
    if how.endswith("same mtime"):
        os.utime(victim, ns=(before.st_atime_ns, before.st_mtime_ns))
    elif how.endswith("later mtime"):
        os.utime(victim, ns=(before.st_atime_ns, before.st_mtime_ns + 10**10))
