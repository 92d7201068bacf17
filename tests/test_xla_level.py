"""The IR level for failures of XLA itself: a module without an Enzyme pipeline compiled and run as
XLA runs it, the phase it dies in, wrong results against XLA's unoptimised compilation, the culprit
HLO pass, HLO text and dump folders as input, and a report that sends the bug to XLA.

Modules come from real programs (lowered below, or tests/data/xla/dump, made by
tests/programs/xla/make_dump.py); GPU failures are checked on recorded outputs, through the same
code the CPU path runs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import reducer_cli

HERE = Path(__file__).resolve().parent
DUMP = HERE / "data" / "xla" / "dump"
RANK7 = (3, 1, 2, 2, 8, 8, 8)


def lowered(f, *args) -> str:
    import jax

    return jax.jit(f).lower(*args).as_text()


@pytest.fixture(scope="module")
def rank7_module() -> str:
    """jax-ml/jax#40412: a rank-7 multiply-and-reduce over a size-2 axis, with operations of the
    user's around it; jaxlib 0.10.2's CPU backend dies running it."""
    import jax.numpy as jnp

    def features(a, b, bias, scale):
        pair = jnp.sum(a * b, axis=3)
        out = jnp.tanh(pair) * scale + jnp.mean(bias)
        return out, jnp.max(jnp.abs(out))

    x = jnp.ones(RANK7, jnp.float32)
    return lowered(features, x, x, x, jnp.float32(2.0))


@pytest.fixture(scope="module")
def miscompiled_module() -> str:
    """jax-ml/jax#39103: squared norms of rotated points, more than 32768 of them: XLA:CPU's result
    past index 32767 differs from its unoptimised compilation's."""
    import jax
    import jax.numpy as jnp

    def norms(points, rotation):
        return jax.vmap(lambda p: jnp.sum((rotation @ p) ** 2))(points - jnp.mean(points, axis=0))

    return lowered(norms, jnp.zeros((32_769, 3), jnp.float32), jnp.eye(3, dtype=jnp.float32))


# -- running a module as XLA runs it ------------------------------------------------------------

def test_example_inputs_follow_the_argument_types():
    import numpy as np

    from reducer.levels.mlir import xla_check

    text = ("func.func public @main(%a: tensor<2x3xf32>, %b: tensor<4xi32>, %c: tensor<i1>, "
            "%d: tensor<2xcomplex<f32>>) -> tensor<2x3xf32> {\n  return %a : tensor<2x3xf32>\n}\n")
    a, b, c, d = xla_check.example_inputs(text)
    assert a.shape == (2, 3) and a.dtype == np.float32 and b.dtype == np.int32 and set(b.tolist()) <= {0, 1, 2, 3}
    assert c.dtype == np.bool_ and d.dtype == np.complex64
    again = xla_check.example_inputs(text)
    assert all(np.array_equal(x, y) for x, y in zip((a, b, c, d), again))  # fixed: every run sees the same


def test_differences_hold_to_the_tolerance_and_name_where():
    import numpy as np

    from reducer.levels.mlir import xla_check

    ref = np.linspace(0.0, 1e6, 10, dtype=np.float32)
    assert xla_check.differences([ref + 1.0], [ref]) == []  # within rtol of the largest magnitude
    off = ref.copy()
    off[7] *= 1.01
    found = xla_check.differences([off], [ref])
    assert found and found[0]["index"] == [7] and found[0]["count"] == 1
    assert xla_check.differences([np.array([1, 2])], [np.array([1, 3])])[0]["index"] == [1]  # integers exactly
    nan = np.array([np.nan, 1.0])
    assert xla_check.differences([nan], [nan.copy()]) == []
    assert "float32[3]" in xla_check.differences([np.zeros(3, np.float32)], [np.zeros(2, np.float32)])[0]["what"]


def test_pass_names_come_from_the_per_pass_dump(tmp_path):
    from reducer.levels.mlir import xla_check

    for name in ("module_0001.jit_f.0000.simplification.after_pipeline-start.before_algsimp.txt",
                 "module_0001.jit_f.0001.simplification.after_algsimp.before_dce.txt",
                 "module_0001.jit_f.0002.cpu.after_dot-library-rewriter.before_pipeline-end.txt",
                 "module_0001.jit_f.before_optimizations.txt", "module_0001.jit_f.cpu_after_optimizations.txt"):
        (tmp_path / name).write_text("")
    assert xla_check.passes_in_dump(str(tmp_path)) == ["algsimp", "dce", "dot-library-rewriter"]


