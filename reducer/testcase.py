"""A failing test as input: a test's node id made into a standalone script that runs that test alone.

`FILE.py::test_name`, `FILE.py::TestClass::test_name` (pytest functions and classes, unittest and
absltest methods). The script holds the test module's own code less its other tests, the fixtures
the test asks for (from the module, its class and the conftest.py files above it) as plain functions
called in dependency order, then the test's class set-up, set-up and body as module-level statements
(reducer.testclass), or, when the test needs more of its class, the class itself with `setUpClass`,
`setUp` (or `setup_class`, `setup_method`) and the test method called directly. pytest and absl are
not imported (an absltest class becomes a `unittest.TestCase` unless it uses absltest's own helpers),
so the failure the reduction keeps is the one inside the test, not the runner's report of it.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from reducer.errors import NOT_FOUND, USAGE, ReducerError
from reducer.testclass import CASE, dotted, flatten, rebase_to_unittest, testcase_bases

TEST_ROOTS = ("pytest", "_pytest", "absl.testing")
ROOT_MARKERS = ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", ".git")
BUILTIN_FIXTURES = {"tmp_path": "pathlib.Path(tempfile.mkdtemp())",
                    "tmpdir": "pathlib.Path(tempfile.mkdtemp())"}


@dataclass
class Fixture:
    name: str
    func: ast.FunctionDef
    autouse: bool
    call: str  # what calls it: the function's name, or `test.NAME` for a fixture method of the test's class
    support: list[ast.stmt] = field(default_factory=list)  # its conftest's imports and helpers

    @property
    def needs(self) -> list[str]:
        args = [a.arg for a in self.func.args.posonlyargs + self.func.args.args]
        return [a for a in args if a not in ("self", "cls")]

    @property
    def yields(self) -> bool:
        return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(self.func))


def test_imports(tree: ast.Module) -> dict[str, ast.stmt]:
    """Names the module binds to pytest or absl.testing, with the import that binds each."""
    bound = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name.startswith(TEST_ROOTS):
                    bound[alias.asname or alias.name.split(".")[0]] = ast.Import(names=[alias])
        elif isinstance(stmt, ast.ImportFrom) and (stmt.module or "").startswith(TEST_ROOTS):
            for alias in stmt.names:
                bound[alias.asname or alias.name] = ast.ImportFrom(module=stmt.module, names=[alias], level=0)
    return bound


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _is_test_import(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Import):
        return all(a.name.startswith(TEST_ROOTS) for a in stmt.names)
    return isinstance(stmt, ast.ImportFrom) and (stmt.module or "").startswith(TEST_ROOTS)


def _by_test_library(decorator: ast.expr, test_names: dict) -> bool:
    return dotted(decorator).split(".")[0] in test_names


def _fixture_decorator(func: ast.AST, test_names: dict) -> ast.expr | None:
    for d in getattr(func, "decorator_list", []):
        name = dotted(d)
        if _by_test_library(d, test_names) and name.split(".")[-1] == "fixture":
            return d
    return None


def _fixture(func: ast.FunctionDef, decorator: ast.expr, where: str, call: str) -> Fixture:
    keywords = {k.arg: k.value for k in decorator.keywords} if isinstance(decorator, ast.Call) else {}
    if "params" in keywords:
        raise ReducerError(f"{where}: fixture {func.name!r} is parametrized (params=...): "
                           "give a test that uses one value", USAGE)
    name = keywords["name"].value if isinstance(keywords.get("name"), ast.Constant) else func.name
    autouse = isinstance(keywords.get("autouse"), ast.Constant) and keywords["autouse"].value is True
    return Fixture(name, func, autouse, call)


def _project_root(folder: Path) -> Path:
    for parent in [folder, *folder.parents]:
        if any((parent / marker).exists() for marker in ROOT_MARKERS):
            return parent
    return folder


def conftest_fixtures(test_file: Path) -> dict[str, Fixture]:
    """The fixtures of every conftest.py from the project root down to the test's folder (nearer wins)."""
    folder = test_file.resolve().parent
    root = _project_root(folder)
    chain = [p for p in [folder, *folder.parents] if p == root or root in p.parents][::-1]
    found: dict[str, Fixture] = {}
    for parent in chain:
        conftest = parent / "conftest.py"
        if not conftest.is_file():
            continue
        try:
            tree = ast.parse(conftest.read_text(encoding="utf-8"), filename=str(conftest))
        except (SyntaxError, UnicodeDecodeError, OSError) as exc:
            raise ReducerError(f"{conftest}: cannot read it: {exc}", NOT_FOUND) from None
        names = test_imports(tree)
        support = [s for s in tree.body
                   if not (_is_test_import(s) or _is_docstring(s) or _is_hook_or_fixture(s, names))]
        for stmt in tree.body:
            decorator = _fixture_decorator(stmt, names)
            if decorator is not None:
                fixture = _fixture(stmt, decorator, str(conftest), stmt.name)
                fixture.support = support
                found[fixture.name] = fixture
    return found


