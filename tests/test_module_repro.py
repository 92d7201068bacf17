"""The short reproducer of a module XLA fails on (`reducer.levels.mlir.module_repro`): its inputs are
the tool's, it runs as a plain script, and its confirmation rejects runs that fail another way."""
from __future__ import annotations

import subprocess
import sys

import numpy as np

from oracles.outcome import RunResult, Signature
from reducer.levels.mlir import module_repro, xla_check
from reducer.levels.mlir.run_module import XLA, XLA_RESULTS

MIXED = """
module @jit_mixed {
  func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<4xi32>, %arg2: tensor<3xi1>, %arg3: tensor<2xcomplex<f32>>,
                  %arg4: tensor<f32>) -> tensor<2x3xf32> {
    %0 = stablehlo.broadcast_in_dim %arg4, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<2x3xf32>
    return %1 : tensor<2x3xf32>
  }
}
"""


def arguments(module_text: str) -> list:
    return xla_check.argument_names(module_text)


def test_the_reproducers_inputs_are_the_ones_the_reduction_ran_on():
    made: dict = {"np": np}
    exec("\n".join(module_repro.inputs_lines(arguments(MIXED))), made)
    expected = xla_check.example_inputs(MIXED)
    assert len(made["ARGS"]) == len(expected) == 5
    for a, b in zip(made["ARGS"], expected):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)



def test_arguments_of_one_float_type_are_made_in_one_line_as_the_reduction_made_them():
    module = MIXED.replace("tensor<4xi32>, %arg2: tensor<3xi1>, %arg3: tensor<2xcomplex<f32>>,", "tensor<4xf32>,")
    lines = module_repro.inputs_lines(arguments(module))
    assert len(lines) == 2 and "for shape in [(2, 3), (4,), ()]" in lines[1]
    made: dict = {"np": np}
    exec("\n".join(lines), made)
    expected = xla_check.example_inputs(module)
    assert [a.shape for a in made["ARGS"]] == [(2, 3), (4,), ()]
    assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(made["ARGS"], expected, strict=True))


def checked(got: list, want: list) -> str | None:
    """What the results check of a reproducer says of these outputs: None when they agree."""
    check = module_repro.RESULTS_CHECK.format(options="", reference="reference=True", said="")
    outputs = {False: got, True: want}
    try:
        exec(check, {"np": np, "run": lambda reference=False: outputs[reference], "print": lambda *a: None})
    except AssertionError as error:
        return str(error)
    return None


def test_the_results_check_holds_integers_exactly_and_floats_to_the_reductions_tolerance():
    import ml_dtypes

    big = np.array([1000.0, 1.0], np.float32)
    assert checked([big + np.float32(0.05)], [big]) is None  # within 1e-4 of the largest |want|
    assert "output 0" in checked([big + np.float32([0, 0.5])], [big])
    assert checked([np.array([3, 4])], [np.array([3, 4])]) is None
    assert checked([np.array([3, 5])], [np.array([3, 4])]) is not None
    assert checked([np.array([True, False])], [np.array([True, True])]) is not None
    half = np.array([1.0, 2.0], ml_dtypes.bfloat16)
    assert checked([half, np.array([1.0, np.nan], np.float32)], [half, np.array([1.0, np.nan], np.float32)]) is None
    assert "output 1" in checked([half, np.array([1.0, 2.0], np.float32)], [half, np.array([1.0, np.nan], np.float32)])

def run(text: str, tmp_path, **env) -> subprocess.CompletedProcess:
    path = tmp_path / "repro.py"
    path.write_text(text)
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, **env})


def test_a_module_xla_runs_cleanly_runs_through_as_either_kind(tmp_path):
    crash = module_repro.source(XLA, MIXED, arguments(MIXED), "# header")
    results = module_repro.source(XLA_RESULTS, MIXED, arguments(MIXED), "",
                                  {"reference": {"xla_backend_optimization_level": 0}})
    assert crash.startswith("# header\nimport jax") and len(results.splitlines()) <= 45
    assert "reducer" not in crash + results and "xla_check" not in crash + results
    done = run(crash, tmp_path)
    assert done.returncode == 0 and "XLA compiled and ran the module: float32[2, 3]" in done.stdout, done.stderr
    done = run(results, tmp_path)
    assert done.returncode == 0 and "the results agree" in done.stdout, done.stderr
    assert "run(xla_backend_optimization_level=0)" in results and "against XLA's optimisations off" in results


