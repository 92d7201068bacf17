"""Delete statements and whole blocks: chunks of consecutive statements, outermost lists first,
from the whole list down to single statements (hierarchical delta debugging)."""
from __future__ import annotations

from reducer.engine import Chunks
from reducer.levels.source import ast_tools as t


class DeleteStatements(t.SourcePass):
    name = "delete-statements"

    def points(self, script):
        return [Chunks(k, len(getattr(owner, field)))
                for k, (owner, field) in enumerate(t.statement_lists(script.tree))]

    def apply(self, script, chunk):
        fresh = script.fresh()
        o, f = t.statement_lists(fresh)[chunk.where]
        body = getattr(o, f)
        t.set_body(o, f, body[:chunk.start] + body[chunk.stop:])
        return t.dump(fresh)
