"""The cases of each class, written to disk one at a time as the workers ask for them."""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fuzz.corpus import FORMS, Corpus
from fuzz.mutate import mutate_case

__all__ = ["mutated_cases", "remove_case"]


def mutated_cases(
    corpus: Corpus, work: Path, count: int, seed: int, forms: tuple[str, ...] = FORMS
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``count`` mutated reference files, cycling through ``forms``; case ``n`` of a seed is
    always the same file (its own ``random.Random(seed * 1_000_003 + n)``)."""
    for number in range(count):
        form = forms[number % len(forms)]
        rng = random.Random(seed * 1_000_003 + number)
        source = corpus.forms[form]
        target = work / f"case-{number}" / source.name
        mutation = mutate_case(form, source, target, rng)
        yield (
            f"mutated {form}",
            {
                "id": number,
                "path": str(target),
                "dir": str(target.parent),
                "arrays": corpus.arrays[form],
                "touched": None if mutation.touched is None else sorted(mutation.touched),
                "kinds": mutation.kinds,
                "expected": str(corpus.expected_file),
                "strings": str(corpus.root / "strings.json"),
                "actions": ["members"] if number % 10 == 0 else [],
            },
        )


def remove_case(case: dict[str, Any]) -> None:
    if case.get("dir"):
        shutil.rmtree(case["dir"], ignore_errors=True)