def _is_hook_or_fixture(stmt: ast.stmt, names: dict) -> bool:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return stmt.name.startswith("pytest_") or _fixture_decorator(stmt, names) is not None
    targets = stmt.targets if isinstance(stmt, ast.Assign) else []
    return any(isinstance(t, ast.Name) and t.id in ("pytest_plugins", "pytestmark") for t in targets)


@dataclass
class Target:
    """The test a node id names, in its module's tree."""
    path: Path
    tree: ast.Module
    func: ast.FunctionDef
    cls: ast.ClassDef | None
    test_names: dict  # names bound to pytest / absl.testing

    @property
    def where(self) -> str:
        return f"{self.path}::{self.cls.name + '::' if self.cls else ''}{self.func.name}"


def find_target(node_id: str, source: str) -> Target:
    file, *names = node_id.split("::")
    path = Path(file)
    if any("[" in n for n in names):
        raise ReducerError(f"{node_id}: parametrized test ids ([...]) are not supported: give a test that takes "
                           "no parameters", USAGE)
    if len(names) not in (1, 2) or not all(n.isidentifier() for n in names):
        raise ReducerError(f"{node_id}: a test's node id is FILE.py::test or FILE.py::Class::test", USAGE)
    tree = ast.parse(source, filename=file)
    scope, cls = tree.body, None
    if len(names) == 2:
        cls = next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == names[0]), None)
        if cls is None:
            raise ReducerError(f"{node_id}: {path.name} has no class {names[0]}", NOT_FOUND)
        scope = cls.body
    func = next((s for s in scope if isinstance(s, ast.FunctionDef) and s.name == names[-1]), None)
    if func is None:
        known = [s.name for s in scope if isinstance(s, ast.FunctionDef) and s.name.startswith("test")]
        inside = f"class {cls.name}" if cls else path.name
        raise ReducerError(f"{node_id}: {inside} has no test {names[-1]}"
                           + (f" (it has {', '.join(known[:6])})" if known else ""), NOT_FOUND)
    target = Target(path, tree, func, cls, test_imports(tree))
    for d in func.decorator_list:
        if dotted(d).split(".")[-1] in ("parametrize", "parameters", "named_parameters", "product"):
            raise ReducerError(f"{target.where}: parametrized tests are not supported: give a test that takes "
                               "no parameters", USAGE)
    return target


def local_fixtures(target: Target) -> dict[str, Fixture]:
    """Fixtures the test module defines, and (for a pytest class) its class's fixture methods."""
    found = {}
    owners = [(target.tree.body, "{}")] + ([(target.cls.body, "test.{}")] if target.cls else [])
    for body, call in owners:
        for stmt in body:
            decorator = _fixture_decorator(stmt, target.test_names)
            if decorator is not None:
                fixture = _fixture(stmt, decorator, target.where, call.format(stmt.name))
                found[fixture.name] = fixture
    return found


def _marked_fixtures(decorated: list, test_names: dict) -> list[str]:
    """Fixture names given by @pytest.mark.usefixtures(...) on the test or its class."""
    return [a.value for d in decorated for a in getattr(d, "args", [])
            if dotted(d).endswith("usefixtures") and _by_test_library(d, test_names) and isinstance(a, ast.Constant)]


