"""What every workload gets: the server, the sizes, where files live, which peers may run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from files import Sizes
from server import BenchServer


@dataclass(slots=True)
class Context:
    server: BenchServer
    sizes: Sizes
    www: Path
    """Served folder (files and reference sets)."""
    work: Path
    """Unserved scratch folder (Icechunk repositories, values read by peer workers)."""
    runs: int
    peer_pythons: dict[str, Path | str]
    """Each peer environment's python (see `venvs`), or why it is not available."""
    skip: tuple[str, ...] = ()

    def skipped(self, reader: str) -> bool:
        return any(word.lower() in reader.lower() for word in self.skip)
