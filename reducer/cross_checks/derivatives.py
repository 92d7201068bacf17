"""The two derivatives the gradient watches compare, and how far apart they are: a function's
derivative by Enzyme-JAX or by JAX's AD, the function of a recorded call's leaves they are taken of,
and the tolerances of Enzyme-JAX against JAX (`reducer.cross_checks.gradients`,
`reducer.cross_checks.differences`)."""
from __future__ import annotations

import numpy as np

#: Enzyme-JAX's derivative agrees with JAX's when allclose(enzyme, jax, rtol=RTOL, atol=ATOL)
RTOL = 1e-3
ATOL = 1e-5


def derivative(fn, xs, mode: str, enzyme=None):
    """The derivative of sum(fn(*xs)) in `mode`: the gradient, or the derivative along ones; by
    Enzyme-JAX when `enzyme` (an `enzyme_jax_ir(...)` decorator) is given, else by JAX's AD."""
    import jax
    import jax.numpy as jnp

    def total(*ys):
        outs = [o for o in jax.tree_util.tree_leaves(fn(*ys)) if jnp.issubdtype(jnp.result_type(o), jnp.inexact)]
        return sum((jnp.sum(jnp.real(o)) for o in outs), jnp.float32(0))

    if enzyme is not None:
        total = enzyme(total)
    if mode == "forward":
        run = lambda *ys: jax.jvp(total, ys, tuple(jnp.ones_like(y) for y in ys))[1]  # noqa: E731
        return [jax.jit(run)(*xs) if enzyme is not None else run(*xs)]
    run = jax.grad(total, argnums=tuple(range(len(xs))))
    return list(jax.jit(run)(*xs) if enzyme is not None else run(*xs))


def largest_difference(a: np.ndarray, b: np.ndarray) -> float:
    """The largest absolute difference; infinite where only one side is NaN."""
    if not a.size:
        return 0.0
    if np.any(np.isnan(a) != np.isnan(b)):
        return float("inf")
    diff = np.abs(a.astype(np.complex128) - b.astype(np.complex128))
    return 0.0 if np.all(np.isnan(diff)) else float(np.nanmax(diff))


def flattened(s) -> tuple:
    """The sample's function of its differentiated leaves alone (the others held as the program
    passed them), and those leaves."""
    return of_leaves(s.fun, s.args, s.kwargs, s.active)


def of_leaves(fun, args: tuple, kwargs: dict, chosen) -> tuple:
    """`fun` as a function of the leaves of `(args, kwargs)` at positions `chosen` (the others held as
    they are), and those leaves; `chosen` may be a test a leaf passes instead of positions."""
    import jax

    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
    positions = [i for i, leaf in enumerate(leaves) if chosen(leaf)] if callable(chosen) else list(chosen)

    def fx(*xs):
        values = list(leaves)
        for i, x in zip(positions, xs):
            values[i] = x
        a, k = jax.tree_util.tree_unflatten(treedef, values)
        return fun(*a, **k)

    return fx, [leaves[i] for i in positions]
