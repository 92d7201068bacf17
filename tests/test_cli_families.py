"""One reduction through the `reducer` command (a real subprocess) for each failure family the other
end-to-end tests do not reduce there: a crash (a real segfault), a wrong result (jaxlib's real CPU
miscompile), a JAX error (also with `--quiet` and `--pass-order yield`), an Enzyme-JAX pipeline error
from a `.mlir` module; and the README's own example, `reducer reduce examples/topk_pooling.py`.
Each test judges what happened: exit status, the files written, the signature, a smaller reproducer
that still fails when run with `python`. `--max-time` bounds a run that goes wrong; no test times one."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PROGRAMS, TESTS, needs_enzyme, reducer_cli

ROOT = TESTS.parent
pytestmark = pytest.mark.slow
OUTPUTS = ("repro.py", "report.md", "signature.json", "env.json", "reduce.log")


def code_of(text: str) -> str:
    """A program without its comment lines (repro.py's header), docstrings' lines kept."""
    return "\n".join(line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def reduced(script: Path, out: Path, *args: str, cwd=None) -> dict:
    done = reducer_cli("reduce", script, "--out", out, "--jobs", "2", "--json", *args, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["verified"].startswith("yes"), result
    for name in OUTPUTS:
        assert (out / name).is_file(), name
    assert json.loads((out / "signature.json").read_text())["family"] == result["signature"]["family"]
    return result


def run_fresh(path: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=path.parent,
                          timeout=300, stdin=subprocess.DEVNULL, env={**os.environ, **env})


def test_crash_a_segfault_is_reduced_to_the_call_that_dies(tmp_path):
    out = tmp_path / "out"
    result = reduced(PROGRAMS / "segfault.py", out, "--max-time", "180", "--runs", "1")  # it dies on every run
    sig = json.loads((out / "signature.json").read_text())
    assert sig["family"] == "crash" and sig["fields"]["how"] == "signal", sig
    assert sig["fields"]["detail"].startswith("SIGSEGV in ctypes/"), sig
    assert result["final_tokens"] < result["original_tokens"]
    code = code_of((out / "repro.py").read_text())
    assert "string_at(0)" in code and "jnp" not in code, code
    assert (out / "report.md").read_text().startswith("# SIGSEGV on cpu")
    assert run_fresh(out / "repro.py").returncode == -signal.SIGSEGV


def test_wrong_result_a_jit_miscompile_keeps_its_comparison(tmp_path):
    out = tmp_path / "out"
    # --stall: the last round, which finds nothing smaller, is the long one here (20 s: more than the longest
    # wait for a smaller candidate, 16 s, on a machine loaded four times over); --max-time only bounds.
    # --runs 1: the miscompile shows on every run
    result = reduced(PROGRAMS / "jit_miscompare.py", out, "--stall", "20", "--runs", "1", "--max-time", "400")
    sig = json.loads((out / "signature.json").read_text())
    assert sig["family"] == "wrong-result", sig
    assert sig["fields"]["reference"] == "op-by-op" and sig["fields"]["op"] == "reduce_sum", sig
    assert sig["fields"]["program-exit"] == "jit and eager results differ", sig
    assert result["final_tokens"] < result["original_tokens"], result
    code = code_of((out / "repro.py").read_text())
    assert "jax.jit" in code, code
    # each interesting candidate must also run through with jit replaced by op-by-op evaluation
    assert "replaced by op-by-op evaluation" in (out / "reduce.log").read_text()
    rerun = run_fresh(out / "repro.py")
    assert rerun.returncode != 0 and "jit and eager results differ" in rerun.stderr, rerun.stderr[-2000:]
    # XLA's culprit pass, found from the script: in the title, the header's command, and a run with it off
    culprit = (result.get("xla_pass") or {}).get("pass")
    assert culprit == "dot-library-rewriter", (out / "reduce.log").read_text()[-3000:]
    report = (out / "report.md").read_text()
    assert report.splitlines()[0].endswith("(XLA pass `dot-library-rewriter`)") and "openxla/xla" in report
    header = "# Runs through with: XLA_FLAGS=--xla_disable_hlo_passes=dot-library-rewriter python repro.py"
    assert header in (out / "repro.py").read_text()
    assert run_fresh(out / "repro.py", XLA_FLAGS="--xla_disable_hlo_passes=dot-library-rewriter").returncode == 0
    # the module XLA compiled for it, reduced beside it, run on the arguments the program gave it
    assert "stablehlo.dot_general" in (out / "repro.mlir").read_text() and (out / "repro.hlo").is_file()
    assert (out / "repro_xla_inputs.npz").is_file() and "The module XLA compiled for it" in report
    assert "repro_xla.py fails alike in a fresh interpreter, and runs through with" in (out / "reduce.log").read_text()


@pytest.fixture(scope="module")
def quiet_yield_jax_error(tmp_path_factory):
    """One reduction of a JAX error, with --quiet and --pass-order yield, shared by three tests."""
    out = tmp_path_factory.mktemp("jax-error") / "out"
    done = reducer_cli("reduce", PROGRAMS / "tracer_to_numpy.py", "--out", out, "--jobs", "2", "--quiet",
                       "--pass-order", "yield", "--max-time", "180", "--runs", "1")  # it raises on every run
    return done, out


def test_jax_error_is_reduced_to_the_call_that_raises(quiet_yield_jax_error):
    done, out = quiet_yield_jax_error
    assert done.returncode == 0, done.stderr[-3000:]
    sig = json.loads((out / "signature.json").read_text())
    assert sig["family"] == "jax-error" and sig["fields"]["type"] == "TracerArrayConversionError", sig
    assert sig["fields"]["library"] == "jax"
    code = code_of((out / "repro.py").read_text())
    assert len(code) < len(code_of((PROGRAMS / "tracer_to_numpy.py").read_text())), code
    assert "jax.jit" in code and "linalg.norm" in code, code
    assert "TracerArrayConversionError" in (out / "report.md").read_text()
    assert "verified: yes" in (out / "reduce.log").read_text()
    rerun = run_fresh(out / "repro.py")
    assert "TracerArrayConversionError" in rerun.stderr, rerun.stderr[-2000:]


def test_quiet_prints_nothing(quiet_yield_jax_error):
    """README: `--quiet` prints nothing; what happened is in the output folder."""
    done, out = quiet_yield_jax_error
    assert done.returncode == 0
    assert done.stdout == "" and done.stderr == "", (done.stdout, done.stderr)
    assert (out / "repro.py").is_file() and "reduced to" in (out / "reduce.log").read_text()


def test_pass_order_yield_reduces_over_several_rounds(quiet_yield_jax_error):
    """--pass-order yield reorders the passes from the second round on: the reduction runs more than one
    round, to a verified result, and every pass's counts are logged."""
    done, out = quiet_yield_jax_error
    assert done.returncode == 0
    log = (out / "reduce.log").read_text()
    rounds = re.search(r"reduced to \d+ tokens: .* (\d+) rounds", log)
    assert rounds and int(rounds[1]) >= 2, log
    assert len(re.findall(r"^\[[\d:]+\]   pass [\w-]+: \d+ tested, \d+ accepted$", log, re.M)) >= 3, log


@needs_enzyme
def test_pipeline_error_of_an_mlir_module(tmp_path):
    out = tmp_path / "out"
    module = TESTS / "data" / "mlir" / "complex_constant.mlir"
    done = reducer_cli("reduce", module, "--out", out, "--jobs", "2", "--json", "--max-time", "180")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["verified"].startswith("yes"), result
    sig = json.loads((out / "signature.json").read_text())
    assert sig["family"] == "pipeline-error" and sig["fields"]["source"] == "enzyme", sig
    assert sig["fields"]["op"] == "complex.add", sig
    assert "must be complex type with floating-point elements" in sig["fields"]["message"]
    assert result["final_ops"] < result["original_ops"], result
    repro = (out / "repro.mlir").read_text()
    assert repro.startswith("// enzyme-wrap{") and "stablehlo.multiply" not in repro, repro
    assert (out / "pipeline.txt").read_text().strip().startswith("enzyme-wrap")
    assert "enzymexlamlir-opt" in (out / "report.md").read_text()
    rerun = run_fresh(out / "repro.py")  # the Python runner next to repro.mlir
    assert rerun.returncode != 0 and "must be complex type" in rerun.stdout + rerun.stderr, rerun.stderr[-2000:]


@needs_enzyme
def test_readme_example_topk_pooling(tmp_path):
    """The README's set-up command: `reducer reduce examples/topk_pooling.py`, from the project root (here a
    copy of examples/ in a folder of its own, so that the default output folder lands there)."""
    (tmp_path / "examples").mkdir()
    script = tmp_path / "examples" / "topk_pooling.py"
    script.write_text((ROOT / "examples" / "topk_pooling.py").read_text())
    done = reducer_cli("reduce", "examples/topk_pooling.py", "--json", "--max-time", "150", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    out = tmp_path / "reduced-topk_pooling"  # the default: reduced-<script name>/ in the working directory
    assert (tmp_path / result["out"]).resolve() == out.resolve() and (out / "repro.py").is_file(), result
    assert result["verified"].startswith("yes"), result
    sig = json.loads((out / "signature.json").read_text())
    assert sig["family"] == "adjoint-missing" and sig["fields"] == {"source": "enzyme", "op": "chlo.top_k"}, sig
    assert result["final_tokens"] <= result["original_tokens"] // 2, result
    assert "jaxpr" in result["levels"] and "source" in result["levels"], result
    report = (out / "report.md").read_text()
    assert report.startswith("# Enzyme-JAX: no adjoint for `chlo.top_k`") and "<summary>Environment</summary>" in report
    code = code_of((out / "repro.py").read_text())
    assert "top_k" in code and "enzyme_jax_ir" in code and "Config" not in code, code
    rerun = run_fresh(out / "repro.py")
    assert "could not compute the adjoint" in rerun.stderr, rerun.stderr[-2000:]
