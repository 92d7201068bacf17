"""A traced call's transformations as users write them, for its written-back script: a `vjp` of a
function of one scalar result as `grad`, and a `value_and_grad` as `grad` where the failing value is
made in the gradient alone."""
from __future__ import annotations

import dataclasses

from reducer.levels.jaxpr.model import REAL_FLOATING, Spec, Transform


def as_users_write(spec: Spec) -> Spec:
    """`spec` with a `vjp` of a function of one scalar floating-point result written as `grad` of its
    floating-point inputs: the same derivative (the pullback of one), as users write it. A `vjp`
    comes from an `enzyme_jax_ir` function differentiated inside a larger one
    (`reducer.levels.jaxpr.calls_recorded_ahead`); `spec` itself when unchanged."""
    j = spec.jaxpr
    if "vjp" not in spec.kinds() or len(j.outputs) != 1 or not isinstance(j.outputs[0], str):
        return spec
    out = j.variables().get(j.outputs[0])
    floats = [k for k, v in enumerate(j.inputs) if v.dtype.startswith(REAL_FLOATING)]
    if out is None or out.shape or not out.dtype.startswith(REAL_FLOATING) or not floats:
        return spec
    transforms = [Transform("grad", argnums=floats) if t.kind == "vjp" else t for t in spec.transforms]
    return dataclasses.replace(spec, transforms=transforms)


def gradient_alone(spec: Spec, wanted) -> Spec | None:
    """`spec` with its `value_and_grad` as `grad`, for a non-finite value made in the gradient alone
    (`in=grad`): the program's check read the gradient, and users write `jax.grad`. None where that
    does not apply (the written-back script is verified either way)."""
    if wanted.get("in") != "grad" or "value_and_grad" not in spec.kinds():
        return None
    transforms = [dataclasses.replace(t, kind="grad") if t.kind == "value_and_grad" else t for t in spec.transforms]
    return dataclasses.replace(spec, transforms=transforms)
