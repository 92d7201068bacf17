"""The operation at fault of a wrong gradient, with a third opinion: float64 finite differences.

When Enzyme-JAX's gradient and JAX's AD disagree, either may be wrong: JAX's own rules have bugs
too. At the operation the search found (`reducer.cross_checks.locate`), run on the values it read, this
computes three derivatives of the sum of its results at its worst point: Enzyme-JAX's, JAX's AD, and
central finite differences in float64 (step `STEP * max(1, |x|)`), and says which of the two
finite differences side with. Taken once, on the traced level's first replay of the captured call
(`reducer.levels.jaxpr.value_checks`, in a worker's child), not for every candidate; float64 is switched
on for the differences and back off.
"""
from __future__ import annotations

import numpy as np

#: the relative step of the central differences (about the cube root of float64's epsilon)
STEP = 1e-6


def at_fault(sample, operation: str) -> dict | None:
    """{"operation", "at", "input", "enzyme", "jax", "fd", "step", "wrong"} for the first equation of
    `operation` in `sample`'s function, at the element where Enzyme-JAX and JAX part most (the
    derivative along ones in forward mode); None when it cannot be computed there."""
    import jax

    from reducer.cross_checks.derivatives import ATOL, RTOL, derivative, largest_difference

    point = _equation_at(sample, operation)
    if point is None:
        return None
    op, values = point
    try:
        enzyme = [np.asarray(e, np.float64) for e in derivative(op, values, sample.mode, sample.enzyme)]
        reference = [np.asarray(r, np.float64) for r in derivative(op, values, sample.mode)]
    except Exception:  # the operation alone does not run this way: no finer statement than the whole
        return None
    if all(np.allclose(e, r, rtol=RTOL, atol=ATOL, equal_nan=True) for e, r in zip(enzyme, reference)):
        return None  # alone, it does not show the fault (the search stopped at a call's last step)
    if sample.mode == "forward":
        n, i = None, None
    else:
        n = max(range(len(enzyme)), key=lambda k: largest_difference(enzyme[k], reference[k]))
        i = int(np.nanargmax(np.where(np.isnan(enzyme[n] - reference[n]), np.inf,
                                      np.abs(enzyme[n] - reference[n])).ravel()))
    pick = (lambda d: float(d[0])) if n is None else (lambda d: float(d[n].ravel()[i]))  # noqa: E731
    x64 = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        fd, step = central_difference(op, values, n, i)
    except Exception:  # the operation has no float64 form (a dtype parameter, a custom call)
        fd, step = None, None
    finally:
        jax.config.update("jax_enable_x64", x64)
    at = [float(np.asarray(v).ravel()[0]) for v in values] if n is None else float(np.asarray(values[n]).ravel()[i])
    found = {"operation": operation, "at": at, "input": n, "enzyme": pick(enzyme), "jax": pick(reference),
             "fd": fd, "step": step}
    found["wrong"] = which_is_wrong(found["enzyme"], found["jax"], fd)
    if operation in DEFINED_ZERO:  # its derivative is 0 by definition, whatever its values do
        found["wrong"], found["defined"] = ("enzyme" if found["enzyme"] != 0 else ""), True
    return found


def _equation_at(sample, operation: str):
    """The first equation of `operation` on the inputs' path in `sample`'s function, as a function of
    its floating-point inputs (the rest held), and those inputs' values; None when there is none."""
    import jax

    from reducer.cross_checks.derivatives import flattened
    from reducer.cross_checks.locate import Frame, _inner, _path_to, equation_function

    fx, xs = flattened(sample)
    frame = Frame(jax.make_jaxpr(fx)(*xs), xs)
    path = _path_to(frame.jaxpr, operation)
    if path is None:
        return None
    for index in path[:-1]:
        frame = Frame(_inner(frame.jaxpr.eqns[index]), frame.inputs(index))
    return equation_function(frame.jaxpr.eqns[path[-1]], list(frame.inputs(path[-1])), np.floating)


def central_difference(op, values: list, n: int | None, i: int | None) -> tuple[float, float]:
    """The float64 central difference of sum(op(*values)): along element `i` of input `n`, or along
    ones in every input when `n` is None; and the step used. Needs float64 switched on."""
    import jax.numpy as jnp

    base = [np.asarray(v, np.float64) for v in values]
    scale = max([1.0] + [float(np.max(np.abs(b))) for b in base if b.size]) if n is None \
        else max(1.0, abs(float(base[n].ravel()[i])))
    step = STEP * scale

    def total(sign: float) -> float:
        moved = [b.copy() for b in base]
        for k, b in enumerate(moved):
            if n is None:
                b += sign * step
            elif k == n:
                b.ravel()[i] += sign * step
        outs = op(*[jnp.asarray(b, jnp.float64) for b in moved])
        return float(sum(np.sum(np.asarray(o, np.float64)) for o in outs
                         if np.issubdtype(np.asarray(o).dtype, np.inexact)))

    return (total(1.0) - total(-1.0)) / (2 * step), step


#: operations whose derivative is defined to be zero: finite differences of their values (the identity)
#: cannot judge a derivative of them
DEFINED_ZERO = {"stop_gradient"}


def which_is_wrong(enzyme: float, jax_ad: float, fd: float | None) -> str:
    """Which side finite differences do not support: "enzyme", "jax-ad", "both", or "" when they
    cannot tell (none computed, or they agree with both)."""
    from reducer.cross_checks.derivatives import ATOL, RTOL

    if fd is None or not np.isfinite(fd):
        return ""
    enzyme_ok = bool(np.isclose(enzyme, fd, rtol=RTOL, atol=ATOL))
    jax_ok = bool(np.isclose(jax_ad, fd, rtol=RTOL, atol=ATOL))
    if enzyme_ok == jax_ok:
        return "" if enzyme_ok else "both"
    return "jax-ad" if enzyme_ok else "enzyme"
