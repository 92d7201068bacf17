"""Differentiate another input instead, the one differentiated so far becoming a constant.

A captured program differentiates what the user trained (hyperparameters, weights), which often
reaches the failing operation only through arithmetic on the data (`theta * x`): the source level
cannot drop that arithmetic without losing the differentiated path. Moving a `grad`-like
transformation's argument to another floating-point input, and building the former one as a
constant (its recorded values, or ones), lets the other passes bypass that arithmetic. Inputs a
`vmap` maps, and ones another transformation still differentiates, stay."""
from __future__ import annotations

from reducer.levels.jaxpr.model import INEXACT, Equation, Spec
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, fill, finish, remove_inputs



def as_constant(spec: Spec, k: int) -> Equation:
    """An equation building input `k`'s value: its recorded values, or ones."""
    var, arg = spec.jaxpr.inputs[k], spec.args[k]
    if arg.values is not None:
        return Equation("__const__", [], [var], {"values": arg.values})
    return fill(var, 1)


class RetargetGrads(JaxprPass):
    name = "retarget-grads"

    def points(self, spec: Spec) -> list:
        """(transformation n, its argument k, the input m it differentiates instead)."""
        ins = spec.jaxpr.inputs
        mapped = {k for t in spec.transforms if t.kind == "vmap" for k, ax in enumerate(t.in_axes)
                  if ax is not None}
        out = []
        for n, t in enumerate(spec.transforms):
            for k in t.argnums or ():
                others = [u for u in spec.transforms if u is not t and k in (u.argnums or ())]
                if k in mapped or others:
                    continue
                out += [(n, k, m) for m in range(len(ins))
                        if m not in t.argnums and m not in mapped and ins[m].dtype.startswith(INEXACT)]
        return out

    def apply(self, spec: Spec, point) -> str:
        n, k, m = point
        new = clone(spec)
        new.transforms[n].argnums = sorted(set(spec.transforms[n].argnums) - {k} | {m})
        new.jaxpr.eqns.insert(0, as_constant(new, k))
        remove_inputs(new, {k})
        return finish(new)
