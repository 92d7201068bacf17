"""The operation at fault: where, in a function's jaxpr, two ways of computing it part.

A watch that found a disagreement (Enzyme-JAX's gradient against JAX's AD, `jit` against op by op)
hands over the function as a jaxpr and a test `parts(fn, args)`. The first equation whose value
already disagrees is found by testing the prefixes of the jaxpr (a prefix computes everything up to
that equation and returns its results) one by one, then, past a budget, by bisection; equations
that do not depend on the inputs are skipped. A call (`pjit`, `custom_jvp_call` …) found so is
entered, with its inputs at the values they had, until a primitive is reached. Its name goes into the
signature, so that two wrong-gradient bugs in different operations never share one.
"""
from __future__ import annotations

import numpy as np

#: equation parameters that hold the jaxpr of a call the search may enter
CALL_PARAMS = ("jaxpr", "call_jaxpr", "fun_jaxpr")
#: calls that are evaluated through their body when running op by op
INLINE = {"pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "remat", "checkpoint"}
MAX_TESTS = 24
#: tests kept for bisection (and calls entered) once the one-by-one scan has used the rest
LINEAR_RESERVE = 8


def evaluate(jaxpr, consts, args, stop: int | None = None, inline: bool | None = None) -> list:
    """Run `jaxpr` equation by equation; the results of equation `stop` (all outputs when None).
    With `inline` (by default: under `jax.disable_jit`), calls run through their bodies, so that
    nothing is compiled as a whole."""
    import jax
    from jax._src import core

    if inline is None:
        inline = bool(jax.config.jax_disable_jit)
    count = len(jaxpr.eqns) if stop is None else stop + 1
    read = _run(jaxpr, consts, args, count, inline)
    outvars = jaxpr.outvars if stop is None else jaxpr.eqns[stop].outvars
    return [read(v) for v in outvars if not isinstance(v, core.DropVar)]


def _run(jaxpr, consts, args, count: int, inline: bool):
    """Run the first `count` equations; a function that reads any variable or literal after them."""
    from jax._src import core

    env = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        return v.val if isinstance(v, core.Literal) else env[v]

    for eqn in jaxpr.eqns[:count]:
        inner = _inner(eqn) if inline and eqn.primitive.name in INLINE else None
        if inner is not None:
            outs = evaluate(inner.jaxpr, inner.consts, [read(v) for v in eqn.invars], inline=True)
        else:
            with eqn.ctx.manager:
                outs = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.primitive.get_bind_params(eqn.params))
            outs = outs if eqn.primitive.multiple_results else [outs]
        for v, x in zip(eqn.outvars, outs):
            if not isinstance(v, core.DropVar):
                env[v] = x
    return read


def _inner(eqn):
    """The closed jaxpr of a call equation, or None."""
    from jax._src import core

    for name in CALL_PARAMS:
        inner = eqn.params.get(name)
        if isinstance(inner, core.ClosedJaxpr):
            return inner
        if isinstance(inner, core.Jaxpr):
            return core.ClosedJaxpr(inner, ())
    return None


def _steps(jaxpr) -> list[int]:
    """The equations worth testing: floating-point results that depend on the inputs (the others
    come out the same either way)."""
    from jax._src import core

    live, steps = set(jaxpr.invars), []
    for i, eqn in enumerate(jaxpr.eqns):
        if any(not isinstance(v, core.Literal) and v in live for v in eqn.invars):
            live.update(eqn.outvars)
            if any(np.issubdtype(v.aval.dtype, np.inexact) for v in eqn.outvars if hasattr(v.aval, "dtype")):
                steps.append(i)
    return steps


def locate(closed, args, parts, depth: int = 0, budget: list | None = None) -> dict | None:
    """The innermost equation of `closed` (a ClosedJaxpr run on `args`) whose results already
    disagree by `parts(fn, args)`: {"operation", "inputs"}; None when no prefix disagrees."""
    budget = budget if budget is not None else [MAX_TESTS]
    jaxpr, consts = closed.jaxpr, closed.consts
    steps = _steps(jaxpr)

    def disagrees(i: int) -> bool:
        if budget[0] <= 0:
            return False
        budget[0] -= 1
        try:
            return bool(parts(lambda *xs: evaluate(jaxpr, consts, xs, stop=i), args))
        except Exception:  # a prefix the other way cannot compute: not evidence either way
            return False

    if not steps or not disagrees(steps[-1]):
        return None
    index = _first(steps, disagrees, budget)
    eqn = jaxpr.eqns[index]
    inner = _inner(eqn)
    if inner is not None and depth < 8:
        found = locate(inner, _inputs(jaxpr, consts, args, index), parts, depth + 1, budget)
        if found is not None:
            return found
    return {"operation": eqn.primitive.name, "inputs": _preview(_inputs(jaxpr, consts, args, index))}


def _first(steps: list[int], disagrees, budget: list) -> int:
    """The first step that disagrees (the last one does). One by one while the budget allows, since
    a later equation that does not use the faulty value agrees again; then by bisection."""
    lo, hi = 0, len(steps) - 1
    while lo < hi and budget[0] > LINEAR_RESERVE:
        if disagrees(steps[lo]):
            return steps[lo]
        lo += 1
    while lo < hi:
        mid = (lo + hi) // 2
        if disagrees(steps[mid]):
            hi = mid
        else:
            lo = mid + 1
    return steps[lo]


def _inputs(jaxpr, consts, args, index: int) -> list:
    """The values equation `index` of `jaxpr` reads, computed op by op."""
    import jax

    with jax.disable_jit():
        read = _run(jaxpr, consts, args, index, inline=True)
        return [read(v) for v in jaxpr.eqns[index].invars]


def _preview(values) -> list:
    """The first few numbers of each value, for the report."""
    return [np.asarray(v).ravel()[:4].tolist() for v in values]
