"""A replay's runs read their compiled operations back from JAX's persistent cache, and a run with an
operation patched still gets that operation's own program (`every_compile_kept`)."""
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reducer.faults import safe_ops
from reducer.compile_cache import ENV, MIN_SECONDS, every_compile_kept


def log_and_sin(x):
    return jnp.log(x) + jnp.sin(x)


def test_a_patched_operation_is_compiled_anew_and_the_settings_are_as_before_after_it(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path))
    before = (jax.config.jax_compilation_cache_dir, getattr(jax.config, MIN_SECONDS))
    x = jnp.zeros(3)
    with every_compile_kept():
        jax.clear_caches()
        plain = log_and_sin(x)
        undo = safe_ops.make_safe("log", safe_ops.FORWARD)
        try:
            jax.clear_caches()
            safe = log_and_sin(x)
        finally:
            undo()
        jax.clear_caches()
        again = log_and_sin(x)
    assert np.isinf(plain).all() and np.isfinite(safe).all() and np.isinf(again).all()
    assert any(tmp_path.iterdir())  # every compilation went to the cache, the quick ones too
    assert (jax.config.jax_compilation_cache_dir, getattr(jax.config, MIN_SECONDS)) == before
    jax.clear_caches()
    assert np.isinf(log_and_sin(x)).all()


def test_without_a_shared_folder_a_temporary_one_is_used_and_removed(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    if jax.config.jax_compilation_cache_dir:
        pytest.skip("this process set a cache folder of its own")
    with every_compile_kept():
        folder = jax.config.jax_compilation_cache_dir
        jax.clear_caches()
        log_and_sin(jnp.ones(2))
    assert folder and not os.path.exists(folder)
    assert jax.config.jax_compilation_cache_dir is None


@pytest.mark.parametrize("form", ["script", "traced program"])
def test_a_reductions_warm_candidates_keep_their_quick_compilations_in_the_shared_folder(tmp_path, form):
    from reducer.levels.jaxpr.worker import TracedProgram
    from reducer.workers.sandbox import Limits, Sandbox
    from test_fault_alone import spec_of

    folder = tmp_path / "jax-cache"
    sandbox = Sandbox(tmp_path / "runs", script_name="prog.py", warm=True, compile_cache=folder)
    candidate = ("import jax.numpy as jnp\nprint(float(jnp.sin(jnp.ones(3)).sum()))\n" if form == "script"
                 else TracedProgram(spec_of(lambda a: jnp.sin(a).sum(), np.ones(3, np.float32),
                                            transforms=[{"t": "grad", "argnums": [0]}]).to_json()))
    try:
        runs = [sandbox.run(candidate, Limits(timeout=120)) for _ in range(2)]
    finally:
        sandbox.close()
    assert all(run.returncode == 0 for run in runs), runs[0].stderr[-2000:]
    assert runs[0].stdout == runs[1].stdout
    assert folder.is_dir() and any(folder.iterdir())  # a compilation of milliseconds, kept
