"""A failing test as input: a test's node id made into a standalone script that runs that test alone.

`FILE.py::test_name`, `FILE.py::TestClass::test_name` (pytest functions and classes, unittest and
absltest methods). The script holds the test module's own code less its other tests, the fixtures
the test asks for (from the module, its class and the conftest.py files above it) as plain functions
called in dependency order, then the test's class set-up, set-up and body as module-level statements
(reducer.readers.testclass), or, when the test needs more of its class, the class itself with `setUpClass`,
`setUp` (or `setup_class`, `setup_method`) and the test method called directly. pytest and absl are
not imported (an absltest class becomes a `unittest.TestCase` unless it uses absltest's own helpers),
so the failure the reduction keeps is the one inside the test, not the runner's report of it.

One case of a parametrized test, by the id the runner prints: `FILE.py::test_x[case]` for pytest
(reducer.readers.testparams), `FILE.py::Class::test_x_case` / `test_x0` for absltest's `parameterized`
(reducer.readers.testclass). The case's values are bound as plain variables at the top of the test's body,
a parametrized fixture's `request.param` becomes its value, and the other cases are dropped.

`standalone_source` is the entry point; the node id is parsed and its test found by
reducer.readers.testtarget, its fixtures (and the stand-ins for pytest's `tmp_path`, `tmpdir`, `monkeypatch`
and `capsys`) come from reducer.readers.testfixtures.
"""
from __future__ import annotations

import ast

from reducer.errors import USAGE, ReducerError
from reducer.readers.testclass import CASE, dotted, flatten, rebase_to_unittest, testcase_bases
from reducer.readers.testfixtures import (BUILTIN_IMPORTS, BUILTIN_FIXTURES, STAND_INS, Fixture, bind_fixture_param,
                                  conftest_fixtures, fixture_decorator, is_hook_or_fixture, local_fixtures,
                                  resolve)
from reducer.readers.testparams import bind_values, combined_ids, pytest_case, pytest_probe, pytest_sources
from reducer.readers.testtarget import Target, by_test_library, find_target, is_docstring, is_test_import


def _strip(func: ast.AST, test_names: dict) -> ast.AST:
    func.decorator_list = [d for d in func.decorator_list if not by_test_library(d, test_names)]
    return func


def _is_test_class(stmt: ast.ClassDef) -> bool:
    return stmt.name.startswith("Test") or any(dotted(b).endswith("TestCase") for b in stmt.bases)


def keep_statement(stmt: ast.stmt, target: Target, keep_classes: list, used: set) -> bool:
    """Whether a top-level statement of the test module belongs in the standalone script."""
    if is_test_import(stmt) or is_docstring(stmt) or is_hook_or_fixture(stmt, target.test_names) and not \
            isinstance(stmt, ast.FunctionDef):
        return False
    if isinstance(stmt, ast.If) and "__name__" in ast.unparse(stmt.test) and "__main__" in ast.unparse(stmt.test):
        return False
    if isinstance(stmt, ast.FunctionDef):
        if fixture_decorator(stmt, target.test_names) is not None:
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
            if fixture_decorator(stmt, target.test_names) is not None and id(stmt) not in used:
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


def apply_case(target: Target, known: dict[str, Fixture]) -> None:
    """One case of a parametrized test: its values bound at the top of the test's body (the test no
    longer takes them), a parametrized fixture's `request.param` made into its value."""
    if target.absl_values is not None:
        values = dict(target.absl_values)
        for arg, default in _defaults(target.func).items():
            values.setdefault(arg, default)
        bind_values(target.func, values, target.where)
        return
    if target.param is None:
        sources = pytest_sources(target, known)
        if sources:
            cases = combined_ids(sources, target.test_names)
            ids = [i for i, _ in cases] if cases is not None else [i for i, _ in pytest_probe(target)]
            shown = ", ".join(f"[{i}]" for i in ids[:5]) + (f" … ({len(ids)} in all)" if len(ids) > 5 else "")
            raise ReducerError(f"{target.where}: a parametrized test: give one of its cases, "
                               f"{target.func.name}{shown.split(', ')[0] if ids else '[...]'}"
                               + (f" (it has {shown})" if ids else ""), USAGE)
        return
    case = pytest_case(target, target.param, known)
    for name, value in case.fixture_params.items():
        if name not in known:
            raise ReducerError(f"{target.where}[{target.param}]: {name!r} is parametrized indirectly, but no "
                               "fixture of that name is defined", USAGE)
        bind_fixture_param(known[name], value, target.where)
    values = dict(case.values)
    for arg, default in _defaults(target.func).items():
        values.setdefault(arg, default)
    bind_values(target.func, values, f"{target.where}[{target.param}]")


