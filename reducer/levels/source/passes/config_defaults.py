"""Replace configuration plumbing by its values: `args.lr` becomes the `default=` given to
`add_argument("--lr", …)`, and `cfg.steps` the value a class body assigns to `steps`."""
from __future__ import annotations

import ast
import copy

from reducer.levels.source import ast_tools as t


def _defaults(tree: ast.AST) -> dict[str, ast.expr]:
    found: dict[str, ast.expr] = {}
    for call in t.nodes(tree, ast.Call):
        if isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument" and call.args:
            flag = call.args[-1] if len(call.args) > 1 else call.args[0]
            if not (isinstance(flag, ast.Constant) and isinstance(flag.value, str)):
                continue
            dest = next((k.value.value for k in call.keywords if k.arg == "dest"
                         and isinstance(k.value, ast.Constant)), flag.value.lstrip("-").replace("-", "_"))
            default = next((k.value for k in call.keywords if k.arg == "default"), None)
            if default is None and any(k.arg == "action" and isinstance(k.value, ast.Constant)
                                       and k.value.value == "store_true" for k in call.keywords):
                default = ast.Constant(False)
            if default is not None:
                found.setdefault(dest, default)
    for cls in t.nodes(tree, ast.ClassDef):
        for stmt in cls.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                found.setdefault(stmt.targets[0].id, stmt.value)
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                found.setdefault(stmt.target.id, stmt.value)
    return found


def _reads(tree: ast.AST, names) -> list[ast.Attribute]:
    return [n for n in t.nodes(tree, ast.Attribute) if n.attr in names and isinstance(n.ctx, ast.Load)]


class ConfigDefaults(t.SourcePass):
    name = "config-defaults"

    def points(self, script):
        defaults = _defaults(script.tree)
        reads = _reads(script.tree, defaults) if defaults else []
        return (["all"] if len(reads) > 1 else []) + list(range(len(reads)))

    def apply(self, script, point):
        fresh = script.fresh()
        table = _defaults(fresh)
        reads = _reads(fresh, table)
        for node in reads if point == "all" else [reads[point]]:
            t.replace_node(fresh, node, copy.deepcopy(table[node.attr]))
        return t.dump(fresh)
