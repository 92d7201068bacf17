"""Replace control flow by its body: a `while` by one trip through its body, a `cond` by one of
its branches, a `scan` by one step (its per-step inputs and stacked outputs become ones)."""
from __future__ import annotations

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import JaxprPass, edit, equations, fill, finish
from reducer.levels.jaxpr.passes.inline_calls import inline_body


def unwrap(j: dict, i: int, fresh, branch: int = 0) -> None:
    """Replace equation `i` of `j` (a while, cond or scan) by its body, in place."""
    e = j["eqns"][i]
    if e["p"] == "while":
        nc, nb = e["params"]["cond_nconsts"], e["params"]["body_nconsts"]
        inline_body(j, i, e["subs"][1], e["in"][nc:nc + nb] + e["in"][nc + nb:])
    elif e["p"] == "cond":
        inline_body(j, i, e["subs"][branch], e["in"][1:])
    elif e["p"] == "scan":
        nc, nk = e["params"]["num_consts"], e["params"]["num_carry"]
        body = e["subs"][0]
        xs = [fill([fresh(), v[1], v[2]]) for v in body["in"][nc + nk:]]
        ys = [fill(o) for o in e["out"][nk:]]
        j["eqns"][i] = dict(e, out=e["out"][:nk])
        inline_body(j, i, dict(body, out=body["out"][:nk]), e["in"][:nc + nk] + [x["out"][0][0] for x in xs])
        j["eqns"][i:i] = xs + ys
    else:
        raise ValueError(f"not control flow: {e['p']}")


class UnwrapControlFlow(JaxprPass):
    name = "unwrap-control-flow"

    def points(self, spec: dict) -> list:
        return [(path, i, b) for path, i, e in equations(spec, ("while", "cond", "scan"))
                for b in (range(len(e["subs"])) if e["p"] == "cond" else [0])]

    def apply(self, spec: dict, point) -> str:
        path, i, branch = point
        new, target, _ = edit(spec, path, i)
        unwrap(target, i, jp.fresh_namer(new), branch)
        return finish(new)
