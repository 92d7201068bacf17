"""The architecture check: lower layers never import higher ones, modules, functions and lines stay
small, no block of code is written twice, and no signature's family is compared with a family's name
outside `oracles/` (what kind of failure it is, `oracles.kinds` says).

    python benchmarks/architecture.py     # one violation a line, exit 1; or a one-line summary, exit 0

`tests/test_architecture.py` runs the same checks in process. What is checked, in `reducer/` and
`oracles/` (not tests, benchmarks, the corpus or data):

- layers: a module may import modules of its own layer and of the layers below it (`LAYERS`, bottom
  first), never one above; and never what `FORBIDDEN` takes from its layer. Every import counts,
  those inside functions included (a lazy import is a dependency all the same).
- size: no module over `MAX_MODULE_LINES` lines (every line of the file), no function over
  `MAX_FUNCTION_LINES` (from its `def` line to its last line, decorators left out). A nested function
  is counted twice: within the function that holds it, and on its own. No line over `MAX_LINE`
  characters.
- duplicates: no block of `MIN_DUPLICATE_LINES` or more consecutive lines that stands in two places,
  lines compared with their whitespace collapsed, and blank lines, comments, docstrings and import
  statements left out.
- circles: no import circle between modules (every import counts, a package's `__init__` included,
  and one inside a function as much as one at the top).
- run state: the settings of a run (`FROZEN`: the sandbox, the options, the limits, the established
  failure) are frozen dataclasses, never changed through `object.__setattr__` but in their own
  `__post_init__`: a run that needs others makes them (`replace`). No attribute of a job (`JOBS`,
  `self` in their methods, or a job handed to a function as `job` or `runs`) is assigned after its
  constructor, but those `STILL_ASSIGNED` lists by module and attribute: the list only gets shorter.
"""
from __future__ import annotations

import ast
import hashlib
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("reducer", "oracles")

#: the layers, bottom first: a module belongs to the layer of the longest prefix that names it (a
#: package's own name, `reducer` or `oracles`, names only its `__init__`: a new top-level module
#: is placed in a layer here, not taken for the package's)
LAYERS: list[tuple[str, str, tuple[str, ...]]] = [
    ("oracles", "failure families, signatures, run results: know nothing of the reducer", ("oracles",)),
    ("base", "errors, files, TOML, environment, where a report is filed, code put before a candidate, what is known of the libraries users train with, the readers of every input form (scripts, notebooks, test ids, the "
     "user's own code made part of the program), timeouts, JAX's compilation cache, the generic engine and the base of every pass, "
     "`ast.parse` made safe for threads",
     ("reducer", "reducer.threadsafe_ast", "reducer.errors", "reducer.files", "reducer.env", "reducer.readers", "reducer.timeouts",
      "reducer.tomlfile", "reducer.engine", "reducer.passes", "reducer.filing", "reducer.prologue", "reducer.libraries",
      "reducer.compile_cache")),
    ("candidate", "what runs inside a candidate's process: the harness and its watches",
     ("reducer.harness", "reducer.cross_checks")),
    ("workers", "where candidates run: sandbox, fork server, runner, request kinds, executors; know no level",
     ("reducer.workers", "reducer.executors")),
    ("reduction", "what a reduction is asked and learns (options, the established failure, verdicts), the job "
     "shell every job extends, the Level interface, the bug report's writer and fault location (the localiser "
     "every level implements): read by the job and every level",
     ("reducer.established", "reducer.verdict", "reducer.faults", "reducer.job", "reducer.levels.base",
      "reducer.bug_report")),
    ("versions", "releases of jax / jaxlib / enzyme-ad: environments, probes, bisection; know no corpus",
     ("reducer.versions",)),
    ("levels", "the levels of representation: source, jaxpr, mlir", ("reducer.levels",)),
    ("job", "the script's job: establish, chain the levels, verify, write outputs and the report",
     ("reducer.reduce", "reducer.earlier_tests", "reducer.counterfactual", "reducer.xla_culprit", "reducer.fixes", "reducer.data_literals",
      "reducer.second_look", "reducer.entry")),
    ("corpus", "the regression corpus: add, check, report", ("reducer.corpus",)),
    ("hunt", "the hunt for new bugs over a table of operations", ("reducer.hunt",)),
    ("cli", "the commands: talk to the job, the readers and the corpus / versions / hunt commands",
     ("reducer.cli", "reducer.cli_corpus", "reducer.cli_hunt", "reducer.versions.cli", "reducer.settings",
      "reducer.pytest_plugin")),
]
#: what a layer may not import although it lies below: the CLI talks to the job, not to a level
FORBIDDEN: dict[str, tuple[str, ...]] = {"cli": ("reducer.levels",)}


