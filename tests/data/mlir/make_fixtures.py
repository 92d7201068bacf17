"""Regenerate the .mlir fixtures of tests/test_mlir.py by running real programs.

    python tests/data/mlir/make_fixtures.py

- topk_enzyme.mlir: the module Enzyme-JAX dumps when tests/programs/top_k_enzyme.py fails
  (`// PIPELINE`, then the module, with its debug locations);
- cholesky_plain.mlir: `jax.jit(f).lower(...).as_text()` of a function with a Cholesky
  factorisation (a LAPACK custom call that Enzyme-JAX cannot differentiate);
- cusolver_plain.mlir: the same function lowered for CUDA, which XLA cannot compile on a CPU;
- sort_crash.mlir: a median (a sort) lowered by JAX, under the pipeline of the top_k dump; Enzyme-JAX
  crashes (SIGSEGV) on it.
Each file is checked to fail as described before it is written.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from reducer.levels.mlir import module as mm, pipeline as pl  # noqa: E402


def enzyme_dump(program: Path) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, cwd=tmp,
                              env=dict(os.environ, TMPDIR=tmp, JAX_PLATFORMS="cpu"), timeout=300)
        m = re.search(r"Enzyme MLIR dumped to (\S+\.mlir)", done.stderr)
        assert m, f"{program.name} left no Enzyme dump:\n{done.stderr[-2000:]}"
        return Path(m.group(1)).read_text()


def cholesky_loss(x):
    return jnp.sum(jnp.linalg.cholesky(x @ x.T + 4.0 * jnp.eye(x.shape[0])) ** 2)


def median_loss(coef, x, y):
    return jnp.median(jnp.abs(x * coef[0] + coef[1] - y)) + 1e-3 * jnp.sum(coef ** 2)


def runs(program: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT)))


def main() -> None:
    topk = enzyme_dump(ROOT / "tests" / "programs" / "top_k_enzyme.py")
    (HERE / "topk_enzyme.mlir").write_text(topk)

    x = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)
    plain = jax.jit(cholesky_loss).lower(x).as_text()
    (HERE / "cholesky_plain.mlir").write_text(plain)
    cuda = jax.jit(cholesky_loss).trace(x).lower(lowering_platforms=("cuda",)).as_text()
    (HERE / "cusolver_plain.mlir").write_text(cuda)

    pipeline, _ = mm.split(topk)
    median = jax.jit(median_loss).lower(jnp.zeros(2), jnp.ones(15), jnp.ones(15)).as_text()
    crash_pipeline = pl.remap_activities(pipeline, "main", [None] * 3, [pl.ACTIVE] * 3, None, [])
    (HERE / "sort_crash.mlir").write_text(mm.join(crash_pipeline, median))

    for name, check in [("topk_enzyme.mlir", "adjoint"), ("cholesky_plain.mlir", "ok-xla"),
                        ("cusolver_plain.mlir", "xla-error"), ("sort_crash.mlir", "crash")]:
        kind = "xla" if check.endswith("xla") or check == "xla-error" else "enzyme"
        done = runs(f"import sys; from reducer.levels.mlir.worker import main; sys.exit(main([{str(HERE / name)!r}, "
                    f"{'--xla' if kind == 'xla' else '--enzyme'!r}]))")
        failed = {"adjoint": "could not compute the adjoint" in done.stderr, "ok-xla": done.returncode == 0,
                  "xla-error": "No FFI handler registered" in done.stderr, "crash": done.returncode < 0}[check]
        assert failed, f"{name}: expected {check}, got exit {done.returncode}:\n{done.stderr[-1500:]}"
        print(f"{name}: {check} (exit {done.returncode})")


if __name__ == "__main__":
    main()
