"""The user's own packages made part of the program, so that they are reduced as the script's own code.

The user's modules the program imports (`reducer.readers.user_modules` says which are the user's) are read,
never written: their top-level definitions the program needs, transitively, and their top-level
statements that bind nothing (effects: a `jax.config.update`, a registration) are placed before the
program's first import of them, in the order Python runs them; the imports of the user's modules go,
`pkg.mod.f` becomes the inlined `f`, a module's `__name__` its name, and names that would clash are
renamed (`f_2`). When that cannot be done faithfully (a star import, an import cycle, a module
reading its `__file__` or `globals()`, a name bound both by an import of the user's code and
otherwise), the program is left as it is, the package staying where it is found, and the note says why.
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from pathlib import Path

from reducer.readers.global_names import Globals, bound, identifiers
from reducer.readers.user_modules import Finder

MODULE = "-m "  # `-m NAME` spelt as the input's path (`reducer.entry.job_for` hands it to `read_input`)
NOTES: dict[str, list[str]] = {}  # by the script's path: what was inlined, or why not (the job logs them)
NEEDS_OWN = {"__file__", "__spec__", "__path__", "__loader__", "globals"}  # a module that needs these stays one
MAX_STATEMENTS = 3000


class CannotInline(Exception):
    """Why the user's code stays a package beside the program."""


# -- the user's modules as the program loads them ---------------------------------------------------------
@dataclass
class Unit:
    """One module of the user's (or the program itself, `__main__`), its imports of the user's code taken out."""

    name: str
    package: str  # where its relative imports start
    body: list = field(default_factory=list)  # top-level statements; a multi-name import split in one per name
    binds: dict = field(default_factory=dict)  # name -> [("stmt", i) | ("alias", module, name) | ("module", dotted)]
    deps: list = field(default_factory=list)  # the user's modules its top level imports
    lazy: list = field(default_factory=list)  # those its functions import
    future: bool = False  # `from __future__ import annotations`
    first: int | None = None  # where the first statement that imported the user's code was


def _after_header(body: list) -> int:
    """The index after a program's docstring and `__future__` imports."""
    at = int(bool(body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant))
    while at < len(body) and isinstance(body[at], ast.ImportFrom) and body[at].module == "__future__":
        at += 1
    return at


def _skipped(stmt: ast.stmt, unit: Unit, index: int) -> bool:
    """A module's docstring, `if __name__ == "__main__":` block and `__future__` imports (noted)."""
    if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
        unit.future |= any(a.name == "annotations" for a in stmt.names)
        return True
    if isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test) and "__name__" in ast.unparse(stmt.test):
        return True
    return index == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


def _effect(stmt: ast.stmt) -> bool:
    """Whether a module's statement is run for what it does (kept), not only for what it binds: all but
    definitions, assignments to names and imports (a loop filling a registry, `jax.config.update`)."""
    pure = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Assign | ast.AnnAssign | ast.AugAssign | \
        ast.Import | ast.ImportFrom
    return not isinstance(stmt, pure) or not bound([stmt])


class _Prune(ast.NodeTransformer):
    """Imports left with no names go; a block left empty gets `pass`."""

    def visit(self, node):
        node = super().visit(node) if not isinstance(node, ast.Import | ast.ImportFrom) else node
        if isinstance(node, ast.Import | ast.ImportFrom) and not node.names:
            return None
        for name in ("body", "orelse", "finalbody"):
            if isinstance(getattr(node, name, None), list) and not getattr(node, name) and \
                    (name == "body" or isinstance(node, ast.Try) and name == "finalbody" and not node.handlers):
                setattr(node, name, [ast.Pass()])
        return node


