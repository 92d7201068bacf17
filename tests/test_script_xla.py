"""The module XLA compiled for a script (`reducer.levels.mlir.script_xla`): the arguments a run gave
each compiled call are saved, and a module is run on the call whose arguments fit it."""
from __future__ import annotations

import subprocess
import sys

import numpy as np

from reducer.levels.mlir import script_xla

MODULE = """
module @jit_scale {
  func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<f32>) -> tensor<2x3xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<2x3xf32>
    return %1 : tensor<2x3xf32>
  }
}
"""


def test_a_module_runs_on_the_call_whose_arguments_fit_it(tmp_path):
    np.savez(tmp_path / "call_000.npz", np.zeros((2, 3), np.float32), np.float32(1))
    np.savez(tmp_path / "call_001.npz", np.arange(4, dtype=np.int32))
    np.savez(tmp_path / "call_002.npz", np.ones((2, 3), np.float32), np.float32(2))
    np.savez(tmp_path / "call_003.npz", np.ones((2, 3), np.float64), np.float64(2))
    calls = sorted(tmp_path.glob("call_*.npz"))
    assert script_xla.called_with(MODULE, calls) == str(tmp_path / "call_002.npz")  # the last that fits
    assert script_xla.called_with(MODULE, calls[1:2]) is None


def test_the_capture_saves_the_arguments_of_each_compiled_call(tmp_path):
    from reducer.prologue import with_prologue

    calls = tmp_path / "calls"
    calls.mkdir()
    script = ("import jax, numpy as np\n"
              "f = jax.jit(lambda a, unused, b: a * b)\n"
              "print(f(np.arange(6, dtype=np.float32).reshape(2, 3), 1.0, np.float32(2)).sum())\n")
    path = tmp_path / "script.py"
    path.write_text(with_prologue(script, script_xla.CAPTURE % str(calls)))
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "30.0" in done.stdout, done.stderr
    with np.load(calls / "call_000.npz") as saved:
        arrays = [saved[k] for k in saved.files]
    # the argument jit prunes (unused) is not one the compiled module takes
    assert [a.shape for a in arrays] == [(2, 3), ()] and arrays[0][1, 2] == 5.0
