"""Let every lane of a batched-predicate `while` step while any lane goes on.

`vmap` of a loop whose condition depends on the mapped values leaves a `while` whose condition
returns one predicate per lane; JAX stops each lane on its own, which the written-back script must
spell out as a select per step. Setting `any_lane` drops that select (the loop runs as
`lax.while_loop(lambda c: jnp.any(cond(c)), body, init)`); the oracle keeps it when the failure does
not need lanes to stop apart. A per-lane predicate that is a constant becomes one scalar literal,
and the loop a plain one."""
from __future__ import annotations

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.model import Jaxpr, Literal, Spec
from reducer.levels.jaxpr.passes._edit import JaxprPass, edit, equations, finish


def constant_predicate(cond: Jaxpr):
    """The value of a condition whose predicate is a constant fill (None when it is not)."""
    pred = cond.outputs[0]
    for e in cond.eqns:
        if e.primitive == "__fill__" and e.outputs[0].name == pred:
            return bool(e.params.get("fill", 0))
    return None


class UnmaskLoops(JaxprPass):
    name = "unmask-loops"

    def points(self, spec: Spec) -> list:
        out = []
        for path, i, e in equations(spec, ("while",)):
            if not jp.batched_predicate(e.subs[0]):
                continue
            value = constant_predicate(e.subs[0])
            if value is not None:  # the same for every lane: one scalar predicate
                out.append((path, i, value))
            if jp.masked_loop(e):
                out.append((path, i, "any-lane"))
        return out

    def apply(self, spec: Spec, point) -> str:
        path, i, change = point
        new, _, ne = edit(spec, path, i)
        if change == "any-lane":
            ne.params["any_lane"] = True
        else:
            ne.subs[0].outputs[0] = Literal(change, "bool")
        return finish(new)
