"""The result watch: compares what a `jit`-compiled function returned with references computed from
the same function, at the arguments the program called it with.

It only observes: `jax.jit` hands back a proxy that behaves as the compiled function and keeps, for
the first call of each function made outside any trace, its arguments and the result the program
got. After a program that failed, each kept call is run again and compared with what the program got:

- `op-by-op`: the function run op by op (`jax.disable_jit`) on the program's own device; floating
  point agrees within rtol 1e-4, atol 1e-6 (everything else exactly).
- `cpu`: only when the program ran on another backend (a GPU) and JAX also has a CPU device: the
  function run op by op on the CPU, its array arguments copied there, so that a fault of the GPU
  alone (its `jit` and its op-by-op results alike) shows too. Op by op, since the CPU's own `jit`
  can be the one at fault (jax-ml/jax#39103). Floating point agrees within rtol 1e-3 plus an atol of
  1e-3 of the reference array's largest finite magnitude (at least 1e-5): float32 on a GPU takes
  other approximations of transcendental functions, sums in other orders and, by JAX's default on
  recent GPUs, multiplies matrices in TF32 (a 10-bit mantissa); a TF32 product of random matrices
  uses a quarter of that allowance, while jax-ml/jax#39103's wrong sum (0.8% off) exceeds it.

Each reference's comparison is kept (`references`); the entry's own fields describe the first that
disagrees (op by op first), and `disagrees_with` names every one that does. Where one does, `locate`
finds, with that reference, the first operation of the function's jaxpr whose compiled value
already differs.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from oracles.wrong_result import CPU, OP_BY_OP
from reducer.cross_checks.derivatives import largest_difference
from reducer.cross_checks.derivatives import of_leaves
from reducer.cross_checks.locate import evaluate, locate, wanted_operation

RTOL = 1e-4
ATOL = 1e-6
MAX_CALLS = 8


@dataclass(frozen=True)
class Tolerance:
    """How far two floating-point results may be apart: `rtol` of each element, plus an absolute
    `atol` that grows to `scale` times the reference array's largest finite magnitude."""

    rtol: float
    atol: float
    scale: float = 0.0

    def atol_for(self, reference: np.ndarray) -> float:
        if not self.scale:
            return self.atol
        magnitudes = np.abs(reference)
        finite = magnitudes[np.isfinite(magnitudes)]
        return max(self.atol, self.scale * float(finite.max())) if finite.size else self.atol

    def stated(self) -> dict:
        return {"rtol": self.rtol, "atol": self.atol} | ({"atol_scale": self.scale} if self.scale else {})


TOLERANCES = {OP_BY_OP: Tolerance(RTOL, ATOL), CPU: Tolerance(1e-3, 1e-5, scale=1e-3)}


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
        """Compare every kept call with each reference this process has; call after `uninstall`."""
        return [_compare(call) for call in self.calls]


def references() -> tuple[str, ...]:
    """The references this process can compare with: op by op always; the CPU too when the program
    ran on another backend and JAX has a CPU device (`--platform gpu` gives JAX both)."""
    import jax

    if jax.default_backend() == "cpu":
        return (OP_BY_OP,)
    try:
        jax.devices("cpu")
    except RuntimeError:  # JAX was not given the CPU platform
        return (OP_BY_OP,)
    return (OP_BY_OP, CPU)


def reference_value(fun, args: tuple, kwargs: dict, reference: str):
    """`fun(*args, **kwargs)` computed as `reference` computes it: op by op, on the program's
    device (`op-by-op`) or on the CPU (`cpu`): there, its jaxpr is run equation by equation with its
    array arguments and the arrays it closes over (the program's parameters, say) copied to the CPU,
    so that nothing of it runs on the program's device."""
    import jax

    if reference == OP_BY_OP:
        with jax.disable_jit():
            return fun(*args, **kwargs)
    closed, xs, shape = as_jaxpr(fun, args, kwargs)
    cpu = jax.devices("cpu")[0]
    consts, xs = jax.device_put((list(closed.consts), xs), cpu)
    with jax.default_device(cpu), jax.disable_jit():
        outs = evaluate(closed.jaxpr, consts, xs)
    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(shape), outs)


