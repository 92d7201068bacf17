"""One job for every level (`reducer.job`): options on .mlir input, `check` and `report` on every
input, --max-time over the whole run, the status of a result that does not verify, --platform gpu
without a GPU, a bug in an oracle, `script:` oracles as signatures, and what the README promises
(a `script:` oracle inside a reduction, --stall, SIGTERM, JSON progress, also-interesting/), run for real."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import PROGRAMS, TESTS, candidates_running, needs_enzyme, reducer_cli, wait_for_a_candidate
from oracles.adjoint_missing import AdjointMissing
from oracles.generic import Script
from reducer import errors, filing
from reducer.workers.command import runner_for

MLIR = TESTS / "data" / "mlir"
PLAIN = MLIR / "cusolver_plain.mlir"  # XLA cannot compile it on a CPU: no Enzyme pipeline involved


def one_line(done) -> bool:
    return len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


# -- every option works on .mlir input or is refused there ---------------------------------------------
@pytest.mark.parametrize("option, value", [("--runner", "trust"), ("--levels", "source"), ("--runs", "2")])
def test_mlir_refuses_options_that_do_not_apply(tmp_path, option, value):
    done = reducer_cli("reduce", PLAIN, option, value, "--out", tmp_path / "o")
    assert done.returncode == errors.USAGE, done.stderr
    assert f"{option} does not apply to a module" in done.stderr and one_line(done)
    assert not (tmp_path / "o").exists()


def test_mlir_resume_needs_an_interrupted_run(tmp_path):
    done = reducer_cli("reduce", PLAIN, "--resume", tmp_path)
    assert done.returncode == errors.NO_RESUME and "nothing to resume" in done.stderr and one_line(done)


@pytest.mark.slow
def test_mlir_resume_continues_an_interrupted_reduction(tmp_path):
    from reducer.levels.mlir.module_job import MlirOptions, MlirReduction

    options = MlirOptions(isolation="here", verify_runs=1)
    first = MlirReduction.from_file(PLAIN, tmp_path / "o", options)
    first.on_event = lambda e: first.interrupt() if e.kind == "accept" else None  # Ctrl-C at the first step
    try:
        stopped = first.run()
    finally:
        first.close()
    assert stopped["status"] == errors.INTERRUPTED
    assert (tmp_path / "o" / "best.mlir").is_file() and (tmp_path / "o" / "state.json").is_file()
    again = MlirReduction.from_file(PLAIN, tmp_path / "o", options, resume=True)
    try:
        done = again.run()
    finally:
        again.close()
    assert done["status"] == 0 and done["final_ops"] < stopped["final_ops"] <= stopped["original_ops"]
    assert "resuming" in (tmp_path / "o" / "reduce.log").read_text()
    assert not (tmp_path / "o" / "state.json").exists()


@pytest.mark.slow
def test_mlir_memory_limit_reaches_the_runs(tmp_path):
    # 300 MB cannot hold XLA's compiler: the limit is applied, so the first run cannot show the failure
    done = reducer_cli("reduce", PLAIN, "--memory-mb", "300", "--out", tmp_path / "o")
    assert done.returncode not in (0, errors.USAGE), done.stderr
    assert one_line(done)


@pytest.fixture(scope="module")
def cold_and_stalled(tmp_path_factory):
    """One short reduction of a module with --cold and --stall (each test below checks one of them)."""
    out = tmp_path_factory.mktemp("cold") / "out"
    done = reducer_cli("reduce", PLAIN, "--cold", "--stall", "0.2", "--jobs", "2", "--json", "--out", out)
    return out, done


@pytest.mark.slow
def test_mlir_cold_runs_every_candidate_in_a_fresh_interpreter(cold_and_stalled):
    out, done = cold_and_stalled
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["isolation"] == "subprocess"
    assert "candidates run in fresh subprocesses" in (out / "reduce.log").read_text()


@pytest.mark.slow
def test_mlir_stall_from_the_command_line(cold_and_stalled):
    out, done = cold_and_stalled
    assert done.returncode == 0, done.stderr
    assert "stopped early: no smaller candidate in 0.2 s (--stall)" in (out / "reduce.log").read_text()


@pytest.mark.slow
def test_mlir_verification_reruns_the_original(tmp_path):
    from reducer.levels.mlir.module_job import MlirOptions, MlirReduction

    job = MlirReduction.from_file(PLAIN, tmp_path / "o", MlirOptions(verify_runs=1, jobs=1))
    try:
        est = job.check()
        compiles = (MLIR / "cholesky_plain.mlir").read_text()  # XLA compiles it: the failure is gone
        verdict = job.verify(compiles, est, job.original_program())
    finally:
        job.close()
    assert not verdict.ok and verdict.text.startswith("no: the failure was lost"), verdict.text


# -- a module reduction, end to end: JSON progress, also-interesting/, report and `reducer report` ------
@pytest.fixture(scope="module")
def module_reduction(tmp_path_factory):
    out = tmp_path_factory.mktemp("plain") / "out"
    done = reducer_cli("reduce", PLAIN, "--json", "--jobs", "2", "--max-time", "90", "--out", out)
    return out, done


@pytest.mark.slow
def test_module_reduction_progress_and_other_failures(module_reduction):
    out, done = module_reduction
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.strip().splitlines()]
    assert lines and all(line["event"] == "accept" and "operations" in line for line in lines)
    assert json.loads(done.stdout)["final_ops"] < json.loads(done.stdout)["original_ops"]
    aside = sorted((out / "also-interesting").glob("*.mlir"))
    assert aside and aside[0].read_text().startswith("// Also fails, differently: ")
    assert "kept aside another failure" in (out / "reduce.log").read_text()


def prose(report: str) -> str:
    """The report's own sentences: the opening paragraph and what was expected."""
    opening = report.split("## Reproducer", 1)[0]
    expected = report.split("## What was expected", 1)[1].split("## Where to file", 1)[0]
    return opening.split("\n", 1)[1] + expected