#: the run's settings: frozen dataclasses
FROZEN = ("Sandbox", "Options", "Limits", "EstablishedFailure")
#: the jobs, whose attributes only their constructors set; and the names a job goes by in a function
JOBS = ("Job", "ChainJob", "Reduction", "MlirReduction", "ModuleRuns")
JOB_NAMES = ("job", "runs")
#: what a run still writes onto its job as it goes (issue 36), (module, attribute): each may go, none may come
STILL_ASSIGNED: frozenset[tuple[str, str]] = frozenset(tuple(entry.split(":")) for entry in (
    "reducer.data_literals.standalone:data reducer.job:_probe "
    "reducer.job:bug reducer.job:established reducer.job:fresh_seconds "
    "reducer.levels.chain:checks_seconds reducer.levels.chain:established "
    "reducer.levels.chain:previous reducer.levels.chain:resume_at "
    "reducer.levels.chain:resumed "
    "reducer.levels.chain:verified reducer.levels.mlir.module_job:counts0 reducer.levels.mlir.module_job:established "
    "reducer.reduce:established "
    "reducer.reduce:fix reducer.reduce:latest_seconds reducer.reduce:requested "
    "reducer.reduce:timeout reducer.second_look:unconfirmed"
).split())

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_LINE = 120
MIN_DUPLICATE_LINES = 6


@dataclass(frozen=True)
class Module:
    name: str  # dotted
    path: Path
    where: str  # the path from the repository's root
    text: str
    tree: ast.Module