def resolve(target: Target, known: dict[str, Fixture]) -> list[Fixture | str]:
    """The fixtures the test needs, dependencies first (a str is a built-in fixture's name)."""
    order: list[Fixture | str] = []
    done: set[str] = set()

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in done:
            return
        if name in chain:
            raise ReducerError(f"{target.where}: fixtures depend on each other in a cycle: "
                               f"{' -> '.join(chain + (name,))}", USAGE)
        if name in known:
            for need in known[name].needs:
                visit(need, chain + (name,))
            order.append(known[name])
        elif name in BUILTIN_FIXTURES:
            order.append(name)
        else:
            raise ReducerError(f"{target.where}: fixture {name!r} is not defined in {target.path.name} or a "
                               "conftest.py above it, and pytest's own has no standalone form", USAGE)
        done.add(name)

    marks = target.func.decorator_list + (target.cls.decorator_list if target.cls else [])
    wanted = [f.name for f in known.values() if f.autouse] + _marked_fixtures(marks, target.test_names)
    args = [a.arg for a in target.func.args.posonlyargs + target.func.args.args if a.arg not in ("self", "cls")]
    for name in wanted + args:
        visit(name, ())
    return order


def _strip(func: ast.AST, test_names: dict) -> ast.AST:
    func.decorator_list = [d for d in func.decorator_list if not _by_test_library(d, test_names)]
    return func


def _is_test_class(stmt: ast.ClassDef) -> bool:
    return stmt.name.startswith("Test") or any(dotted(b).endswith("TestCase") for b in stmt.bases)


def keep_statement(stmt: ast.stmt, target: Target, keep_classes: list, used: set) -> bool:
    """Whether a top-level statement of the test module belongs in the standalone script."""
    if _is_test_import(stmt) or _is_docstring(stmt) or _is_hook_or_fixture(stmt, target.test_names) and not \
            isinstance(stmt, ast.FunctionDef):
        return False
    if isinstance(stmt, ast.If) and "__name__" in ast.unparse(stmt.test) and "__main__" in ast.unparse(stmt.test):
        return False
    if isinstance(stmt, ast.FunctionDef):
        if _fixture_decorator(stmt, target.test_names) is not None:
            return id(stmt) in used
        return not stmt.name.startswith("test") or stmt is target.func
    if isinstance(stmt, ast.ClassDef):
        return stmt in keep_classes or not _is_test_class(stmt)
    return True


def trim_class(cls: ast.ClassDef, target: Target, used: set) -> None:
    """Drop the class's other tests and unused fixture methods; strip pytest / absl decorators."""
    body = []
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef):
            if _fixture_decorator(stmt, target.test_names) is not None and id(stmt) not in used:
                continue
            if stmt.name.startswith("test") and stmt is not target.func:
                continue
            _strip(stmt, target.test_names)
        body.append(stmt)
    cls.body = body or [ast.Pass()]
    _strip(cls, target.test_names)


def _defines(classes: list[ast.ClassDef], name: str) -> bool:
    return any(isinstance(s, ast.FunctionDef) and s.name == name for c in classes for s in c.body)


def _fixture_lines(order: list[Fixture | str]) -> list[str]:
    lines = []
    for fixture in order:
        if isinstance(fixture, str):
            lines.append(f"{fixture} = {BUILTIN_FIXTURES[fixture]}")
            continue
        call = f"{fixture.call}({', '.join(fixture.needs)})"
        lines.append(f"{fixture.name} = next({call})" if fixture.yields else f"{fixture.name} = {call}")
    return lines


def module_setup(target: Target) -> list[str]:
    module_funcs = {s.name for s in target.tree.body if isinstance(s, ast.FunctionDef)}
    return [f"{name}()" for name in ("setup_module", "setup_function") if name in module_funcs]


