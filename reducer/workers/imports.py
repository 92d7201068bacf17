"""A warm worker lends a candidate no module that the candidate's own imports would not load.

The fork server imports jax and the script's libraries once, and the long-lived runner keeps what
earlier candidates imported. A candidate that lost `import jax.experimental.ode` but still calls
`jax.experimental.ode.odeint` after a bare `import jax` would work there and die with AttributeError
in a fresh interpreter. So, before a script candidate runs, every module loaded after the worker's
start (`BASE`: the interpreter's start-up and the worker's own modules) is taken out of
`sys.modules` and unbound from its package; it is put back, with the modules its own loading
imported (recorded while it was first loaded), when the candidate imports it: the same module
objects, not executed again, so the worker stays warm while the candidate sees what a fresh
interpreter running its imports would see. `preload_modules` names the installed modules a script
imports, for the workers to import once before the first candidate.
"""
from __future__ import annotations

import builtins
import importlib
import importlib.abc
import importlib.util
import sys
import types

#: modules loaded before `record()`: never taken away
BASE: frozenset[str] = frozenset()
#: module name -> names of the modules its loading imported
EDGES: dict[str, set[str]] = {}
#: modules taken away from the candidate, and whether each was bound on its package
STASH: dict[str, types.ModuleType] = {}
BOUND: set[str] = set()
#: the module being given back through the import system, while what it imported is put back
_PENDING: dict[str, types.ModuleType] = {}
_BOOTSTRAP = sys.modules["_frozen_importlib"]
_LOAD_CODE = _BOOTSTRAP._load_unlocked.__code__
_original_import = builtins.__import__
_original_import_module = importlib.import_module


def _loading() -> str | None:
    """The module whose loading is running now (innermost), if any."""
    if not _BOOTSTRAP._module_locks:  # no module is being loaded: a call-time import
        return None
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code is _LOAD_CODE:
            spec = frame.f_locals.get("spec")
            return getattr(spec, "name", None)
        frame = frame.f_back
    return None


def _note(name: str, fromlist=()) -> None:
    importer = _loading()
    if importer is None:
        return
    deps = EDGES.setdefault(importer, set())
    if importer != name:
        deps.add(name)
    for item in fromlist or ():
        if f"{name}.{item}" in sys.modules:
            deps.add(f"{name}.{item}")


def _recording_import(name, globals=None, locals=None, fromlist=(), level=0):
    module = _original_import(name, globals, locals, fromlist, level)
    if level:
        package = (globals or {}).get("__package__") or (globals or {}).get("__name__", "")
        try:
            name = importlib.util.resolve_name("." * level + name, package)
        except (ImportError, ValueError):
            return module
    _note(name, fromlist)
    return module


def _recording_import_module(name, package=None):
    module = _original_import_module(name, package)
    _note(module.__name__)
    return module


def record() -> None:
    """From now on, note which modules each loading module imports; what is loaded already is the
    base a candidate always sees."""
    global BASE
    BASE = frozenset(sys.modules)
    builtins.__import__ = _recording_import
    importlib.import_module = _recording_import_module
    sys.meta_path.insert(0, _Lender())


def _imported(name: str, module) -> bool:
    """Whether the import system loaded `module` as `name`: not a module an extension made for
    itself (`jaxlib._jax.mlir`) or an alias, which a fresh interpreter has as soon as their
    package, and which are left where they are."""
    spec = getattr(module, "__spec__", None) if isinstance(module, types.ModuleType) else None
    return spec is not None and spec.name == name


def lend_nothing() -> None:
    """Take every module loaded since `record()` away from the candidate about to run."""
    if not BASE:  # not a worker: nothing was lent
        return
    for name, module in list(sys.modules.items()):
        if name not in BASE and _imported(name, module):
            STASH[name] = sys.modules.pop(name)
    for name, module in STASH.items():
        parent, _, child = name.rpartition(".")
        owner = sys.modules.get(parent) or STASH.get(parent)
        if owner is not None and vars(owner).get(child) is module:
            del vars(owner)[child]
            BOUND.add(name)


def _give_back(name: str) -> list[str]:
    """Put `name` back, its packages first, bound on its package as it was; returns what came back."""
    module = STASH.pop(name, None)
    if module is None:
        return []
    parent, _, child = name.rpartition(".")
    back = _give_back(parent) if parent else []
    sys.modules[name] = module
    owner = sys.modules.get(parent) or _PENDING.get(parent)
    if name in BOUND and owner is not None:
        vars(owner)[child] = module
        BOUND.discard(name)
    return back + [name]


def _give_back_imports_of(name: str) -> None:
    """Put back what loading `name` imported, and what those (and their packages) imported in turn:
    what importing `name` in a fresh interpreter would load."""
    todo = list(EDGES.get(name, ()))
    while todo:
        for back in _give_back(todo.pop()):
            todo.extend(EDGES.get(back, ()))


class _Lender(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an import of a module taken away: the same module object, not executed again."""

    def find_spec(self, name, path=None, target=None):
        module = STASH.pop(name, None)
        if module is None:
            return None
        # `name` itself stays out of sys.modules until the import system puts it there through this
        # loader: found there, its own spec would be loaded (and the module executed) again
        _PENDING[name] = module
        try:
            _give_back_imports_of(name)
        finally:
            del _PENDING[name]
        spec = importlib.util.spec_from_loader(name, self)
        spec.loader_state = (module, vars(module).get("__spec__"))
        return spec

    def create_module(self, spec):
        return spec.loader_state[0]

    def exec_module(self, module) -> None:
        original = module.__spec__.loader_state[1]
        if original is not None:
            module.__spec__ = original
        BOUND.discard(module.__name__)


def preload_modules(source: str) -> tuple[str, ...]:
    """Installed modules the script imports, for the warm workers to import once."""
    import ast
    import importlib.util

    names = ["numpy", "jax", "jax.numpy"]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    keep = []
    for name in dict.fromkeys(names):
        try:
            spec = importlib.util.find_spec(name.split(".")[0])
        except (ImportError, ValueError):
            continue
        origin = (spec.origin or "") if spec else ""
        if spec and ("site-packages" in origin or "dist-packages" in origin or spec.origin in ("built-in", "frozen")
                     or "/lib/python3" in origin):
            keep.append(name)
    return tuple(keep)
