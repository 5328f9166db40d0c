"""The workspace's modules: no import loops, no public name meaning two things, none too long.

Read statically with `ast` from every ``packages/*/src`` tree, nothing imported. Every import
statement counts, wherever it stands: at module level, inside a function (a deferred import is
still a loop, one that only moves the failure to run time) and under ``TYPE_CHECKING`` (a type
loop is a design loop). Importing ``a.b.c`` counts as an edge to ``a.b.c`` only, not to the
packages above it, whose ``__init__`` Python also runs: that edge exists for every submodule and
would make every package that re-exports its submodules a loop.

Public names: classes and functions a module defines at its top level and offers (listed in its
``__all__`` when it has one, else not underscore-prefixed), in modules whose dotted path has no
underscore-prefixed part. Re-exports are imports, not definitions, so they never clash.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted(REPO.glob("packages/*/src"))


def _modules() -> dict[str, Path]:
    """Every module of the workspace by dotted name (a package by its ``__init__``)."""
    found: dict[str, Path] = {}
    for src in SOURCES:
        for path in sorted(src.rglob("*.py")):
            parts = list(path.relative_to(src).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _imports(name: str) -> set[str]:
    """The workspace modules that module ``name`` imports (any statement anywhere in it)."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    package = name if _is_package(name) else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                submodule = f"{origin}.{alias.name}"
                targets.add(submodule if submodule in MODULES else origin)
    return {t for t in targets if t in MODULES and t != name}


def _graph() -> dict[str, set[str]]:
    return {name: _imports(name) for name in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        # Iterative, so deep graphs do not hit the recursion limit.
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return [_one_cycle(graph, set(c)) for c in components]


def _one_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest loop from the component's first module back to itself (breadth first)."""
    start = min(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle through {start}")


def test_the_graph_sees_the_workspace() -> None:
    """The scan finds the packages and edges it is meant to check (not a vacuous pass)."""
    graph = _graph()
    assert {"shadowzarr_spec", "shadowzarr_store", "shadowzarr_hdf5.format.chunk_index"} <= set(
        graph
    )
    assert "shadowzarr_hdf5.format.superblock" in graph["shadowzarr_hdf5.format.chunk_index"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


KNOWN_LOOPS: dict[frozenset[str], str] = {}
"""Loops allowed for now, each with why (none: the six this test found when it was written are
untangled). A loop not listed fails; a listed loop that is gone fails too, so the list only
shrinks."""


def test_no_import_loops() -> None:
    found = {frozenset(cycle): cycle for cycle in _cycles(_graph())}
    new = [" -> ".join(cycle) for key, cycle in found.items() if key not in KNOWN_LOOPS]
    assert not new, "import loops:\n" + "\n".join(new)
    gone = [sorted(key) for key in KNOWN_LOOPS if key not in found]
    assert not gone, f"loops untangled, take them off KNOWN_LOOPS: {gone}"


MAX_MODULE_LINES = 600
"""The most lines a module of ``packages/*/src`` may have: one that grows past it does more
than one job (or one too large to read in a sitting) and is split, not let grow."""


def _too_long(lines: dict[str, int], limit: int = MAX_MODULE_LINES) -> list[str]:
    return [f"{name}: {count} lines" for name, count in sorted(lines.items()) if count > limit]


def test_no_module_over_600_lines() -> None:
    lines = {
        str(path.relative_to(REPO)): path.read_bytes().count(b"\n") for path in MODULES.values()
    }
    assert _too_long({"a.py": 601, "b.py": 600}) == ["a.py: 601 lines"]
    too_long = _too_long(lines)
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines:\n" + "\n".join(too_long)


FORMAT_MAY_IMPORT = frozenset({"numpy", "shadowzarr_spec"})
"""Outside the standard library, all ``shadowzarr_hdf5.format`` may import: it reads bytes from
any source, so it knows neither h5py nor the network (the store's transport)."""


def test_hdf5_format_reader_imports_no_h5py_and_no_network() -> None:
    for name, path in MODULES.items():
        if not name.startswith("shadowzarr_hdf5.format"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            foreign = roots - FORMAT_MAY_IMPORT - set(sys.stdlib_module_names)
            assert not foreign, f"{name} imports {sorted(foreign)}"


def _is_public_module(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def _public_definitions(name: str) -> set[str]:
    """Classes and functions module ``name`` defines (not imports) and offers: listed in its
    ``__all__`` when it has one, else not underscore-prefixed."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    defined = {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    }
    exported: set[str] | None = None
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                value = node.value
                if isinstance(value, ast.List | ast.Tuple):
                    exported = {e.value for e in value.elts if isinstance(e, ast.Constant)}
    if exported is not None:
        return defined & exported
    return {d for d in defined if not d.startswith("_")}


def _name_owners() -> dict[str, list[str]]:
    owners: dict[str, list[str]] = {}
    for name in MODULES:
        if _is_public_module(name):
            for public in _public_definitions(name):
                owners.setdefault(public, []).append(name)
    return owners


SAME_ROLE = {
    "register": "each `shadowzarr.cli` command module adds its subcommand to the parser",
    "stream_layout": "each `shadowzarr_neo.formats` module says where one format's samples are",
    "header_size": "each `shadowzarr_hdf5.format` array/B-tree module sizes its own header",
}
"""Names that sibling modules each define for one role, like methods of a protocol."""

SAME_MEANING = {
    "write_rfs": "shadowzarr_spec's writes local paths; shadowzarr_store's also object stores",
}
"""One meaning defined twice, where the package that needs it cannot import the other."""

DEPRECATED_ALIASES = {
    ("shadowzarr_spec", "load_rfs"): "shadowzarr_spec.read_local_rfs",
    ("shadowzarr_store", "open_array"): "shadowzarr_store.open_rfs_array",
}
"""Old names kept (warning) beside the name they collided with; removed in a later version."""


def test_public_names_say_one_thing() -> None:
    """No two public classes or functions of the workspace share a name for different things."""
    clashes = {
        public: owners
        for public, owners in _name_owners().items()
        if len(owners) > 1 and public not in SAME_ROLE and public not in SAME_MEANING
    }
    assert not clashes, "one name, several meanings:\n" + "\n".join(
        f"{public}: {', '.join(owners)}" for public, owners in sorted(clashes.items())
    )
    owners = _name_owners()
    for public in (*SAME_ROLE, *SAME_MEANING):
        assert len(owners.get(public, [])) > 1, f"{public} is defined once now: unlist it"


@pytest.mark.parametrize(("module", "alias"), sorted(DEPRECATED_ALIASES))
def test_deprecated_aliases_warn(module: str, alias: str) -> None:
    import importlib

    package = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=alias):
        replaced = getattr(package, alias)
    target_module, _, target_name = DEPRECATED_ALIASES[(module, alias)].rpartition(".")
    assert replaced is getattr(importlib.import_module(target_module), target_name)
