"""Drop inputs no equation reads, and forget recorded argument values (the inputs become ones)."""
from __future__ import annotations

from reducer.levels.jaxpr.model import Spec
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish, remove_inputs


class DropInputs(JaxprPass):
    name = "drop-inputs"

    def points(self, spec: Spec) -> list:
        used = spec.jaxpr.uses()
        unused = [k for k, v in enumerate(spec.jaxpr.inputs) if v.name not in used]
        valued = [k for k, a in enumerate(spec.args) if a.values is not None]
        consts = [(path, i) for path, j in spec.jaxpr.walk() for i, e in enumerate(j.eqns)
                  if e.primitive == "__const__"]
        return ([("input", tuple(unused))] if unused else []) + [("input", (k,)) for k in unused] \
            + ([("values", tuple(valued))] if valued else []) + [("values", (k,)) for k in valued] \
            + [("constant", c) for c in consts]

    def apply(self, spec: Spec, point) -> str:
        what, where = point
        new = clone(spec)
        if what == "input":
            remove_inputs(new, set(where))
        elif what == "values":
            for k in where:
                new.args[k].values = None
        else:
            path, i = where
            e = new.jaxpr.at(path).eqns[i]
            e.primitive, e.params = "__fill__", {"fill": 1}
        return finish(new)
