"""Inline a function call: `f(a, b)` where `f` just returns an expression becomes that expression
with the parameters replaced, and a statement `main()` becomes the body of `main`."""
from __future__ import annotations

import ast
import copy

from reducer.passes.source import _ast_tools as t


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
                    yield t.dump(fresh)
                continue
            # a call used as a statement: splice the body in, bound parameters first
            parent = t.parents(fresh).get(call)
            if not isinstance(parent, ast.Expr) or any(isinstance(n, ast.Return) and n.value is not None
                                                      for n in ast.walk(fn)):
                continue
            for k, (owner, field) in enumerate(t.statement_lists(fresh)):
                stmts = getattr(owner, field)
                if parent in stmts:
                    at = stmts.index(parent)
                    binds = [ast.Assign(targets=[ast.Name(n, ast.Store())], value=v, lineno=0)
                             for n, v in params.items() if not (isinstance(v, ast.Name) and v.id == n)]
                    spliced = [s for s in copy.deepcopy(body) if not isinstance(s, ast.Return)]
                    t.set_body(owner, field, stmts[:at] + binds + spliced + stmts[at + 1:])
                    yield t.dump(fresh)
                    break
