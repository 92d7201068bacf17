"""Make every array a scalar at once: calls that build arrays (`jnp.ones((16, 6))`,
`jax.random.normal(k, (3, 4))`, `np.linspace(...)` …) become `1.0`, and matrix products become
products. One big cut, since shapes that must agree (a matmul, a broadcast) cannot shrink one at
a time."""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t

ROOTS = {"jax", "jnp", "np", "numpy", "random", "onp"}
BUILDERS = {
    "ones", "zeros", "full", "empty", "array", "asarray", "arange", "linspace", "logspace", "eye", "identity",
    "ones_like", "zeros_like", "full_like", "empty_like", "normal", "uniform", "randint", "bernoulli",
    "dirichlet", "gamma", "beta", "truncated_normal", "rand", "randn", "random", "standard_normal",
    "exponential", "poisson", "categorical", "tri", "diag",
}


def _chain_root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _builds_array(n: ast.AST) -> bool:
    return (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in BUILDERS
            and _chain_root(n.func) in ROOTS)


def _outermost(tree: ast.AST) -> list[ast.Call]:
    inner = {id(c) for b in t.nodes(tree) if _builds_array(b) for c in ast.walk(b) if c is not b}
    return [n for n in t.nodes(tree) if _builds_array(n) and id(n) not in inner]


def _matmuls(tree: ast.AST) -> list[ast.BinOp]:
    return [b for b in t.nodes(tree, ast.BinOp) if isinstance(b.op, ast.MatMult)]


class ScalarizeArrays(t.SourcePass):
    name = "scalarize-arrays"

    def points(self, script):
        builders = _outermost(script.tree)
        if not builders:
            return []
        replaced = {id(n) for b in builders for n in ast.walk(b)}
        products = any(id(b) not in replaced for b in _matmuls(script.tree))
        return ([True] if products else []) + [False]

    def apply(self, script, with_products):
        fresh = script.fresh()
        for call in _outermost(fresh):
            t.replace_node(fresh, call, ast.Constant(1.0))
        if with_products:
            for b in _matmuls(fresh):
                b.op = ast.Mult()
        return t.dump(fresh)
