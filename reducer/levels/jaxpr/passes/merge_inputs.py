"""Read one input in place of another of the same shape and dtype, and drop the other.

Captured programs often take several same-typed arguments (a loop's initial value next to the
differentiated one, two data arrays) where one would do; the source level cannot merge parameters
of the written-back function. An input that a `grad`-like transformation differentiates stays
(its cotangent is part of the result); the one read instead must be mapped alike by every `vmap`."""
from __future__ import annotations

from typing import Iterator

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import clone, finish
from reducer.levels.jaxpr.passes.drop_inputs import remove_inputs


def _same_mapping(spec: dict, k: int, m: int) -> bool:
    return all(t["in_axes"][k] == t["in_axes"][m] for t in spec["transforms"] if t["t"] == "vmap")


class MergeInputs:
    name = "merge-inputs"

    def candidates(self, program: str) -> Iterator[str]:
        spec = jp.loads(program)
        ins = spec["jaxpr"]["in"]
        differentiated = {k for t in spec["transforms"] for k in t.get("argnums", ())}
        for k in reversed(range(len(ins))):
            if k in differentiated:
                continue
            for m in range(len(ins)):
                if m == k or ins[m][1:] != ins[k][1:] or not _same_mapping(spec, k, m):
                    continue
                new = clone(spec)
                jp.rename(new["jaxpr"], {ins[k][0]: ins[m][0]})
                remove_inputs(new, {k})
                yield finish(new)
                break
