"""Capturing the failing transformation: `python -m reducer.levels.jaxpr.capture SCRIPT [OUT.json]`.

Runs SCRIPT (as `reducer.harness` would: limits, `__main__`, its own `sys.argv`) with JAX's
transformations replaced by recording wrappers: `jax.jit`, `grad`, `value_and_grad`, `jacrev`,
`jacfwd`, `hessian`, `vmap`, `vjp`, `jvp` and Enzyme-JAX's `enzyme_jax_ir`. When a call through one
of them raises, the wrapper follows the chain of directly nested transformations down to the
user's Python function, traces that function with `jax.make_jaxpr` on the arguments' shapes, and
encodes the chain, the jaxpr and the arguments (values where they are known and small, else ones)
as a spec (`reducer.levels.jaxpr.program`). The transformed calls made while a failing outermost call was
traced are captured after it (a failure met when the outer `jit` compiles belongs to them too).
OUT.json (default: the sandbox's $REDUCER_HARNESS_OUT, which the sandbox reads back as the run's
`harness` report) receives every spec made, innermost failing call first, and notes on calls that
could not be captured; the reducer keeps the first spec whose own run shows the original failure.
"""
from __future__ import annotations

import functools
import inspect
import json
import os
import runpy
import sys
import traceback

from reducer.levels.jaxpr import calls_recorded_ahead
from reducer.levels.jaxpr.codec import MAX_VALUES, Encoder, Unencodable
from reducer.levels.jaxpr.libraries import as_pytrees
from reducer.levels.jaxpr.libraries import install as install_libraries
from reducer.levels.jaxpr.model import Arg, Spec, Transform, Var
from reducer.levels.jaxpr.params import dtype_of, enzyme_options

MAX_SPECS = 8
MAX_NESTED = 4  # transformed calls recorded inside one outermost call, for `capture_nested`
_ACTIVE: list = []
_NESTED: list = []
SPECS: list[str] = []
NOTES: list[str] = []
_SEEN: set = set()
ORIG: dict = {}


class Transformed:
    """What a patched transformation returns: calls the real one, captures the call if it raises."""

    def __init__(self, kind: str, fun, opts: dict, real):
        self.kind, self.fun, self.opts, self.real = kind, fun, opts, real
        functools.update_wrapper(self, fun, updated=())

    def __getattr__(self, name):  # .lower, .eval_shape … of the real transformed function
        real = self.__dict__.get("real")
        if real is None:
            raise AttributeError(name)
        return getattr(real, name)

    def __get__(self, obj, objtype=None):  # decorating a method
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        outermost = not _ACTIVE
        if not outermost and len(_NESTED) < MAX_NESTED:
            staged = any(t.kind == "jit" for t in _ACTIVE)
            _NESTED.append(([("jit", {})] if staged and self.kind != "jit" else [], self, args, kwargs))
        # a process that dies in the call leaves it behind
        calls_recorded_ahead.before_call(self, args, kwargs, _ACTIVE)
        _ACTIVE.append(self)
        try:
            return self.real(*args, **kwargs)
        except Exception:
            capture([], self, args, kwargs)
            if outermost:
                capture_nested()
            raise
        finally:
            _ACTIVE.pop()
            if outermost:
                _NESTED.clear()


def capture_nested() -> None:
    """After an outermost transformed call raised: capture the transformed calls made while it was
    traced (outer ones first), which did not raise themselves. The failure can still be theirs: one
    met only when the outer `jit` compiles (Enzyme's pipeline runs at lowering), or one inside a
    jaxpr the outer call's own capture cannot encode. A call made under an outer `jit` is captured
    under `jit` too (an `enzyme_jax_ir` derivative must be compiled)."""
    for prefix, top, args, kwargs in list(_NESTED):
        capture(prefix, top, args, kwargs)


def _argnums(value) -> tuple:
    return (value,) if isinstance(value, int) else tuple(value)


def _is_input(leaf) -> bool:
    import jax
    import numpy as np

    return isinstance(leaf, (jax.Array, jax.core.Tracer, np.ndarray, np.generic, float, complex)) and not isinstance(
        leaf, bool)


def _dtype_name(leaf) -> str:
    import jax

    dtype = getattr(leaf, "dtype", None)
    return str(dtype) if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key) else str(jax.numpy.result_type(leaf))


def _values(leaf) -> list:
    """A leaf's values, flat (`reducer.levels.jaxpr.params.flat_values`)."""
    from reducer.levels.jaxpr.params import flat_values

    return flat_values(leaf)


def capture(prefix: list, top, args: tuple, kwargs: dict) -> None:
    """Encode the call `top(*args, **kwargs)` (with the transformations in `prefix`, (kind, options)
    pairs, outside it)."""
    key = (id(top), tuple(kind for kind, _ in prefix))
    if len(SPECS) >= MAX_SPECS or key in _SEEN:
        return
    _SEEN.add(key)
    try:
        spec = encode_call(prefix, top, args, kwargs)
        if spec not in SPECS:
            SPECS.append(spec)
    except Exception as exc:  # a call that cannot be captured is only noted
        what = " ∘ ".join([kind for kind, _ in prefix] + [getattr(top, "kind", "call")])
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        NOTES.append(f"the failing {what} call (tracing it on its own raised {type(exc).__name__}: {first})")


