"""Helpers the source passes share: the pass base, numbering nodes, editing a fresh copy, name lookups.

A pass reads the script's tree (parsed once by the engine) to list its change points, addressing a
node by its position in `ast.walk` order (outer nodes first); for each candidate it edits a fresh
parse of the script and prints it with `ast.unparse`, so a failed try costs nothing to undo (the
overlay idea of pysource-minimize, by re-parsing).
"""
from __future__ import annotations

import ast
import copy

from reducer.levels.source.representation import Script
from reducer.passes import ReductionPass

STMT_FIELDS = ("body", "orelse", "finalbody")


class SourcePass(ReductionPass):
    """The base of every source pass: `points(script)` lists what the pass can change in the
    `Script` (text and tree), in the order to try it; `apply(script, point)` makes that candidate
    from `script.fresh()`, or None."""

    def parse(self, source: str) -> Script:
        return Script(source)


def parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def dump(tree: ast.AST) -> str:
    ast.fix_missing_locations(tree)
    return ast.unparse(tree) + "\n"


def nodes(tree: ast.AST, kind: type | tuple = ast.AST) -> list[ast.AST]:
    return [n for n in ast.walk(tree) if isinstance(n, kind)]


def statement_lists(tree: ast.AST) -> list[tuple[ast.AST, str]]:
    """Every list of statements in the tree, outermost first."""
    out = []
    for node in ast.walk(tree):
        for name in STMT_FIELDS:
            body = getattr(node, name, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                out.append((node, name))
    return out


def needs_body(owner: ast.AST, field: str) -> bool:
    return not isinstance(owner, ast.Module) and not (field in ("orelse", "finalbody"))


def set_body(owner: ast.AST, field: str, stmts: list[ast.stmt]) -> None:
    if not stmts and needs_body(owner, field):
        stmts = [ast.Pass()]
    setattr(owner, field, stmts)


def imported(stmt: ast.Import | ast.ImportFrom) -> set[str]:
    """The names an import statement binds (`import a.b` binds `a`)."""
    return {(a.asname or a.name).split(".")[0] for a in stmt.names}


def imports_module(tree: ast.Module, name: str) -> bool:
    """Whether the module's own statements bind the top-level module `name` under its name (`import jax`)."""
    return any(isinstance(s, ast.Import) and any(a.name.split(".")[0] == name and not a.asname for a in s.names)
               for s in tree.body)


def parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def replace_node(tree: ast.AST, old: ast.AST, new: ast.AST) -> bool:
    """Put `new` where `old` is in its parent; False when `old` is not found."""
    for node in ast.walk(tree):
        for name, value in ast.iter_fields(node):
            if value is old:
                setattr(node, name, new)
                return True
            if isinstance(value, list):
                for k, item in enumerate(value):
                    if item is old:
                        value[k] = new
                        return True
    return False


def loaded_names(tree: ast.AST) -> set[str]:
    """Names read anywhere (plain names, and the roots of attribute chains)."""
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}
    for n in ast.walk(tree):  # names listed in __all__ or used in strings are not tracked
        if isinstance(n, ast.Global | ast.Nonlocal):
            used.update(n.names)
    return used


def free_loads(tree: ast.AST) -> set[str]:
    """Names read where they are not a parameter of an enclosing lambda or function (so that
    `lambda theta: theta` does not count as a use of a module-level `theta`)."""
    found: set[str] = set()

    def visit(node: ast.AST, bound: frozenset) -> None:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store) and node.id not in bound:
            found.add(node.id)
        if isinstance(node, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
            params |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
            for d in a.defaults + [d for d in a.kw_defaults if d is not None]:
                visit(d, bound)
            for d in getattr(node, "decorator_list", []):
                visit(d, bound)
            inner = bound | params
            for child in (node.body if isinstance(node.body, list) else [node.body]):
                visit(child, inner)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, bound)

    visit(tree, frozenset())
    for n in ast.walk(tree):
        if isinstance(n, ast.Global | ast.Nonlocal):
            found.update(n.names)
    return found


def name_uses(tree: ast.AST, name: str) -> int:
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
               and not isinstance(n.ctx, ast.Store))


def substitute(tree: ast.AST, mapping: dict[str, ast.expr]) -> ast.AST:
    """Replace loaded names by copies of expressions (does not look into nested scopes' shadowing)."""

    class Sub(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in mapping and isinstance(node.ctx, ast.Load):
                return copy.deepcopy(mapping[node.id])
            return node

        def visit_Lambda(self, node):
            shadow = {a.arg for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs}
            if shadow & mapping.keys():
                inner = {k: v for k, v in mapping.items() if k not in shadow}
                node.body = substitute(node.body, inner) if inner else node.body
                return node
            self.generic_visit(node)
            return node

    return Sub().visit(tree)


def bindings(target: ast.expr, value: ast.expr) -> list[tuple[str, ast.expr]] | None:
    """What each name in an assignment target is bound to, or None when it cannot be told."""
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, ast.Tuple | ast.List):
        if any(isinstance(e, ast.Starred) for e in target.elts):
            return None
        if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
            pairs = [bindings(t, v) for t, v in zip(target.elts, value.elts)]
        else:
            pairs = [bindings(t, ast.Subscript(value=copy.deepcopy(value), slice=ast.Constant(k), ctx=ast.Load()))
                     for k, t in enumerate(target.elts)]
        if any(p is None for p in pairs):
            return None
        return [b for p in pairs for b in p]
    return None


def one_expression(fn: ast.AST) -> bool:
    """A `def` whose body is a single `return e`, expression statement `e` (its value then returned
    too) or `pass`: it can be written as a lambda."""
    return (isinstance(fn, ast.FunctionDef) and len(fn.body) == 1
            and isinstance(fn.body[0], ast.Return | ast.Expr | ast.Pass))


def as_lambda(fn: ast.FunctionDef) -> ast.Assign:
    """`@d` / `def f(x): return e` as the assignment `f = d(lambda x: e)` (annotations dropped)."""
    stmt = fn.body[0]
    result = stmt.value if isinstance(stmt, ast.Return | ast.Expr) and stmt.value is not None else ast.Constant(None)
    value: ast.expr = ast.Lambda(args=fn.args, body=result)
    for deco in reversed(fn.decorator_list):
        value = ast.Call(func=deco, args=[value], keywords=[])
    for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs:
        a.annotation = None
    for a in (fn.args.vararg, fn.args.kwarg):
        if a is not None:
            a.annotation = None
    return ast.Assign(targets=[ast.Name(fn.name, ast.Store())], value=value, lineno=fn.lineno)
