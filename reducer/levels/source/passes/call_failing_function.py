"""Call the failing function directly: the program becomes one of its own functions on simple arguments.

The failure's traceback names the script's functions on the failing path (`Script.failure`); the
innermost one is where the program's own code raised, or called into the library that did. This
pass proposes, for each such function F (innermost first: the largest cut; a function nested in
another is moved to the module, a method is left to the passes that inline methods), the program
made of F, the module-level definitions F needs (imports, constants, helpers, read transitively),
and one call: `jax.jit(F)(1.0, …)` (the error was often raised while F was being traced: a Python
`if` on a tracer) or `F(1.0, …)`, with `1.0` or `1` for each parameter without a default.
Everything else — the model, the optimiser, the training loop, `main()` — goes at once, and with
it the libraries only they imported. The oracle decides which form, if any, still fails.
"""
from __future__ import annotations

import ast
import copy

from reducer.levels.source import ast_tools as t

#: (wrapped in `jax.jit`, argument value, decorators kept), in the order tried
FORMS = ((True, 1.0, False), (True, 1, False), (False, 1.0, False), (False, 1, False), (False, 1.0, True))


def _binds(stmt: ast.stmt) -> set[str]:
    """The module-level names a statement binds (a function's locals are not among them)."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {stmt.name}
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return t.imported(stmt)
    found: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found |= t.imported(node)
    return found


def _functions(tree: ast.Module, failure: tuple) -> list[int]:
    """Positions (among the tree's `def`s, in `ast.walk` order) of the functions on the failing
    path, innermost frame first; a function nested in another counts, a method does not."""
    defs = t.nodes(tree, ast.FunctionDef)
    parents = t.parents(tree)
    found: list[int] = []
    for line, name in reversed(failure):
        spans = [k for k, fn in enumerate(defs) if fn.name == name and fn.body[0].lineno <= line <= (fn.end_lineno or 0)
                 and not isinstance(parents.get(fn), ast.ClassDef)]
        innermost = max(spans, key=lambda k: defs[k].lineno, default=None)
        if innermost is not None and innermost not in found:
            found.append(innermost)
    return found


def _top(tree: ast.Module, node: ast.AST) -> int:
    """The index of the module-level statement that holds `node`."""
    return next(i for i, stmt in enumerate(tree.body) if any(n is node for n in ast.walk(stmt)))


def _needed(tree: ast.Module, fn: ast.FunctionDef, decorators: bool) -> list[int]:
    """Indices of the module-level statements `fn` reads, transitively (not the one holding it)."""
    top = _top(tree, fn)
    fn = copy.copy(fn)
    fn.decorator_list = fn.decorator_list if decorators else []
    wanted = t.free_loads(fn)
    chosen = {top}
    while True:
        more = {i for i, stmt in enumerate(tree.body) if i not in chosen and _binds(stmt) & wanted}
        if not more:
            return sorted(chosen - {top})
        chosen |= more
        for i in more:
            wanted |= t.free_loads(tree.body[i])


def _required(fn: ast.FunctionDef) -> tuple[list[str], list[str]]:
    """The parameters without a default: positional ones, then keyword-only ones."""
    a = fn.args
    positional = a.posonlyargs + a.args
    return ([p.arg for p in positional[:len(positional) - len(a.defaults)]],
            [p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None])


def _call(fn: ast.FunctionDef, jit: bool, value) -> ast.stmt:
    positional, keyword = _required(fn)
    args = [ast.Constant(value) for _ in positional]
    keywords = [ast.keyword(name, ast.Constant(value)) for name in keyword]
    func: ast.expr = ast.Name(fn.name, ast.Load())
    if jit:
        func = ast.Call(ast.Attribute(ast.Name("jax", ast.Load()), "jit", ast.Load()), [func], [])
    return ast.Expr(ast.Call(func, args, keywords))


class CallFailingFunction(t.SourcePass):
    name = "call-failing-function"

    def points(self, script):
        defs = t.nodes(script.tree, ast.FunctionDef)
        return [(k, *form) for k in _functions(script.tree, script.failure) for form in FORMS
                if (defs[k].decorator_list or not form[2])
                and (any(_required(defs[k])) or isinstance(form[1], float))]  # no parameters: one value

    def apply(self, script, point):
        k, jit, value, decorators = point
        tree = script.fresh()
        fn = t.nodes(tree, ast.FunctionDef)[k]
        future = [s for s in tree.body if isinstance(s, ast.ImportFrom) and s.module == "__future__"]
        body = [tree.body[i] for i in _needed(tree, fn, decorators) if tree.body[i] not in future]
        if jit and not t.imports_module(ast.Module(body, []), "jax"):
            body.insert(0, ast.Import([ast.alias("jax")]))
        if not decorators:
            fn.decorator_list = []
        tree.body = future + body + [fn, _call(fn, jit, value)]
        return t.dump(tree)