class Call:
    """A transformed call laid flat: the chain of transformations (outermost first), the user's
    function, and its arguments' leaves, which of them are inputs, and their shapes."""

    def __init__(self, prefix: list, top, args: tuple, kwargs: dict):
        import jax
        import numpy as np

        self.chain, cur, static = list(prefix), top, set()
        while isinstance(cur, Transformed):
            if cur.kind == "jit":
                static.update(_argnums(cur.opts.get("static_argnums") or ()))
            self.chain.append((cur.kind, cur.opts))
            cur = cur.fun
        self.fun, self.args = as_pytrees(cur, tuple(args))
        self.leaves, self.treedef = jax.tree_util.tree_flatten((self.args, dict(kwargs)))
        self.offsets, start = [], 0
        for a in self.args:
            n = len(jax.tree_util.tree_leaves(a))
            self.offsets.append(range(start, start + n))
            start += n
        self.index = {}  # leaf position -> input position
        for i, leaf in enumerate(self.leaves):
            if _is_input(leaf) and not any(i in self.offsets[p] for p in static if p < len(self.offsets)):
                self.index[i] = len(self.index)
        self.shapes = {i: (tuple(np.shape(self.leaves[i])), _dtype_name(self.leaves[i])) for i in self.index}

    def differentiable(self, positions) -> list:
        """The input positions of the floating-point leaves of the arguments at `positions`."""
        import jax.numpy as jnp

        return [self.index[i] for p in positions for i in self.offsets[p]
                if i in self.index and jnp.issubdtype(dtype_of(self.shapes[i][1]), jnp.inexact)]

    def transforms(self) -> tuple[list, dict, bool]:
        """The spec's transformations, the shapes the innermost function sees, and whether an
        auxiliary output is dropped."""
        from reducer.levels.jaxpr import program as jp

        inner, transforms, aux = dict(self.shapes), [], False
        for kind, opts in self.chain:
            if kind in jp.GRAD_LIKE:
                transforms.append(Transform(kind, argnums=self.differentiable(_argnums(opts.get("argnums", 0)))))
            elif kind == "vmap":
                transforms.append(Transform("vmap", in_axes=self._unbatch(opts.get("in_axes", 0), inner)))
            else:
                transforms.append(Transform(kind, options=opts.get("enzyme") or None))
            aux = aux or bool(opts.get("has_aux"))
        return transforms, inner, aux

    def _unbatch(self, axes, inner: dict) -> list:
        per_arg = [axes] * len(self.args) if isinstance(axes, int) or axes is None else list(axes)
        if len(per_arg) != len(self.args) or not all(a is None or isinstance(a, int) for a in per_arg):
            raise Unencodable("vmap in_axes other than an int or None per argument")
        flat_axes = [None] * len(self.leaves)
        for p, ax in enumerate(per_arg):
            for i in self.offsets[p]:
                flat_axes[i] = ax
        for i in self.index:
            if flat_axes[i] is not None:
                shape = list(inner[i][0])
                del shape[flat_axes[i] % len(shape)]
                inner[i] = (tuple(shape), inner[i][1])
        return [flat_axes[i] for i in self.index]

    def jaxpr(self, inner: dict, aux: bool):
        """The closed jaxpr of the innermost function over the inputs (shapes as it sees them)."""
        import jax

        def flat(*xs):
            values = list(self.leaves)
            for i, k in self.index.items():
                values[i] = xs[k]
            a, kw = jax.tree_util.tree_unflatten(self.treedef, values)
            out = self.fun(*a, **kw)
            return jax.tree_util.tree_leaves(out[0] if aux else out)

        return jax.make_jaxpr(flat)(*[jax.ShapeDtypeStruct(inner[i][0], dtype_of(inner[i][1])) for i in self.index])

    def arg_specs(self) -> list[Arg]:
        import jax
        import numpy as np

        specs = []
        for i in self.index:
            shape, dtype = self.shapes[i]
            spec = Arg(tuple(shape), dtype)
            size = int(np.prod(shape, dtype=np.int64))
            concrete = not isinstance(self.leaves[i], jax.core.Tracer)
            if concrete and size <= calls_recorded_ahead.values_limit(MAX_VALUES):
                spec.values = _values(self.leaves[i])
            specs.append(spec)
        return specs


