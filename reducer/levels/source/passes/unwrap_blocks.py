"""Replace a compound statement (`if`, `for`, `while`, `with`, `try`) by one of its bodies (a loop
by its first iteration, the loop variable spelled `items[0]`); this also flattens
`if __name__ == "__main__":`."""
from __future__ import annotations

import ast
import copy

from reducer.levels.source import ast_tools as t

BLOCKS = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith)


def _replacements(node: ast.stmt) -> list[list[ast.stmt]]:
    options = [node.body]
    if isinstance(node, ast.For | ast.AsyncFor):
        first = ast.Assign(targets=[copy.deepcopy(node.target)],
                           value=ast.Call(ast.Name("next", ast.Load()), [ast.Call(ast.Name("iter", ast.Load()),
                                          [copy.deepcopy(node.iter)], [])], []), lineno=0)
        options.append([first] + node.body)
        if isinstance(node.target, ast.Name):  # the first iteration, the loop variable spelled out
            first_item = ast.Subscript(value=copy.deepcopy(node.iter), slice=ast.Constant(0), ctx=ast.Load())
            options.insert(1, [t.substitute(copy.deepcopy(s), {node.target.id: first_item}) for s in node.body])
    if isinstance(node, ast.With | ast.AsyncWith):
        binds = [ast.Assign(targets=[i.optional_vars], value=i.context_expr, lineno=0)
                 for i in node.items if i.optional_vars is not None]
        if binds:
            options.append(binds + node.body)
    if isinstance(node, ast.Try):
        options = [node.body + node.finalbody] + [h.body for h in node.handlers]
    elif getattr(node, "orelse", None):
        options.append(node.orelse)
    return options


class UnwrapBlocks(t.SourcePass):
    name = "unwrap-blocks"

    def points(self, script):
        return [(k, i, option) for k, (owner, field) in enumerate(t.statement_lists(script.tree))
                for i, stmt in enumerate(getattr(owner, field)) if isinstance(stmt, BLOCKS)
                for option in range(len(_replacements(stmt)))]

    def apply(self, script, point):
        k, i, option = point
        fresh = script.fresh()
        o, f = t.statement_lists(fresh)[k]
        body = getattr(o, f)
        repl = _replacements(body[i])[option]
        t.set_body(o, f, body[:i] + repl + body[i + 1:])
        return t.dump(fresh)