def as_jaxpr(fun, args: tuple, kwargs: dict):
    """`fun` at `args`, `kwargs` as a jaxpr of their arrays (the other arguments held as they are):
    the jaxpr, those arrays, and the shape of the result."""
    import jax

    fx, xs = of_leaves(fun, args, kwargs, lambda leaf: isinstance(leaf, (jax.Array, np.ndarray)))
    closed, shape = jax.make_jaxpr(fx, return_shape=True)(*xs)
    return closed, xs, shape


def differ(compiled, reference, tolerance: Tolerance = TOLERANCES[OP_BY_OP]) -> tuple[bool, float]:
    """Whether two results disagree beyond `tolerance`, and the largest absolute difference."""
    import jax

    a, b = jax.tree_util.tree_leaves(compiled), jax.tree_util.tree_leaves(reference)
    if len(a) != len(b):
        return True, float("inf")
    worst, mismatch = 0.0, False
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return True, float("inf")
        if np.issubdtype(x.dtype, np.inexact):
            same = np.allclose(x, y, rtol=tolerance.rtol, atol=tolerance.atol_for(y), equal_nan=True)
            worst = max(worst, largest_difference(x, y))
        else:
            same = np.array_equal(x, y)
        mismatch = mismatch or not same
    return mismatch, worst


def _parts(fn, xs, reference: str = OP_BY_OP) -> bool:
    import jax

    compiled = jax.jit(fn)(*xs)
    return differ(compiled, reference_value(fn, tuple(xs), {}, reference), TOLERANCES[reference])[0]


def _compare(call: Call, names: tuple[str, ...] | None = None) -> dict:
    """Compare the program's result of `call` with each reference (`names`, by default every one this
    process has); the entry's own fields are those of the first that disagrees, op by op first."""
    entry: dict = {"function": call.name, "references": {}}
    for name in names or references():
        entry["references"][name] = _against(call, name)
    compared = {n: r for n, r in entry["references"].items() if "error" not in r}
    if not compared:  # no reference could run it: no evidence
        return entry | {"error": next(iter(entry["references"].values()))["error"]}
    entry["disagrees_with"] = [n for n, r in compared.items() if r["mismatch"]]
    shown = entry["disagrees_with"][0] if entry["disagrees_with"] else next(iter(compared))
    entry.update(reference=shown, **compared[shown])
    if entry["mismatch"]:
        found = _locate(call, shown)
        entry.update(found)
        compared[shown].update(found)
    return entry


def _against(call: Call, reference: str) -> dict:
    """One reference's comparison: agreement, the largest difference and where it is."""
    tolerance = TOLERANCES[reference]
    out = tolerance.stated()
    try:
        value = reference_value(call.fun, call.args, call.kwargs, reference)
        mismatch, worst = differ(call.result, value, tolerance)
    except Exception as exc:  # the reference cannot run it: no evidence
        out["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return out
    return out | {"mismatch": mismatch, "max_abs_err": worst, **_worst_leaf(call.result, value)}


def _worst_leaf(compiled, reference) -> dict:
    """The element that differs most: its index and both values, for the report (`eager`: the
    reference's value, computed op by op)."""
    import jax

    best = {}
    for x, y in zip(jax.tree_util.tree_leaves(compiled), jax.tree_util.tree_leaves(reference)):
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


def _locate(call: Call, reference: str) -> dict:
    """The first operation at which the compiled function parts from `reference`."""
    try:
        closed, xs, _ = as_jaxpr(call.fun, call.args, call.kwargs)
        found = locate(closed, xs, functools.partial(_parts, reference=reference), wanted=wanted_operation())
    except Exception:
        return {}
    return found or {}
