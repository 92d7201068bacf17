"""JAX's NaN check as it documents it, for a program that counts on it: while `jax_debug_nans` reads
True, a compiled call (or an operation run op by op) whose result holds a NaN raises
`FloatingPointError` (an Inf too, under `jax_debug_infs`).

A program may expect JAX's check to fire (`try: step(batch) except FloatingPointError: ...`, or a test
`with pytest.raises(FloatingPointError)`) and fail where it did not: JAX 0.10.2 loses the global flag
for compiled calls and op-by-op ones alike after any `with jax.debug_nans(...):` block (JAX's own
`jnp.var`, `jnp.sort` and batching enter one too), though the flag still reads True. Such a failure
is JAX's only where a NaN was made while the flag read True, so a candidate that makes no NaN (its
`else:` branch reached with finite values), or makes it with the flag off, must not pass for it: with
the check kept as here, the original runs through and those do not (`reducer.counterfactual`, the fix
`nan-check`). JAX's own check of each call's results is kept in place for every thread, whatever a
block leaves behind, and reads the flags as they are at each call, as JAX's does; it checks no more
than JAX promises (a NaN a compiled `where` masks out of the results is not one), so a program that
expects more fails with it too.
"""
from __future__ import annotations

#: the statement, run before a program's first, that installs the check in its process
LINE = "from reducer.faults.nan_check import install as _reducer_nan_check; _reducer_nan_check()"
#: the statement that runs a program op by op with JAX's NaN and Inf checks taken away, whatever it
#: turns on: the values alone, which a program that counts on the check must fail with too
VALUES_ALONE = "from reducer.faults.nan_check import values_alone as _reducer_values; _reducer_values()"


def install() -> None:
    """Keep JAX's check of each call's results in place in this process, as JAX's flags ask."""
    from jax._src import api, config

    for state in (config.debug_nans, config.debug_infs):
        state._update_thread_local_hook = None  # a block's end no longer turns the check off
        state._update_global_hook = None
    api._post_hook_state.set_global(api._nan_check_posthook)  # it asks the flags at each call


def values_alone() -> None:
    """Run this process op by op, with JAX's check of each operation's results taken away."""
    import jax
    from jax._src import dispatch

    jax.config.update("jax_disable_jit", True)
    dispatch._check_special = lambda *args, **kwargs: None
