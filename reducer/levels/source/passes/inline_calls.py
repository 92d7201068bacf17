"""Inline a function call: `f(a, b)` where `f` just returns an expression becomes that expression
with the parameters replaced, and a statement `main()` becomes the body of `main`."""
from __future__ import annotations

import ast
import copy

from reducer.levels.source.passes import _ast_tools as t


def _functions(tree: ast.AST) -> dict[str, ast.FunctionDef]:
    defs: dict[str, ast.FunctionDef] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef) and not n.decorator_list:
            defs[n.name] = None if n.name in defs else n  # defined twice: leave alone
    return {k: v for k, v in defs.items() if v is not None}


def _body(fn: ast.FunctionDef) -> list[ast.stmt]:
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


def _parameters(fn: ast.FunctionDef, call: ast.Call) -> dict[str, ast.expr] | None:
    a = fn.args
    if a.vararg or a.kwarg or a.posonlyargs or any(isinstance(x, ast.Starred) for x in call.args) \
            or any(k.arg is None for k in call.keywords):
        return None
    names = [p.arg for p in a.args]
    if len(call.args) > len(names):
        return None
    values: dict[str, ast.expr] = dict(zip(names, call.args))
    defaults = dict(zip(names[len(names) - len(a.defaults):], a.defaults))
    kw_defaults = {p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None}
    for k in call.keywords:
        if k.arg not in names and k.arg not in kw_defaults:
            return None
        values[k.arg] = k.value
    for name in names + [p.arg for p in a.kwonlyargs]:
        if name not in values:
            default = defaults.get(name, kw_defaults.get(name))
            if default is None:
                return None
            values[name] = default
    return values


def _drop_if_unused(tree: ast.AST, fn: ast.FunctionDef) -> None:
    """Remove the definition once its last call has been inlined."""
    if t.name_uses(tree, fn.name):
        return
    for owner, field in t.statement_lists(tree):
        stmts = getattr(owner, field)
        if fn in stmts:
            t.set_body(owner, field, [s for s in stmts if s is not fn])
            return


def _splice(tree: ast.AST, anchor: ast.stmt, before: list[ast.stmt], replacement: list[ast.stmt]) -> bool:
    """Replace statement `anchor` by `before + replacement` in whatever list holds it."""
    for owner, field in t.statement_lists(tree):
        stmts = getattr(owner, field)
        if anchor in stmts:
            at = stmts.index(anchor)
            t.set_body(owner, field, stmts[:at] + before + replacement + stmts[at + 1:])
            return True
    return False


def _lambda_calls(tree: ast.AST) -> list[ast.Call]:
    return [n for n in t.nodes(tree, ast.Call) if isinstance(n.func, ast.Lambda)]


class InlineCalls:
    name = "inline-calls"

    def candidates(self, source: str):
        tree = t.parse(source)
        if tree is None:
            return
        for i in range(len(_lambda_calls(tree))):  # (lambda x: e)(a) becomes e with x replaced by a
            fresh = t.parse(source)
            call = _lambda_calls(fresh)[i]
            fn = ast.FunctionDef(name="", args=call.func.args, body=[ast.Return(call.func.body)], decorator_list=[])
            params = _parameters(fn, call)
            if params is not None and t.replace_node(fresh, call, t.substitute(call.func.body, params)):
                yield t.dump(fresh)
        calls = [n for n in t.nodes(tree, ast.Call) if isinstance(n.func, ast.Name)]
        for i in range(len(calls)):
            fresh = t.parse(source)
            call = [n for n in t.nodes(fresh, ast.Call) if isinstance(n.func, ast.Name)][i]
            fn = _functions(fresh).get(call.func.id)
            if fn is None:
                continue
            params = _parameters(fn, call)
            body = _body(fn)
            if params is None:
                continue
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
                expr = t.substitute(copy.deepcopy(body[0].value), params)
                if t.replace_node(fresh, call, expr):
                    _drop_if_unused(fresh, fn)
                    yield t.dump(fresh)
                continue
            # a call standing alone (`main()`) or assigned (`x, y = load()`): splice the body in,
            # parameters bound first, the final `return e` becoming the assignment of `e`
            parent = t.parents(fresh).get(call)
            returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
            last = body[-1] if body else None
            if isinstance(parent, ast.Expr):
                if any(r.value is not None for r in returns):
                    continue
                tail: list[ast.stmt] = []
                spliced = copy.deepcopy(body)
            elif isinstance(parent, ast.Assign) and parent.value is call and isinstance(last, ast.Return) \
                    and last.value is not None and len(returns) == 1:
                spliced = copy.deepcopy(body[:-1])
                tail = [ast.Assign(targets=parent.targets, value=copy.deepcopy(last.value), lineno=0)]
            else:
                continue
            binds = [ast.Assign(targets=[ast.Name(n, ast.Store())], value=v, lineno=0)
                     for n, v in params.items() if not (isinstance(v, ast.Name) and v.id == n)]
            spliced = [x for x in spliced if not isinstance(x, ast.Return)]
            if _splice(fresh, parent, binds, spliced + tail):
                _drop_if_unused(fresh, fn)
                yield t.dump(fresh)
