"""Delete statements and whole blocks: chunks of consecutive statements, outermost lists first,
from the whole list down to single statements (hierarchical delta debugging)."""
from __future__ import annotations

from reducer.levels.source.passes import _ast_tools as t


class DeleteStatements:
    name = "delete-statements"

    def candidates(self, source: str):
        tree = t.parse(source)
        if tree is None:
            return
        for k, (owner, field) in enumerate(t.statement_lists(tree)):
            n = len(getattr(owner, field))
            for start, stop in t.chunks(n):
                fresh = t.parse(source)
                o, f = t.statement_lists(fresh)[k]
                body = getattr(o, f)
                t.set_body(o, f, body[:start] + body[stop:])
                yield t.dump(fresh)