def test_64_bit_arguments_stay_64_bit(tmp_path):
    module = MIXED.replace("f32", "f64")
    text = module_repro.source(XLA, module, arguments(module))
    assert 'jax.config.update("jax_enable_x64", True)' in text
    done = run(text, tmp_path)
    assert done.returncode == 0 and "float64[2, 3]" in done.stdout, done.stderr


# -- confirming: loopholes a reproducer that fails another way must not pass through --------------
SEGFAULT = Signature("crash", (("platform", "cpu"), ("how", "signal"), ("detail", "SIGSEGV"), ("phase", "execute")))


def result(code: int, err: str) -> RunResult:
    return RunResult(returncode=code, stdout="", stderr=err, seconds=1.0)


def test_a_crash_must_die_of_the_same_signal():
    segv = "Fatal Python error: Segmentation fault\n\nCurrent thread:\n  File \"repro.py\", line 30 in run\n"
    abort = "Fatal Python error: Aborted\n\nCurrent thread:\n  File \"repro.py\", line 30 in run\n"
    assert module_repro.fails_alike(XLA, SEGFAULT, result(-11, segv))
    assert not module_repro.fails_alike(XLA, SEGFAULT, result(-6, abort))
    assert not module_repro.fails_alike(XLA, SEGFAULT, result(1, "Traceback (most recent call last):\n"
                                                                 "ValueError: bad MODULE\n"))
    assert not module_repro.fails_alike(XLA, SEGFAULT, result(0, ""))


def test_a_wrong_result_must_fail_its_own_check():
    wrong = Signature("wrong-result", (("source", "xla"), ("op", "function")))
    assert module_repro.fails_alike(XLA_RESULTS, wrong, result(1, "Traceback:\nAssertionError: \nNot equal to "
                                                                     "tolerance rtol=0, atol=1e-06\noutput 0"))
    # a reproducer that no longer compiles fails, but not its check
    assert not module_repro.fails_alike(XLA_RESULTS, wrong, result(1, "Traceback:\njaxlib._jax.XlaRuntimeError: "
                                                                       "INVALID_ARGUMENT: bad module"))


def test_confirming_needs_the_culprit_flag_to_fix_it(tmp_path):
    """A reproducer that fails alike but also fails with the culprit pass disabled is not confirmed."""
    seen = []

    def fresh(text: str) -> RunResult:
        seen.append(text)
        return result(1, "AssertionError: output 0")

    ok, said, _ = module_repro.confirm(fresh, XLA_RESULTS, "print()", Signature("wrong-result", ()), "algsimp")
    assert not ok and "still fails with XLA pass `algsimp` disabled" in said
    assert "--xla_disable_hlo_passes=algsimp" in seen[1] and len(seen) == 2


def test_the_excerpt_keeps_the_reproducers_frames_not_the_runners_or_the_libraries():
    printed = """Fatal Python error: Segmentation fault

Current thread 0x00007f20c313cb80 (most recent call first):
  File "/x/.venv/lib/python3.11/site-packages/jax/_src/api.py", line 12 in device_put
  File "repro.py", line 31 in run
  File "repro.py", line 34 in <module>
  File "<frozen runpy>", line 88 in _run_code
  File "/work/main/reducer/harness.py", line 196 in _run_main
  File "/work/main/reducer/harness.py", line 234 in <module>

Extension modules: numpy._core._multiarray_umath, jaxlib._jax (total: 2)"""
    shown = module_repro.excerpt(printed, "native frame: libjax_common.so+0xd574df8\nsomething else")
    assert shown.splitlines() == ["Fatal Python error: Segmentation fault", "",
                                  "Current thread 0x00007f20c313cb80 (most recent call first):",
                                  '  File "repro.py", line 31 in run', '  File "repro.py", line 34 in <module>', "",
                                  "native frame: libjax_common.so+0xd574df8"]
