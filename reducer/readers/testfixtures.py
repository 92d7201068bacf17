"""pytest fixtures made plain functions: the fixtures a test asks for (as arguments, autouse,
`@pytest.mark.usefixtures`; `name=`, yield fixtures), found in its module, its class and the
conftest.py files from the project root down to its folder, in dependency order; the small stand-ins
for pytest's own `tmp_path`, `tmpdir`, `monkeypatch` and `capsys` that the script gets in their place;
and a parametrized fixture's `request.param` made into one case's value. A fixture with no standalone
form (pytest's `capfd`, `request` used beyond `request.param` …) is a one-line error.
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from pathlib import Path

from reducer.errors import NOT_FOUND, USAGE, ReducerError
from reducer.readers.testclass import dotted
from reducer.readers.testtarget import Target, by_test_library, is_docstring, is_test_import, test_imports

ROOT_MARKERS = ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", ".git")
BUILTIN_FIXTURES = {"tmp_path": "pathlib.Path(tempfile.mkdtemp())",
                    "tmpdir": "pathlib.Path(tempfile.mkdtemp())",
                    "monkeypatch": "MonkeyPatch()",
                    "capsys": "CaptureFixture()"}
BUILTIN_IMPORTS = {"tmp_path": ("pathlib", "tempfile"), "tmpdir": ("pathlib", "tempfile"),
                   "monkeypatch": ("importlib", "os", "sys"), "capsys": ("io", "sys")}
# stand-ins for pytest's own fixtures, written into the script: changes stay until the script ends
STAND_INS = {"monkeypatch": '''
class MonkeyPatch:
    """pytest's monkeypatch, standalone (nothing is undone: the script ends with the test)."""

    def _resolve(self, target, name, value):
        if isinstance(target, str):
            path, value = target, name
            module, name = path.rsplit(".", 1)
            parts = module.split(".")
            obj = importlib.import_module(parts[0])
            for i, part in enumerate(parts[1:], 2):
                try:
                    obj = getattr(obj, part)
                except AttributeError:
                    obj = importlib.import_module(".".join(parts[:i]))
            return obj, name, value
        return target, name, value

    def setattr(self, target, name, value=None, raising=True):
        target, name, value = self._resolve(target, name, value)
        if raising and not hasattr(target, name):
            raise AttributeError(f"{target!r} has no attribute {name!r}")
        setattr(target, name, value)

    def delattr(self, target, name=None, raising=True):
        if isinstance(target, str):
            target, name, _ = self._resolve(target, None, None)
        if hasattr(target, name) or raising:
            delattr(target, name)

    def setitem(self, dic, name, value):
        dic[name] = value

    def delitem(self, dic, name, raising=True):
        if name in dic or raising:
            del dic[name]

    def setenv(self, name, value, prepend=None):
        value = str(value)
        if prepend and name in os.environ:
            value = value + prepend + os.environ[name]
        os.environ[name] = value

    def delenv(self, name, raising=True):
        if name in os.environ or raising:
            del os.environ[name]

    def syspath_prepend(self, path):
        sys.path.insert(0, str(path))

    def chdir(self, path):
        os.chdir(path)
''', "capsys": '''
class CaptureFixture:
    """pytest's capsys, standalone: what is printed is kept for readouterr() and still written through,
    so that the failure's traceback is seen."""

    class _Tee(io.StringIO):
        def __init__(self, stream):
            super().__init__()
            self.stream = stream

        def write(self, text):
            self.stream.write(text)
            return super().write(text)

        def flush(self):
            self.stream.flush()

    class Result(tuple):
        out = property(lambda self: self[0])
        err = property(lambda self: self[1])

    def __init__(self):
        sys.stdout, sys.stderr = self._Tee(sys.stdout), self._Tee(sys.stderr)
        self.out, self.err = sys.stdout, sys.stderr

    def readouterr(self):
        result = self.Result((self.out.getvalue(), self.err.getvalue()))
        for stream in (self.out, self.err):
            stream.seek(0)
            stream.truncate()
        return result
