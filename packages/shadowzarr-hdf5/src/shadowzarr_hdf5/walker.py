"""The walk of an HDF5 file's links from the root: each group, dataset and link record added to
the builder once, a hard link back up the tree recorded as a link."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import h5py
from shadowzarr_spec import BuilderError, RfsBuilder, ShadowzarrError, UnsupportedFeatureError
from shadowzarr_spec.nwb_convention import LINKS_ATTR, SPECIFICATIONS_GROUP, SPECLOC_ATTR

from .attributes import read_attributes
from .context import Options, Source, object_address
from .datasets import add_dataset
from .format.errors import NotNative
from .header_reader.dataset import HeaderDataset
from .links import link_record, user_defined_class
from .netcdf import is_placeholder_dimension, netcdf_attributes
from .unsupported import as_unsupported, handle_unsupported, record_refused

__all__ = ["Walker", "open_or_refuse"]

logger = logging.getLogger(__name__)


def open_or_refuse[T](open_object: Callable[[], T], path: str) -> T:
    """``open_object()``, with h5py's failure to open an object (HDF5's error, as KeyError or
    OSError) typed, naming ``path``; a failed source read passes through."""
    try:
        return open_object()
    except ShadowzarrError:
        raise
    except (KeyError, OSError) as exc:
        detail = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        raise UnsupportedFeatureError(f"object {path!r}: HDF5 cannot open it ({detail})") from exc


class Walker:
    """Visits every link from the root, adding groups, datasets and link records."""

    def __init__(
        self,
        builder: RfsBuilder,
        source: Source,
        options: Options,
        report: Callable[[str], None],
        wanted: frozenset[str] | None = None,
    ) -> None:
        self.wanted = wanted
        self.builder = builder
        self.source = source
        self.options = options
        self.report = report
        self.specloc: str | None = None

    def run(self) -> None:
        file = self.source.file
        root = object_address(file)
        attributes = self._attributes(file, root, "")
        specloc = attributes.get(SPECLOC_ATTR)
        if specloc is not None:
            self.specloc = str(specloc).strip("/") or SPECIFICATIONS_GROUP
            attributes[SPECLOC_ATTR] = self.specloc
        self._group(file, "", root, attributes, ancestors={root: "/"})

    def _group(
        self,
        group: h5py.Group | None,
        path: str,
        address: int,
        attributes: dict[str, Any],
        ancestors: dict[int, str],
    ) -> None:
        """Add the group at ``path`` and everything below it; ``group`` is None when the header
        reader answers for it (h5py opens it only if a link needs h5py)."""
        links: list[dict[str, str]] = []
        if self.source.netcdf:
            attributes = netcdf_attributes(attributes, None)
        self.builder.add_group(path, attributes)

        def opened() -> h5py.Group:
            nonlocal group
            if group is None:
                group = self._h5py_object(path)
            return group

        for raw_name, hard_address in self._links(address, opened):
            name = raw_name.decode("utf-8", "surrogateescape")
            child_path = f"{path}/{name}" if path else name
            if self.wanted is not None and child_path not in self.wanted:
                continue
            if hard_address is None:
                link_class = user_defined_class(opened(), name)
                if link_class is not None:
                    refusal = UnsupportedFeatureError(
                        f"link {child_path!r}: a user-defined link (class {link_class}), which "
                        "HDF5 follows only with that link class registered"
                    )
                    record_refused(self.builder, child_path, self.options, refusal)
                    continue
                record = link_record(opened(), name, opened().get(name, getlink=True))
                if record is not None:
                    links.append(record)
                    continue
            try:
                child = self._child(name, hard_address, opened, child_path)
            except UnsupportedFeatureError as exc:
                record_refused(self.builder, child_path, self.options, exc)
                continue
            if child is None:
                continue
            kind, obj, child_address = child
            if kind == "group":
                if child_address in ancestors:  # a hard link back up the tree: record only
                    links.append({"name": name, "source": ".", "path": ancestors[child_address]})
                    continue
                self._group(
                    obj,
                    child_path,
                    child_address,
                    self._attributes(obj, child_address, child_path),
                    {**ancestors, child_address: "/" + child_path},
                )
            else:
                if self.source.netcdf and is_placeholder_dimension(obj):
                    continue
                self._dataset(obj, child_path, child_address)
        if links:
            attributes = {**attributes, LINKS_ATTR: links}
            self.builder.set_attributes(path, attributes)

    def _links(
        self, address: int, opened: Callable[[], h5py.Group]
    ) -> list[tuple[bytes, int | None]]:
        headers = self.source.headers
        if headers is not None:
            try:
                return [(link.name, link.address) for link in headers.links(address)]
            except NotNative as exc:
                logger.debug("links of the group at %d read through h5py (%s)", address, exc)
        return _links(opened())

    def _attributes(self, obj: h5py.HLObject | None, address: int, path: str) -> dict[str, Any]:
        """A group's attributes; ``obj`` (None: not opened in h5py) is opened by path."""
        headers = self.source.headers
        if headers is not None:
            try:
                return headers.attributes(address, self.source.paths)[0]
            except NotNative as exc:
                logger.debug("attributes of the object at %d read through h5py (%s)", address, exc)
        return read_attributes(self._h5py_object(path) if obj is None else obj, self.source.paths)

    def _h5py_object(self, path: str) -> Any:
        """The h5py object at a walk path (names may hold any bytes)."""
        return self.source.file[("/" + path).encode("utf-8", "surrogateescape")]

    def _child(
        self, name: str, hard_address: int | None, opened: Callable[[], h5py.Group], path: str
    ) -> tuple[str, Any, int] | None:
        """``(kind, object, address)`` of what a link names: kind 'group' or 'dataset'; the
        object is None for a group the header reader answers for. None: anything else."""
        headers = self.source.headers
        if headers is not None and hard_address is not None:
            try:
                kind = headers.kind(hard_address)
            except NotNative:
                kind = None
            if kind == "group":
                return "group", None, hard_address
            if kind == "dataset" and hard_address in self.source.opened:
                return "dataset", self.source.opened[hard_address], hard_address
            if kind == "other":
                return None
        obj = self._open(opened(), name, hard_address, path)
        if obj is None:
            return None
        address = object_address(obj) if hard_address is None else hard_address
        if isinstance(obj, h5py.Group):
            return "group", obj, address
        if isinstance(obj, h5py.Dataset | HeaderDataset):
            return "dataset", obj, address
        return None

    def _open(self, group: h5py.Group, name: str, address: int | None, path: str) -> Any:
        """The object a link names (an object HDF5 cannot open raises UnsupportedFeatureError);
        datasets opened by the first walk are not reopened."""
        opened = None if address is None else self.source.opened.get(address)
        if opened is not None:
            return opened
        if address is None and name not in group:  # a dangling link
            return None
        return open_or_refuse(lambda: group[name], path)

    def _dataset(self, dataset: h5py.Dataset | HeaderDataset, path: str, address: int) -> None:
        in_specs = self.specloc is not None and (
            path == self.specloc or path.startswith(self.specloc + "/")
        )
        try:
            add_dataset(
                self.builder, path, dataset, self.source, self.options, scalar_strings=in_specs
            )
        except (UnsupportedFeatureError, BuilderError, OSError) as exc:
            # One dataset never costs the file: its own failures are typed and recorded.
            typed = as_unsupported(exc, path)
            if typed is None:
                raise
            handle_unsupported(self.builder, path, dataset, self.source, self.options, typed)
        self.report(path)


def _links(group: h5py.Group) -> list[tuple[bytes, int | None]]:
    """Each link's name and, for a hard link, its object's address, in h5py's iteration
    order: creation order when the group tracks it, else by name."""
    index = h5py.h5.INDEX_NAME
    if group.id.get_create_plist().get_link_creation_order() & h5py.h5p.CRT_ORDER_TRACKED:
        index = h5py.h5.INDEX_CRT_ORDER
    found: list[tuple[bytes, int | None]] = []

    def visit(name: bytes, info: Any) -> None:
        # h5py hands every call the same info object: copy what is needed now.
        found.append((name, int(info.u) if info.type == h5py.h5l.TYPE_HARD else None))

    group.id.links.iterate(visit, idx_type=index, info=True)
    return found
