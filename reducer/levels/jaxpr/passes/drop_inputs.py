"""Drop inputs no equation reads, and forget recorded argument values (the inputs become ones)."""
from __future__ import annotations

from typing import Iterator

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import clone, finish


def remove_inputs(spec: dict, gone: set) -> None:
    keep = [k for k in range(len(spec["args"])) if k not in gone]
    where = {old: new for new, old in enumerate(keep)}
    spec["jaxpr"]["in"] = [spec["jaxpr"]["in"][k] for k in keep]
    spec["args"] = [spec["args"][k] for k in keep]
    for t in spec["transforms"]:
        if "argnums" in t:
            t["argnums"] = [where[k] for k in t["argnums"] if k in where]
        if "in_axes" in t:
            t["in_axes"] = [t["in_axes"][k] for k in keep]


class DropInputs:
    name = "drop-inputs"

    def candidates(self, program: str) -> Iterator[str]:
        spec = jp.loads(program)
        used = jp.uses(spec["jaxpr"])
        unused = {k for k, v in enumerate(spec["jaxpr"]["in"]) if v[0] not in used}
        if unused:
            new = clone(spec)
            remove_inputs(new, unused)
            yield finish(new)
        for k in sorted(unused):
            new = clone(spec)
            remove_inputs(new, {k})
            yield finish(new)
        if any("values" in a for a in spec["args"]):
            new = clone(spec)
            for a in new["args"]:
                a.pop("values", None)
            yield finish(new)
        for k, a in enumerate(spec["args"]):
            if "values" in a:
                new = clone(spec)
                new["args"][k].pop("values")
                yield finish(new)
        consts = [(path, i) for path, j in jp.jaxprs(spec["jaxpr"]) for i, e in enumerate(j["eqns"])
                  if e["p"] == "__const__"]
        for path, i in consts:
            new = clone(spec)
            e = jp.at(new["jaxpr"], path)["eqns"][i]
            e["p"], e["params"] = "__fill__", {"fill": 1}
            yield finish(new)
