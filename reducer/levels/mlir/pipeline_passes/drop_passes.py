"""Drop passes from a pipeline: chunks of consecutive passes, from the whole list down to single
passes, in the top-level list first and then inside anchored lists such as `func.func(…)`. The
change points are chunks of each list (the engine lays them out)."""
from __future__ import annotations

import copy

from reducer.levels.mlir import pipeline as pl
from reducer.passes import Chunk, Chunks, ReductionPass


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


class DropPasses(ReductionPass):
    name = "drop-passes"

    def points(self, passes: list[pl.PassSpec]) -> list[Chunks]:
        return [Chunks(path, len(at(passes, path))) for path in pass_lists(passes)]

    def apply(self, passes: list[pl.PassSpec], chunk: Chunk) -> str:
        fresh = copy.deepcopy(passes)
        del at(fresh, chunk.where)[chunk.start:chunk.stop]
        return pl.render(fresh)