def test_the_phase_a_run_died_in_goes_into_the_crash_signature():
    from oracles.crash import Crash
    from oracles.outcome import RunResult
    from reducer.levels.mlir import run_module as mlir_run

    died = RunResult(returncode=-11, stdout="", stderr="reducer-xla: phase=compile\nreducer-xla: phase=execute\n"
                     "Fatal Python error: Segmentation fault\n\nCurrent thread (most recent call first):\n"
                     "native frame: libjax_common.so+0x1234\nnative frame: libjax_common.so+0x5678\n",
                     seconds=1.0)
    oracle = mlir_run.WithDiagnostic(Crash())
    sig = oracle.classify(died)
    assert sig.get("phase") == "execute" and sig.get("how") == "signal" and "while the compiled module runs" in sig.title
    at_compile = RunResult(returncode=-11, stdout="", stderr=died.stderr.replace("reducer-xla: phase=execute\n", ""),
                           seconds=1.0)
    assert oracle.judge(sig, at_compile)[0] is False  # the same frames while compiling are another bug
    assert oracle.judge(sig, died)[0] is True


RECORDED_GPU = {
    # a kernel that faults on the device: the CUDA error surfaces when the result is waited for
    "cuda-execute": ("reducer-xla: phase=compile\nreducer-xla: phase=execute\nTraceback (most recent call last):\n"
                     '  File "repro.py", line 180, in run\n'
                     "jax.errors.JaxRuntimeError: INTERNAL: CUDA error: Failed to synchronize: "
                     "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered\n",
                     {"how": "cuda", "detail": "CUDA_ERROR_ILLEGAL_ADDRESS", "phase": "execute"}),
    # XLA:GPU's compiler gives up on a kernel: an error status while compiling
    "ptxas-compile": ("reducer-xla: phase=compile\nTraceback (most recent call last):\n"
                      '  File "repro.py", line 150, in compile_module\n'
                      "jax.errors.JaxRuntimeError: INTERNAL: ptxas exited with non-zero error code 65280, output: "
                      "ptxas fatal   : Unresolved extern function '__nv_tanhf'\n",
                      {"how": "cuda", "detail": "ptxas fatal", "phase": "compile"}),
}


@pytest.mark.parametrize("case", sorted(RECORDED_GPU))
def test_recorded_gpu_failures_of_xla_say_where_they_died(case):
    from oracles.crash import Crash
    from oracles.outcome import RunResult
    from reducer.levels.mlir import run_module as mlir_run

    output, expected = RECORDED_GPU[case]
    sig = mlir_run.WithDiagnostic(Crash("gpu")).classify(RunResult(returncode=1, stdout="", stderr=output,
                                                                   seconds=1.0))
    assert sig is not None and sig.get("platform") == "gpu"
    assert {k: sig.get(k) for k in expected} == expected


# -- the report -------------------------------------------------------------------------------

def test_a_report_of_an_xla_crash_sends_it_to_xla():
    from oracles.base import Signature
    from reducer.levels.mlir import module_report
    from reducer.levels.mlir.run_module import XLA

    module = "module {\n  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n    return %a : tensor<2xf32>\n  }\n}\n"
    sig = Signature("crash", (("platform", "cpu"), ("how", "signal"), ("detail", "SIGSEGV"), ("phase", "execute")),
                    "SIGSEGV on cpu", "")
    summary = module_report.ModuleSummary("m.mlir", XLA, 15, 3, 0, 0, 12.0, 40, 5, 2, "yes",
                                          xla_pass={"pass": "dot-library-rewriter"})
    runner = module_report.runner(module, None, sig, {}, summary)
    report = module_report.report(module, None, runner, sig, "", {}, summary, hlo_text="HloModule m\n")
    assert "enzyme" not in runner.lower() and "import numpy" in runner
    assert "openxla/xla" in report and "No Enzyme pass runs" in report and "enzymexlamlir-opt" not in report
    assert "jax-ml/jax" not in report  # a module without JAX's marks: JAX is not named as its maker
    assert "running the compiled module kills the process" in report
    assert "--xla_disable_hlo_passes=dot-library-rewriter" in report and "repro.hlo" in report


def test_hlo_text_and_dump_folders_are_module_inputs(tmp_path):
    from reducer.entry import is_module as is_module_input

    hlo = tmp_path / "module_0001.jit_f.before_optimizations.txt"
    hlo.write_text("HloModule jit_f\n\nENTRY main {\n}\n")
    notes = tmp_path / "notes.txt"
    notes.write_text("not a module")
    assert is_module_input(hlo) and is_module_input(DUMP) and is_module_input(Path("x.mlir"))
    assert not is_module_input(notes) and not is_module_input(Path("train.py"))


