"""Drop elements of list, tuple, set and dict displays, in chunks, largest first."""
from __future__ import annotations

import ast

from reducer.engine import Chunks
from reducer.levels.source import ast_tools as t

DISPLAYS = (ast.List, ast.Tuple, ast.Set, ast.Dict)


def _length(node) -> int:
    return len(node.keys) if isinstance(node, ast.Dict) else len(node.elts)


class DropElements(t.SourcePass):
    name = "drop-elements"

    def points(self, script):
        return [Chunks(i, _length(node)) for i, node in enumerate(t.nodes(script.tree, DISPLAYS))
                if not isinstance(getattr(node, "ctx", None), ast.Store)]

    def apply(self, script, chunk):
        fresh = script.fresh()
        target = t.nodes(fresh, DISPLAYS)[chunk.where]
        if isinstance(target, ast.Dict):
            del target.keys[chunk.start:chunk.stop]
            del target.values[chunk.start:chunk.stop]
        else:
            del target.elts[chunk.start:chunk.stop]
        return t.dump(fresh)
