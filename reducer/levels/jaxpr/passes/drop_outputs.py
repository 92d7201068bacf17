"""Drop outputs of the traced function (halves first, then one at a time)."""
from __future__ import annotations

from typing import Iterator

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import chunks, clone, finish


class DropOutputs:
    name = "drop-outputs"

    def candidates(self, program: str) -> Iterator[str]:
        spec = jp.loads(program)
        n = len(spec["jaxpr"]["out"])
        for part in chunks(n):
            if len(part) == n:
                continue
            new = clone(spec)
            new["jaxpr"]["out"] = [a for k, a in enumerate(new["jaxpr"]["out"]) if k not in part]
            yield finish(new)
