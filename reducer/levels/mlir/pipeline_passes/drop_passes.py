"""Drop passes from a pipeline: chunks of consecutive passes, from the whole list down to single
passes, in the top-level list first and then inside anchored lists such as `func.func(…)`."""
from __future__ import annotations

from reducer.levels.mlir import pipeline as pl
from reducer.engine import chunk_order as chunks


def pass_lists(passes: list[pl.PassSpec], path: tuple = ()) -> list[tuple]:
    """Paths to every list of passes: () for the top level, (i, j) for the list nested in pass i, j."""
    found = [path]
    for i, p in enumerate(passes):
        if p.nested:
            found += pass_lists(p.nested, path + (i,))
    return found


def at(passes: list[pl.PassSpec], path: tuple) -> list[pl.PassSpec]:
    for i in path:
        passes = passes[i].nested
    return passes


class DropPasses:
    name = "drop-passes"

    def candidates(self, program: str):
        try:
            passes = pl.parse(program)
        except ValueError:
            return
        for path in pass_lists(passes):
            for start, stop in chunks(len(at(passes, path))):
                fresh = pl.parse(program)
                del at(fresh, path)[start:stop]
                yield pl.render(fresh)