def test_a_folder_that_is_no_dump_is_refused_in_one_line(tmp_path):
    (tmp_path / "readme.txt").write_text("hello")
    done = reducer_cli("check", str(tmp_path), timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr  # check's status for bad input
    assert "is a directory" in done.stderr and len(done.stderr.strip().splitlines()) <= 2
    done = reducer_cli("reduce", str(tmp_path), "--out", str(tmp_path / "out"), timeout=120)
    assert done.returncode == 3 and "is a directory" in done.stderr and "Traceback" not in done.stderr


# -- end to end, on real failures of jaxlib 0.10.2 ------------------------------------------------

def jaxlib_is(version: str) -> bool:
    import jaxlib

    return jaxlib.__version__ == version


@pytest.mark.slow
def test_the_rank7_crash_reduces_to_the_reduction_and_blames_xla(tmp_path, rank7_module):
    if not jaxlib_is("0.10.2"):
        pytest.skip("jax-ml/jax#40412 is a bug of jaxlib 0.10.2")
    module = tmp_path / "features.mlir"
    module.write_text(rank7_module)
    out = tmp_path / "out"
    done = reducer_cli("reduce", str(module), "--out", str(out), "--json", "--quiet", "--max-time", "200",
                       timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    fields = result["signature"]["fields"]
    assert fields["how"] == "signal" and fields["phase"] in ("execute", "compile")
    assert result["final_ops"] <= 3 and "stablehlo.reduce" in result["ops"] and "stablehlo.tanh" not in result["ops"]
    assert result["kind"] == "xla" and not result.get("pipeline")
    report = (out / "report.md").read_text()
    repro = (out / "repro.py").read_text()
    assert "openxla/xla" in report and "enzymexlamlir-opt" not in report and "enzyme_ad" not in repro
    assert (out / "repro.hlo").read_text().startswith("HloModule")
    assert len(repro.splitlines()) <= 45 and "reducer" not in repro.split("# Reduced by")[1].split("\n", 1)[1]
    crashed = subprocess.run([sys.executable, "repro.py"], cwd=out, capture_output=True, text=True, timeout=300)
    assert crashed.returncode == -11, crashed.stderr[-1000:]
    culprit = (result.get("xla_pass") or {}).get("pass")
    if culprit:  # the report's claim: with the culprit pass off, the reproducer runs cleanly
        env = {**os.environ, "XLA_FLAGS": f"--xla_disable_hlo_passes={culprit}"}
        fixed = subprocess.run([sys.executable, "repro.py"], cwd=out, capture_output=True, text=True, timeout=300,
                               env=env)
        assert fixed.returncode == 0, fixed.stderr[-1000:]


@pytest.mark.slow
def test_a_miscompile_is_held_to_its_culprit_pass(tmp_path, miscompiled_module):
    from reducer.levels.mlir.module_job import MlirOptions, MlirReduction

    if not jaxlib_is("0.10.2"):
        pytest.skip("jax-ml/jax#39103 is a bug of jaxlib 0.10.2")
    module = tmp_path / "norms.mlir"
    module.write_text(miscompiled_module)
    job = MlirReduction.from_file(module, tmp_path / "out", MlirOptions(verify_runs=1, max_time=200))
    try:
        result = job.run()
    finally:
        job.close()
    fields = result["signature"]["fields"]
    assert result["signature"]["family"] == "wrong-result" and fields["source"] == "xla"
    assert fields["reference"] == "without-pass" and fields["xla-pass"] == "dot-library-rewriter"
    # held to the pass, the reduction keeps the product the pass rewrites (not, say, a reduction whose
    # order of additions is all that differs)
    assert "stablehlo.dot_general" in result["ops"] and result["final_ops"] <= 4, result["ops"]
    repro = (tmp_path / "out" / "repro.py").read_text()
    assert "run(xla_disable_hlo_passes='dot-library-rewriter')" in repro and "import enzyme" not in repro
    assert len(repro.splitlines()) <= 50, repro
    differs = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path / "out", capture_output=True, text=True,
                             timeout=300)
    assert differs.returncode == 1 and "AssertionError" in differs.stderr, differs.stderr[-1000:]
    env = {**os.environ, "XLA_FLAGS": "--xla_disable_hlo_passes=dot-library-rewriter"}
    fixed = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path / "out", capture_output=True, text=True,
                           timeout=300, env=env)
    assert fixed.returncode == 0 and "the results agree" in fixed.stdout, fixed.stderr[-1000:]


@pytest.mark.slow
def test_an_xla_dump_folder_reduces_from_its_hlo_text(tmp_path):
    if not jaxlib_is("0.10.2"):
        pytest.skip("the dump's crashing module is jax-ml/jax#40412, a bug of jaxlib 0.10.2")
    out = tmp_path / "out"
    done = reducer_cli("reduce", str(DUMP), "--out", str(out), "--json", "--quiet", "--max-time", "200", timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["final_ops"] <= 3 and result["signature"]["fields"]["how"] == "signal"
    log = (out / "reduce.log").read_text()
    assert "jit_pair_energy.before_optimizations.txt" in log  # the newest module, the one that fails


@pytest.mark.slow
def test_hlo_text_of_a_module_xla_cannot_compile(tmp_path):
    from reducer.levels.mlir import xla_dump

    text = (HERE / "data" / "mlir" / "cusolver_plain.mlir").read_text()
    hlo = tmp_path / "module_0001.jit_potrf.before_optimizations.txt"
    hlo.write_text(xla_dump.stablehlo_to_hlo(text))
    done = reducer_cli("check", str(hlo), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "phase=compile" in done.stdout and "cusolver_potrf_ffi" in done.stdout
