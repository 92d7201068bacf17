"""Where the user's own modules are: on the script's folder (`sys.path[0]`; the working directory
for `-m`), in the working directory (or on the path inside it: `PYTHONPATH=src`), or installed in
editable mode (a distribution whose
`direct_url.json` says `"dir_info": {"editable": true}`, the module's file lying in its project
folder). Nothing is imported to find them (`importlib.util.find_spec` of a top-level name runs none
of its code). Everything else (site-packages, the standard library, and jax, jaxlib, enzyme_ad and
reducer itself, however installed) is a library."""
from __future__ import annotations

import importlib.machinery
import importlib.metadata
import importlib.util
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from reducer.errors import NOT_FOUND, ReducerError

NEVER_USER = {"jax", "jaxlib", "enzyme_ad", "reducer", "oracles"}  # what reports are about, and the tool


@dataclass(frozen=True)
class Located:
    file: Path | None  # None: a namespace package
    dirs: tuple[Path, ...] = ()  # a package's folders


def _in_folder(folder: Path, name: str, namespace: bool = False) -> Located | None:
    if (folder / name / "__init__.py").is_file():
        return Located(folder / name / "__init__.py", (folder / name,))
    if (folder / f"{name}.py").is_file():
        return Located(folder / f"{name}.py")
    if namespace and (folder / name).is_dir() and any((folder / name).glob("*.py")):
        return Located(None, (folder / name,))
    return None


def editable_dirs() -> tuple[Path, ...]:
    """The project folders of the distributions installed in editable mode (`pip install -e`)."""
    found = []
    for dist in importlib.metadata.distributions():
        try:
            info = json.loads(dist.read_text("direct_url.json") or "{}")
        except (OSError, ValueError):
            continue
        url = str(info.get("url", ""))
        if (info.get("dir_info") or {}).get("editable") and url.startswith("file:"):
            found.append(Path(unquote(urlparse(url).path)).resolve())
    return tuple(found)


@dataclass
class Finder:
    """Where the user's modules are: `roots` first (the script's folder, the working directory), then
    what is installed in editable mode or found on the path inside a root (`PYTHONPATH=src`)."""

    roots: tuple[Path, ...]
    _cache: dict = field(default_factory=dict)
    _editable: tuple | None = None

    def _top(self, name: str) -> Located | None:
        if name in NEVER_USER or name in sys.stdlib_module_names:
            return None
        for root in self.roots:
            if (found := _in_folder(root, name)) is not None:
                return found
        try:
            spec = importlib.util.find_spec(name)  # a top-level name: nothing of it is run
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin not in (None, "built-in", "frozen", "namespace"):
            origin = Path(spec.origin).resolve()
            if {"site-packages", "dist-packages"} & set(origin.parts) or origin.suffix != ".py":
                return None
            if self._editable is None:
                self._editable = editable_dirs()
            if any(origin.is_relative_to(d) for d in (*self._editable, *self.roots)):  # PYTHONPATH=src too
                return Located(origin, tuple(Path(p) for p in spec.submodule_search_locations or ()))
            return None
        return next((f for root in self.roots if (f := _in_folder(root, name, namespace=True))), None)

    def locate(self, dotted: str) -> Located | None:
        """The user's module `dotted`, or None when it is not the user's (or not found)."""
        if dotted not in self._cache:
            head, _, last = dotted.rpartition(".")
            parent = self.locate(head) if head else None
            if not head:
                self._cache[dotted] = self._top(dotted)
            else:
                self._cache[dotted] = next((f for d in parent.dirs if (f := _in_folder(d, last, True))),
                                           None) if parent else None
        return self._cache[dotted]


def module_source(name: str, cwd: Path | None = None) -> tuple[Path, str]:
    """The file `python -m NAME` runs from `cwd` (a package's `__main__`) and its package, found
    without running any of the package's code; a one-line error when there is none."""
    cwd = Path(cwd or Path.cwd())
    parts = name.split(".")
    if not all(p.isidentifier() for p in parts):
        raise ReducerError(f"-m {name}: not a module name", NOT_FOUND)
    try:
        spec = importlib.machinery.PathFinder.find_spec(parts[0], [str(cwd)]) or importlib.util.find_spec(parts[0])
        for i in range(1, len(parts) + 1):  # the submodules, then a package's __main__
            if spec is None or spec.submodule_search_locations is None:
                break
            full = ".".join(parts[:i + 1]) if i < len(parts) else f"{name}.__main__"
            spec = importlib.machinery.PathFinder.find_spec(full, list(spec.submodule_search_locations))
    except (ImportError, ValueError):
        spec = None
    if not spec or not spec.origin or not spec.origin.endswith(".py"):
        raise ReducerError(f"-m {name}: no module named {name!r} (looked in {cwd} and the installed packages)",
                           NOT_FOUND)
    package = spec.name.rpartition(".")[0]
    return Path(spec.origin), package