class Inliner:
    def __init__(self, finder: Finder):
        self.finder = finder
        self.units: dict[str, Unit] = {}
        self.order: list[str] = []  # as Python finishes running them
        self.loading: set[str] = set()

    def absolute(self, unit: Unit, level: int, module: str | None) -> str:
        if not level:
            return module or ""
        parts = unit.package.split(".") if unit.package else []
        if level > len(parts):
            raise CannotInline("the script imports relatively, outside a package (run it with -m)"
                               if unit.name == "__main__" else f"{unit.name}: relative import beyond its package")
        return ".".join(parts[:len(parts) - level + 1] + ([module] if module else []))

    def _user_import(self, unit: Unit, node, alias: ast.alias, lazy: bool) -> bool:
        """Whether `alias` of import `node` is of the user's code (then recorded: a binding, a module to load)."""
        if isinstance(node, ast.Import):
            if self.finder.locate(alias.name) is None:
                return False
            deps, local = [alias.name], alias.asname or alias.name.split(".")[0]
            what = ("module", alias.name if alias.asname else local)
        else:
            base = self.absolute(unit, node.level, node.module)
            if base == "__future__" or self.finder.locate(base) is None:
                if node.level:
                    raise CannotInline(f"{unit.name}: relative import of {base}, which is not a Python source module")
                return False
            if alias.name == "*":
                raise CannotInline(f"{unit.name} imports * from {base}")
            sub = f"{base}.{alias.name}"
            deps = [base] + ([sub] if self.finder.locate(sub) else [])
            local, what = alias.asname or alias.name, ("alias", base, alias.name)
        (unit.lazy if lazy else unit.deps).extend(deps)
        unit.binds.setdefault(local, []).append(what)
        return True

    def _strip(self, unit: Unit, stmt: ast.stmt) -> bool:
        """Takes the imports of the user's code out of `stmt`; whether there were any."""
        found, todo = False, [(stmt, False)]
        while todo:
            node, lazy = todo.pop()
            if isinstance(node, ast.Import | ast.ImportFrom):
                kept = [a for a in node.names if not self._user_import(unit, node, a, lazy)]
                found |= len(kept) < len(node.names)
                node.names = kept
            inner = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            todo += [(child, inner) for child in ast.iter_child_nodes(node)]
        return found

    def unit(self, name: str, package: str, tree: ast.Module, program: bool = False) -> Unit:
        unit = Unit(name, package)
        for index, stmt in enumerate(tree.body):
            if not program and _skipped(stmt, unit, index):
                continue
            if self._strip(unit, stmt) and unit.first is None:
                unit.first = len(unit.body)
            stmt = _Prune().visit(stmt)
            if stmt is None:
                continue
            if isinstance(stmt, ast.Import | ast.ImportFrom) and len(stmt.names) > 1:
                unit.body += [ast.copy_location(type(stmt)(**{**vars(stmt), "names": [a]}), stmt) for a in stmt.names]
            else:
                unit.body.append(stmt)
        for i, stmt in enumerate(unit.body):
            for n in bound([stmt]):
                unit.binds.setdefault(n, []).append(("stmt", i))
        return unit

    def load(self, name: str) -> Unit:
        """The user's module `name`, with its parents and what it imports, in the order Python runs them."""
        parent = name.rpartition(".")[0]
        if parent and parent not in self.units:
            self.load(parent)
        if name in self.units:
            return self.units[name]
        located = self.finder.locate(name)
        if located is None:
            raise CannotInline(f"{name} is not a Python source module")
        text = located.file.read_text(encoding="utf-8") if located.file else ""
        tree = ast.parse(text, filename=str(located.file))
        unit = self.units[name] = self.unit(name, name if located.dirs else parent, tree)
        self.finish(unit)
        return unit

    def finish(self, unit: Unit) -> None:
        self.loading.add(unit.name)
        for dep in unit.deps:
            if dep in self.loading and not unit.name.startswith(dep + ".") and dep != unit.name:
                raise CannotInline(f"import cycle: {unit.name} imports {dep}, which imports it")
            self.load(dep)
        self.loading.discard(unit.name)
        self.order.append(unit.name)
        for dep in unit.lazy:
            self.load(dep)

    def resolve(self, module: str, name: str, depth: int = 0) -> tuple:
        """What `name` is in `module`: ("def", module, name), ("module", dotted) or ("builtin", name)."""
        unit = self.units.get(module) or self.load(module)
        binds = unit.binds.get(name, [])
        sub = f"{module}.{name}"
        if not binds:
            return ("module", sub) if module != "__main__" and self.finder.locate(sub) else ("builtin", name)
        if all(b[0] == "stmt" for b in binds):
            return ("def", module, name)
        if len(set(binds)) > 1 or depth > 50:
            raise CannotInline(f"{name} in {module} is bound both by an import of the user's code and otherwise")
        what = binds[0]
        if what[0] == "module":
            return what
        target = self.units.get(what[1]) or self.load(what[1])
        if self.finder.locate(f"{what[1]}.{what[2]}") and \
                not any(b[0] == "stmt" for b in target.binds.get(what[2], [])):
            return ("module", f"{what[1]}.{what[2]}")
        return self.resolve(what[1], what[2], depth + 1)

    def chain(self, module: str, name: str, attrs: list[str]) -> tuple[tuple, int]:
        """What `name.attrs…` reads in `module`, and how many of the attributes that took."""
        symbol, used = self.resolve(module, name), 0
        while symbol[0] == "module" and used < len(attrs):
            symbol, used = self.resolve(symbol[1], attrs[used]), used + 1
        return symbol, used

    # -- what the program needs of it, under which names ------------------------------------------------
    def needed(self) -> dict[str, set[int]]:
        """The statements kept, by module: all of the program's, each module's effects (`_effect`, and
        definitions its own decorators register), and the definitions these read, transitively."""
        kept: dict[str, set[int]] = {}
        self.free, self.program_names = set(), set()
        todo: list[tuple[str, int]] = []
        while len(kept) < len(self.units) or todo:
            for name in [n for n in self.units if n not in kept]:
                kept[name] = set()
                todo += [(name, i) for i, s in enumerate(self.units[name].body)
                         if name == "__main__" or _effect(s) or self._registers(name, s)]
            if todo:
                self._keep(*todo.pop(), kept, todo)
        return kept

    def _registers(self, module: str, stmt: ast.stmt) -> bool:
        """A definition decorated by the user's own code (a registration, as likely as not): an effect."""
        for decorator in getattr(stmt, "decorator_list", ()):
            base = decorator.func if isinstance(decorator, ast.Call) else decorator
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and self.resolve(module, base.id)[0] in ("def", "module"):
                return True
        return False

    def _keep(self, module: str, index: int, kept: dict, todo: list) -> None:
        if index in kept[module]:
            return
        kept[module].add(index)

        def on(name, attrs):
            if name in NEEDS_OWN and module != "__main__":
                raise CannotInline(f"{module} reads its own {name}")
            symbol, used = self.chain(module, name, attrs)
            if symbol[0] == "module":
                raise CannotInline(f"{module} uses the module {symbol[1]} itself, not a name in it")
            if symbol[0] == "def":
                todo.extend((symbol[1], i) for kind, i in self.units[symbol[1]].binds[symbol[2]])
            if module == "__main__":
                self.program_names.add(name)
            elif symbol[0] == "builtin":
                self.free.add(name)

        Globals(on).visit(copy.deepcopy(self.units[module].body[index]))

    def _key(self, symbol: tuple):
        """One identity for the same import in several modules (`import jax.numpy as jnp`)."""
        unit = self.units[symbol[1]]
        binds = unit.binds.get(symbol[2], [])
        where = [b[1] for b in binds if b[0] == "stmt"]
        if len(where) == 1 == len(binds) and isinstance(unit.body[where[0]], ast.Import | ast.ImportFrom):
            return ast.dump(unit.body[where[0]], include_attributes=False)
        return symbol

    def finals(self, kept: dict) -> dict:
        program = self.units["__main__"]
        aliases = {n for n, b in program.binds.items() if b[0][0] != "stmt"}
        fixed = self.program_names - aliases
        spelled = identifiers(ast.Module(program.body, [])) | self.free | {
            n for m, idx in kept.items() for i in idx for n in identifiers(self.units[m].body[i])}
        prefer = {}  # the program's own name for what it imports: the definition's own name first
        for symbol, name in sorted(((self.chain("__main__", n, [])[0], n) for n in aliases),
                                   key=lambda pair: (pair[1] != pair[0][-1], pair[1])):
            if symbol[0] == "def":
                prefer.setdefault(symbol, name)
        symbols = [*prefer, *((m, n) for m in self.order if m != "__main__" for n, b in self.units[m].binds.items()
                              if b[0][0] == "stmt" and {i for _, i in b} & kept[m])]
        finals, taken, by_key = {}, {}, {}
        for symbol in symbols:
            symbol = symbol if len(symbol) == 3 else ("def", *symbol)
            key = self._key(symbol)
            if key in by_key or symbol in finals:
                finals.setdefault(symbol, by_key.get(key))
                continue
            want = prefer.get(symbol, symbol[2])
            if want in taken or want in self.free or (want in fixed and self._key(("def", "__main__", want)) != key):
                want = next(f"{want}_{i}" for i in range(2, 10**6) if f"{want}_{i}" not in spelled | set(taken))
            taken[want] = by_key[key] = finals[symbol] = want
        return finals

    def rewrite(self, module: str, stmt: ast.stmt, finals: dict) -> ast.stmt:
        def on(name, attrs):
            symbol, used = self.chain(module, name, attrs)
            final = finals.get(symbol, name) if symbol[0] == "def" else name
            return (final, used) if final != name or used else None

        stmt = Globals(on, None if module == "__main__" else module).visit(copy.deepcopy(stmt))
        if self.units[module].future and not self.units["__main__"].future:
            for node in ast.walk(stmt):  # as `from __future__ import annotations` had them: text
                name = "returns" if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else "annotation"
                if isinstance(node, ast.arg | ast.AnnAssign | ast.FunctionDef | ast.AsyncFunctionDef) and \
                        getattr(node, name) is not None:
                    setattr(node, name, ast.Constant(ast.unparse(getattr(node, name))))
        return stmt

    def run(self, source: str, package: str) -> tuple[str, list[str]]:
        program = self.units["__main__"] = self.unit("__main__", package, ast.parse(source), program=True)
        program.future = any(isinstance(s, ast.ImportFrom) and s.module == "__future__" and
                             any(a.name == "annotations" for a in s.names) for s in program.body)
        if package:
            self.load(package)  # `python -m pkg.mod` runs the package's `__init__` first
        self.finish(program)
        modules = [m for m in self.order if m != "__main__"]
        if not modules:
            return source, []
        kept = self.needed()
        if sum(len(v) for k, v in kept.items() if k != "__main__") > MAX_STATEMENTS:
            raise CannotInline(f"more than {MAX_STATEMENTS} statements of the user's code would be inlined")
        finals = self.finals(kept)
        at = program.first if program.first is not None else _after_header(program.body)
        block, seen = [], {ast.dump(s) for s in program.body[:at]}
        for module in (m for m in self.order if m != "__main__"):
            for i in sorted(kept.get(module, ())):
                stmt = self.rewrite(module, self.units[module].body[i], finals)
                text = ast.dump(stmt)
                if not (isinstance(stmt, ast.Import | ast.ImportFrom) and text in seen):
                    block.append(stmt)
                seen.add(text)
        body = [self.rewrite("__main__", s, finals) for s in program.body]
        body[at:at] = block
        text = ast.unparse(ast.fix_missing_locations(ast.Module(body, [])))
        compile(text, "<inlined>", "exec")
        return text + "\n", [m for m in self.order if m != "__main__"]


