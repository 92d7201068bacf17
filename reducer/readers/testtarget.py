"""The test a node id names: `FILE.py::test_name` or `FILE.py::Class::test_name`, with the case in
brackets of a parametrized pytest test (`[case]`, kept for reducer.readers.testparams) or the name of a method
that absltest's `parameterized` generates (its values, from reducer.readers.testclass), found in its module's
tree. Also here: the names the module binds to pytest / absl.testing, which tell the test library's
imports, decorators and marks from the module's own code.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from reducer.errors import NOT_FOUND, USAGE, ReducerError
from reducer.readers.testclass import ABSL_PROBE, absl_cases, absl_decorator, dotted

TEST_ROOTS = ("pytest", "_pytest", "absl.testing")


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


def is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def is_test_import(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Import):
        return all(a.name.startswith(TEST_ROOTS) for a in stmt.names)
    return isinstance(stmt, ast.ImportFrom) and (stmt.module or "").startswith(TEST_ROOTS)


def by_test_library(decorator: ast.expr, test_names: dict) -> bool:
    return dotted(decorator).split(".")[0] in test_names



@dataclass
class Target:
    """The test a node id names, in its module's tree."""
    path: Path
    tree: ast.Module
    func: ast.FunctionDef
    cls: ast.ClassDef | None
    test_names: dict  # names bound to pytest / absl.testing
    param: str | None = None  # the id in brackets of a parametrized pytest test
    absl_values: dict | None = None  # the values a generated absltest method binds

    @property
    def where(self) -> str:
        return f"{self.path}::{self.cls.name + '::' if self.cls else ''}{self.func.name}"


def find_target(node_id: str, source: str) -> Target:
    file, *names = node_id.split("::")
    path, param = Path(file), None
    if names and "[" in names[-1]:
        names[-1], _, param = names[-1].partition("[")
        if not param.endswith("]"):
            raise ReducerError(f"{node_id}: a parametrized test's id ends with its case in brackets: "
                               "FILE.py::test[case]", USAGE)
        param = param[:-1]
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
    test_names = test_imports(tree)
    absl_values = None
    if func is not None and cls is not None and absl_decorator(func, test_names) is not None:
        generated = absl_cases(func, absl_decorator(func, test_names), path, absl_probe)
        raise ReducerError(f"{node_id}: a parameterized test: give one of the methods absltest makes of it, "
                           + ", ".join(f"{cls.name}::{n}" for n, _ in generated[:5])
                           + (f" … ({len(generated)} in all)" if len(generated) > 5 else ""), USAGE)
    if func is None and cls is not None and param is None:
        for stmt in scope:
            decorator = absl_decorator(stmt, test_names) if isinstance(stmt, ast.FunctionDef) else None
            if decorator is not None and names[-1].startswith(stmt.name):
                generated = dict(absl_cases(stmt, decorator, path, absl_probe))
                if names[-1] in generated:
                    func, absl_values = stmt, generated[names[-1]]
                    break
    if func is None:
        known = []
        for s in scope:
            if isinstance(s, ast.FunctionDef) and s.name.startswith("test"):
                decorator = absl_decorator(s, test_names) if cls is not None else None
                known += [n for n, _ in absl_cases(s, decorator, path, absl_probe)] if decorator else [s.name]
        inside = f"class {cls.name}" if cls else path.name
        raise ReducerError(f"{node_id}: {inside} has no test {names[-1]}"
                           + (f" (it has {', '.join(known[:6])})" if known else ""), NOT_FOUND)
    target = Target(path, tree, func, cls, test_names, param, absl_values)
    if cls is not None:
        for d in cls.decorator_list:
            if dotted(d).split(".")[0] in test_names and dotted(d).split(".")[-1] in (
                    "parameters", "named_parameters", "product"):
                raise ReducerError(f"{node_id}: a class parameterized as a whole is not supported: "
                                   "parameterize its test methods", USAGE)
    return target


def absl_probe(path: Path, args_source: str, mode: str = "cases") -> dict:
    """What running the test module tells of a parameterized decorator's computed cases."""
    try:
        done = subprocess.run([sys.executable, "-c", ABSL_PROBE, str(path.resolve()), args_source, mode],
                              capture_output=True, text=True, timeout=600, cwd=path.resolve().parent,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ReducerError(f"{path}: could not list the parameterized cases: {exc}", USAGE) from None
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("REDUCER-PROBE ")), None)
    if line is None:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise ReducerError(f"{path}: could not list the parameterized cases: {last}", USAGE)
    return json.loads(line[len("REDUCER-PROBE "):])
