"""What a catalog run did, for the caller and for the one summary printed at the end."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

__all__ = ["CatalogSummary"]


@dataclass(frozen=True, slots=True)
class CatalogSummary:
    """Counts of one run (``generated``: assets whose job ran now; ``unchanged``: left as they
    were, with no request; ``removed``: gone from the source since the last run) and of the
    whole catalog by status, and this run's failures (asset id → error)."""

    destination: str
    listed: int
    generated: int
    unchanged: int
    removed: int
    statuses: dict[str, int] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @classmethod
    def count(cls, statuses: list[str]) -> dict[str, int]:
        return dict(sorted(Counter(statuses).items()))

    def __str__(self) -> str:
        by_status = ", ".join(f"{n} {s}" for s, n in self.statuses.items()) or "empty"
        lines = [
            f"catalog {self.destination}: {self.listed} assets listed, {self.generated} "
            f"generated, {self.unchanged} unchanged, {self.removed} removed "
            f"in {self.seconds:.1f} s",
            f"  catalog now: {by_status}",
        ]
        lines.extend(f"  {asset}: {error}" for asset, error in sorted(self.failures.items()))
        return "\n".join(lines)
