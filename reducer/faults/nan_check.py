"""JAX's NaN check as it documents it, for a program that counts on it: while `jax_debug_nans` reads
True, an operation whose result holds a NaN raises `FloatingPointError` (an Inf too, under
`jax_debug_infs`).

A program may expect JAX's check to fire (`try: step(batch) except FloatingPointError: ...`, or a test
`with pytest.raises(FloatingPointError)`) and fail where it did not: JAX 0.10.2 loses the global flag
for compiled calls and op-by-op ones alike after a `with jax.debug_nans(False):` block, though the
flag still reads True. Such a failure is JAX's only where a NaN was made while the flag read True, so
a candidate that makes no NaN (its `else:` branch reached with finite values), or makes it with the
flag off, must not pass for it: with the check done here, at every operation, as the program runs
op by op (`jit` turned off), the original runs through and those do not
(`reducer.counterfactual`, the fix `nan-check`).
"""
from __future__ import annotations

#: the statement, run before a program's first, that installs the check in its process
LINE = "from reducer.faults.nan_check import install as _reducer_nan_check; _reducer_nan_check()"
def install() -> None:
    """Check every operation's result in this process, op by op, as JAX's flags ask."""
    import jax
    from jax._src import core

    jax.config.update("jax_disable_jit", True)
    process = core.EvalTrace.process_primitive

    def checked(self, primitive, args, params, /):
        out = process(self, primitive, args, params)
        for value in out if primitive.multiple_results else (out,):
            _check(primitive.name, value)
        return out

    core.EvalTrace.process_primitive = checked


def _check(name: str, value) -> None:
    import numpy as np
    from jax._src import config

    dtype = getattr(value, "dtype", None)
    if dtype is None or not np.issubdtype(dtype, np.inexact):
        return
    if config.debug_nans.value and np.isnan(np.asarray(value)).any():
        raise FloatingPointError(f"invalid value (nan) encountered in {name}")
    if config.debug_infs.value and np.isinf(np.asarray(value)).any():
        raise FloatingPointError(f"invalid value (inf) encountered in {name}")
