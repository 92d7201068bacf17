"""Drop lines of a module read as text (the `form` "text": the MLIR bindings cannot hold the
module as it fails, so it is edited as lines and checked by Enzyme-JAX's parser before it runs).

Candidates, largest cuts first: a whole `{ … }` block (a function, an operation with a region)
from the line that opens it to the line that closes it, then runs of operation lines, halving the
run length down to one line (as ddmin does). A line whose results something else uses leaves the module
unparsable: the representation rejects it without running it.
"""
from __future__ import annotations

import re

from reducer.levels.mlir import module as mm

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


class DropLines:
    name = "drop-lines"

    def candidates(self, program: str):
        pipeline, module_text = mm.split(program)
        lines = module_text.splitlines()
        targets = op_lines(lines)

        def without(drop: set[int]) -> str:
            return mm.join(pipeline, "\n".join(line for i, line in enumerate(lines) if i not in drop) + "\n")

        openers = [i for i, line in enumerate(lines) if line.rstrip().endswith("{") and not MODULE.match(line)]
        blocks = [(i, block_end(lines, i)) for i in openers]
        for start, end in sorted(((s, e) for s, e in blocks if e is not None), key=lambda b: b[0] - b[1]):
            yield without(set(range(start, end + 1)))
        size = max(1, len(targets) // 2)
        while True:
            for k in range(0, len(targets), size):
                yield without(set(targets[k:k + size]))
            if size == 1:
                break
            size //= 2