def input_leaves(prefix: list, top, args: tuple, kwargs: dict) -> list:
    """The call's inputs, in the order of its spec's arguments: under an outer trace, the values of
    that trace it closes over last (`encode_call` makes them inputs of their own)."""
    import jax

    call = Call(prefix, top, args, kwargs)
    leaves = [call.leaves[i] for i in call.index]
    if not any(isinstance(v, jax.core.Tracer) for v in leaves):
        return leaves
    closed = call.jaxpr(*call.transforms()[1:])
    return leaves + [v for v in closed.consts if isinstance(v, jax.core.Tracer)]


def encode_call(prefix: list, top, args: tuple, kwargs: dict) -> str:
    import jax

    call = Call(prefix, top, args, kwargs)
    transforms, inner, aux = call.transforms()
    closed = call.jaxpr(inner, aux)
    enc = Encoder()
    env, const_eqns, promoted = {}, [], []
    for var, value in zip(closed.jaxpr.constvars, closed.consts):
        env[var] = enc.fresh()
        if isinstance(value, jax.core.Tracer):  # a value of an outer trace: an input of its own
            promoted.append(Var(env[var], tuple(int(d) for d in var.aval.shape), str(var.aval.dtype)))
        else:
            const_eqns.append(enc.const_eqn(env[var], value))
    body = enc.jaxpr(closed.jaxpr, env)
    body.eqns = const_eqns + body.eqns
    body.inputs += promoted
    arg_specs = call.arg_specs() + [Arg(p.shape, p.dtype) for p in promoted]
    for t in transforms:
        if t.kind == "vmap":
            t.in_axes += [None] * len(promoted)
    return Spec(transforms, body, arg_specs, x64=bool(jax.config.jax_enable_x64)).to_json()


# -- the patches --------------------------------------------------------------------------------
def _lifting(jax, name: str, defaults: dict):
    orig = getattr(jax, name)
    ORIG[name] = orig

    def transform(fun=None, *targs, **tkw):
        if fun is None:  # used as @jax.jit(...) with options only
            return lambda f: transform(f, *targs, **tkw)
        opts = dict(defaults)
        names = {"jit": ("in_shardings", "out_shardings", "static_argnums"), "vmap": ("in_axes", "out_axes"),
                 }.get(name, ("argnums", "has_aux"))
        opts.update(zip(names, targs))
        opts.update(tkw)
        return Transformed(name, fun, opts, orig(fun, *targs, **tkw))

    functools.update_wrapper(transform, orig)
    setattr(jax, name, transform)


def _patch_vjp(jax) -> None:
    orig_vjp, orig_jvp = jax.vjp, jax.jvp
    ORIG.update(vjp=orig_vjp, jvp=orig_jvp)

    def vjp(fun, *primals, **kw):
        try:
            out = orig_vjp(fun, *primals, **kw)
        except Exception:
            capture([("vjp", {})], fun, primals, {})
            raise
        pullback = out[1]

        def checked(*cts):
            try:
                return pullback(*cts)
            except Exception:
                capture([("vjp", {})], fun, primals, {})
                raise

        return (out[0], checked, *out[2:])

    def jvp(fun, primals, tangents, **kw):
        try:
            return orig_jvp(fun, primals, tangents, **kw)
        except Exception:
            capture([("jvp", {})], fun, tuple(primals), {})
            raise

    jax.vjp, jax.jvp = functools.wraps(orig_vjp)(vjp), functools.wraps(orig_jvp)(jvp)


def install() -> None:
    import jax

    for name in ("jit", "vmap"):
        _lifting(jax, name, {})
    for name in ("grad", "value_and_grad", "jacrev", "jacfwd", "hessian"):
        _lifting(jax, name, {"argnums": 0})
    _patch_vjp(jax)
    install_libraries(Transformed)
    try:
        import enzyme_ad.jax as ejax
    except ImportError:
        return
    orig_ir = ejax.enzyme_jax_ir

    @functools.wraps(orig_ir)
    def enzyme_jax_ir(*dargs, **dkwargs):
        decorator = orig_ir(*dargs, **dkwargs)
        bound = inspect.signature(orig_ir).bind(*dargs, **dkwargs).arguments
        options = {"enzyme": enzyme_options(**{k: bound[k] for k in ("argv", "inner_jit", "pipeline_options")
                                               if k in bound})}
        return lambda fun: Transformed("enzyme", fun, options, decorator(fun))

    ejax.enzyme_jax_ir = enzyme_jax_ir


def main(argv: list[str]) -> int:
    from reducer.harness import apply_limits

    apply_limits()
    script = argv[0]
    out = argv[1] if len(argv) > 1 else os.environ["REDUCER_HARNESS_OUT"]
    sys.argv = [script]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    install()
    if calls_recorded_ahead.enabled():
        calls_recorded_ahead.start(out, encode_call, SPECS, NOTES, input_leaves)
    error = ""
    try:
        runpy.run_path(script, run_name="__main__")
    except BaseException as exc:  # the failure being captured
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
        traceback.print_exc()
    finally:
        calls_recorded_ahead.write_report(out, {"specs": SPECS, "notes": NOTES, "error": error,
                                                "ahead": calls_recorded_ahead.specs()})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
