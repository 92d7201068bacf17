"""JAX's NaN check as it documents it, for a program that counts on it: while `jax_debug_nans` reads
True, an operation whose result holds a NaN raises `FloatingPointError` (an Inf too, under
`jax_debug_infs`).

A program may expect JAX's check to fire (`try: step(batch) except FloatingPointError: ...`, or a test
`with pytest.raises(FloatingPointError)`) and fail where it did not: JAX 0.10.2 loses the global flag
for compiled calls and op-by-op ones alike after any `with jax.debug_nans(...):` block (JAX's own
`jnp.var`, `jnp.sort` and batching enter one too), though the flag still reads True. Such a failure
is JAX's only where a NaN was made while the flag read True, so a candidate that makes no NaN (its
`else:` branch reached with finite values), or makes it with the flag off, must not pass for it: with
the check done here, the original runs through and those do not (`reducer.counterfactual`, the fix
`nan-check`). Two ways, the first as fast as JAX's own:

- `install()`: JAX's check of each compiled call's results, kept in place for every thread whatever
  a block leaves behind; it reads the flags as they are at each call, as JAX's does;
- `install(eager=True)`: every operation's result checked as the program runs op by op (`jit`
  turned off), where the first does not make the program run through.
"""
from __future__ import annotations

#: the statements, run before a program's first, that install the check in its process (by `eager`)
LINE = {False: "from reducer.faults.nan_check import install as _reducer_nan_check; _reducer_nan_check()",
        True: "from reducer.faults.nan_check import install as _reducer_nan_check; _reducer_nan_check(eager=True)"}


def install(eager: bool = False) -> None:
    """Check results in this process as JAX's flags ask: each compiled call's, or (`eager`) each
    operation's, op by op."""
    if not eager:
        from jax._src import api, config

        for state in (config.debug_nans, config.debug_infs):
            state._update_thread_local_hook = None  # a block's end no longer turns the check off
            state._update_global_hook = None
        api._post_hook_state.set_global(api._nan_check_posthook)  # it asks the flags at each call
        return
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
    from jax._src import config, dtypes

    dtype = getattr(value, "dtype", None)
    if dtype is None or not dtypes.issubdtype(dtype, np.inexact):  # a PRNG key's dtype too
        return
    if config.debug_nans.value and np.isnan(np.asarray(value)).any():
        raise FloatingPointError(f"invalid value (nan) encountered in {name}")
    if config.debug_infs.value and np.isinf(np.asarray(value)).any():
        raise FloatingPointError(f"invalid value (inf) encountered in {name}")