def driver(target: Target, order: list, case_classes: list[ast.ClassDef], other_bases: bool) -> list[str]:
    """The statements that run the test: set-up, fixtures, then the test's body by a direct call."""
    lines = module_setup(target)
    args = ", ".join(a.arg for a in target.func.args.posonlyargs + target.func.args.args
                     if a.arg not in ("self", "cls"))
    if target.cls is None:
        return lines + _fixture_lines(order) + [f"{target.func.name}({args})"]
    name, method = target.cls.name, target.func.name
    if case_classes:
        lines += [f"{name}.setUpClass()"] if other_bases or _defines(case_classes, "setUpClass") else []
        lines.append(f"test = {name}({method!r})")
        lines += ["test.setUp()"] if other_bases or _defines(case_classes, "setUp") else []
    else:
        lines += [f"{name}.setup_class()"] if _defines([target.cls], "setup_class") else []
        lines.append(f"test = {name}()")
        lines += [f"test.setup_method(test.{method})"] if _defines([target.cls], "setup_method") else []
    return lines + _fixture_lines(order) + [f"test.{method}({args})"]


def _names_used(stmts: list[ast.stmt]) -> set[str]:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name)}


def _imports_first(stmts: list[ast.stmt], imports: list[ast.stmt]) -> list[ast.stmt]:
    future = [s for s in stmts if isinstance(s, ast.ImportFrom) and s.module == "__future__"]
    return future + imports + [s for s in stmts if s not in future]


def _conftest_code(order: list, target: Target) -> list[ast.stmt]:
    """The imports and helpers of the conftest.py files whose fixtures run, then those fixtures."""
    supports, fixtures = [], []
    for fixture in order:
        local = fixture.func in target.tree.body or (target.cls and fixture.func in target.cls.body) \
            if isinstance(fixture, Fixture) else True
        if not local:
            supports += [s for s in fixture.support if s not in supports]
            fixture.func.decorator_list = [d for d in fixture.func.decorator_list
                                           if dotted(d).split(".")[-1] != "fixture"]
            fixtures.append(fixture.func)
    return supports + fixtures


def _flat(target: Target, order: list, case_classes: list, other_bases: bool, rebased: bool):
    """The test's class taken apart into set-up and body statements, when nothing else of it is needed."""
    if target.cls is None or other_bases or (case_classes and not rebased) or any(
            isinstance(f, Fixture) and f.call.startswith("test.") for f in order):
        return None
    return flatten(case_classes or [target.cls], target.func, bool(case_classes), target.tree)


def standalone_source(node_id: str, source: str) -> str:
    """The standalone script that runs the test NODE_ID of the module whose text is SOURCE."""
    target = find_target(node_id, source)
    known = conftest_fixtures(target.path)
    known.update(local_fixtures(target))
    order = resolve(target, known)
    used = {id(f.func) for f in order if isinstance(f, Fixture)}
    case_classes = testcase_bases(target)
    keep_classes = case_classes or ([target.cls] if target.cls else [])
    for cls in keep_classes:
        trim_class(cls, target, used)
    rebased = rebase_to_unittest(case_classes, target.test_names)
    other_bases = any(dotted(b) not in ("unittest.TestCase", "TestCase") and dotted(b) not in
                      {c.name for c in case_classes} for c in case_classes for b in c.bases)
    flat = _flat(target, order, case_classes, other_bases, rebased)
    body = [_strip(s, target.test_names) if isinstance(s, ast.FunctionDef) else s
            for s in target.tree.body if keep_statement(s, target, [] if flat else keep_classes, used)
            and not (flat and s in keep_classes)]
    if flat:
        lines = module_setup(target) + _fixture_lines(order) + [f"{CASE} = unittest.TestCase()"] * flat[1]
        run = [ast.parse(line).body[0] for line in lines] + flat[0]
    else:
        run = [ast.parse(line).body[0] for line in driver(target, order, case_classes, other_bases)]
    stmts = _conftest_code(order, target) + body + run
    imports = [ast.parse("import pathlib\nimport tempfile").body[i] for i in (0, 1)] \
        if any(isinstance(f, str) for f in order) else []
    imports += [imp for name, imp in target.test_names.items() if name in _names_used(stmts)]
    bound = {a.asname or a.name for s in stmts if isinstance(s, ast.Import) for a in s.names}
    if "unittest" in _names_used(stmts) and "unittest" not in bound:
        imports.append(ast.Import(names=[ast.alias("unittest")]))
    module = ast.Module(body=_imports_first(stmts, imports), type_ignores=[])
    ast.fix_missing_locations(module)
    header = f"# {node_id}, made standalone by reducer: fixtures and set-up run first, then the test's body\n"
    return header + ast.unparse(module) + "\n"