@pytest.mark.slow
def test_plain_module_report_blames_xla_and_names_jax_only_as_its_maker(module_reduction):
    out, _ = module_reduction
    report = (out / "report.md").read_text()
    assert "enzyme_jax_ir" not in report and "Enzyme-JAX" not in prose(report)
    assert "XLA" in prose(report) and filing.read(report).repo == "openxla/xla"
    # the module bears JAX's marks (`jax.result_info`): JAX is named as its maker, and only so
    assert "JAX" not in prose(report).replace("(or with JAX, which made the module)", "")
    assert "jaxlib: 0.10.2" in report.split("<summary>Environment</summary>", 1)[1]


@pytest.mark.slow
def test_report_accepts_a_module_reduction(module_reduction):
    out, _ = module_reduction
    done = reducer_cli("report", out)
    assert done.returncode == 0, done.stderr
    assert "still reproduces" in done.stdout
    report = (out / "report.md").read_text()
    assert "```mlir" in report and "operations" in report and "Python tokens" not in report
    made = report.split("<summary>How this reproducer was made</summary>", 1)[1]  # the last section, kept
    assert made.rstrip().removesuffix("</details>").rstrip().endswith("still reproduces.")
    assert made.count("Re-run by `reducer report`") == 1 and "JAX" not in prose(report)


@pytest.mark.slow
@needs_enzyme
def test_enzyme_module_report_does_not_name_enzyme_jax_ir(tmp_path):
    from reducer.levels.mlir import module_report
    from reducer.levels.mlir.module_job import MlirOptions, MlirReduction

    job = MlirReduction.from_file(MLIR / "topk_enzyme.mlir", tmp_path, MlirOptions())
    try:
        est = job.check()
    finally:
        job.close()
    sentence = module_report.what_happens(est.signature, job.kind) + module_report.expected(est.signature, job.kind)
    assert "chlo.top_k" in sentence and "enzyme_jax_ir" not in sentence
    assert not re.search(r"(?<!Enzyme-)JAX", sentence), sentence


