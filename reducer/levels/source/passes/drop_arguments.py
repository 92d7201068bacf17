"""Drop arguments: keyword arguments and trailing positional arguments of calls, and parameters a
function never reads, together with what its call sites pass for them. A random generator's seed
stays (`np.random.default_rng(seed)`): without it the reproducer draws other numbers every run."""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t

FUNCS = (ast.FunctionDef, ast.Lambda)
#: the calls that make or seed a random generator, by their last name: their seed stays
SEEDED = ("default_rng", "RandomState", "seed", "Random", "PRNGKey", "key")


def _unused_params(fn) -> list[int]:
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    used = set()
    for stmt in body:
        used |= t.loaded_names(stmt)
    return [k for k, p in enumerate(fn.args.args) if p.arg not in used]


def _callers(tree: ast.AST, fn) -> list[ast.Call]:
    """Calls that pass arguments to `fn`: by its name, `(lambda …: …)(x, y)`, or `transform(fn)(…)` as
    in `jax.grad(f)(x, y)`."""
    def wraps_fn(node: ast.expr) -> bool:  # jax.jit(jax.grad(enzyme_jax_ir()(lambda ...)))
        if node is fn:
            return True
        while isinstance(node, ast.Call) and node.args:
            node = node.args[0]
            if node is fn:
                return True
        return False

    direct = [c for c in t.nodes(tree, ast.Call) if wraps_fn(c.func)]
    if direct:
        return direct
    name = fn.name if isinstance(fn, ast.FunctionDef) else None
    if name is None:
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign) and n.value is fn and isinstance(n.targets[0], ast.Name):
                name = n.targets[0].id
    if name is None:
        return []

    def named(node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id == name

    def transformed(node: ast.expr) -> bool:  # jax.jit(jax.grad(enzyme_jax_ir()(f)))
        while isinstance(node, ast.Call) and node.args:
            node = node.args[0]
            if named(node):
                return True
        return False

    return [c for c in t.nodes(tree, ast.Call) if named(c.func) or transformed(c.func)]


def _last_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _droppable(fn, k: int) -> bool:
    """Parameter `k` can go unless a later parameter has a default and `k` has none."""
    params = fn.args
    return k >= len(params.args) - len(params.defaults) or not params.defaults


class DropArguments(t.SourcePass):
    name = "drop-arguments"

    def points(self, script):
        tree = script.tree
        out = []
        for i, call in enumerate(t.nodes(tree, ast.Call)):
            seeded = _last_name(call.func) in SEEDED
            out += [("keyword", i, j) for j, kw in enumerate(call.keywords) if not (seeded and kw.arg == "seed")]
            out += [("argument", i, j) for j in reversed(range(len(call.args))) if not (seeded and j == 0)]
        for i, fn in enumerate(t.nodes(tree, FUNCS)):
            out += [("parameter", i, k) for k in reversed(_unused_params(fn)) if _droppable(fn, k)]
        return out

    def apply(self, script, point):
        what, i, k = point
        fresh = script.fresh()
        if what == "keyword":
            del t.nodes(fresh, ast.Call)[i].keywords[k]
        elif what == "argument":
            del t.nodes(fresh, ast.Call)[i].args[k]
        else:
            _drop_parameter(fresh, t.nodes(fresh, FUNCS)[i], k)
        return t.dump(fresh)


def _drop_parameter(tree: ast.AST, fn, k: int) -> None:
    """Remove parameter `k` of `fn`, and what its callers pass for it."""
    for call in _callers(tree, fn):
        if len(call.args) > k and not any(isinstance(a, ast.Starred) for a in call.args[:k + 1]):
            del call.args[k]
        call.keywords = [kw for kw in call.keywords if kw.arg != fn.args.args[k].arg]
    params = fn.args
    first_default = len(params.args) - len(params.defaults)
    if k >= first_default:
        del params.defaults[k - first_default]
    del params.args[k]
