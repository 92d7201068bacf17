"""Drop attributes: one attribute name everywhere it occurs (most frequent first), then each
attribute of each operation. Required ones fail the verifier and are never run. Debug locations
need no pass: every program is printed without them."""
from __future__ import annotations

from collections import Counter

from reducer.levels.mlir.passes import _ir

#: attributes an operation cannot lose and stay the same kind of program
KEEP = {"sym_name", "function_type", "callee"}


def names(op) -> list[str]:
    return [n for n in op.attributes if n not in KEEP]


class DropAttributes:
    name = "drop-attributes"

    def candidates(self, program: str):
        base = _ir.Edit(program)
        if not base.ok:
            return
        everywhere = Counter(n for op in base.ops for n in names(op))
        for name, count in everywhere.most_common():
            if count < 2:
                continue
            with _ir.Edit(program) as e:
                for op in e.ops:
                    if name in op.attributes:
                        del op.attributes[name]
                out = e.text(dce=False)
            yield out
        for i, op in enumerate(base.ops):
            for name in names(op):
                with _ir.Edit(program) as e:
                    del e.ops[i].attributes[name]
                    out = e.text(dce=False)
                yield out