@pytest.mark.slow
def test_check_accepts_mlir():
    done = reducer_cli("check", PLAIN)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("crash: platform=cpu how=xla-status detail=NOT_FOUND")


# -- --max-time, verification, the platform ------------------------------------------------------------
@pytest.mark.slow
def test_max_time_bounds_the_whole_run(tmp_path):
    """--max-time stops a reduction that would go on far longer, its final checks included."""
    # cold candidates take seconds each, and so do the three final checks in fresh interpreters: a
    # full reduction takes minutes; the bounds below leave room for a loaded machine
    start = time.monotonic()
    done = reducer_cli("reduce", PROGRAMS / "custom_vjp_wrong_arity.py", "--cold", "--max-time", "30", "--jobs", "2",
                       "--json", "--out", tmp_path / "o")
    took = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["seconds"] <= 30 + 15, result
    assert took < 30 + 90, f"--max-time 30 took {took:.1f} s, starting the command included"
    log = (tmp_path / "o" / "reduce.log").read_text()
    assert "verified: " in log, log  # the checks ran (or said why not) within the time


JUDGE = """import pathlib, sys
counter = pathlib.Path(__file__).with_name("count")
n = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(n + 1))
if n < 4 and "while_loop" in open(sys.argv[1]).read():
    sys.exit(0)
print(f"judge: run {n} rejected")
sys.exit(1)
"""


@pytest.mark.slow
def test_a_result_that_does_not_verify_has_its_own_status(tmp_path):
    # the command accepts the first four programs only: the result it accepted fails when checked
    (tmp_path / "judge.py").write_text(JUDGE)
    done = reducer_cli("reduce", PROGRAMS / "while_loop_grad.py", "--oracle", f"script:{sys.executable} {tmp_path / 'judge.py'}",
                       "--runs", "1", "--jobs", "1", "--json", "--out", tmp_path / "o", cwd=tmp_path)
    assert done.returncode == errors.NOT_VERIFIED, done.stderr
    assert json.loads(done.stdout)["verified"].startswith("no: ")
    happens = (tmp_path / "o" / "report.md").read_text().split("## What happens", 1)[1].split("##", 1)[0]
    assert "rejected" in happens and "(exit status 1)" in happens


def no_gpu() -> bool:
    return not any(Path("/dev").glob("nvidia[0-9]*"))


@pytest.mark.skipif(not no_gpu(), reason="this machine has a GPU")
def test_platform_gpu_without_a_gpu_exits_11(tmp_path):
    done = reducer_cli("reduce", PROGRAMS / "while_loop_grad.py", "--platform", "gpu", "--runs", "1",
                       "--out", tmp_path / "o")
    assert done.returncode == errors.NO_BACKEND, done.stderr
    assert "JAX found no device for the requested platform" in done.stderr and one_line(done)
    assert not (tmp_path / "o").exists()


# -- a bug in an oracle ------------------------------------------------------------------------------
class Exploding(AdjointMissing):
    """A buggy oracle: it raises once it has judged the first run and two candidates."""

    name = "exploding"

    def __init__(self):
        self.calls = 0

    def classify(self, run):
        self.calls += 1
        if self.calls > 3:
            raise KeyError("field")
        return super().classify(run)


@pytest.mark.slow
def test_an_oracle_that_raises_stops_the_reduction_as_a_bug(tmp_path, capsys, monkeypatch):
    import oracles
    from reducer.cli import run_job
    from reducer.reduce import Options, Reduction

    monkeypatch.setattr(oracles, "make_oracle", lambda *args: Exploding())  # what --oracle asks for
    job = Reduction(PROGRAMS / "while_loop_grad.py", tmp_path / "o", Options(runs=1, jobs=1, max_time=120))
    status = run_job(job, quiet=True, json_out=False)
    assert status == errors.TOOL_BUG
    said = capsys.readouterr().err
    assert "bug in reducer: the oracle exploding raised KeyError" in said
    log = (tmp_path / "o" / "reduce.log").read_text()
    assert log.count("Traceback") == 1 and "not interesting" not in log
    assert (tmp_path / "o" / "repro.py").is_file() and (tmp_path / "o" / "best.py").is_file()
    assert "while_loop" in (tmp_path / "o" / "repro.py").read_text()


