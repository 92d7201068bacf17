"""The wrapper every candidate runs under: `python -m reducer.harness SCRIPT`.

It applies the limits the sandbox asks for (address space, output size, no core dumps), makes the
script see itself as `__main__` with its own `sys.argv`, and, when `REDUCER_CHECK_GRADIENTS` is
set, watches the gradients the program takes: every function wrapped by Enzyme-JAX's
`enzyme_jax_ir` is sampled at the values it is called with, and after the program ends its
Enzyme gradient is compared with JAX's own AD of the same function. What it saw goes to the JSON
file named by `REDUCER_HARNESS_OUT`, so that the oracle's verdict rests on the harness's own
comparison, never on what the program prints.
"""
from __future__ import annotations

import functools
import json
import os
import resource
import runpy
import sys
import threading
import traceback

RTOL = 1e-3
ATOL = 1e-5
MAX_SAMPLES = 8


def apply_limits() -> None:
    limits = json.loads(os.environ.get("REDUCER_LIMITS") or "{}")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.get("memory_mb"):
        size = int(limits["memory_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    if limits.get("output_mb"):
        size = int(limits["output_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


class GradientWatch:
    """Records Enzyme-wrapped calls and which gradients the program takes, then compares them."""

    def __init__(self):
        self.samples: list[tuple[str, object, object, tuple, dict]] = []
        self.sampled: set[int] = set()
        self.counts = {"enzyme": 0, "plain": 0}
        self.local = threading.local()
        self.orig = {}

    # -- recording -------------------------------------------------------------------------
    def _stack(self) -> list:
        if not hasattr(self.local, "stack"):
            self.local.stack = []
        return self.local.stack

    def marking(self, fun):
        """Wrap a function given to a JAX AD transformation, to learn whether Enzyme ran inside."""
        watch = self

        @functools.wraps(fun)
        def traced(*args, **kwargs):
            stack = watch._stack()
            stack.append(False)
            try:
                return fun(*args, **kwargs)
            finally:
                seen = stack.pop()
                watch.counts["enzyme" if seen else "plain"] += 1
                if seen and stack:
                    stack[-1] = True

        return traced

    def install(self) -> None:
        import jax

        def lifting(name):
            orig = getattr(jax, name)
            self.orig[name] = orig

            @functools.wraps(orig)
            def transform(fun, *args, **kwargs):
                return orig(self.marking(fun), *args, **kwargs)

            setattr(jax, name, transform)

        for name in ("grad", "value_and_grad", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian"):
            lifting(name)
        try:
            import enzyme_ad.jax as ejax
        except ImportError:
            return
        orig_ir = ejax.enzyme_jax_ir
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
                        stack[-1] = True
                    watch.sample(fun, wrapped, args, kwargs)
                    return wrapped(*args, **kwargs)

                return call

            return wrap

        self.orig["enzyme_jax_ir"] = orig_ir
        ejax.enzyme_jax_ir = enzyme_jax_ir

    def uninstall(self) -> None:
        """Put back what `install` replaced (a long-lived runner goes on to the next candidate)."""
        import jax

        for name, orig in self.orig.items():
            if name == "enzyme_jax_ir":
                import enzyme_ad.jax as ejax

                ejax.enzyme_jax_ir = orig
            else:
                setattr(jax, name, orig)

    def sample(self, fun, wrapped, args, kwargs) -> None:
        import jax

        if id(fun) in self.sampled or len(self.samples) >= MAX_SAMPLES:
            return
        self.sampled.add(id(fun))
        name = getattr(fun, "__name__", "function")
        leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
        if not any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
            self.samples.append((name, fun, wrapped, args, kwargs))
            return

        def store(*values):
            a, k = jax.tree_util.tree_unflatten(treedef, list(values))
            self.samples.append((name, fun, wrapped, a, k))

        jax.debug.callback(store, *leaves)

    # -- checking --------------------------------------------------------------------------
    def check(self) -> list[dict]:
        import jax
        import jax.numpy as jnp
        import numpy as np

        grad = self.orig.get("grad", jax.grad)
        results = []
        for name, fun, wrapped, args, kwargs in self.samples:
            leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
            active = [i for i, leaf in enumerate(leaves) if jnp.issubdtype(jnp.result_type(leaf), jnp.inexact)]
            if not active:
                continue

            def scalar(fn):
                def total(*xs):
                    values = list(leaves)
                    for i, x in zip(active, xs):
                        values[i] = x
                    a, k = jax.tree_util.tree_unflatten(treedef, values)
                    outs = [o for o in jax.tree_util.tree_leaves(fn(*a, **k))
                            if jnp.issubdtype(jnp.result_type(o), jnp.inexact)]
                    return sum(jnp.sum(jnp.real(o)) for o in outs)
                return total

            xs = [leaves[i] for i in active]
            argnums = tuple(range(len(xs)))
            entry = {"function": name}
            try:
                enzyme = jax.jit(grad(scalar(wrapped), argnums=argnums))(*xs)
                reference = grad(scalar(fun), argnums=argnums)(*xs)
            except Exception as exc:  # another failure: the other oracles judge it
                entry["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                results.append(entry)
                continue
            worst = 0.0
            mismatch = False
            for e, r in zip(enzyme, reference):
                e, r = np.asarray(e, dtype=np.float64), np.asarray(r, dtype=np.float64)
                err = float(np.max(np.abs(e - r))) if e.size else 0.0
                worst = max(worst, err)
                if not np.allclose(e, r, rtol=RTOL, atol=ATOL, equal_nan=True):
                    mismatch = True
            entry.update(mismatch=mismatch, max_abs_err=worst, rtol=RTOL, atol=ATOL,
                         enzyme=[np.asarray(e).ravel()[:4].tolist() for e in enzyme],
                         reference=[np.asarray(r).ravel()[:4].tolist() for r in reference])
            results.append(entry)
        return results


def main(argv: list[str]) -> None:
    apply_limits()
    script = argv[0]
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    watch = None
    if os.environ.get("REDUCER_CHECK_GRADIENTS"):
        watch = GradientWatch()
        watch.install()
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        out = os.environ.get("REDUCER_HARNESS_OUT")
        if watch is not None and out:
            report = {"gradients": watch.counts, "checks": []}
            try:
                report["checks"] = watch.check()
            except Exception as exc:  # the program's own failure must still show
                report["check_error"] = f"{type(exc).__name__}: {exc}"
            with open(out, "w") as fh:
                json.dump(report, fh)
        if watch is not None:
            watch.uninstall()


def run_script(script: str) -> int:
    """Run `script` as `python SCRIPT` would, in this interpreter; returns its exit code (an uncaught
    exception prints its traceback and gives 1, `sys.exit` gives its code)."""
    try:
        main([script])
        return 0
    except SystemExit as exc:
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    main(sys.argv[1:])
