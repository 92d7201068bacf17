"""Fails with a JAX error (ConcretizationTypeError: `int` of a traced value under `jit`) through a
function it leaves on `builtins`, where a long-lived runner cannot take it back: a later candidate
that no longer defines it still fails in that runner, but not in a process of its own. It also notes
the process id of each run that gets that far in the file named by $REDUCER_TEST_PIDS (if set)."""
import builtins
import os

import jax

with open(os.environ.get("REDUCER_TEST_PIDS", os.devnull), "a") as pids:
    pids.write(f"{os.getpid()}\n")
builtins.reducer_test_leak = lambda x: int(x)
jax.jit(builtins.reducer_test_leak)(1.0)
