"""Every published distribution declares exactly what its modules import.

An import that runs when a module is imported needs a base dependency; one inside a function (or
re-raised with an install hint) needs a base dependency or an extra; an import whose failure is
swallowed is an optional integration and needs neither. A hint from the umbrella's
``import_module_for`` must name the extra that installs the module. And nothing is declared that
no module imports, unless it is listed below with the reason it is needed at run time.
"""

from __future__ import annotations

import importlib.metadata
from functools import cache

import pytest
from packaging.utils import canonicalize_name

from .workspace import Distribution, Import, When, distributions, imports_of

RUN_TIME_ONLY: dict[tuple[str, str], str] = {
    ("shadowzarr-neo", "pyedflib"): "NEO's EDF reader imports it; virtual_arrays_neo needs it",
    ("shadowzarr-tiff", "imagecodecs-zarr"): "registers imagecodecs' zarr codecs (entry points)",
    ("shadowzarr-nwb", "pynwb"): "write_virtual_nwb takes pynwb's NWBFile, written with NWBZarrIO",
    ("shadowzarr-hdf5", "imagecodecs"): "verify.py decodes LZF/LZ4/bitshuffle chunks with it",
    ("shadowzarr-hdf5", "imagecodecs-zarr"): "registers those codecs with zarr (entry points)",
}
"""Declared distributions no module imports, and why they are declared anyway."""

DISTRIBUTIONS = distributions()


@cache
def _third_party() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _distributions_of(top: str) -> set[str]:
    """The canonical distribution names that provide the top-level import name ``top``."""
    for dist in DISTRIBUTIONS.values():
        if top in dist.import_names:
            return {dist.name}
    return {canonicalize_name(name) for name in _third_party().get(top, [])}


def _own(dist: Distribution, found: Import) -> bool:
    return found.top in dist.import_names


def _problems(dist: Distribution) -> list[str]:
    base = dist.requirements()
    everything = dist.all_requirements()
    problems = []
    for path in dist.modules():
        for found in imports_of(path):
            if found.when in (When.TYPING, When.OPTIONAL) or _own(dist, found):
                continue
            provides = _distributions_of(found.top)
            if not provides:
                problems.append(f"{found.where()}: {found.module} is installed by nothing known")
                continue
            if found.helper_extra is not None:
                named = dist.requirements((found.helper_extra,) if found.helper_extra else ())
                if not provides & named:
                    extra = f"[{found.helper_extra}]" if found.helper_extra else " (base)"
                    problems.append(
                        f"{found.where()}: the hint names {dist.name}{extra}, which does not "
                        f"install {found.module} ({' or '.join(sorted(provides))})"
                    )
                continue
            declared = base if found.when is When.MODULE else everything
            if not provides & declared:
                needs = "dependency" if found.when is When.MODULE else "dependency or extra"
                problems.append(
                    f"{found.where()}: imports {found.module} ({found.when.value}); "
                    f"{' or '.join(sorted(provides))} is not a declared {needs}"
                )
    return problems


def _imported_distributions(dist: Distribution) -> set[str]:
    used: set[str] = set()
    for path in dist.modules():
        for found in imports_of(path):
            if found.when is not When.TYPING:
                used |= _distributions_of(found.top)
    return used


def test_every_published_distribution_is_checked() -> None:
    assert set(DISTRIBUTIONS) == {
        "shadowzarr",
        "shadowzarr-spec",
        "shadowzarr-store",
        "shadowzarr-hdf5",
        "shadowzarr-tiff",
        "shadowzarr-neo",
        "shadowzarr-nwb",
        "shadowzarr-icechunk",
        "shadowzarr-catalog",
    }


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_imports_are_declared(name: str) -> None:
    assert _problems(DISTRIBUTIONS[name]) == []


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_declared_distributions_are_imported(name: str) -> None:
    dist = DISTRIBUTIONS[name]
    unused = dist.all_requirements() - _imported_distributions(dist) - {dist.name}
    unexplained = {u for u in unused if (name, u) not in RUN_TIME_ONLY}
    assert unexplained == set()


def test_run_time_only_entries_are_still_needed() -> None:
    """A stale entry would excuse a dependency that is imported after all, or gone."""
    for (name, requirement), _reason in RUN_TIME_ONLY.items():
        dist = DISTRIBUTIONS[name]
        assert requirement in dist.all_requirements(), (name, requirement)
        assert requirement not in _imported_distributions(dist), (name, requirement)


def test_the_checker_sees_each_kind_of_import(tmp_path) -> None:
    """The classification the checks rest on, on a module written here."""
    source = tmp_path / "sample.py"
    source.write_text(
        "from __future__ import annotations\n"
        "import contextlib\n"
        "from typing import TYPE_CHECKING\n"
        "import numpy\n"
        "if TYPE_CHECKING:\n"
        "    import h5py\n"
        "def f():\n"
        "    import zarr\n"
        "    try:\n"
        "        import tifffile\n"
        "    except ImportError:\n"
        "        return None\n"
        "    try:\n"
        "        import neo\n"
        "    except ModuleNotFoundError as exc:\n"
        "        raise ImportError('pip install x[neo]') from exc\n"
        "    with contextlib.suppress(ImportError):\n"
        "        import hdmf\n"
        "    importlib.import_module('pynwb')\n"
        "    return import_module_for('shadowzarr_tiff', 'tiff', 'f')\n"
    )
    found = {(i.module, i.when, i.helper_extra) for i in imports_of(source)}
    assert found == {
        ("numpy", When.MODULE, None),
        ("h5py", When.TYPING, None),
        ("zarr", When.CALL, None),
        ("tifffile", When.OPTIONAL, None),
        ("neo", When.HINTED, None),
        ("hdmf", When.OPTIONAL, None),
        ("pynwb", When.CALL, None),
        ("shadowzarr_tiff", When.HINTED, "tiff"),
    }


def test_an_undeclared_import_is_reported(tmp_path) -> None:
    """What the issue found: shadowzarr-tiff importing requests without declaring it."""
    tiff = DISTRIBUTIONS["shadowzarr-tiff"]
    source = tmp_path / "src" / "shadowzarr_tiff"
    source.mkdir(parents=True)
    (source / "http.py").write_text("import requests\nimport xarray\n")
    probe = Distribution(
        name=tiff.name,
        root=tmp_path,
        import_names=tiff.import_names,
        dependencies=tuple(r for r in tiff.dependencies if r.name != "requests"),
        extras=tiff.extras,
    )
    problems = _problems(probe)
    assert len(problems) == 2
    assert "requests is not a declared dependency" in problems[0]
    assert "xarray is not a declared dependency" in problems[1]
