"""A call of one of the program's own functions, taken into the statement that makes it, so that a
start can follow a check through a helper the check calls.

`got = np.asarray(log_likelihood(model, x, y))`, where `log_likelihood` runs the model and then a
formula on what the model made, reads `model`: a name no start can write out. With the arrays the
callee's frame held when it last returned (`mu`, `log_var`), the call becomes the formula alone:

    var = jnp.exp(log_var)
    density = jnp.exp(-0.5 * (y - mu) ** 2 / var) / jnp.sqrt(2 * jnp.pi * var)
    got = np.asarray(jnp.log(density))

The callee's statements that read what the caller cannot give (the model) are replaced by the arrays
they made; the rest are kept, so the formula that failed is still computed, not written out. A name
of the callee that the caller uses for another value is renamed (`log_likelihood_var`).
"""
from __future__ import annotations

import ast
import copy

from reducer.levels.source.starts.program_slice import BUILTINS, Scope, binds, outer_names, path_to, slice_for


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == name), None)


def _body(function: ast.FunctionDef) -> tuple[list[ast.stmt], ast.expr] | None:
    """The simple statements of a function that ends in its only `return`, and what it returns."""
    body = list(function.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return None
    if any(not binds(s) for s in body[:-1]):
        return None  # a loop, a branch, a statement of effect only: not a formula to take in
    return body[:-1], body[-1].value


def _arguments(function: ast.FunctionDef, call: ast.Call) -> dict[str, ast.expr] | None:
    """The expression each parameter is given by `call` (or its default); None for what this reading
    does not follow (`*args`, `**kwargs`, a starred argument)."""
    a = function.args
    if a.vararg or a.kwarg or a.posonlyargs or any(isinstance(x, ast.Starred) for x in call.args):
        return None
    if any(k.arg is None for k in call.keywords) or len(call.args) > len(a.args):
        return None
    given = dict(zip([p.arg for p in a.args], call.args))
    given.update({k.arg: k.value for k in call.keywords})
    defaults = dict(zip([p.arg for p in a.args][len(a.args) - len(a.defaults):], a.defaults))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    params = [p.arg for p in [*a.args, *a.kwonlyargs]]
    found = {p: given.get(p, defaults.get(p)) for p in params}
    return None if any(v is None for v in found.values()) else found


class _Rename(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(self.names.get(node.id, node.id), node.ctx), node)


def _same(a: dict | None, b: dict | None) -> bool:
    return a is not None and b is not None and a["shape"] == b["shape"] and a["values"] == b["values"]


def _taken_in(call: ast.Call, function: ast.FunctionDef, returned: dict, unbound: set[str], scope: Scope,
              caller_names: set[str], arrays: dict) -> tuple[list[ast.stmt], ast.expr, dict] | None:
    """The statements that stand for `call` and the expression for its value, and the callee's
    arrays they are fed; None where the callee cannot be taken in."""
    shape, given = _body(function), _arguments(function, call)
    if shape is None or given is None:
        return None
    body, value = shape
    module_names = (set().union(*(binds(s) for s in scope.module)) | BUILTINS) - set(given)
    computable = {p for p, arg in given.items() if not outer_names(arg) & unbound} | module_names
    fed: set[str] = set()
    for stmt in body:
        made = binds(stmt)
        if outer_names(stmt) <= computable:
            computable |= made
        elif made <= set(returned):
            fed |= made
            computable |= made
    part = slice_for(outer_names(value), Scope(before=body, parameters=set(given), module=scope.module),
                     frozenset(fed))
    if part.unbound - computable:
        return None
    read = set().union(outer_names(value), *(outer_names(s) for s in part.local))
    params = [p for p in given if p in read]
    bound = set(params) | fed | set().union(*(binds(s) for s in part.local))
    renamed = {}
    for name in bound & caller_names:
        argument = given.get(name)
        kept = (name in fed and _same(arrays.get(name), returned.get(name))) or (
            isinstance(argument, ast.Name) and argument.id == name and name not in fed
            and not any(name in binds(s) for s in part.local))
        if not kept:
            renamed[name] = f"{function.name}_{name}"
    rename = _Rename(renamed)
    statements = [ast.fix_missing_locations(ast.copy_location(
        ast.Assign([ast.Name(renamed.get(p, p), ast.Store())], copy.deepcopy(given[p])), function))
        for p in params if not (isinstance(given[p], ast.Name) and given[p].id == renamed.get(p, p))]
    statements += [rename.visit(copy.deepcopy(s)) for s in part.local]
    feeds = {renamed.get(n, n): returned[n] for n in fed if n in read or any(n in outer_names(s) for s in part.local)}
    return statements, rename.visit(copy.deepcopy(value)), feeds


class _Replace(ast.NodeTransformer):
    def __init__(self, old: ast.AST, new: ast.expr):
        self.old, self.new = old, new

    def visit_Call(self, node: ast.Call) -> ast.AST:
        return self.new if node is self.old else self.generic_visit(node)


def take_in_calls(tree: ast.Module, statements: list[ast.stmt], unbound: set[str], scope: Scope,
                  found: dict) -> tuple[dict, bool]:
    """Take into `tree`, in place, the calls of the program's functions that make `statements` read an
    `unbound` name, where the callee's arrays at its last return (`found["returned"]`) stand for what
    it read of them. The arrays the proposal may now be fed (the caller's and the callees' taken in)
    and whether a call was taken in."""
    arrays = dict(found.get("arrays", {}))
    returned = found.get("returned", {})
    caller_names = set(scope.parameters) | {n.id for s in [*scope.before, *statements] for n in ast.walk(s)
                                            if isinstance(n, ast.Name)}
    changed = False
    for stmt in statements:
        if not outer_names(stmt) & unbound:
            continue
        calls = [c for c in ast.walk(stmt) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                 and c.func.id in returned and _function(tree, c.func.id) is not None]
        names = [c.func.id for c in calls]
        before = []
        for call in calls:
            if names.count(call.func.id) > 1:
                continue
            taken = _taken_in(call, _function(tree, call.func.id), returned[call.func.id], unbound, scope,
                              caller_names, arrays)
            if taken is None:
                continue
            more, value, feeds = taken
            if any(n in arrays and not _same(arrays[n], a) for n, a in feeds.items()):
                continue
            before += more
            arrays.update(feeds)
            caller_names |= set(feeds) | set().union(*(binds(s) for s in more))
            _Replace(call, value).visit(stmt)
            changed = True
        if before:
            body, k = path_to(tree.body, stmt)[-1]
            body[k:k] = before
    return arrays, changed
