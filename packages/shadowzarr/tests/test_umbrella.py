"""The umbrella imports lazily and names the extra to install for a missing generator."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


def test_import_is_cheap() -> None:
    result = run(
        """
        import sys
        import shadowzarr
        heavy = {"h5py", "tifffile", "neo", "hdmf", "pynwb", "icechunk", "virtualizarr", "zarr"}
        print(sorted(heavy & set(sys.modules)))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_seed_names_resolve() -> None:
    import shadowzarr_catalog
    import shadowzarr_store

    import shadowzarr
    from shadowzarr.builder import RfsBuilder, columns_selection

    assert shadowzarr.RfsBuilder is RfsBuilder
    assert columns_selection(3, 2, [0]) == (6, [[0, 2]])
    assert callable(shadowzarr.write_rfs)
    assert shadowzarr.write_rfs is shadowzarr_store.write_rfs  # object stores too
    assert shadowzarr.generate_catalog is shadowzarr_catalog.generate_catalog
    assert callable(shadowzarr.load_rfs)
    assert callable(shadowzarr.decode_attributes)
    with pytest.raises(AttributeError):
        shadowzarr.no_such_name  # noqa: B018


@pytest.mark.parametrize(
    ("module", "name", "extra"),
    [
        ("shadowzarr_tiff", "generate_rfs_tiff", "tiff"),
        ("shadowzarr_neo", "generate_rfs_neo", "neo"),
        ("shadowzarr_hdf5", "generate_rfs", "hdf5"),
        ("shadowzarr_catalog", "generate_catalog", "catalog"),
    ],
)
def test_missing_generator_names_its_extra(module: str, name: str, extra: str) -> None:
    result = run(
        f"""
        import sys
        sys.modules[{module!r}] = None  # as if the distribution were not installed
        import shadowzarr
        try:
            shadowzarr.{name}
        except ImportError as exc:
            print(exc)
        """
    )
    assert result.returncode == 0, result.stderr
    assert f"shadowzarr[{extra}]" in result.stdout


@pytest.mark.parametrize(("sub", "extra"), [("nwb", "nwb"), ("icechunk", "icechunk")])
def test_missing_submodule_names_its_extra(sub: str, extra: str) -> None:
    package = "shadowzarr_nwb" if sub == "nwb" else "shadowzarr_icechunk"
    result = run(
        f"""
        import sys
        sys.modules[{package!r}] = None
        try:
            import shadowzarr.{sub}
        except ImportError as exc:
            print(exc)
        """
    )
    assert result.returncode == 0, result.stderr
    assert f"shadowzarr[{extra}]" in result.stdout


def test_all_names_every_lazy_export() -> None:
    import shadowzarr
    from shadowzarr._lazy import EXPORTS

    assert sorted(shadowzarr.__all__) == sorted(EXPORTS)