def absolute_imports(source: str, package: str) -> str:
    """`source` with its relative imports spelt from `package` (`from .model import Net` in `pkg.train`
    is `from pkg.model import Net`): a module run by `-m` that stays beside its package runs as a script."""
    tree = ast.parse(source)
    relative = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    parts = package.split(".") if package else []
    if not relative or any(n.level > len(parts) for n in relative):
        return source
    for node in relative:
        node.module = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
        node.level = 0
    return ast.unparse(tree) + "\n"


def standalone(script: Path, source: str, package: str | None = None, cwd: Path | None = None) -> str:
    """`source` (of `script`, or of the module `-m` runs in `package`) with the user's code it imports
    made part of it; what was inlined, or why not, is noted in `NOTES[str(script)]`."""
    cwd = Path(cwd or Path.cwd()).resolve()
    roots = (cwd,) if package is not None else (Path(script).resolve().parent, cwd)
    inliner = Inliner(Finder(tuple(dict.fromkeys(roots))))
    try:
        text, modules = inliner.run(source, package or "")
    except Exception as exc:  # a module it cannot read (or a bug here): the program as it is
        reason = str(exc) if isinstance(exc, CannotInline) else f"{type(exc).__name__}: {exc}"
        names = ", ".join(sorted(inliner.units.keys() - {"__main__"})) or "a package"
        NOTES[str(script)] = [f"the user's code it imports ({names}) stays a package beside the program, "
                              f"not inlined: {reason}"]
        return absolute_imports(source, package) if package else source
    if modules:
        NOTES[str(script)] = [f"the user's code the program imports is made part of it: {', '.join(modules)} "
                              f"(its definitions inlined; the reproducer imports none of it)"]
    return text
