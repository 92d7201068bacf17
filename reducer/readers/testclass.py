"""A test method's class taken apart: its set-up and the test's body as plain module-level statements.

`setUpClass` / `setup_class`, then `setUp` / `setup_method` (each following its `super()` calls down
the module's own base classes; unittest's and absltest's own are no-ops), then the test's body, with
`self.NAME` / `cls.NAME` data attributes made into variables and unittest's assertion helpers called
on a bare `unittest.TestCase()`. When a test needs more of its class (a helper method, a base class
from another library, `super()` used otherwise, a `return` in a set-up), `flatten` gives None and the
caller keeps the class. Also here: which classes make a unittest / absltest TestCase, and absltest
bases made into unittest's; and the methods absltest's `parameterized` decorators generate (their
names, and for each the values it passes, as expressions taken from the decorator's text).
"""
from __future__ import annotations

import ast
import copy
import itertools
import unittest

from reducer.errors import USAGE, ReducerError

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


# ---- absltest's parameterized tests: the methods `parameterized` generates, and what each binds ------------

ABSL_DECORATORS = ("parameters", "named_parameters", "product")
ABSL_PROBE = r'''
import importlib.util, itertools, json, sys
from collections import abc
path, source = sys.argv[1], sys.argv[2]
sys.path.insert(0, __import__("os").path.dirname(path))
spec = importlib.util.spec_from_file_location("reducer_probe_module", path)
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
args, kwargs = eval("(lambda *a, **k: (a, k))(" + source + ")", vars(module))
def kind(case):
    if isinstance(case, abc.Mapping):
        return ["mapping", [k for k in case]]
    if isinstance(case, abc.Iterable) and not isinstance(case, (str, bytes)):
        return ["sequence", len(list(case))]
    return ["single", None]
single = len(args) == 1 and not isinstance(args[0], (tuple, abc.Mapping)) and sys.argv[3:] != ["product"]
cases = list(args[0]) if single else list(args)
out = {"single": single, "cases": [kind(c) for c in cases],
       "names": [c.get("testcase_name") if isinstance(c, abc.Mapping) else
                 (list(c)[0] if kind(c)[0] == "sequence" else None) for c in cases],
       "lens": [len(a) for a in args] if not single else [], "grid": {k: len(v) for k, v in kwargs.items()},
       "keys": [list(a[0]) if isinstance(a, (list, tuple)) and a and isinstance(a[0], abc.Mapping) else []
                for a in args] if not single else []}
print("REDUCER-PROBE " + json.dumps(out, default=str))
'''


def absl_decorator(func: ast.FunctionDef, test_names: dict) -> ast.Call | None:
    found = [d for d in func.decorator_list if isinstance(d, ast.Call) and dotted(d).split(".")[0] in test_names
             and dotted(d).split(".")[-1] in ABSL_DECORATORS]
    return found[0] if found else None


def absl_method_name(base: str, testcase_name, named: bool, index: int) -> str:
    """The name absl's `parameterized` gives the generated method."""
    if not named:
        return f"{base}{index}"
    name = str(testcase_name)
    sep = "_" if base.startswith("test_") and name and not name.startswith("_") else ""
    return f"{base}{sep}{name}"


def _item(seq: ast.expr, key) -> ast.expr:
    return ast.Subscript(seq, ast.Constant(key), ast.Load())


def _params(func: ast.FunctionDef) -> list[str]:
    return [a.arg for a in func.args.posonlyargs + func.args.args][1:]  # after self


def _bind_case(func: ast.FunctionDef, shape: tuple, value: ast.expr | None, items, named: bool) -> dict:
    """Argument name -> expression, for one case: `items` are the literal parts (dict or list) when known,
    else `value` is the case's expression and `shape` what the probe saw of it."""
    params, kind = _params(func), shape[0]
    if kind == "mapping":
        keys = shape[1] if items is None else list(items)
        return {k: (items[k] if items is not None else _item(value, k)) for k in keys if k != "testcase_name"}
    if kind == "sequence":
        elts = items if items is not None else [_item(value, i) for i in range(shape[1])]
        elts = elts[1:] if named else elts
        return dict(zip(params, elts))
    return {params[0]: value} if params else {}


def _as_dict(node: ast.expr) -> ast.expr:
    """`dict(a=1, b=2)` as the literal `{'a': 1, 'b': 2}`; anything else as it is."""
    if isinstance(node, ast.Call) and dotted(node) == "dict" and not node.args and all(k.arg for k in node.keywords):
        return ast.Dict([ast.Constant(k.arg) for k in node.keywords], [k.value for k in node.keywords])
    return node


