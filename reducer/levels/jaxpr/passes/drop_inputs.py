"""Drop inputs no equation reads, and forget recorded argument values (the inputs become ones)."""
from __future__ import annotations

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish, remove_inputs


class DropInputs(JaxprPass):
    name = "drop-inputs"

    def points(self, spec: dict) -> list:
        used = jp.uses(spec["jaxpr"])
        unused = [k for k, v in enumerate(spec["jaxpr"]["in"]) if v[0] not in used]
        valued = [k for k, a in enumerate(spec["args"]) if "values" in a]
        consts = [(path, i) for path, j in jp.jaxprs(spec["jaxpr"]) for i, e in enumerate(j["eqns"])
                  if e["p"] == "__const__"]
        return ([("input", tuple(unused))] if unused else []) + [("input", (k,)) for k in unused] \
            + ([("values", tuple(valued))] if valued else []) + [("values", (k,)) for k in valued] \
            + [("constant", c) for c in consts]

    def apply(self, spec: dict, point) -> str:
        what, where = point
        new = clone(spec)
        if what == "input":
            remove_inputs(new, set(where))
        elif what == "values":
            for k in where:
                new["args"][k].pop("values")
        else:
            path, i = where
            e = jp.at(new["jaxpr"], path)["eqns"][i]
            e["p"], e["params"] = "__fill__", {"fill": 1}
        return finish(new)
