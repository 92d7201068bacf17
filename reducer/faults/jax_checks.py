"""JAX's NaN and Inf checks, switched on in a program's own process so that they stop where a value is
made or chosen, not where a value already made is only moved on.

`jax_debug_nans` stops at the first primitive (or compiled function) whose result holds a NaN. A NaN
a library writes as a constant (`jnp.where(kappa > 0, …, np.nan)` in `vonmises.logpdf`) is converted
and broadcast to an array whether or not it is chosen: op by op, the check stops at that
`convert_element_type`, on a line whose value may be finite; compiled, at `jnp.where`'s own
`_broadcast_arrays`, whose de-optimized run then finds nothing and stops the program with JAX's "did
not produce invalid values". Here:

- an operation that only moves values (`MOVING`), and a compiled function, is not checked for a kind
  of value its inputs already hold; a conversion that narrows a finite value to an Inf (float64 to
  float32) is still checked;
- any other primitive is checked, and where it stops on a kind its inputs held, the run says so
  (`PASSED_ON`): op by op, that is where a constant is first chosen or computed with (`select_n`);
  compiled, JAX's checks let the value through where it was made (a compiled call under a derivative),
  and the caller runs the program op by op to meet it (`reducer.faults.origin`).
"""
from __future__ import annotations

import contextlib
import sys
import threading

import numpy as np

#: primitives that move or copy values (`stage` makes a Python number an array) and cannot make a NaN,
#: nor an Inf from finite inputs of the same width (a narrowing `convert_element_type` can: it stays
#: checked unless its input already holds one)
MOVING = frozenset({
    "convert_element_type", "broadcast_in_dim", "reshape", "squeeze", "expand_dims", "transpose",
    "copy", "copy_p", "concatenate", "pad", "slice", "dynamic_slice", "dynamic_update_slice",
    "gather", "rev", "device_put", "stage"})
#: what a run prints where the check stops at a primitive whose inputs already held the value
PASSED_ON = "reducer: the inputs of {prim} already held {kind}"

#: JAX's flags for its NaN and Inf checks
CHECKS = ("jax_debug_nans", "jax_debug_infs")
#: per thread: `unchecked`, the kinds the running executable's result is not checked for;
#: `primitive`, whether that executable is one primitive's (its kinds set by `_checking`)
_now = threading.local()


def switch_on(infs: bool, eager: bool = False) -> None:
    """JAX's NaN checks on (and its Inf checks, with `infs`; `jit` off too, with `eager`), as the
    module's docstring says."""
    import jax

    install()
    for flag in CHECKS if infs else CHECKS[:1]:
        jax.config.update(flag, True)
    if eager:
        jax.config.update("jax_disable_jit", True)


def install() -> None:
    """Make JAX's checks, wherever they are switched on in this process, check as the module's docstring
    says (with the checks off, JAX runs as it did); for this thread, whatever a `with jax.debug_nans(…)`
    block left behind before (JAX 0.10.2 turns its check of compiled calls off for the thread at a
    block's end: `reducer.faults.nan_check`), as a fresh process has them."""
    from jax._src import api, config, dispatch
    from jax._src.interpreters import pxla

    api._post_hook_state.set_local(config.config_ext.unset)  # what an earlier block left for this thread
    if getattr(dispatch, "_reducer_checks", False):
        return
    compiled, posthook, execute = dispatch.xla_primitive_callable, api._nan_check_posthook, \
        pxla.ExecuteReplicated.__call__

    def primitive_callable(prim, **params):
        return _checked(prim.name, compiled(prim, **params))

    def checked_posthook(fun, args, kwargs, output):
        if not dispatch.needs_check_special():
            return None
        with _checking(_held((args, kwargs)), primitive=False):
            return posthook(fun, args, kwargs, output)

    def checked_execute(self, *args):
        if not dispatch.needs_check_special():
            return execute(self, *args)
        with _checking(_held(args), primitive=False):
            return execute(self, *args)

    dispatch.xla_primitive_callable = primitive_callable
    dispatch._check_special = _check_special
    api._nan_check_posthook = checked_posthook  # before the flags: JAX installs the hook when they change
    api._update_debug_special_global(None)
    pxla.ExecuteReplicated.__call__ = checked_execute
    for state in (config.debug_nans, config.debug_infs):
        state._update_thread_local_hook = _leaving_global(state._update_thread_local_hook)
    dispatch._reducer_checks = True


def _leaving_global(hook):
    """`hook`, JAX's update of the thread's check of compiled calls when a `with jax.debug_nans(…)`
    block starts or ends, made to leave the check to the flags' global values once no block is in
    effect (JAX 0.10.2 turns it off for the thread instead: a `with config.debug_nans(False)` that
    `jnp.var` or a custom rule's round trip runs inside a training step turns off every later
    compiled call's check)."""
    from jax._src import api, config

    def update(value):
        hook(value)
        if all(state.get_local() is config.config_ext.unset for state in (config.debug_nans, config.debug_infs)):
            api._post_hook_state.set_local(config.config_ext.unset)

    return update


@contextlib.contextmanager
def _checking(unchecked: frozenset, primitive: bool):
    """While an executable runs, its result unchecked for the kinds `unchecked`; a compiled function's
    run inside one primitive's (`primitive`) keeps the primitive's."""
    before = getattr(_now, "unchecked", frozenset()), getattr(_now, "primitive", False)
    if primitive or not before[1]:
        _now.unchecked, _now.primitive = unchecked, primitive
    try:
        yield
    finally:
        _now.unchecked, _now.primitive = before


def _checked(name: str, fun):
    """`fun`, the compiled primitive `name`, checked as the module's docstring says."""
    from jax._src import dispatch

    def run(*args):
        if not dispatch.needs_check_special():
            return fun(*args)
        held = _held(args)
        try:
            with _checking(held if name in MOVING else frozenset(), primitive=True):
                return fun(*args)
        except FloatingPointError as stopped:
            kind = next((k for k in held if f"({k})" in str(stopped)), None)
            if kind:
                print(PASSED_ON.format(prim=name, kind=kind), file=sys.stderr, flush=True)
            raise

    return run


def _check_special(name: str, dtype, buf) -> None:
    """JAX's check of one result buffer, the kinds unchecked now left out."""
    from jax._src import config, dtypes
    from jax._src.api_util import InternalFloatingPointError

    if not dtypes.issubdtype(dtype, np.inexact):
        return
    unchecked = getattr(_now, "unchecked", frozenset())
    checks = (("nan", config.debug_nans.value, np.isnan), ("inf", config.debug_infs.value, np.isinf))
    for kind, on, found in checks:
        if on and kind not in unchecked and np.any(found(np.asarray(buf))):
            raise InternalFloatingPointError(name, kind)


def _held(values) -> frozenset:
    """The kinds of non-finite value ("nan", "inf") the concrete arrays among `values` (a pytree) hold."""
    import jax

    kinds = set()
    for leaf in jax.tree_util.tree_leaves(values):
        try:
            array = np.asarray(leaf)
        except Exception:  # a value that has no host copy (a tracer, a token): it holds neither
            continue
        if np.issubdtype(array.dtype, np.inexact):
            kinds |= {"nan"} if np.isnan(array).any() else set()
            kinds |= {"inf"} if np.isinf(array).any() else set()
    return frozenset(kinds)
