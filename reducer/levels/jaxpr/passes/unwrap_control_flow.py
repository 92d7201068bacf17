"""Replace control flow by its body: a `while` by one trip through its body, a `cond` by one of
its branches, a `scan` by one step (its per-step inputs and stacked outputs become ones)."""
from __future__ import annotations

from dataclasses import replace

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.model import Jaxpr, Spec
from reducer.levels.jaxpr.passes._edit import JaxprPass, edit, equations, fill, finish
from reducer.levels.jaxpr.passes.inline_calls import inline_body


def unwrap(j: Jaxpr, i: int, fresh, branch: int = 0) -> None:
    """Replace equation `i` of `j` (a while, cond or scan) by its body, in place."""
    e = j.eqns[i]
    if e.primitive == "while":
        nc, nb = e.params["cond_nconsts"], e.params["body_nconsts"]
        inline_body(j, i, e.subs[1], e.inputs[nc:nc + nb] + e.inputs[nc + nb:])
    elif e.primitive == "cond":
        inline_body(j, i, e.subs[branch], e.inputs[1:])
    elif e.primitive == "scan":
        nc, nk = e.params["num_consts"], e.params["num_carry"]
        body = e.subs[0]
        xs = [fill(replace(v, name=fresh())) for v in body.inputs[nc + nk:]]
        ys = [fill(o) for o in e.outputs[nk:]]
        j.eqns[i] = replace(e, outputs=e.outputs[:nk])
        inline_body(j, i, replace(body, outputs=body.outputs[:nk]),
                    e.inputs[:nc + nk] + [x.outputs[0].name for x in xs])
        j.eqns[i:i] = xs + ys
    else:
        raise ValueError(f"not control flow: {e.primitive}")


class UnwrapControlFlow(JaxprPass):
    name = "unwrap-control-flow"

    def points(self, spec: Spec) -> list:
        return [(path, i, b) for path, i, e in equations(spec, ("while", "cond", "scan"))
                for b in (range(len(e.subs)) if e.primitive == "cond" else [0])]

    def apply(self, spec: Spec, point) -> str:
        path, i, branch = point
        new, target, _ = edit(spec, path, i)
        unwrap(target, i, jp.fresh_namer(new), branch)
        return finish(new)