def _literal_case(case: ast.expr, named: bool):
    """(shape, items, name) of a case written literally; None when it is computed."""
    case = _as_dict(case)
    if isinstance(case, ast.Dict):
        if not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in case.keys):
            return None
        items = {k.value: v for k, v in zip(case.keys, case.values)}
        name = items.get("testcase_name")
        if named and not (isinstance(name, ast.Constant)):
            return None
        return ("mapping", None), items, name.value if named else None
    if isinstance(case, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in case.elts):
        if named and not (case.elts and isinstance(case.elts[0], ast.Constant)):
            return None
        return ("sequence", len(case.elts)), list(case.elts), case.elts[0].value if named else None
    if isinstance(case, ast.Constant) and not named:
        return ("single", None), None, None
    return None


def absl_cases(func: ast.FunctionDef, decorator: ast.Call, path, probe=None) -> list[tuple[str, dict]]:
    """(method name, {argument: expression}) for every method the decorator generates from FUNC.
    PROBE(path, args_source) gives what running the module tells of computed cases."""
    kind = dotted(decorator).split(".")[-1]
    named = kind == "named_parameters"
    if kind == "product":
        return _product_cases(func, decorator, path, probe)
    args = decorator.args
    single = len(args) == 1 and not isinstance(args[0], (ast.Tuple, ast.Dict, ast.Starred))
    cases = (args[0].elts if isinstance(args[0], (ast.List, ast.Tuple)) else None) if single else \
        (None if any(isinstance(a, ast.Starred) for a in args) else list(args))
    literal = [_literal_case(c, named) for c in cases] if cases is not None else None
    if literal is not None and all(x is not None for x in literal):
        return [(absl_method_name(func.name, name, named, i), _bind_case(func, shape, c, items, named))
                for i, (c, (shape, items, name)) in enumerate(zip(cases, literal))]
    seen = probe(path, ", ".join(ast.unparse(a) for a in args) + ",")
    if seen["single"]:
        whole = _as_list(args[0])
    elif len(args) == 1 and isinstance(args[0], ast.Starred):
        whole = _as_list(args[0].value)
    else:
        whole = ast.List([copy.deepcopy(a) for a in args], ast.Load())
    out = []
    for i, (shape, name) in enumerate(zip(seen["cases"], seen["names"])):
        if cases is not None and literal[i] is not None:
            shape_, items, name = literal[i]
            out.append((absl_method_name(func.name, name, named, i), _bind_case(func, shape_, cases[i], items,
                                                                                  named)))
            continue
        value = cases[i] if cases is not None else _item(copy.deepcopy(whole), i)
        out.append((absl_method_name(func.name, name, named, i), _bind_case(func, tuple(shape), value, None,
                                                                              named)))
    return out


def _as_list(expr: ast.expr) -> ast.expr:
    """An expression indexable like the list it gives (`list(EXPR)` unless it surely is one)."""
    if isinstance(expr, (ast.List, ast.Tuple, ast.ListComp)) or dotted(expr) in ("sorted", "list", "tuple") \
            and isinstance(expr, ast.Call):
        return expr
    return ast.Call(ast.Name("list", ast.Load()), [expr], [])


def _product_cases(func, decorator, path, probe) -> list[tuple[str, dict]]:
    seqs = [ast.List([_as_dict(d) for d in s.elts], ast.Load()) if isinstance(s, (ast.List, ast.Tuple)) else s
            for s in decorator.args]
    grid = [(k.arg, k.value) for k in decorator.keywords if k.arg]
    if len(grid) != len(decorator.keywords) or any(isinstance(a, ast.Starred) for a in decorator.args):
        raise ReducerError(f"{path}: {func.name}: parameterized.product(*..., **...) is not supported: "
                           "give its arguments one by one", USAGE)
    literal_seq = [isinstance(s, ast.List) and all(isinstance(d, ast.Dict) and all(
        isinstance(k, ast.Constant) for k in d.keys) for d in s.elts) for s in seqs]
    literal_grid = [isinstance(v, (ast.List, ast.Tuple)) for _, v in grid]
    seen = None
    if not all(literal_seq + literal_grid):
        seen = probe(path, ", ".join(ast.unparse(a) for a in decorator.args + decorator.keywords) + ",", "product")
    axes = []
    for i, s in enumerate(seqs):
        axes.append([{k.value: v for k, v in zip(d.keys, d.values)} for d in s.elts] if literal_seq[i] else
                    [{key: _item(_item(copy.deepcopy(s), n), key) for key in seen["keys"][i]}
                     for n in range(seen["lens"][i])])
    for (name, values), literal in zip(grid, literal_grid):
        axes.append([{name: e} for e in values.elts] if literal else
                    [{name: _item(copy.deepcopy(values), n)} for n in range(seen["grid"][name])])
    out = []
    for i, parts in enumerate(itertools.product(*axes)):
        merged = {}
        for part in parts:
            merged.update(part)
        out.append((absl_method_name(func.name, None, False, i), merged))
    return out
