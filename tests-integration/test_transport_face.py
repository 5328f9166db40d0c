"""The transport has one door: other packages import ``shadowzarr_store.transport`` (its
``__all__``) and nothing under it, and a `Transport` is built only by `transport_for`.

Read statically with `ast` from every ``packages/*/src`` tree and ``tools``, nothing imported.
The store package itself, the transport's home, may use the transport's modules (its reader
needs the local-file stamps, the coalescing rule, the redirect statuses); it may not build a
`Transport` either. Tests may: they check the transport's parts one by one.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FACE = "shadowzarr_store.transport"
STORE_SRC = REPO / "packages" / "shadowzarr-store" / "src"
FACTORY = (STORE_SRC / "shadowzarr_store" / "transport" / "client.py", "transport_for")
CHECKED = sorted(
    [path for src in REPO.glob("packages/*/src") for path in src.rglob("*.py")]
    + list((REPO / "tools").rglob("*.py"))
)


def _face_names() -> set[str]:
    """What the face offers: its ``__all__``, read from its ``__init__``."""
    tree = ast.parse((STORE_SRC / "shadowzarr_store" / "transport" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    raise AssertionError("shadowzarr_store.transport has no __all__")


FACE_NAMES = _face_names()


def back_doors(source: str) -> list[str]:
    """Imports that pass the face: a transport module by name, or a name the face does not
    offer (``from shadowzarr_store.transport import http1`` is a module too)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith(FACE + ".")]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.startswith(FACE + "."):
                found.append(node.module)
            elif node.module == FACE:
                found += [f"{FACE}.{a.name}" for a in node.names if a.name not in FACE_NAMES]
    return found


def constructions(source: str, allowed_function: str | None = None) -> list[int]:
    """Lines calling ``Transport(…)`` outside the function ``allowed_function``."""
    tree = ast.parse(source)
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == allowed_function:
            allowed.update(id(inner) for inner in ast.walk(node))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and id(node) not in allowed
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "Transport")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "Transport")
        )
    ]


def test_other_packages_use_the_face_only() -> None:
    found = {
        str(path.relative_to(REPO)): doors
        for path in CHECKED
        if not path.is_relative_to(STORE_SRC)  # the transport's own package (see above)
        and (doors := back_doors(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_transport_built_by_the_factory_only() -> None:
    found = {
        str(path.relative_to(REPO)): lines
        for path in CHECKED
        if (
            lines := constructions(
                path.read_text(encoding="utf-8"), FACTORY[1] if path == FACTORY[0] else None
            )
        )
    }
    assert found == {}


def test_the_factory_builds_one() -> None:
    assert constructions(FACTORY[0].read_text(encoding="utf-8")) != []
    assert constructions(FACTORY[0].read_text(encoding="utf-8"), FACTORY[1]) == []


def test_the_checks_catch_what_they_are_for() -> None:
    source = (
        "from shadowzarr_store.transport.local import probe_local\n"
        "from shadowzarr_store.transport import http1, redact\n"
        "import shadowzarr_store.transport.pools\n"
        "from shadowzarr_store import transport\n"
        "def f(options):\n"
        "    return transport.Transport(options), Transport()\n"
    )
    assert back_doors(source) == [
        "shadowzarr_store.transport.local",
        "shadowzarr_store.transport.http1",
        "shadowzarr_store.transport.pools",
    ]
    assert constructions(source) == [6, 6]
    assert constructions(source, "f") == []
