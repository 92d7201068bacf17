"""Drop elements of list, tuple, set and dict displays, in chunks, largest first."""
from __future__ import annotations

import ast

from reducer.levels.source.passes import _ast_tools as t

DISPLAYS = (ast.List, ast.Tuple, ast.Set, ast.Dict)


def _length(node) -> int:
    return len(node.keys) if isinstance(node, ast.Dict) else len(node.elts)


class DropElements:
    name = "drop-elements"

    def candidates(self, source: str):
        tree = t.parse(source)
        if tree is None:
            return
        for i, node in enumerate(t.nodes(tree, DISPLAYS)):
            if isinstance(getattr(node, "ctx", None), ast.Store):
                continue
            for start, stop in t.chunks(_length(node)):
                fresh = t.parse(source)
                target = t.nodes(fresh, DISPLAYS)[i]
                if isinstance(target, ast.Dict):
                    del target.keys[start:stop]
                    del target.values[start:stop]
                else:
                    del target.elts[start:stop]
                yield t.dump(fresh)
