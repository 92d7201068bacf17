"""A test method's class taken apart: its set-up and the test's body as plain module-level statements.

`setUpClass` / `setup_class`, then `setUp` / `setup_method` (each following its `super()` calls down
the module's own base classes; unittest's and absltest's own are no-ops), then the test's body, with
`self.NAME` / `cls.NAME` data attributes made into variables and unittest's assertion helpers called
on a bare `unittest.TestCase()`. When a test needs more of its class (a helper method, a base class
from another library, `super()` used otherwise, a `return` in a set-up), `flatten` gives None and the
caller keeps the class. Also here: which classes make a unittest / absltest TestCase, and absltest
bases made into unittest's.
"""
from __future__ import annotations

import ast
import copy
import unittest

CASE = "case"  # the bare unittest.TestCase() that assertion helpers are called on
UNITTEST_NAMES = frozenset(dir(unittest.TestCase))


class CannotFlatten(Exception):
    pass


def dotted(node: ast.AST) -> str:
    """`a.b.c` for a name, an attribute chain or a call of one; "" for anything else."""
    if isinstance(node, ast.Call):
        return dotted(node.func)
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _super_call(stmt: ast.stmt) -> str | None:
    """The method name of a statement `super().NAME(...)` (or `super(C, self).NAME(...)`), else None."""
    call = stmt.value if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) else None
    func = call.func if call else None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and \
            isinstance(func.value.func, ast.Name) and func.value.func.id == "super":
        return func.attr
    return None


def _own_level(body: list[ast.stmt]):
    """Nodes of these statements outside nested functions and classes."""
    todo = list(body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))


def inline(chain: list[ast.ClassDef], names: tuple[str, ...], start: int = 0) -> list[ast.stmt]:
    """The body of the first of `names` defined from chain[start] on, its super() calls inlined in turn."""
    for index in range(start, len(chain)):
        method = next((s for s in chain[index].body if isinstance(s, ast.FunctionDef) and s.name in names), None)
        if method is None:
            continue
        params = [a.arg for a in method.args.posonlyargs + method.args.args]
        rest = {n.id for n in ast.walk(method) if isinstance(n, ast.Name)} & set(params[1:])
        if rest or any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal))
                       for n in _own_level(method.body)):
            raise CannotFlatten(f"{chain[index].name}.{method.name}")
        body = []
        for stmt in method.body:
            body += inline(chain, names, index + 1) if _super_call(stmt) in names else [stmt]
        return body
    return []


class _Rewrite(ast.NodeTransformer):
    """self.NAME / cls.NAME: a variable for a data attribute, case.NAME for a unittest helper."""

    def __init__(self, variables: dict[str, str], is_case: bool):
        self.variables, self.is_case, self.used_case = variables, is_case, False

    def visit_Attribute(self, node: ast.Attribute):
        if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            return self.generic_visit(node)
        if node.attr in self.variables:
            return ast.copy_location(ast.Name(self.variables[node.attr], node.ctx), node)
        if self.is_case and node.attr in UNITTEST_NAMES:
            self.used_case = True
            return ast.copy_location(ast.Attribute(ast.Name(CASE, ast.Load()), node.attr, node.ctx), node)
        raise CannotFlatten(f"self.{node.attr}")

    def visit_Name(self, node: ast.Name):
        if node.id in ("self", "cls", "super"):
            raise CannotFlatten(node.id)
        return node

    def visit_arg(self, node: ast.arg):
        if node.arg in ("self", "cls"):
            raise CannotFlatten("a nested function of its own self")
        return node


def _data_attributes(chain: list[ast.ClassDef], stmts: list[ast.stmt]) -> tuple[list[ast.stmt], set[str]]:
    """Class-level assignments of the chain (base first) and every NAME that self.NAME / cls.NAME assigns."""
    class_level = [copy.deepcopy(s) for cls in reversed(chain) for s in cls.body
                   if isinstance(s, ast.Assign) or isinstance(s, ast.AnnAssign) and s.value is not None]
    assigned = {t.id for s in class_level for t in ast.walk(s) if isinstance(t, ast.Name) and
                isinstance(t.ctx, ast.Store)}
    assigned |= {n.attr for s in stmts for n in ast.walk(s) if isinstance(n, ast.Attribute) and
                 isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")}
    return class_level, assigned


def flatten(chain: list[ast.ClassDef], test: ast.FunctionDef, is_case: bool, module: ast.Module
            ) -> tuple[list[ast.stmt], bool] | None:
    """Set-up and body of `test` (a method of chain[0]) as module-level statements, and whether they
    call unittest helpers on `case`; None when the test needs its class."""
    class_setup = ("setUpClass",) if is_case else ("setup_class",)
    setup = ("setUp",) if is_case else ("setup_method",)
    try:
        stmts = inline(chain, class_setup) + inline(chain, setup)
        if any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom)) for n in _own_level(test.body)):
            raise CannotFlatten(test.name)
        stmts = copy.deepcopy(stmts + test.body)  # rewritten below; the class stays intact for the fallback
        class_level, attributes = _data_attributes(chain, stmts)
        taken = {n.id for n in ast.walk(module) if isinstance(n, ast.Name)} | {
            n.arg for n in ast.walk(module) if isinstance(n, ast.arg)} | {
            s.name for s in module.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))}
        variables = {a: a if a not in taken or any(_targets(s, a) for s in class_level) else f"self_{a}"
                     for a in attributes}
        rewrite = _Rewrite(variables, is_case)
        out = [rewrite.visit(s) for s in stmts]
    except CannotFlatten:
        return None
    return class_level + out, rewrite.used_case


def _targets(stmt: ast.stmt, name: str) -> bool:
    return any(isinstance(t, ast.Name) and t.id == name and isinstance(t.ctx, ast.Store) for t in ast.walk(stmt))


def testcase_bases(target) -> list[ast.ClassDef]:
    """The target's class and its bases defined in the module, when it is a unittest / absltest TestCase."""
    classes = {s.name: s for s in target.tree.body if isinstance(s, ast.ClassDef)}
    chain, todo = [], [target.cls] if target.cls else []
    is_case = False
    while todo:
        cls = todo.pop()
        chain.append(cls)
        for base in cls.bases:
            name = dotted(base)
            if name in classes and classes[name] not in chain:
                todo.append(classes[name])
            elif name.split(".")[-1].endswith("TestCase"):
                is_case = True
    return chain if is_case else []


def absl_only_helpers(classes: list[ast.ClassDef]) -> set[str]:
    """The `self.NAME` helpers these classes use that absltest.TestCase has and unittest.TestCase lacks."""
    import unittest
    try:
        from absl.testing import absltest
    except ImportError:
        return set()
    extra = set(dir(absltest.TestCase)) - set(dir(unittest.TestCase))
    used = {n.attr for c in classes for n in ast.walk(c)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")}
    return used & extra


def rebase_to_unittest(classes: list[ast.ClassDef], test_names: dict) -> bool:
    """absltest / parameterized TestCase bases become unittest.TestCase; False when a helper needs absl."""
    if absl_only_helpers(classes):
        return False
    for cls in classes:
        cls.bases = [ast.parse("unittest.TestCase", mode="eval").body
                     if dotted(b).split(".")[0] in test_names and dotted(b).endswith("TestCase") else b
                     for b in cls.bases]
    return True
