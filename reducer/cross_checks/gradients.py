"""The gradient watch: compares the Enzyme-JAX derivatives a program took with JAX's own AD.

It only observes. A function wrapped by `enzyme_jax_ir` is sampled when the program differentiates
it (called inside `grad`, `vjp`, `jvp` …), with the arguments the program differentiated with
respect to, and only when the differentiated computation actually ran (the sample is taken by a
runtime callback, so a program that failed to compile or crashed before has none). After the program
ends, each sample's Enzyme-JAX derivative, in the mode the program used (reverse or forward), is
compared with JAX's AD of the same function; a function never differentiated is never compiled for
a derivative here. Where they disagree, `locate` finds the operation at fault, and in a run in a
fresh interpreter (`REDUCER_EXPLAIN`: the first runs and the verification, not every candidate)
float64 finite differences there tell which of the two is wrong (`reducer.cross_checks.differences`).
"""
from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass

import numpy as np

from reducer.cross_checks.derivatives import ATOL, RTOL, derivative, flattened, largest_difference
from reducer.cross_checks.locate import locate, wanted_operation

MAX_SAMPLES = 8
TRANSFORMS = ("grad", "value_and_grad", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian")
FORWARD = {"jvp", "linearize", "jacfwd"}


@dataclass
class Sample:
    name: str
    fun: object
    args: tuple
    kwargs: dict
    active: tuple  # positions, among the flattened (args, kwargs), of the values differentiated
    mode: str  # "reverse" or "forward"
    enzyme: object  # the program's own `enzyme_jax_ir(...)` decorator, with its options


class GradientWatch:
    """Records which gradients a program takes and samples its differentiated Enzyme calls."""

    def __init__(self):
        self.samples: list[Sample] = []
        self.sampled: set[int] = set()
        self.counts = {"enzyme": 0, "plain": 0}
        self.local = threading.local()
        self.orig: dict = {}

    def _stack(self) -> list:
        if not hasattr(self.local, "stack"):
            self.local.stack = []
        return self.local.stack

    def marking(self, fun, mode: str):
        """Wrap a function given to a JAX AD transformation, to learn whether Enzyme ran inside."""
        watch = self

        @functools.wraps(fun)
        def traced(*args, **kwargs):
            stack = watch._stack()
            stack.append([False, mode])
            try:
                return fun(*args, **kwargs)
            finally:
                seen = stack.pop()[0]
                watch.counts["enzyme" if seen else "plain"] += 1
                if seen and stack:
                    stack[-1][0] = True

        return traced

    def install(self) -> None:
        import jax

        for name in TRANSFORMS:
            self.orig[name] = getattr(jax, name)
            setattr(jax, name, self._transform(self.orig[name], "forward" if name in FORWARD else "reverse"))
        try:
            import enzyme_ad.jax as ejax
        except ImportError:
            return
        self.orig["enzyme_jax_ir"] = orig_ir = ejax.enzyme_jax_ir
        watch = self

        @functools.wraps(orig_ir)
        def enzyme_jax_ir(*dargs, **dkwargs):
            decorator = orig_ir(*dargs, **dkwargs)

            def wrap(fun):
                wrapped = decorator(fun)

                @functools.wraps(fun)
                def call(*args, **kwargs):
                    stack = watch._stack()
                    if stack:
                        stack[-1][0] = True
                        watch.sample(fun, args, kwargs, stack[-1][1], decorator)
                    return wrapped(*args, **kwargs)

                return call

            return wrap

        ejax.enzyme_jax_ir = enzyme_jax_ir

    def _transform(self, orig, mode: str):
        @functools.wraps(orig)
        def transform(fun, *args, **kwargs):
            return orig(self.marking(fun, mode), *args, **kwargs)

        return transform

    def uninstall(self) -> None:
        """Put back what `install` replaced."""
        import jax

        for name, orig in self.orig.items():
            if name == "enzyme_jax_ir":
                import enzyme_ad.jax as ejax

                ejax.enzyme_jax_ir = orig
            else:
                setattr(jax, name, orig)

    def sample(self, fun, args, kwargs, mode: str, decorator) -> None:
        """Keep `fun`'s arguments once the differentiated call runs (a runtime callback)."""
        import jax
        from jax._src.interpreters import ad

        if id(fun) in self.sampled or len(self.samples) >= MAX_SAMPLES:
            return
        leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
        active = tuple(i for i, leaf in enumerate(leaves) if isinstance(leaf, (ad.JVPTracer, ad.LinearizeTracer)))
        if not active:
            return
        self.sampled.add(id(fun))
        name = getattr(fun, "__name__", "function")

        def store(*values):  # runs each time the compiled computation does: keep the first
            if any(s.fun is fun for s in self.samples):
                return
            a, k = jax.tree_util.tree_unflatten(treedef, list(values))
            self.samples.append(Sample(name, fun, a, k, active, mode, decorator))

        jax.debug.callback(store, *leaves)

    def check(self) -> list[dict]:
        """Compare every sample; call after `uninstall`."""
        return [_compare(s) for s in self.samples]


def _parts(fn, xs, mode: str, decorator) -> tuple[bool, float, list, list]:
    """Whether Enzyme-JAX's derivative of `fn` at `xs` disagrees with JAX's; the worst error; both."""
    enzyme = derivative(fn, xs, mode, decorator)
    reference = derivative(fn, xs, mode)
    worst, mismatch = 0.0, False
    for e, r in zip(enzyme, reference):
        e, r = np.asarray(e, dtype=np.float64), np.asarray(r, dtype=np.float64)
        worst = max(worst, largest_difference(e, r))
        mismatch = mismatch or not np.allclose(e, r, rtol=RTOL, atol=ATOL, equal_nan=True)
    return mismatch, worst, enzyme, reference


def _compare(s: Sample) -> dict:
    import jax

    fx, xs = flattened(s)
    entry = {"function": s.name, "mode": s.mode}
    try:
        mismatch, worst, enzyme, reference = _parts(fx, xs, s.mode, s.enzyme)
    except Exception as exc:  # another failure: the other oracles judge the program's own
        entry["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return entry
    entry.update(mismatch=mismatch, max_abs_err=worst, rtol=RTOL, atol=ATOL,
                 enzyme=[np.asarray(e).ravel()[:4].tolist() for e in enzyme],
                 reference=[np.asarray(r).ravel()[:4].tolist() for r in reference])
    if mismatch:
        found = locate(jax.make_jaxpr(fx)(*xs), xs, lambda fn, ys: _parts(fn, ys, s.mode, s.enzyme)[0],
                       wanted=wanted_operation(), by_itself=True)
        if found:
            entry.update(found)
            if os.environ.get("REDUCER_EXPLAIN"):  # a run in a fresh interpreter: first runs, verification
                from reducer.cross_checks.differences import at_fault

                entry["at_fault"] = at_fault(s, found["operation"])
    return entry
