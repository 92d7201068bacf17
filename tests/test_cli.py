"""The `reducer` command end to end, as a user runs it: check, env, bad input, and reductions."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import PROGRAMS, candidates_running, needs_enzyme, reducer_cli, wait_for_a_candidate
from reducer import errors


@pytest.mark.slow
@pytest.mark.parametrize("name, expected", [
    pytest.param("top_k_enzyme", "adjoint-missing: source=enzyme op=chlo.top_k", marks=needs_enzyme),
    ("while_loop_grad", "adjoint-missing: source=jax op=while_loop rule=reverse"),
    ("custom_vjp_wrong_arity", "activity-mismatch: source=jax kind=custom_vjp-structure"),
    pytest.param("digamma_mismatch", "activity-mismatch: source=enzyme kind=numeric", marks=needs_enzyme),
    ("nonlinear_jvp", "crash: platform=cpu how=internal-error detail=AssertionError in jax/_src/interpreters/ad.py"),
    ("segfault", "crash: platform=cpu how=signal detail=SIGSEGV"),
])
def test_check_prints_the_signature(name, expected):
    done = reducer_cli("check", PROGRAMS / f"{name}.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(expected)


@pytest.mark.slow
def test_check_json_and_explicit_oracles():
    done = reducer_cli("check", PROGRAMS / "while_loop_grad.py", "--json", "--oracle", "adjoint-missing")
    assert json.loads(done.stdout)["fields"]["op"] == "while_loop"
    # the corpus has this bug: check says so, so that no duplicate is filed
    assert json.loads(done.stdout)["known"].startswith("known: adjoint-missing-jax-while-loop-reverse-")
    assert "known: adjoint-missing-jax-while-loop-reverse-" in reducer_cli("check", PROGRAMS / "while_loop_grad.py").stdout
    assert "known:" not in reducer_cli("check", PROGRAMS / "segfault.py").stdout
    done = reducer_cli("check", PROGRAMS / "while_loop_grad.py", "--oracle", "regex:Reverse-mode")
    assert done.returncode == 0 and done.stdout.startswith("regex:")


def test_check_clean_script_exits_1():
    done = reducer_cli("check", PROGRAMS / "clean.py")
    assert done.returncode == 1
    assert "does not fail: nothing to reduce" in done.stderr


def test_check_bad_input_exits_2(tmp_path):
    done = reducer_cli("check", tmp_path / "missing.py")
    assert done.returncode == 2 and "no such file" in done.stderr and "Traceback" not in done.stderr


def bad_inputs(tmp_path):
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "binary.py").write_bytes(b"\x7fELF\x00\x01")
    (tmp_path / "broken.py").write_text("def f(:\n")
    return [
        ("missing.py", errors.NOT_FOUND, "no such file"),
        (".", errors.NOT_FOUND, "is a directory"),
        ("empty.py", errors.NOT_TEXT, "the file is empty"),
        ("binary.py", errors.NOT_TEXT, "binary file, not a Python script"),
        ("broken.py", errors.SYNTAX, "syntax error"),
        (PROGRAMS / "clean.py", errors.NO_FAILURE, "does not fail: nothing to reduce"),
        (PROGRAMS / "needs_stdin.py", errors.NEEDS_INPUT, "reads standard input"),
        (PROGRAMS / "needs_args.py", errors.NEEDS_INPUT, "needs command-line arguments"),
        (PROGRAMS / "own_checks" / "code_error.py", errors.OTHER_FAILURE, "no recognised failure (KeyError"),
    ]


@pytest.mark.slow
def test_reduce_bad_input_one_line_and_distinct_status(tmp_path):
    for path, status, words in bad_inputs(tmp_path):
        done = reducer_cli("reduce", tmp_path / path if isinstance(path, str) else path, "--out", tmp_path / "o",
                           "--runs", "1", cwd=tmp_path)
        assert done.returncode == status, (path, done.stderr)
        assert words in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "o").exists()


def test_reduce_fails_differently_from_requested_oracle(tmp_path):
    done = reducer_cli("reduce", PROGRAMS / "while_loop_grad.py", "--oracle", "crash", "--runs", "1",
                       "--out", tmp_path / "o")
    assert done.returncode == errors.OTHER_FAILURE
    assert "not as --oracle crash expects; saw: adjoint-missing: source=jax op=while_loop" in done.stderr


def test_reduce_bad_choices_are_usage_errors(tmp_path):
    for option, value in (("--runner", "sometimes"), ("--pass-order", "random")):
        done = reducer_cli("reduce", PROGRAMS / "while_loop_grad.py", option, value, "--out", tmp_path / "o")
        assert done.returncode == errors.USAGE and f"{option} must be" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_reduce_bad_oracle_spec(tmp_path):
    done = reducer_cli("reduce", PROGRAMS / "while_loop_grad.py", "--oracle", "regex:(", "--out", tmp_path / "o")
    assert done.returncode == errors.USAGE and "bad regular expression" in done.stderr


@pytest.mark.slow
def test_env_names_versions():
    done = reducer_cli("env")
    assert done.returncode == 0
    assert "jax:    0.10.2" in done.stdout and "jaxlib: 0.10.2" in done.stdout and "cpu:" in done.stdout
    info = json.loads(reducer_cli("env", "--json").stdout)
    assert info["packages"]["jax"] == "0.10.2"


def read_outputs(out):
    return {name: (out / name).read_text() for name in ("repro.py", "report.md", "signature.json", "env.json",
                                                         "reduce.log")}


@pytest.mark.slow
def test_reduce_while_loop_end_to_end(tmp_path):
    script = tmp_path / "newton.py"
    shutil.copy(PROGRAMS / "while_loop_grad.py", script)
    before = script.read_text()
    done = reducer_cli("reduce", script, "--json", "--jobs", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["verified"].startswith("yes (3/3")
    assert result["filing"]["repo"] == "jax-ml/jax" and "while_loop" in result["filing"]["search"]
    out = tmp_path / "reduced-newton"
    files = read_outputs(out)
    assert script.read_text() == before, "the input was modified"
    assert result["final_tokens"] <= 0.7 * result["original_tokens"]
    assert "# Signature: adjoint-missing: source=jax op=while_loop rule=reverse" in files["repro.py"]
    assert files["report.md"].startswith("# JAX: no reverse rule for `while_loop`")
    assert "<summary>Environment</summary>" in files["report.md"] and "jaxlib: 0.10.2" in files["report.md"]
    assert str(tmp_path) not in files["report.md"]
    assert json.loads(files["signature.json"])["fields"]["op"] == "while_loop"
    rerun = subprocess.run([sys.executable, str(out / "repro.py")], capture_output=True, text=True, cwd=tmp_path)
    assert "Reverse-mode differentiation does not work for lax.while_loop" in rerun.stderr


@pytest.mark.slow
@needs_enzyme
def test_reduce_enzyme_top_k_end_to_end(tmp_path):
    # --runs 1: Enzyme-JAX has no adjoint for top_k on any run
    done = reducer_cli("reduce", PROGRAMS / "top_k_enzyme.py", "--out", tmp_path / "out", "--json", "--jobs", "2",
                       "--runs", "1")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    repro = (tmp_path / "out" / "repro.py").read_text()
    assert "top_k" in repro and "enzyme_jax_ir" in repro
    assert result["final_tokens"] <= 60, repro
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Enzyme-JAX: no adjoint for `chlo.top_k`" in report
    assert "Already known to reducer's regression corpus (known: adjoint-missing-enzyme-chlo-top-k-" in report
    # the IR follow-up: the module Enzyme dumped for the reduced script, reduced next to repro.py
    assert "IR" in result["levels"], result
    assert "chlo.top_k" in (tmp_path / "out" / "repro.mlir").read_text()
    assert "enzyme-wrap" in (tmp_path / "out" / "pipeline.txt").read_text()
    assert "python repro_mlir.py" in report and (tmp_path / "out" / "repro_mlir.py").is_file()
    assert "Enzyme-JAX's pipeline on this module: Enzyme-JAX: no adjoint for `chlo.top_k`" in report
    rerun = subprocess.run([sys.executable, str(tmp_path / "out" / "repro_mlir.py")], capture_output=True, text=True)
    assert "could not compute the adjoint" in rerun.stderr


@pytest.mark.slow
@needs_enzyme
def test_reduce_numeric_mismatch_keeps_both_gradients(tmp_path):
    # --runs 1: the gradients disagree on every run
    done = reducer_cli("reduce", PROGRAMS / "digamma_mismatch.py", "--out", tmp_path / "out", "--json", "--jobs", "2",
                       "--runs", "1")
    assert done.returncode == 0, done.stderr
    repro = (tmp_path / "out" / "repro.py").read_text()
    code = "\n".join(line for line in repro.splitlines() if not line.startswith("#"))
    assert code.count("jax.grad") >= 2 and "enzyme_jax_ir" in code and "digamma" in code
    report = (tmp_path / "out" / "report.md").read_text()
    assert "At the traced level the failure needs only `digamma` under `jit ∘ grad ∘ enzyme`" in report, report
    assert "finite differences" in report  # the verification's run says which derivative is wrong
    rerun = subprocess.run([sys.executable, str(tmp_path / "out" / "repro.py")], capture_output=True, text=True)
    assert rerun.returncode != 0 and "gradient mismatch" in rerun.stderr


@pytest.mark.slow
def test_ctrl_c_writes_best_so_far_and_exits_130(tmp_path):
    # --cold: fresh interpreters keep the reduction running long enough to be interrupted; a name of
    # its own, so that no other test's candidates are taken for this reduction's
    script = tmp_path / f"ctrl_c_{os.getpid()}.py"
    shutil.copy(PROGRAMS / "custom_vjp_wrong_arity.py", script)
    proc = subprocess.Popen([sys.executable, "-m", "reducer.cli", "reduce", str(script),
                             "--out", str(tmp_path / "out"), "--quiet", "--jobs", "2", "--cold"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 300
    while not (tmp_path / "out" / "best.py").exists() and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1][-3000:]  # it ended before it could be interrupted
        time.sleep(0.2)
    wait_for_a_candidate(script.name, proc.pid)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == errors.INTERRUPTED, err
    repro = (tmp_path / "out" / "repro.py").read_text()
    assert "custom_vjp" in repro
    assert "interrupted" in (tmp_path / "out" / "report.md").read_text()
    assert candidates_running(script.name, proc.pid) == [], "a candidate outlived the reduction"
    assert (tmp_path / "out" / "state.json").exists() and (tmp_path / "out" / "best.py").exists()
    interrupted_at = len((tmp_path / "out" / "best.py").read_text())

    done = reducer_cli("reduce", script, "--resume", tmp_path / "out", "--json",
                       "--jobs", "2")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["verified"].startswith("yes")
    assert not (tmp_path / "out" / "state.json").exists() and not (tmp_path / "out" / "best.py").exists()
    assert len((tmp_path / "out" / "repro.py").read_text().split("\n", 5)[-1]) <= interrupted_at
    assert "resuming" in (tmp_path / "out" / "reduce.log").read_text()


def test_resume_needs_an_interrupted_run(tmp_path):
    done = reducer_cli("reduce", PROGRAMS / "while_loop_grad.py", "--resume", tmp_path)
    assert done.returncode == errors.NO_RESUME and "nothing to resume" in done.stderr


def test_progress_counts_in_the_unit_of_the_representation_shrinking(capsys):
    """A script's job counts tokens; while its traced program or a module's pipeline shrinks, the
    sizes are the representation's own (`unit`), never a level's name looked up."""
    from reducer.cli import Display
    from reducer.engine import Event, Stats
    from reducer.levels.jaxpr.program import JaxprSpec
    from reducer.levels.mlir.pipeline import PipelineText

    display = Display("json", 400)
    for unit in (JaxprSpec.unit, PipelineText.unit, ""):
        display.event(Event("accept", "drop-equations", 12, Stats(), "any level", unit))
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [next(k for k in line if k not in ("event", "pass", "tested", "seconds")) for line in lines] == \
        ["jaxpr size", "passes", "tokens"]
