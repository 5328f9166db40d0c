"""Copy the JS store's browser modules into the catalog package, for the catalog page's trees.

The page (``catalog.html``, written by ``generate_catalog``) opens an asset's references with
the JS store (``js/``) and lists its groups and arrays through zarrita. The package ships the
ES modules that needs, as built: ``js/dist`` (``npx tsc -p js/tsconfig.json``) from its entry
``index.js``, and the zarrita and ``@zarrita/storage`` modules it reaches, each with its
package's licence. Bare specifiers stay in the files; the page's import map resolves them.
Codecs zarrita loads on demand (numcodecs) are left out: a tree reads metadata only.

    uv run python tools/catalog_viewer_modules.py          # build js/dist first
    uv run python tools/catalog_viewer_modules.py --check  # exit 1 when the copy is stale
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JS = ROOT / "js"
TARGET = ROOT / "packages/shadowzarr-catalog/src/shadowzarr_catalog/viewer/modules"

PACKAGES = {
    # bare specifier → (folder it is copied to, file it names, package folder with LICENSE)
    "shadowzarr": ("shadowzarr", JS / "dist/index.js", JS),
    "zarrita": ("zarrita", JS / "node_modules/zarrita/dist/src/index.js", None),
    "@zarrita/storage/fetch": (
        "zarrita-storage",
        JS / "node_modules/@zarrita/storage/dist/src/fetch.js",
        None,
    ),
}
OPTIONAL = ("numcodecs/",)
"""Specifiers only imported dynamically, for codecs a tree never decodes."""

_IMPORT = re.compile(
    r"""^(?!\s*(?://|/?\*)).*?(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["'](?P<spec>[^"'\s]+)["']""",
    re.MULTILINE,
)
_SOURCE_MAP = re.compile(r"^//# sourceMappingURL=.*$", re.MULTILINE)


def _package_root(entry: Path) -> Path:
    for parent in entry.parents:
        if (parent / "package.json").is_file():
            return parent
    raise SystemExit(f"{entry}: no package.json above it")


def collect() -> dict[str, bytes]:
    """Relative path under ``modules/`` → content, for every module the entries reach."""
    out: dict[str, bytes] = {}
    for _, (folder, entry, package) in PACKAGES.items():
        if not entry.is_file():
            raise SystemExit(f"{entry} is missing: build js/ first (npx tsc -p js/tsconfig.json)")
        package = package or _package_root(entry)
        base = entry.parent
        pending = [entry]
        seen: set[Path] = set()
        while pending:
            module = pending.pop()
            if module in seen:
                continue
            seen.add(module)
            text = module.read_text(encoding="utf-8")
            for match in _IMPORT.finditer(text):
                spec = match["spec"]
                if spec.startswith("."):
                    target = (module.parent / spec).resolve()
                    if not target.is_file():
                        raise SystemExit(f"{module}: imports {spec}, which is not a file")
                    if base not in target.parents:
                        raise SystemExit(f"{module}: {spec} leaves {base}")
                    pending.append(target)
                elif spec not in PACKAGES and not spec.startswith(OPTIONAL):
                    raise SystemExit(f"{module}: imports {spec}, which the page cannot resolve")
            relative = module.relative_to(base).as_posix()
            out[f"{folder}/{relative}"] = _SOURCE_MAP.sub("", text).rstrip().encode() + b"\n"
        licence = package / "LICENSE"
        if licence.is_file():
            out[f"{folder}/LICENSE"] = licence.read_bytes()
    out["importmap.json"] = (
        json.dumps(
            {
                "imports": {
                    spec: f"{folder}/{entry.relative_to(entry.parent).as_posix()}"
                    for spec, (folder, entry, _) in PACKAGES.items()
                }
            },
            indent=1,
        ).encode()
        + b"\n"
    )
    return dict(sorted(out.items()))


def current() -> dict[str, bytes]:
    if not TARGET.is_dir():
        return {}
    return {
        p.relative_to(TARGET).as_posix(): p.read_bytes() for p in TARGET.rglob("*") if p.is_file()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the copy is stale")
    args = parser.parse_args()
    wanted = collect()
    if args.check:
        have = current()
        stale = sorted(k for k in wanted.keys() | have.keys() if wanted.get(k) != have.get(k))
        if stale:
            print(f"stale catalog viewer modules: {', '.join(stale[:10])}", file=sys.stderr)
            return 1
        print(f"{len(wanted)} catalog viewer modules up to date")
        return 0
    shutil.rmtree(TARGET, ignore_errors=True)
    for relative, data in wanted.items():
        path = TARGET / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    print(f"wrote {len(wanted)} files, {sum(map(len, wanted.values()))} bytes, under {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
