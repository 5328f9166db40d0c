"""Which package gives zarr-python a codec that references name, for codecs zarr does not ship.

The builder accepts such a codec where it is not installed (generating references decodes
nothing: the reader must have it), and the store's error for an array it cannot decode says
what to install.
"""

from __future__ import annotations

__all__ = ["codec_names", "package_for_codec"]

_BY_PREFIX = {
    # imagecodecs' codecs (LZF, LZW, JPEG, bitshuffle, LZ4 of HDF5...) as zarr entry points
    "imagecodecs_": "imagecodecs-zarr",
}


def package_for_codec(name: str) -> str | None:
    """The distribution that registers codec ``name`` with zarr-python, if we know one."""
    for prefix, package in _BY_PREFIX.items():
        if name.startswith(prefix):
            return package
    return None


def codec_names(codecs: object) -> list[str]:
    """The codec names of a chain, and of the chains nested in it (sharding's)."""
    names: list[str] = []
    if not isinstance(codecs, list | tuple):
        return names
    for codec in codecs:
        if isinstance(codec, dict) and isinstance(codec.get("name"), str):
            names.append(codec["name"])
            configuration = codec.get("configuration") or {}
            if isinstance(configuration, dict):
                names.extend(codec_names(configuration.get("codecs")))
                names.extend(codec_names(configuration.get("index_codecs")))
    return names
