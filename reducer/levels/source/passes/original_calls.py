"""Put the user's own library calls back in place of written-back functions.

When the traced level has run, the source level starts from its write-back, which spells the failing
computation in primitives: `enzyme_jax_ir()(lambda a: jax.lax.sort(a)[0])` where the user wrote
`jnp.median(r)`. This pass offers, for each lambda and each undecorated function the script defines
(`def f(a): ...` becomes `f = jax.numpy.sinc`), each public JAX function the original program calls
(`jax.numpy.median`, `jax.scipy.special.digamma`, ...), spelled in full; when one keeps the failure
the reproducer is shorter and speaks the API the user called.
`Script.original_calls` lists those functions (set by the job from the program it was given).
"""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t

#: where the functions worth offering live; functions taking functions are left out
LIBRARIES = ("jax.numpy.", "jax.scipy.", "jax.nn.", "jax.lax.", "jax.image.")
HIGHER_ORDER = {"scan", "while_loop", "fori_loop", "cond", "switch", "map", "associative_scan", "custom_root",
                "custom_linear_solve", "reduce", "vectorize", "vmap", "piecewise", "apply_along_axis", "frompyfunc"}
MOST = 12


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Each name the program's imports bind, with the dotted path it stands for."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                found[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                found[a.asname or a.name] = f"{node.module}.{a.name}"
    return found


def _dotted(node: ast.expr) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None


def original_calls(source: str) -> tuple[str, ...]:
    """The public JAX functions `source` calls, in full (`jax.numpy.median`), in order of first call."""
    tree = t.parse(source)
    if tree is None:
        return ()
    aliases, found = _aliases(tree), []
    for node in ast.walk(tree):
        parts = _dotted(node.func) if isinstance(node, ast.Call) else None
        if not parts or parts[0] not in aliases:
            continue
        path = ".".join([aliases[parts[0]], *parts[1:]])
        if path.startswith(LIBRARIES) and parts[-1] not in HIGHER_ORDER and path not in found:
            found.append(path)
    return tuple(found[:MOST])


def _expr(path: str) -> ast.expr:
    return ast.parse(path, mode="eval").body


def _functions(tree: ast.AST) -> list[ast.Lambda | ast.FunctionDef]:
    """The lambdas, then the undecorated function definitions, in the order they are written."""
    defined = [n for n in t.nodes(tree, ast.FunctionDef) if not n.decorator_list]
    return t.nodes(tree, ast.Lambda) + defined


class OriginalCalls(t.SourcePass):
    name = "original-calls"

    def points(self, script):
        if not script.original_calls:
            return []
        return [(i, path) for i in range(len(_functions(script.tree))) for path in script.original_calls]

    def apply(self, script, point):
        i, path = point
        fresh = script.fresh()
        fun = _functions(fresh)[i]
        call = _expr(path)
        if isinstance(fun, ast.FunctionDef):
            call = ast.Assign([ast.Name(fun.name, ast.Store())], call, lineno=fun.lineno)
        if not t.replace_node(fresh, fun, call):
            return None
        if not t.imports_module(fresh, "jax"):
            fresh.body.insert(0, ast.Import([ast.alias("jax")]))
        return t.dump(fresh)
