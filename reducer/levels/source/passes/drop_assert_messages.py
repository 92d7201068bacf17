"""Drop the message of an `assert` (`assert ok, f"step {i}: {g}"` becomes `assert ok`): where the
failure is the check itself, not what it prints, the message is only more to read."""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t


class DropAssertMessages(t.SourcePass):
    name = "drop-assert-messages"

    def points(self, script):
        return [i for i, node in enumerate(t.nodes(script.tree, ast.Assert)) if node.msg is not None]

    def apply(self, script, point):
        fresh = script.fresh()
        t.nodes(fresh, ast.Assert)[point].msg = None
        return t.dump(fresh)
