"""Cut what never ran: everything after the statement that raised, in each frame of the failure.

The failure's traceback names the script's line in every frame (`Script.failure`, recorded from
the run of the program). In each of those frames the statements after the running one are dead:
the optimiser's `tx.update` / `apply_updates` after a failing `value_and_grad`, the rest of a
training step, the logging after the step, the code after `main()`. A loop on the failing path
failed in its first iteration (it raised there), so it becomes its body run once, the loop
variable bound to its first value (`for step in range(N)` gives `step = 0`; `for batch in data`
gives `batch = data[0]`, or `next(iter(data))`). All of it at once is tried first, then the
module-level cut, then each frame's cut and each loop alone.
"""
from __future__ import annotations

import ast
import copy

from reducer.levels.source import ast_tools as t
from reducer.levels.source.passes._failure_site import failing_statements

LOOPS = (ast.For, ast.While)


#: calls whose result is iterated but cannot be indexed
ITERATORS = {"range", "enumerate", "zip", "map", "filter", "reversed", "iter"}


def _first(items: ast.expr, by_index: bool) -> ast.expr:
    """The first value a `for` loop over `items` binds: spelled out for `range`, `enumerate`,
    `zip` and literal lists; else `items[0]` (by index) or `next(iter(items))`."""
    call = isinstance(items, ast.Call) and isinstance(items.func, ast.Name) and not items.keywords \
        and not any(isinstance(a, ast.Starred) for a in items.args)
    name, args = (items.func.id, items.args) if call else ("", [])
    if name == "range" and args:
        return copy.deepcopy(args[0]) if len(args) > 1 else ast.Constant(0)
    if name == "enumerate" and len(args) in (1, 2):
        start = copy.deepcopy(args[1]) if len(args) == 2 else ast.Constant(0)
        return ast.Tuple([start, _first(args[0], by_index)], ast.Load())
    if name == "zip" and args:
        return ast.Tuple([_first(a, by_index) for a in args], ast.Load())
    if isinstance(items, ast.List | ast.Tuple) and items.elts and not isinstance(items.elts[0], ast.Starred):
        return copy.deepcopy(items.elts[0])
    iterator = isinstance(items, ast.Call) and getattr(items.func, "id", "") in ITERATORS
    if by_index and not iterator:
        return ast.Subscript(copy.deepcopy(items), ast.Constant(0), ast.Load())
    return ast.Call(ast.Name("next", ast.Load()),
                    [ast.Call(ast.Name("iter", ast.Load()), [copy.deepcopy(items)], [])], [])


def _two_ways(items: ast.expr) -> bool:
    """Whether the first value of `items` is spelled both `items[0]` and `next(iter(items))`."""
    return ast.dump(_first(items, True)) != ast.dump(_first(items, False))


def _once(loop: ast.stmt, by_index: bool) -> list[ast.stmt]:
    """The loop's body run once (a `for` loop's variable bound to the first value first)."""
    if isinstance(loop, ast.While):
        return loop.body
    bind = ast.Assign(targets=[loop.target], value=_first(loop.iter, by_index), lineno=0)
    return [bind] + loop.body


def _path(script) -> list[tuple[int, str, int]]:
    """The failing path as (holder number in `ast.walk` order, field, index of the running statement)."""
    holders = {id(n): k for k, n in enumerate(ast.walk(script.tree))}
    cut = failing_statements(script.tree, script.failure)
    return sorted((holders[key[0]], key[1], i) for key, i in cut.items())


def _edit(tree: ast.Module, path: list, cuts: set[int], loops: set[int], by_index: bool) -> None:
    """Cut after the running statement in the holders numbered `cuts`, and run the loops held at
    `loops` once. Edits outer lists last, so that the statements an inner edit holds stay in place."""
    walked = list(ast.walk(tree))
    for k, field, i in sorted(path, reverse=True):
        owner = walked[k]
        body = getattr(owner, field)
        stmts = body[:i + 1] if k in cuts else list(body)
        if k in loops and isinstance(stmts[i], LOOPS):
            stmts = stmts[:i] + _once(stmts[i], by_index) + stmts[i + 1:]
        t.set_body(owner, field, stmts)


class CutAfterFailure(t.SourcePass):
    name = "cut-after-failure"

    def points(self, script):
        path = _path(script)
        if not path:
            return []
        holders = list(ast.walk(script.tree))
        cuts = [k for k, field, i in path if i + 1 < len(getattr(holders[k], field))]
        loops = [k for k, field, i in path if isinstance(getattr(holders[k], field)[i], LOOPS)]
        iterated = [k for k, field, i in path if isinstance(getattr(holders[k], field)[i], ast.For)
                    and _two_ways(getattr(holders[k], field)[i].iter)]
        out = [("all", tuple(cuts), tuple(loops), True)] if cuts or loops else []
        out += [("all", tuple(cuts), tuple(loops), False)] if iterated else []
        out += [("cut", (k,), (), True) for k in cuts]
        out += [("loop", (), (k,), by_index) for k in loops for by_index in (True, False)
                if by_index or k in iterated]
        return out

    def apply(self, script, point):
        _, cuts, loops, by_index = point
        fresh = script.fresh()
        _edit(fresh, _path(script), set(cuts), set(loops), by_index)
        return t.dump(fresh)
