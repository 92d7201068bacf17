"""The result watch: compares what a `jit`-compiled function returned with the same function run op
by op (`jax.disable_jit`), at the arguments the program called it with.

It only observes: `jax.jit` hands back a proxy that behaves as the compiled function and keeps, for
the first call of each function made outside any trace, its arguments and the result the program
got. After a program that failed, each kept call is run again op by op and the two results are
compared (floating point: rtol 1e-4, atol 1e-6; everything else exactly). Where they disagree,
`locate` finds the first operation of the function's jaxpr whose compiled value already differs.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from reducer.watches.gradients import largest_difference
from reducer.watches.locate import locate, wanted_operation

RTOL = 1e-4
ATOL = 1e-6
MAX_CALLS = 8


@dataclass
class Call:
    name: str
    fun: object
    args: tuple
    kwargs: dict
    result: object


class Observed:
    """What `jax.jit(fun)` returns under the watch: the compiled function, with its calls kept."""

    def __init__(self, watch: "ResultWatch", jitted, fun, donates: bool):
        self._watch, self._jitted, self._fun, self._donates = watch, jitted, fun, donates
        functools.update_wrapper(self, fun, updated=())

    def __call__(self, *args, **kwargs):
        result = self._jitted(*args, **kwargs)
        if not self._donates:
            self._watch.keep(self._fun, args, kwargs, result)
        return result

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __getattr__(self, name):
        return getattr(self._jitted, name)


class ResultWatch:
    """Keeps the first call of each `jit`-compiled function made outside any trace, and compares."""

    def __init__(self):
        self.calls: list[Call] = []
        self.kept: set[int] = set()
        self.orig = None

    def install(self) -> None:
        import jax

        self.orig = orig = jax.jit
        watch = self

        @functools.wraps(orig)
        def jit(fun=None, *args, **kwargs):
            if fun is None or not callable(fun):
                return orig(fun, *args, **kwargs) if fun is not None else orig(*args, **kwargs)
            donates = bool(kwargs.get("donate_argnums") or kwargs.get("donate_argnames"))
            return Observed(watch, orig(fun, *args, **kwargs), fun, donates)

        jax.jit = jit

    def uninstall(self) -> None:
        import jax

        if self.orig is not None:
            jax.jit = self.orig

    def keep(self, fun, args, kwargs, result) -> None:
        import jax

        if id(fun) in self.kept or len(self.calls) >= MAX_CALLS or jax.config.jax_disable_jit:
            return
        leaves = jax.tree_util.tree_leaves((args, kwargs, result))
        if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
            return  # called while tracing an outer function: not a result the program saw
        self.kept.add(id(fun))
        args, kwargs = jax.tree_util.tree_map(  # NumPy arrays can change under the program's hands
            lambda x: x.copy() if isinstance(x, np.ndarray) else x, (args, kwargs))
        self.calls.append(Call(getattr(fun, "__name__", "function"), fun, args, kwargs, result))

    def check(self) -> list[dict]:
        """Run every kept call op by op and compare; call after `uninstall`."""
        return [_compare(call) for call in self.calls]


def differ(compiled, eager) -> tuple[bool, float]:
    """Whether two results disagree beyond the tolerances, and the largest absolute difference."""
    import jax

    a, b = jax.tree_util.tree_leaves(compiled), jax.tree_util.tree_leaves(eager)
    if len(a) != len(b):
        return True, float("inf")
    worst, mismatch = 0.0, False
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return True, float("inf")
        if np.issubdtype(x.dtype, np.inexact):
            same = np.allclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True)
            worst = max(worst, largest_difference(x, y))
        else:
            same = np.array_equal(x, y)
        mismatch = mismatch or not same
    return mismatch, worst


def _parts(fn, xs) -> bool:
    import jax

    compiled = jax.jit(fn)(*xs)
    with jax.disable_jit():
        eager = fn(*xs)
    return differ(compiled, eager)[0]


def _compare(call: Call) -> dict:
    import jax

    entry = {"function": call.name, "rtol": RTOL, "atol": ATOL}
    try:
        with jax.disable_jit():
            eager = call.fun(*call.args, **call.kwargs)
        mismatch, worst = differ(call.result, eager)
    except Exception as exc:  # op by op cannot run it: no evidence
        entry["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return entry
    worst_leaf = _worst_leaf(call.result, eager)
    entry.update(mismatch=mismatch, max_abs_err=worst, **worst_leaf)
    if mismatch:
        entry.update(_locate(call))
    return entry


def _worst_leaf(compiled, eager) -> dict:
    """The element that differs most: its index and both values, for the report."""
    import jax

    best = {}
    for x, y in zip(jax.tree_util.tree_leaves(compiled), jax.tree_util.tree_leaves(eager)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or not x.size or not np.issubdtype(x.dtype, np.number):
            continue
        diff = np.abs(x.astype(np.complex128) - y.astype(np.complex128))
        i = int(np.nanargmax(diff)) if not np.all(np.isnan(diff)) else 0
        if not best or diff.ravel()[i] > best["diff"]:
            best = {"diff": float(diff.ravel()[i]), "index": [int(j) for j in np.unravel_index(i, x.shape)],
                    "jit": x.ravel()[i].item(), "eager": y.ravel()[i].item()}
    best.pop("diff", None)
    return best


def _locate(call: Call) -> dict:
    """The first operation at which the compiled function parts from op by op."""
    import jax

    leaves, treedef = jax.tree_util.tree_flatten((call.args, call.kwargs))
    arrays = [i for i, leaf in enumerate(leaves) if isinstance(leaf, (jax.Array, np.ndarray))]

    def fx(*xs):
        values = list(leaves)
        for i, x in zip(arrays, xs):
            values[i] = x
        a, k = jax.tree_util.tree_unflatten(treedef, values)
        return call.fun(*a, **k)

    xs = [leaves[i] for i in arrays]
    try:
        closed = jax.make_jaxpr(fx)(*xs)
        found = locate(closed, xs, _parts, wanted=wanted_operation())
    except Exception:
        return {}
    return found or {}

