"""Replace an expression by the constant `1.0` (sizes such as `x.shape[0]` by `1`, conditions such
as `err > tol` by `False` or `True`, arrays built by a constructor also by `jax.numpy.ones(1)`): whole
sub-computations such as `jax.random.normal(key, (16, 6))` or `params["enc"]` often matter only as
"some number"."""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t
from reducer.levels.source.passes.scalarize_arrays import BUILDERS

SIMPLE = (ast.Constant, ast.Name, ast.Starred, ast.Slice, ast.FormattedValue, ast.JoinedStr, ast.Lambda)
VALUES = (1.0,)
#: JAX's functions of functions, by the positions of the functions they take: a number there is a
#: program no one would write, kept only where JAX fails before calling it (`pure_callback(1.0, …)`)
TAKES_FUNCTIONS = {"pure_callback": (0,), "io_callback": (0,), "callback": (0,), "jit": (0,), "vmap": (0,),
                   "grad": (0,), "value_and_grad": (0,), "jacfwd": (0,), "jacrev": (0,), "hessian": (0,),
                   "vjp": (0,), "jvp": (0,), "linearize": (0,), "checkpoint": (0,), "remat": (0,),
                   "custom_jvp": (0,), "custom_vjp": (0,), "while_loop": (0, 1),
                   "fori_loop": (2,), "scan": (0,), "cond": (1, 2), "switch": (1,), "map": (0,),
                   "associative_scan": (0,), "eval_shape": (0,), "make_jaxpr": (0,)}


def _a_function_argument(node: ast.AST, parent: ast.AST | None) -> bool:
    """Whether `node` is an argument where a JAX function of functions takes a function."""
    if not isinstance(parent, ast.Call) or node not in parent.args:
        return False
    func = parent.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return parent.args.index(node) in TAKES_FUNCTIONS.get(name, ())


def _applies(n: ast.AST) -> bool:
    return (isinstance(n, ast.expr) and not isinstance(n, SIMPLE)
            and not isinstance(getattr(n, "ctx", None), ast.Store | ast.Del))


def _builds_array(node: ast.AST) -> bool:
    """An array made by a constructor, possibly indexed: `jnp.linspace(0, 1)[None][:, 0]`."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in BUILDERS


def _is_size(node: ast.AST) -> bool:
    """`x.shape[0]`, `x.shape`, `len(x)`, `x.ndim`, `x.size`: sizes, which become the integer 1."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr in ("shape", "ndim", "size")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"


def _values(node: ast.AST) -> tuple:
    if _is_size(node):
        return (1,)
    if isinstance(node, ast.Compare | ast.BoolOp) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return (False, True) + VALUES
    return VALUES


class ReplaceWithConstants(t.SourcePass):
    name = "replace-with-constants"

    def points(self, script):
        tree = script.tree
        parents = t.parents(tree)
        has_jax = t.imports_module(tree, "jax")
        out = []
        for i, node in enumerate(n for n in t.nodes(tree) if _applies(n)):
            if isinstance(parents.get(node), ast.Call) and parents[node].func is node:
                continue  # `f(...)` with f replaced by a constant is never callable
            if _a_function_argument(node, parents.get(node)):
                continue
            out += [(i, ast.Constant, value) for value in _values(node)]
            if _builds_array(node) and has_jax:  # an array that must stay an array: the smallest one
                out.append((i, ast.Expression, "jax.numpy.ones(1)"))
        return out

    def apply(self, script, point):
        i, kind, value = point
        fresh = script.fresh()
        old = [n for n in t.nodes(fresh) if _applies(n)][i]
        new = ast.Constant(value) if kind is ast.Constant else ast.parse(value, mode="eval").body
        return t.dump(fresh) if t.replace_node(fresh, old, new) else None