'''}



@dataclass
class Fixture:
    name: str
    func: ast.FunctionDef
    autouse: bool
    call: str  # what calls it: the function's name, or `test.NAME` for a fixture method of the test's class
    support: list[ast.stmt] = field(default_factory=list)  # its conftest's imports and helpers
    params: ast.Call | None = None  # the decorator of a parametrized fixture (params=...)

    @property
    def needs(self) -> list[str]:
        args = [a.arg for a in self.func.args.posonlyargs + self.func.args.args]
        return [a for a in args if a not in ("self", "cls")]

    @property
    def yields(self) -> bool:
        return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(self.func))




def fixture_decorator(func: ast.AST, test_names: dict) -> ast.expr | None:
    for d in getattr(func, "decorator_list", []):
        name = dotted(d)
        if by_test_library(d, test_names) and name.split(".")[-1] == "fixture":
            return d
    return None


def _fixture(func: ast.FunctionDef, decorator: ast.expr, where: str, call: str) -> Fixture:
    keywords = {k.arg: k.value for k in decorator.keywords} if isinstance(decorator, ast.Call) else {}
    name = keywords["name"].value if isinstance(keywords.get("name"), ast.Constant) else func.name
    autouse = isinstance(keywords.get("autouse"), ast.Constant) and keywords["autouse"].value is True
    return Fixture(name, func, autouse, call, params=decorator if "params" in keywords else None)


def _project_root(folder: Path) -> Path:
    for parent in [folder, *folder.parents]:
        if any((parent / marker).exists() for marker in ROOT_MARKERS):
            return parent
    return folder


def conftest_paths(test_file: Path) -> list[Path]:
    """The conftest.py files from the project root down to the test's folder."""
    folder = test_file.resolve().parent
    root = _project_root(folder)
    chain = [p for p in [folder, *folder.parents] if p == root or root in p.parents][::-1]
    return [parent / "conftest.py" for parent in chain if (parent / "conftest.py").is_file()]


def conftest_fixtures(test_file: Path) -> dict[str, Fixture]:
    """The fixtures of every conftest.py from the project root down to the test's folder (nearer wins)."""
    found: dict[str, Fixture] = {}
    for conftest in conftest_paths(test_file):
        try:
            tree = ast.parse(conftest.read_text(encoding="utf-8"), filename=str(conftest))
        except (SyntaxError, UnicodeDecodeError, OSError) as exc:
            raise ReducerError(f"{conftest}: cannot read it: {exc}", NOT_FOUND) from None
        names = test_imports(tree)
        support = [s for s in tree.body
                   if not (is_test_import(s) or is_docstring(s) or is_hook_or_fixture(s, names))]
        for stmt in tree.body:
            decorator = fixture_decorator(stmt, names)
            if decorator is not None:
                fixture = _fixture(stmt, decorator, str(conftest), stmt.name)
                fixture.support = support
                found[fixture.name] = fixture
    return found


def is_hook_or_fixture(stmt: ast.stmt, names: dict) -> bool:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return stmt.name.startswith("pytest_") or fixture_decorator(stmt, names) is not None
    targets = stmt.targets if isinstance(stmt, ast.Assign) else []
    return any(isinstance(t, ast.Name) and t.id in ("pytest_plugins", "pytestmark") for t in targets)



def local_fixtures(target: Target) -> dict[str, Fixture]:
    """Fixtures the test module defines, and (for a pytest class) its class's fixture methods."""
    found = {}
    owners = [(target.tree.body, "{}")] + ([(target.cls.body, "test.{}")] if target.cls else [])
    for body, call in owners:
        for stmt in body:
            decorator = fixture_decorator(stmt, target.test_names)
            if decorator is not None:
                fixture = _fixture(stmt, decorator, target.where, call.format(stmt.name))
                found[fixture.name] = fixture
    return found


def _marked_fixtures(decorated: list, test_names: dict) -> list[str]:
    """Fixture names given by @pytest.mark.usefixtures(...) on the test or its class."""
    return [a.value for d in decorated for a in getattr(d, "args", [])
            if dotted(d).endswith("usefixtures") and by_test_library(d, test_names) and isinstance(a, ast.Constant)]


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



def fixture_closure(target: Target, known: dict[str, Fixture], direct: set[str]) -> list[Fixture]:
    """The fixtures the test uses (as `resolve` finds them), without failing on ones it cannot give."""
    seen, order = set(), []

    def visit(name):
        if name in seen or name in direct or name not in known:
            return
        seen.add(name)
        for need in known[name].needs:
            visit(need)
        order.append(known[name])

    marks = target.func.decorator_list + (target.cls.decorator_list if target.cls else [])
    args = [a.arg for a in target.func.args.posonlyargs + target.func.args.args if a.arg not in ("self", "cls")]
    for name in [f.name for f in known.values() if f.autouse] + _marked_fixtures(marks, target.test_names) + args:
        visit(name)
    return order



class _RequestParam(ast.NodeTransformer):
    """`request.param` (and `getattr(request, "param", …)`) made into the case's value."""

    def __init__(self, request: str, value: ast.expr):
        self.request, self.value = request, value

    def _is_request(self, node) -> bool:
        return isinstance(node, ast.Name) and node.id == self.request

    def visit_Attribute(self, node):
        if self._is_request(node.value) and node.attr == "param":
            return copy.deepcopy(self.value)
        return self.generic_visit(node)

    def visit_Call(self, node):
        if dotted(node) in ("getattr", "hasattr") and len(node.args) >= 2 and self._is_request(node.args[0]) \
                and isinstance(node.args[1], ast.Constant) and node.args[1].value == "param":
            return ast.Constant(True) if dotted(node) == "hasattr" else copy.deepcopy(self.value)
        return self.generic_visit(node)


def bind_fixture_param(fixture: Fixture, value: ast.expr, where: str) -> None:
    """The fixture's `request.param` made into the case's value, and `request` dropped from its arguments."""
    params = fixture.func.args.posonlyargs + fixture.func.args.args
    if "request" not in [a.arg for a in params]:
        return
    fixture.func.body = [_RequestParam("request", value).visit(s) for s in fixture.func.body]
    if any(isinstance(n, ast.Name) and n.id == "request" for s in fixture.func.body for n in ast.walk(s)):
        raise ReducerError(f"{where}: fixture {fixture.name!r} uses pytest's `request` for more than "
                           "request.param, which has no standalone form", USAGE)
    fixture.func.args.posonlyargs = [a for a in fixture.func.args.posonlyargs if a.arg != "request"]
    fixture.func.args.args = [a for a in fixture.func.args.args if a.arg != "request"]