class ExplodingAtOnce(Exploding):
    """A buggy oracle that raises on the first run it judges: while the failure is established."""

    def classify(self, run):
        raise KeyError("field")


@pytest.mark.slow
def test_a_bug_while_establishing_the_failure_keeps_its_traceback(tmp_path, capsys, monkeypatch):
    import oracles
    from reducer.cli import run_job
    from reducer.reduce import Options, Reduction

    monkeypatch.setattr(oracles, "make_oracle", lambda *args: ExplodingAtOnce())
    job = Reduction(PROGRAMS / "while_loop_grad.py", tmp_path / "o", Options(runs=1, jobs=1, max_time=60))
    import typer

    with pytest.raises(typer.Exit) as stopped:
        run_job(job, quiet=True, json_out=True)
    assert stopped.value.exit_code == errors.TOOL_BUG
    said = capsys.readouterr().err
    assert "bug in reducer: establishing the failure raised KeyError" in said and "reduce.log" in said
    log = (tmp_path / "o" / "reduce.log").read_text()
    assert log.count("Traceback") == 1 and "KeyError: 'field'" in log


class BrokenPass:
    """A pass with a bug: it raises while making its candidates."""

    name = "broken-pass"

    def candidates(self, program):
        raise IndexError("no such statement")
        yield program


@pytest.mark.slow
def test_a_pass_that_raises_stops_the_reduction_as_a_bug(tmp_path, monkeypatch):
    from reducer import reduce as reduce_module
    from reducer.cli import run_job

    monkeypatch.setattr(reduce_module, "source_passes", lambda: [BrokenPass()])
    job = reduce_module.Reduction(PROGRAMS / "while_loop_grad.py", tmp_path / "o",
                                  reduce_module.Options(runs=1, jobs=1, max_time=120))
    assert run_job(job, quiet=True, json_out=False) == errors.TOOL_BUG
    log = (tmp_path / "o" / "reduce.log").read_text()
    assert "bug in reducer: pass broken-pass raised IndexError: no such statement" in log
    assert log.count("Traceback") == 1 and (tmp_path / "o" / "repro.py").is_file()


# -- script: oracles --------------------------------------------------------------------------------
def test_script_oracle_gives_a_signature_when_the_command_exits_0():
    grep = Script("grep -q top_k")
    command = runner_for(grep)  # candidates run through the command, not the sandbox
    yes = command.run("jax.lax.top_k(x, 2)\n", "a.py")
    no = command.run("jax.lax.sort(x)\n", "a.py")
    assert grep.classify(yes) == grep.signature() and grep.classify(yes).family == "script"
    assert grep.classify(no) is None and no.returncode == 1


