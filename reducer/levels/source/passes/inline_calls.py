"""Inline a function call: `f(a, b)` where `f` just returns an expression becomes that expression
with the parameters replaced, and a statement `main()` becomes the body of `main`."""
from __future__ import annotations

import ast
import copy

from reducer.levels.source import ast_tools as t


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


def _lambda_parameters(call: ast.Call) -> dict[str, ast.expr] | None:
    """What `(lambda x: e)(a)` binds its parameters to, or None."""
    fn = ast.FunctionDef(name="", args=call.func.args, body=[ast.Return(call.func.body)], decorator_list=[])
    return _parameters(fn, call)


def _named_calls(tree: ast.AST) -> list[ast.Call]:
    return [n for n in t.nodes(tree, ast.Call) if isinstance(n.func, ast.Name)]


def _returns_expression(body: list[ast.stmt]) -> bool:
    return len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None


def _splice_shape(fn: ast.FunctionDef, call: ast.Call, parent: ast.AST | None) -> str | None:
    """How the body of `fn` replaces the statement holding `call`: "alone" (`main()`), "assigned"
    (`x, y = load()`, whose single `return e` becomes the assignment of `e`), or None."""
    body = _body(fn)
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    last = body[-1] if body else None
    if isinstance(parent, ast.Expr):
        return None if any(r.value is not None for r in returns) else "alone"
    if isinstance(parent, ast.Assign) and parent.value is call and isinstance(last, ast.Return) \
            and last.value is not None and len(returns) == 1:
        return "assigned"
    return None


def _inlinable(tree: ast.AST, functions: dict, parents: dict, call: ast.Call) -> bool:
    fn = functions.get(call.func.id)
    if fn is None or _parameters(fn, call) is None:
        return False
    return _returns_expression(_body(fn)) or _splice_shape(fn, call, parents.get(call)) is not None


def _inline_named(tree: ast.AST, call: ast.Call) -> bool:
    """Inline the call `call` of a function defined in `tree`; False when it cannot be done."""
    fn = _functions(tree)[call.func.id]
    params, body = _parameters(fn, call), _body(fn)
    if _returns_expression(body):
        done = t.replace_node(tree, call, t.substitute(copy.deepcopy(body[0].value), params))
    else:
        parent = t.parents(tree).get(call)
        if _splice_shape(fn, call, parent) == "alone":
            spliced, tail = copy.deepcopy(body), []
        else:
            spliced = copy.deepcopy(body[:-1])
            tail = [ast.Assign(targets=parent.targets, value=copy.deepcopy(body[-1].value), lineno=0)]
        binds = [ast.Assign(targets=[ast.Name(n, ast.Store())], value=v, lineno=0)
                 for n, v in params.items() if not (isinstance(v, ast.Name) and v.id == n)]
        spliced = [x for x in spliced if not isinstance(x, ast.Return)]
        done = _splice(tree, parent, binds, spliced + tail)
    if done:
        _drop_if_unused(tree, fn)
    return done


class InlineCalls(t.SourcePass):
    name = "inline-calls"

    def points(self, script):
        tree = script.tree
        lambdas = [("lambda", i) for i, call in enumerate(_lambda_calls(tree)) if _lambda_parameters(call) is not None]
        functions, parents = _functions(tree), t.parents(tree)
        named = [("call", i) for i, call in enumerate(_named_calls(tree)) if _inlinable(tree, functions, parents, call)]
        return lambdas + named

    def apply(self, script, point):
        what, i = point
        fresh = script.fresh()
        if what == "lambda":  # (lambda x: e)(a) becomes e with x replaced by a
            call = _lambda_calls(fresh)[i]
            done = t.replace_node(fresh, call, t.substitute(call.func.body, _lambda_parameters(call)))
        else:
            done = _inline_named(fresh, _named_calls(fresh)[i])
        return t.dump(fresh) if done else None
