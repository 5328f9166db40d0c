"""What materialize wrote, and the errors it raises."""

from __future__ import annotations

from dataclasses import dataclass, field

from shadowzarr_spec.errors import ShadowzarrError

__all__ = ["ArrayReport", "MaterializeError", "MaterializeLimitError", "MaterializeReport"]


class MaterializeError(ShadowzarrError, RuntimeError):
    """Verification found a difference, or the destination cannot be used."""


class MaterializeLimitError(MaterializeError):
    """An array would take more chunks than ``max_chunks`` (raised before anything is written)."""


@dataclass(frozen=True, slots=True)
class ArrayReport:
    path: str
    action: str  # "rewritten" or "copied"
    nbytes: int
    stored_bytes: int
    chunks: tuple[int, ...]


@dataclass(slots=True)
class MaterializeReport:
    arrays: list[ArrayReport] = field(default_factory=list)
    groups: int = 0
    verified: bool = False
    resumed_regions: int = 0
    seconds: float = 0.0

    def __getitem__(self, path: str) -> ArrayReport:
        for report in self.arrays:
            if report.path == path:
                return report
        raise KeyError(path)