@pytest.mark.slow
def test_script_oracle_inside_a_reduction(tmp_path):
    done = reducer_cli("reduce", PROGRAMS / "while_loop_grad.py", "--oracle", "script:grep -q while_loop",
                       "--json", "--jobs", "2", "--out", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["verified"].startswith("yes (3/3") and result["final_tokens"] < result["original_tokens"]
    assert all(json.loads(line)["event"] == "accept" for line in done.stderr.strip().splitlines())
    assert "while_loop" in (tmp_path / "o" / "repro.py").read_text()


# -- other failures met on the way, and SIGTERM ------------------------------------------------------------
TWO_FAILURES = '''import jax
import jax.numpy as jnp


@jax.custom_vjp
def scale(x, s):
    return x * s


scale.defvjp(lambda x, s: (x * s, s), lambda s, g: (g * s,))
print(jax.grad(lambda a: jax.lax.while_loop(lambda x: x < a, lambda x: x * 2.0, a))(2.0))
print(jax.grad(lambda x: jnp.sum(scale(x, 2.0)))(jnp.ones(3)))
'''


@pytest.mark.slow
def test_other_failures_are_kept_aside(tmp_path):
    script = tmp_path / "two_failures.py"
    script.write_text(TWO_FAILURES)
    # --max-time leaves room for candidates beside a load: with 20 s, a loaded machine spent it all on the
    # original's runs and tested none (it ends in seconds when quiet, long before the limit)
    done = reducer_cli("reduce", script, "--json", "--jobs", "2", "--runs", "1", "--max-time", "60",
                       "--out", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["signature"]["fields"]["op"] == "while_loop"
    aside = [p.read_text() for p in sorted((tmp_path / "o" / "also-interesting").glob("*.py"))]
    assert aside, (tmp_path / "o" / "reduce.log").read_text()
    assert all(a.startswith("# Also fails, differently: ") and "op=while_loop" not in a.split("\n", 1)[0]
               for a in aside)


@pytest.mark.slow
def test_sigterm_writes_the_best_program_and_exits_130(tmp_path):
    script = tmp_path / f"sigterm_{os.getpid()}.py"
    shutil.copy(PROGRAMS / "custom_vjp_wrong_arity.py", script)
    proc = subprocess.Popen([sys.executable, "-m", "reducer.cli", "reduce", str(script), "--out", str(tmp_path / "o"),
                             "--quiet", "--jobs", "2", "--cold"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.monotonic() + 300
    while not (tmp_path / "o" / "best.py").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    wait_for_a_candidate(script.name, proc.pid)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == errors.INTERRUPTED, err
    out = tmp_path / "o"
    assert "custom_vjp" in (out / "repro.py").read_text() and (out / "best.py").is_file()
    assert json.loads((out / "state.json").read_text())["signature"]["family"] == "activity-mismatch"
    assert "interrupted" in (out / "report.md").read_text()
    leftover = candidates_running(script.name, proc.pid)
    assert leftover == [], f"candidates outlived the reduction: {leftover}"


def test_a_failure_that_comes_and_goes_is_verified_on_enough_runs_to_show_it():
    from reducer.verdict import verify_runs

    assert verify_runs(3, 1.0) == 3 and verify_runs(3, 0.0) == 3
    assert verify_runs(3, 0.5) == 7  # 0.5 ** 7 < 1 %: three runs missed it once in eight reductions
    assert verify_runs(3, 0.9) == 3 and verify_runs(3, 0.1) == 44


def test_the_sandbox_candidates_run_in_follows_the_established_failure_and_the_jobs_own_is_left_as_made(tmp_path):
    """What establishing learns (the watches its verdicts rest on, gradient checks off, a level's data
    files) reaches every run through the sandbox the job derives, never by changing the one it made."""
    import dataclasses

    from oracles.outcome import Signature
    from reducer.established import EstablishedFailure
    from reducer.reduce import Options, Reduction
    from reducer.workers.sandbox import Limits

    job = Reduction(PROGRAMS / "while_loop_grad.py", tmp_path / "o", Options(runs=1, jobs=1))
    try:
        made = job.own_sandbox
        assert job.sandbox is made  # nothing established yet
        inputs = tmp_path / "inputs.npz"
        job.established = EstablishedFailure(
            AdjointMissing(), Signature("nonfinite", (("op", "digamma"),)), None, 1.0, 1.0, limits=Limits(),
            watches=("gradients",), data_files=(inputs,), gradient_checks=False)
        box = job.sandbox
        assert box.extra_env["REDUCER_WATCHES"] == "gradients" and box.extra_env["REDUCER_WANTED_OPERATION"] == "digamma"
        assert box.data_files == (inputs,) and box.check_gradients is False and box.pool is made.pool
        assert "REDUCER_WATCHES" not in made.extra_env and made.data_files != (inputs,) and made.check_gradients
        job.established = dataclasses.replace(job.established, watches=())
        assert "REDUCER_WATCHES" not in job.sandbox.extra_env
    finally:
        job.close()
