"""The workspace's published distributions as their pyproject files declare them, and the imports
their modules make, classified by when they run.

deptry answers "is every import declared somewhere?"; these tests need more: whether an import
runs when the module is imported (then the base install must provide it) or only when a
function that an extra enables is called, whether a failed import is swallowed on purpose (an
optional integration) or re-raised with an install hint, and whether the extra a hint names is
the one that installs the module. So the imports are read here with `ast`.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
PACKAGES = REPO / "packages"
UNPUBLISHED = frozenset({"shadowzarr-testing"})
IMPORT_HELPERS = frozenset({"import_module_for"})
"""The umbrella's ``import_module_for(module, extra, wanted)``: an import whose ImportError names
``shadowzarr[extra]``."""


class When(Enum):
    """When an import statement runs, which decides what must declare its distribution."""

    MODULE = "module"  # when the module is imported: the base dependencies
    CALL = "call"  # when a function runs: the base dependencies or an extra
    HINTED = "hinted"  # re-raised with an install hint: the base dependencies or an extra
    OPTIONAL = "optional"  # a failure is swallowed: used when present, declared nowhere
    TYPING = "typing"  # under TYPE_CHECKING: never at run time


@dataclass(frozen=True, slots=True)
class Import:
    module: str  # the dotted name imported
    when: When
    path: Path
    line: int
    helper_extra: str | None = None  # an import helper's hint names this extra ("": the base)

    @property
    def top(self) -> str:
        return self.module.split(".")[0]

    def where(self) -> str:
        shown = self.path.relative_to(REPO) if self.path.is_relative_to(REPO) else self.path
        return f"{shown}:{self.line}"


@dataclass(frozen=True, slots=True)
class Distribution:
    """A workspace member: its name, import packages, base requirements and extras."""

    name: str
    root: Path
    import_names: tuple[str, ...]
    dependencies: tuple[Requirement, ...]
    extras: dict[str, tuple[Requirement, ...]]

    @property
    def source(self) -> Path:
        return self.root / "src"

    def modules(self) -> list[Path]:
        return sorted(self.source.rglob("*.py"))

    def public_modules(self) -> list[str]:
        """Dotted names of every module whose path has no part starting with an underscore
        (``__init__`` stands for its package)."""
        names = []
        for path in self.modules():
            parts = list(path.relative_to(self.source).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if parts[-1] == "__main__" or any(p.startswith("_") for p in parts):
                continue
            names.append(".".join(parts))
        return names

    def requirements(self, extras: tuple[str, ...] = ()) -> set[str]:
        """Canonical names of what the base install (and the given extras) declare directly,
        following this distribution's references to its own extras."""
        found = {canonicalize_name(r.name) for r in self.dependencies}
        pending, seen = list(extras), set()
        while pending:
            extra = pending.pop()
            if extra in seen:
                continue
            seen.add(extra)
            for requirement in self.extras[extra]:
                if canonicalize_name(requirement.name) == self.name:
                    pending.extend(requirement.extras)
                else:
                    found.add(canonicalize_name(requirement.name))
        return found

    def all_requirements(self) -> set[str]:
        return self.requirements(tuple(self.extras))


def distributions() -> dict[str, Distribution]:
    """Every published member of the workspace, by canonical name."""
    found = {}
    for pyproject in sorted(PACKAGES.glob("*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        name = canonicalize_name(project["name"])
        if name in UNPUBLISHED:
            continue
        source = pyproject.parent / "src"
        found[name] = Distribution(
            name=name,
            root=pyproject.parent,
            import_names=tuple(sorted(p.name for p in source.iterdir() if p.is_dir())),
            dependencies=tuple(Requirement(r) for r in project.get("dependencies", [])),
            extras={
                extra: tuple(Requirement(r) for r in requirements)
                for extra, requirements in project.get("optional-dependencies", {}).items()
            },
        )
    return found


def imports_of(path: Path) -> list[Import]:
    """Every absolute import of a third-party or workspace module in one source file."""
    collector = _Collector(path)
    collector.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return [i for i in collector.found if i.top not in sys.stdlib_module_names]


class _Collector(ast.NodeVisitor):
    def __init__(self, path: Path) -> None:
        self.path = path
        self.found: list[Import] = []
        self._context: list[When] = []
        self._functions = 0

    def _when(self) -> When:
        if self._context:
            return self._context[-1]
        return When.CALL if self._functions else When.MODULE

    def _add(self, module: str, line: int, helper_extra: str | None = None) -> None:
        when = self._when()
        if helper_extra is not None and when is not When.TYPING:
            when = When.HINTED
        self.found.append(Import(module, when, self.path, line, helper_extra))

    def _inside(self, when: When, nodes: list[ast.stmt]) -> None:
        self._context.append(when)
        for node in nodes:
            self.visit(node)
        self._context.pop()

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" in ast.unparse(node.test):
            self._inside(When.TYPING, node.body)
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        handlers = [h for h in node.handlers if _catches_import_error(h)]
        if handlers and self._when() is not When.TYPING:
            reraises = all(any(isinstance(n, ast.Raise) for n in ast.walk(h)) for h in handlers)
            self._inside(When.HINTED if reraises else When.OPTIONAL, node.body)
        else:
            for child in node.body:
                self.visit(child)
        for child in [*node.handlers, *node.orelse, *node.finalbody]:
            self.visit(child)

    def visit_With(self, node: ast.With) -> None:
        if any(_suppresses_import_error(item.context_expr) for item in node.items):
            self._inside(When.OPTIONAL, node.body)
        else:
            self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._functions += 1
        self.generic_visit(node)
        self._functions -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self._add(node.module, node.lineno)

    def visit_Call(self, node: ast.Call) -> None:
        name = _called_name(node.func)
        module = _constant(node.args[0]) if node.args else None
        if module is not None and name in IMPORT_HELPERS:
            extra = _constant(node.args[1]) if len(node.args) > 1 else None
            self._add(module, node.lineno, extra or "")
        elif module is not None and name == "import_module":
            self._add(module, node.lineno)
        self.generic_visit(node)


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _constant(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught] if caught else []
    return any(_called_name(n) in ("ImportError", "ModuleNotFoundError") for n in names)


def _suppresses_import_error(expression: ast.expr) -> bool:
    return (
        isinstance(expression, ast.Call)
        and _called_name(expression.func) == "suppress"
        and any(_called_name(a) in ("ImportError", "ModuleNotFoundError") for a in expression.args)
    )
