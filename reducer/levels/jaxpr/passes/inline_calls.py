"""Inline nested calls: an inner `jit` (and an `enzyme_jax_ir` call, in case the failure does not
need Enzyme; a `custom_jvp` / `custom_vjp` function, in case it does not need the rules) becomes
the equations of its (primal) body. A `jit` that is a public call as the user made it (`jnp.sinc`,
`jnp.linalg.norm`: `public_calls.named_call`) stays one, so that the script is written back in the
user's words."""
from __future__ import annotations

from dataclasses import replace

from reducer.levels.jaxpr import public_calls
from reducer.levels.jaxpr.model import Jaxpr, Spec
from reducer.levels.jaxpr.passes._edit import JaxprPass, edit, equations, finish, splice

CALLS = ("jit", "enzyme", "custom_jvp", "custom_vjp")


def inline_body(j: Jaxpr, i: int, sub: Jaxpr, ins: list) -> None:
    """Replace equation `i` of `j` by `sub`'s equations applied to `ins`."""
    e = j.eqns[i]
    holder = Jaxpr([], [replace(x) for x in sub.eqns], list(sub.outputs))
    holder.rename({v.name: a for v, a in zip(sub.inputs, ins)})
    splice(j, i, holder.eqns, {o.name: a for o, a in zip(e.outputs, holder.outputs)})


class InlineCalls(JaxprPass):
    name = "inline-calls"

    def points(self, spec: Spec) -> list:
        kept = {path + ((i, 0),) for path, i, e in equations(spec, ("jit",))
                if public_calls.named_call(e, [v.name for v in e.subs[0].inputs])}
        return [(path, i) for kind in CALLS for path, i, _ in equations(spec, (kind,))
                if path + ((i, 0),) not in kept and not any(path[:k] in kept for k in range(1, len(path) + 1))]

    def apply(self, spec: Spec, point) -> str:
        path, i = point
        new, target, ne = edit(spec, path, i)
        inline_body(target, i, ne.subs[0], ne.inputs)
        return finish(new)
