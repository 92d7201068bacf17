"""JAX's persistent compilation cache in a candidate's process: shared by a reduction's warm
candidates, scripts and traced programs alike (`REDUCER_COMPILE_CACHE`,
`reducer.workers.sandbox.Sandbox.compile_cache`), and open to
every compilation while a replay runs the same small program again and again (`every_compile_kept`).

A candidate's program compiles hundreds of operations of a few milliseconds each (a Flax training
step's loss, its optimiser's update, the data's preparation) besides its one large step; each one a
candidate leaves unchanged is read back rather than compiled again. The cache is keyed by the
compiled program's own text (and the compiler's options and version), so a changed or patched
operation is compiled anew, and `jax.clear_caches` does not drop it.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

#: where the shared cache is, for a candidate's process
ENV = "REDUCER_COMPILE_CACHE"
#: JAX's floor for a compilation worth an entry (1 s by default), set to keep every one: measured beside
#: a 2-core load, a warm run of a Flax or Equinox training script took 0.7-0.8 s with every compilation
#: kept against 1.8-2.1 s with those of at least 0.2 s (`benchmarks/overhead.py`)
MIN_SECONDS = "jax_persistent_cache_min_compile_time_secs"
FOLDER = "jax_compilation_cache_dir"


def shared_by_candidates() -> None:
    """Use the reduction's shared cache, where the sandbox names one, for every compilation."""
    folder = os.environ.get(ENV)
    if folder:
        import jax

        jax.config.update(FOLDER, folder)
        jax.config.update(MIN_SECONDS, 0.0)


@contextlib.contextmanager
def every_compile_kept():
    """Within it, every compilation goes to the persistent cache and is read back from there (the
    folder this process set, the shared one, or a temporary one where there is none: a fresh
    interpreter); the settings, and a cache this made, are as they were after it. For a replay that
    clears JAX's caches between runs of a program (`reducer.levels.jaxpr.nonfinite_replay`: about 500
    compilations, three quarters of a Flax loss's 38-equation replay)."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    before = {name: getattr(jax.config, name) for name in (MIN_SECONDS, FOLDER)}
    shared, temporary = os.environ.get(ENV), None
    if not before[FOLDER]:
        temporary = None if shared else tempfile.mkdtemp(prefix="reducer-compiled-")
        jax.config.update(FOLDER, shared or temporary)
    jax.config.update(MIN_SECONDS, 0.0)
    try:
        yield
    finally:
        for name, value in before.items():
            jax.config.update(name, value)
        if not before[FOLDER]:
            compilation_cache.reset_cache()  # the next compilation finds no folder set, as before
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)