def modules(root: Path = ROOT) -> list[Module]:
    """Every Python module of the checked packages."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            text = path.read_text(encoding="utf-8")
            found.append(Module(".".join(parts), path, str(path.relative_to(root)), text, ast.parse(text, str(path))))
    return found


def layer_of(name: str) -> str | None:
    """The layer of a dotted module name (longest prefix wins), None outside the checked packages."""
    best, best_len = None, -1
    for layer, _, prefixes in LAYERS:
        for prefix in prefixes:
            inside = name.startswith(prefix + ".") and (prefix not in PACKAGES or layer == prefix)
            if (name == prefix or inside) and len(prefix) > best_len:
                best, best_len = layer, len(prefix)
    return best


def _imported(module: Module, node: ast.Import | ast.ImportFrom, known: set[str]) -> list[str]:
    """The modules one import statement loads (`from a import b` loads a.b where b is a module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.name.split(".")
        if module.path.name != "__init__.py":
            package = package[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    subs = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
    return [base] + subs


def layer_violations(mods: list[Module]) -> list[str]:
    """Imports that go up a layer, or to what `FORBIDDEN` keeps from a layer."""
    order = {layer: i for i, (layer, _, _) in enumerate(LAYERS)}
    known = {m.name for m in mods}
    out = []
    for module in mods:
        mine = layer_of(module.name)
        if mine is None:
            out.append(f"{module.where}:1: layer: {module.name} is in no layer (name it in LAYERS)")
        for node in ast.walk(module.tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            wrong = [why for why in map(lambda target: _wrong(mine, target, order), _imported(module, node, known))
                     if why]
            if wrong:  # one line an import statement
                out.append(f"{module.where}:{node.lineno}: layer: {module.name} ({mine}) imports {wrong[-1]}")
    return out


def _wrong(mine: str | None, target: str, order: dict[str, int]) -> str:
    """Why a module of layer `mine` may not import `target`, or "" where it may."""
    theirs = layer_of(target)
    if mine is None or theirs is None:
        return ""
    if order[theirs] > order[mine]:
        return f"{target} ({theirs}, a higher layer)"
    if any(target == p or target.startswith(p + ".") for p in FORBIDDEN.get(mine, ())):
        return f"{target} (the {mine} layer may not import it)"
    return ""


def size_violations(mods: list[Module]) -> list[str]:
    """Modules over `MAX_MODULE_LINES` lines and functions over `MAX_FUNCTION_LINES`."""
    out = []
    for module in mods:
        lines = len(module.text.splitlines())
        if lines > MAX_MODULE_LINES:
            out.append(f"{module.where}:1: size: module of {lines} lines (at most {MAX_MODULE_LINES})")
        for node in ast.walk(module.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                span = node.end_lineno - node.lineno + 1
                if span > MAX_FUNCTION_LINES:
                    out.append(f"{module.where}:{node.lineno}: size: function {node.name} of {span} lines "
                               f"(at most {MAX_FUNCTION_LINES})")
    return out


def long_line_violations(mods: list[Module]) -> list[str]:
    """Lines over `MAX_LINE` characters."""
    out = []
    for module in mods:
        for number, line in enumerate(module.text.splitlines(), 1):
            if len(line) > MAX_LINE:
                out.append(f"{module.where}:{number}: size: line of {len(line)} characters (at most {MAX_LINE})")
    return out


def _left_out(tree: ast.Module) -> set[int]:
    """Line numbers of docstrings and import statements."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            skip.update(range(node.lineno, node.end_lineno + 1))
        elif isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                skip.update(range(body[0].lineno, body[0].end_lineno + 1))
    return skip


def code_lines(module: Module) -> list[tuple[int, str]]:
    """(line number, normalised text) of the lines the duplicate check compares."""
    skip = _left_out(module.tree)
    out = []
    for number, line in enumerate(module.text.splitlines(), 1):
        text = " ".join(line.split())
        if text and not text.startswith("#") and number not in skip:
            out.append((number, text))
    return out


def duplicate_blocks(mods: list[Module], size: int = MIN_DUPLICATE_LINES) -> list[list[tuple[str, int, int]]]:
    """Blocks of at least `size` compared lines standing in more than one place: for each, the places
    as (module path, first line, last line), each block as long as its places share."""
    lines = {m.where: code_lines(m) for m in mods}
    windows: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for where, rows in lines.items():
        for i in range(len(rows) - size + 1):
            key = hashlib.sha1("\n".join(t for _, t in rows[i:i + size]).encode()).hexdigest()
            windows[key].append((where, i))
    repeated = {key: places for key, places in windows.items() if len(_apart(places, size)) > 1}
    seen: set[tuple[str, int]] = set()
    blocks = []
    for key, places in sorted(repeated.items(), key=lambda kv: kv[1]):
        places = _apart(places, size)
        if all(p in seen for p in places):
            continue
        length = size  # grow the block while every place goes on alike
        while all(i + length < len(lines[w]) for w, i in places) and \
                len({lines[w][i + length][1] for w, i in places}) == 1:
            length += 1
        for w, i in places:
            seen.update((w, i + k) for k in range(length - size + 1))
        blocks.append([(w, lines[w][i][0], lines[w][i + length - 1][0]) for w, i in places])
    return blocks


def _apart(places: list[tuple[str, int]], size: int) -> list[tuple[str, int]]:
    """The places of a window, less those overlapping an earlier one in the same module."""
    kept: list[tuple[str, int]] = []
    for where, i in sorted(places):
        if not kept or kept[-1][0] != where or i - kept[-1][1] >= size:
            kept.append((where, i))
    return kept


def duplicate_violations(mods: list[Module]) -> list[str]:
    out = []
    for places in duplicate_blocks(mods):
        (first, a, b), rest = places[0], places[1:]
        again = ", ".join(f"{w}:{x}-{y}" for w, x, y in rest)
        out.append(f"{first}:{a}: duplicate: lines {a}-{b} stand again at {again}")
    return out


def _names_a_family(node: ast.AST) -> bool:
    """Whether `node` is a family's name spelled out: a string, or a tuple or list of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, (ast.Tuple, ast.List)) and bool(node.elts) and all(map(_names_a_family, node.elts))


def family_violations(mods: list[Module]) -> list[str]:
    """Comparisons of a signature's `family` with a family's name outside `oracles/`: what kind of
    failure a signature is, `oracles.kinds` says, in one place."""
    out = []
    for module in mods:
        if module.name == "oracles" or module.name.startswith("oracles."):
            continue
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            family = any(isinstance(side, ast.Attribute) and side.attr == "family" for side in sides)
            if family and any(_names_a_family(side) for side in sides):
                out.append(f"{module.where}:{node.lineno}: family: a family's name compared outside oracles/ "
                           f"(ask oracles.kinds)")
    return out


#: what names the level a program is at, in a job's or an event's words
LEVEL_NAMES = {"level", "resume_at"}


def level_violations(mods: list[Module]) -> list[str]:
    """Comparisons of a level (`event.level`, `self.resume_at`) with a level's name spelled out, outside
    `reducer/levels/`: what a level does, it says itself (its class's `name`, `suffix`, its
    representation's `unit`)."""
    out = []
    for module in mods:
        if module.name.startswith("reducer.levels"):
            continue
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            level = any(isinstance(side, ast.Attribute) and side.attr in LEVEL_NAMES
                        or isinstance(side, ast.Name) and side.id in LEVEL_NAMES for side in sides)
            if level and any(_names_a_family(side) for side in sides):
                out.append(f"{module.where}:{node.lineno}: level: a level's name compared outside reducer/levels/ "
                           f"(ask the level)")
    return out


def _assigned(node: ast.AST) -> list[ast.expr]:
    """What an assignment statement assigns to, tuples taken apart."""
    targets = node.targets if isinstance(node, ast.Assign) else \
        [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
    return [t for target in targets for t in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target])]


def _of(target: ast.expr, names: tuple[str, ...]) -> str | None:
    """The attribute `target` assigns on a plain name among `names` (`job.xla = …`), else None."""
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in names:
        return target.attr
    return None


def state_violations(mods: list[Module], still: frozenset = STILL_ASSIGNED) -> list[str]:
    """A run's settings that are not frozen or are changed in place; a job's attributes assigned after
    its constructor, but those `still` lists (and each of those must still be found)."""
    out, found = [], set()

    def assigned(module: Module, node: ast.AST, names: tuple[str, ...], said: str) -> None:
        for attr in filter(None, (_of(t, names) for t in _assigned(node))):
            found.add((module.name, attr))
            if (module.name, attr) not in still:
                out.append(f"{module.where}:{node.lineno}: state: {said.format(attr=attr)}")

    for module in mods:
        for cls in (n for n in ast.walk(module.tree) if isinstance(n, ast.ClassDef)):
            frozen = any(isinstance(d, ast.Call) and any(k.arg == "frozen" and getattr(k.value, "value", False)
                                                         for k in d.keywords) for d in cls.decorator_list)
            if cls.name in FROZEN and not frozen:
                out.append(f"{module.where}:{cls.lineno}: state: {cls.name} holds a run's settings: a frozen dataclass")
            for fn in (n for n in cls.body if cls.name in JOBS and isinstance(n, ast.FunctionDef)
                       and n.name != "__init__"):
                for node in ast.walk(fn):
                    assigned(module, node, ("self",), f"self.{{attr}} assigned in {cls.name}.{fn.name} (return what "
                                                      f"a run learns, or set it in the constructor)")
        for fn in (n for n in ast.walk(module.tree) if isinstance(n, ast.FunctionDef) and n.name != "__post_init__"):
            out += [f"{module.where}:{node.lineno}: state: object.__setattr__ in {fn.name} (make another with "
                    f"`replace`)" for node in ast.walk(fn)
                    if isinstance(node, ast.Call) and ast.unparse(node.func) == "object.__setattr__"]
        for node in ast.walk(module.tree):
            assigned(module, node, JOB_NAMES, "a job's {attr} assigned outside its constructor (pass it per call, "
                                              "or return it)")
    out += [f"{name.replace('.', '/')}.py:1: state: {name}:{attr} is no longer assigned: take it off STILL_ASSIGNED"
            for name, attr in sorted(still - found)]
    return out


def circles(mods: list[Module]) -> list[set[str]]:
    """The import circles between modules: each a set of modules that import one another in a ring."""
    import networkx as nx

    known = {m.name for m in mods}
    graph = nx.DiGraph()
    for module in mods:
        for node in ast.walk(module.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph.add_edges_from((module.name, target) for target in _imported(module, node, known)
                                     if target in known and target != module.name)
    return [ring for ring in nx.strongly_connected_components(graph) if len(ring) > 1]


def circle_violations(mods: list[Module]) -> list[str]:
    """Every import circle."""
    where = {m.name: m.where for m in mods}
    out = []
    for ring in circles(mods):
        first = min(ring)
        out.append(f"{where[first]}:1: circle: {', '.join(sorted(ring))} import one another (take the shared part "
                       f"into a module of its own)")
    return out


def violations(root: Path = ROOT) -> list[str]:
    """Every violation, one line each: `path:line: kind: what`."""
    mods = modules(root)
    return (layer_violations(mods) + size_violations(mods) + duplicate_violations(mods) + family_violations(mods)
            + level_violations(mods) + long_line_violations(mods) + circle_violations(mods) + state_violations(mods))


def layer_table() -> str:
    """The layers as a Markdown table, bottom first."""
    rows = ["| layer (bottom first) | modules | what | may not import |", "| --- | --- | --- | --- |"]
    for layer, what, prefixes in LAYERS:
        rows.append(f"| {layer} | {', '.join(prefixes)} | {what} | "
                    f"{', '.join(FORBIDDEN.get(layer, ())) or 'a higher layer'} |")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    if "--layers" in argv:
        print(layer_table())
        return 0
    found = violations()
    for line in found:
        print(line)
    if found:
        return 1
    print(f"architecture: {len(modules())} modules in {', '.join(PACKAGES)}: no upward import, no module over "
          f"{MAX_MODULE_LINES} lines, no function over {MAX_FUNCTION_LINES}, no line over {MAX_LINE} characters, "
          f"no repeated block of {MIN_DUPLICATE_LINES} lines, no family's name compared outside oracles/, no level's "
          f"name compared outside reducer/levels/, no import circle, no run setting changed in place and no job "
          f"attribute assigned after construction but the {len(STILL_ASSIGNED)} still listed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
