"""Progress bars that wrap the range a training loop runs over: `tqdm(range(n))`, `tqdm.trange(n)`
(read as `range(n)`), rich's `track(range(n), description=…)`."""
from __future__ import annotations

import ast


def _called(node: ast.AST) -> str:
    if not isinstance(node, ast.Call):
        return ""
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


class Tqdm:
    name = "tqdm"

    def range_of(self, node: ast.AST) -> ast.expr | None:
        named = _called(node)
        if named == "trange" and node.args:
            return ast.Call(ast.Name("range", ast.Load()), list(node.args), [])
        return node.args[0] if named == "tqdm" and node.args else None


class RichTrack:
    name = "rich"

    def range_of(self, node: ast.AST) -> ast.expr | None:
        return node.args[0] if _called(node) == "track" and node.args else None
