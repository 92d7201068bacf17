"""Drop lines of a module read as text (the `form` "text": the MLIR bindings cannot hold the
module as it fails, so it is edited as lines and checked by Enzyme-JAX's parser before it runs).

Candidates, largest cuts first: a whole `{ … }` block (a function, an operation with a region)
from the line that opens it to the line that closes it, then runs of operation lines, halving the
run length down to one line (as ddmin does). A line whose results something else uses leaves the module
unparsable: the representation rejects it without running it. A change point is a chunk: lines
`start` to `stop` ("lines"), or operation lines `start` to `stop` in order ("ops"). The points
come from the IR worker as JSON: the chunks are laid out there (`layout`), and a chunk arrives
as a plain (where, start, stop).
"""
from __future__ import annotations

import re

from reducer.engine import layout
from reducer.levels.mlir import module as mm
from reducer.passes import Chunk, Chunks, ReductionPass

MODULE = re.compile(r"^\s*(builtin\.)?module\b")


def op_lines(lines: list[str]) -> list[int]:
    """Indices of the lines that hold a counted operation."""
    return [i for i, line in enumerate(lines) if mm.text_ops(line + "\n")]


def block_end(lines: list[str], start: int) -> int | None:
    """The index of the line that closes the `{` block opened on line `start`, if it opens one."""
    depth = 0
    for i in range(start, len(lines)):
        depth += lines[i].count("{") - lines[i].count("}")
        if i == start and depth <= 0:
            return None
        if depth <= 0:
            return i
    return None


class DropLines(ReductionPass):
    name = "drop-lines"

    def points(self, item) -> list[Chunk]:
        lines = item.module_text.splitlines()
        n = len(op_lines(lines))
        openers = [i for i, line in enumerate(lines) if line.rstrip().endswith("{") and not MODULE.match(line)]
        blocks = [(i, block_end(lines, i)) for i in openers]
        blocks = sorted(((start, end) for start, end in blocks if end is not None), key=lambda b: b[0] - b[1])
        runs = [c for c in layout([Chunks("ops", n)]) if c.stop - c.start < n or n == 1]  # never all ops
        return [Chunk("lines", start, end + 1) for start, end in blocks] + runs

    def apply(self, item, point) -> str:
        where, start, stop = point
        lines = item.module_text.splitlines()
        drop = set(range(start, stop) if where == "lines" else op_lines(lines)[start:stop])
        return mm.join(item.pipeline, "\n".join(line for i, line in enumerate(lines) if i not in drop) + "\n")