def _defaults(func: ast.FunctionDef) -> dict[str, ast.expr]:
    params = func.args.posonlyargs + func.args.args
    return {a.arg: d for a, d in zip(params[len(params) - len(func.args.defaults):], func.args.defaults)}


def earlier_tests(target: Target, fixtures: set[str]) -> list[ast.FunctionDef]:
    """The module's plain tests before `target`, in the order pytest runs them, of those that ask only
    for `fixtures` (the target's own): a test may fail only after them (a global they change, JAX's
    options a decorator sets). The fixtures' values are the target's (pytest shares a module's)."""
    if target.cls is not None or target.func not in target.tree.body:
        return []
    before = target.tree.body[:target.tree.body.index(target.func)]
    return [s for s in before if isinstance(s, ast.FunctionDef) and s.name.startswith("test")
            and not (s.args.posonlyargs or s.args.kwonlyargs or s.args.vararg or s.args.kwarg)
            and {a.arg for a in s.args.args} <= fixtures
            and not any(by_test_library(d, target.test_names) for d in s.decorator_list)]


def _called_first(tests: list[ast.FunctionDef]) -> list[ast.stmt]:
    """Each test called as pytest calls it, whatever it raises (its failure is its own)."""
    calls = [f"{t.name}({', '.join(a.arg for a in t.args.args)})" for t in tests]
    return [ast.parse(f"try:\n    {call}\nexcept BaseException:\n    pass\n").body[0] for call in calls]


def standalone_source(node_id: str, source: str, after_earlier: bool = False) -> str:
    """The standalone script that runs the test NODE_ID of the module whose text is SOURCE; with
    `after_earlier`, after the module's plain tests before it (`earlier_tests`)."""
    target = find_target(node_id, source)
    known = conftest_fixtures(target.path)
    known.update(local_fixtures(target))
    apply_case(target, known)
    order = resolve(target, known)
    used = {id(f.func) for f in order if isinstance(f, Fixture)}
    given = {f if isinstance(f, str) else f.name for f in order}
    first = earlier_tests(target, given) if after_earlier else []
    case_classes = testcase_bases(target)
    keep_classes = case_classes or ([target.cls] if target.cls else [])
    for cls in keep_classes:
        trim_class(cls, target, used)
    rebased = rebase_to_unittest(case_classes, target.test_names)
    other_bases = any(dotted(b) not in ("unittest.TestCase", "TestCase") and dotted(b) not in
                      {c.name for c in case_classes} for c in case_classes for b in c.bases)
    flat = _flat(target, order, case_classes, other_bases, rebased)
    body = [_strip(s, target.test_names) if isinstance(s, ast.FunctionDef) else s
            for s in target.tree.body if (keep_statement(s, target, [] if flat else keep_classes, used) or s in first)
            and not (flat and s in keep_classes)]
    if flat:
        lines = module_setup(target) + _fixture_lines(order) + [f"{CASE} = unittest.TestCase()"] * flat[1]
        run = [ast.parse(line).body[0] for line in lines] + flat[0]
    else:
        run = [ast.parse(line).body[0] for line in driver(target, order, case_classes, other_bases)]
        run[-1:-1] = _called_first(first)  # with the fixtures set up, before the test's own call
    stmts = _conftest_code(order, target) + body + run
    builtins = [f for f in order if isinstance(f, str)]
    modules = sorted({m for f in builtins for m in BUILTIN_IMPORTS[f]})
    imports = [ast.Import(names=[ast.alias(m)]) for m in modules]
    stmts = [s for f in builtins if f in STAND_INS for s in ast.parse(STAND_INS[f]).body] + stmts
    imports += [imp for name, imp in target.test_names.items() if name in _names_used(stmts)]
    bound = {a.asname or a.name for s in stmts if isinstance(s, ast.Import) for a in s.names}
    if "unittest" in _names_used(stmts) and "unittest" not in bound:
        imports.append(ast.Import(names=[ast.alias("unittest")]))
    module = ast.Module(body=_imports_first(stmts, imports), type_ignores=[])
    ast.fix_missing_locations(module)
    header = (f"# {node_id}, made standalone by reducer: " + ("the tests before it, then " if first else "")
              + "fixtures and set-up run first, then the test's body\n")
    return header + ast.unparse(module) + "\n"
