"""`reducer hunt`: the table, the programs, the verdicts on real runs, the sweep, Ray, the corpus."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import needs_enzyme, reducer_cli as run_cli
from oracles.outcome import RunResult
from reducer.executors import LocalExecutor
from reducer.hunt.judge import judge
from reducer.hunt.programs import MARKER, program
from reducer.hunt.sweep import HuntOptions, sweep
from reducer.hunt.table import DTYPES, MODES, ROUTES, Probe, load_table, parse_list, probes, select
from reducer.workers.sandbox import Limits

OPS = {op.name: op for op in load_table()}


def test_the_table_covers_the_public_modules_with_150_operations_or_more():
    ops = load_table()
    assert len(ops) >= 150
    prefixes = {op.name.split(".")[0] for op in ops}
    assert {"jnp", "lax", "special", "nn"} <= prefixes
    assert any(op.name.startswith("jnp.linalg.") for op in ops)


@pytest.mark.slow
def test_every_program_of_the_table_is_valid_python():
    for op in load_table():
        for mode in MODES:
            for dtype in DTYPES:
                compile(program(Probe(op, mode, "enzyme", dtype)), op.name, "exec")


def test_selection_by_globs_and_by_regular_expressions():
    ops = load_table()
    assert {op.name for op in select(ops, "jnp.linalg.eig*")} >= {"jnp.linalg.eig", "jnp.linalg.eigh"}
    assert [op.name for op in select(ops, r"^special\.digamma$")] == ["special.digamma"]
    assert select(ops, "no-such-operation") == []


def test_lists_of_modes_routes_and_dtypes_are_checked():
    assert parse_list("grad,hessian", MODES, "mode") == ("grad", "hessian")
    with pytest.raises(ValueError, match="unknown route 'torch'"):
        parse_list("jax,torch", ROUTES, "route")


def test_complex_dtypes_skip_real_only_operations_and_real_input_modes():
    plist, skipped = probes([OPS["jnp.sin"], OPS["special.digamma"]], ("grad", "hessian"), ("jax",),
                            ("float32", "complex64"))
    ids = [p.id for p in plist]
    assert "jnp.sin/grad/jax/complex64" in ids
    assert "jnp.sin/hessian/jax/complex64" not in ids  # jax.hessian wants holomorphic=True there
    assert not any(i.startswith("special.digamma/") and i.endswith("complex64") for i in ids)
    assert skipped == 1 + 2


def _run(source: str, timeout: float = 120.0) -> RunResult:
    ex = LocalExecutor(1, "cpu", Limits(timeout=timeout, memory_mb=4096))
    try:
        return next(ex.run([source]))[1]
    finally:
        ex.close()


@pytest.mark.slow
def test_a_correct_derivative_is_clean_and_carries_its_references():
    probe = Probe(OPS["jnp.tanh"], "hessian", "jax", "float64")
    run = _run(program(probe))
    assert MARKER.strip() in run.stdout
    assert judge(probe, run).signature is None


def test_a_derivative_that_disagrees_with_finite_differences_names_the_operation():
    # a derivative the hunt's comparison must catch: the program's own result, made wrong by hand
    probe = Probe(OPS["jnp.sin"], "grad", "jax", "float32")
    source = program(probe).replace("report = {'result': values(result)}", "report = {'result': values(result * 1.5)}")
    verdict = judge(probe, _run(source))
    assert verdict.signature is not None and verdict.signature.family == "wrong-derivative"
    assert dict(verdict.signature.fields) == {"op": "jnp.sin", "route": "jax", "reference": "finite-differences"}


@pytest.mark.slow
@needs_enzyme
def test_enzyme_digamma_derivative_is_found_wrong_against_jax_ad():
    probe = Probe(OPS["special.digamma"], "grad", "enzyme", "float32")
    verdict = judge(probe, _run(program(probe)))
    assert verdict.signature is not None
    assert dict(verdict.signature.fields) == {"op": "special.digamma", "route": "enzyme", "reference": "jax-ad"}


@pytest.mark.slow
def test_programs_that_crash_or_hang_are_contained_and_counted():
    ex = LocalExecutor(2, "cpu", Limits(timeout=8, memory_mb=4096))
    try:
        sources = ["import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", "while True:\n    pass\n",
                   "print('fine')\n"]
        results = dict(ex.run(sources))
    finally:
        ex.close()
    probe = Probe(OPS["jnp.sin"], "grad", "jax", "float32")
    assert judge(probe, results[0]).contained == "signal"
    assert judge(probe, results[1]).contained == "timeout"
    assert results[2].returncode == 0


@pytest.mark.slow
@needs_enzyme
def test_a_small_sweep_groups_failures_and_knows_the_corpus(tmp_path):
    opts = HuntOptions(ops=r"^lax\.top_k$,^jnp\.cos$", modes=("grad", "jvp"), routes=("jax", "enzyme"),
                       out=tmp_path / "hunt", reduce=False, corpus=Path(__file__).resolve().parents[1] / "corpus")
    summary = sweep(opts)
    assert summary["sweep"]["programs"] == 8 and summary["sweep"]["ran"] == 8
    [finding] = summary["findings"]
    assert finding["signature"]["fields"] == {"source": "enzyme", "op": "chlo.top_k"}
    assert finding["count"] == 2 and finding["known"]["case"].startswith("adjoint-missing-enzyme-chlo-top-k")
    assert "chlo.top_k" in (tmp_path / "hunt" / "hunt.md").read_text()
    folder = tmp_path / "hunt" / finding["folder"]
    assert (folder / "repro.py").is_file() and (folder / "signature.json").is_file()

    # a new corpus does not know it; `corpus add` takes the finding as it is, and then it is known
    corpus = tmp_path / "corpus"
    added = run_cli("corpus", "add", folder, "--corpus", corpus)
    assert added.returncode == 0, added.stderr
    again = sweep(HuntOptions(ops=r"^lax\.top_k$", modes=("grad",), routes=("enzyme",), out=tmp_path / "again",
                              reduce=False, corpus=corpus))
    assert again["findings"][0]["known"]["case"] == finding["id"]
    assert run_cli("corpus", "add", folder, "--corpus", corpus).returncode == 13  # not added twice


def test_bad_hunt_options_get_one_line_and_status_2(tmp_path):
    for args in (["--modes", "grad,wiggle"], ["--ops", "no-such-operation"], ["--executor", "mpi"],
                 ["--dtypes", "int8"]):
        done = run_cli("hunt", *args, "--out", tmp_path / "h", "--no-reduce")
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_ray_executor_without_ray_is_a_one_line_error(tmp_path):
    code = ("import sys; sys.modules['ray'] = None\n"
            "from reducer.cli import app\n"
            "app(['hunt', '--executor', 'ray', '--ops', '^jnp.sin$', '--modes', 'grad', '--out', sys.argv[1]])\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "h")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2
    assert "needs Ray" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
@needs_enzyme
def test_ray_and_local_executors_give_the_same_summary(tmp_path):
    pytest.importorskip("ray", reason="the test extra installs ray")
    common = ["--ops", r"^lax\.top_k$,^jnp\.exp$,^special\.digamma$", "--modes", "grad,vmap-grad", "--no-reduce",
              "--jobs", "2", "--json"]
    local = run_cli("hunt", *common, "--out", tmp_path / "local", timeout=900)
    ray = run_cli("hunt", *common, "--executor", "ray", "--out", tmp_path / "ray", timeout=900)
    assert local.returncode == 0 and ray.returncode == 0, (local.stderr[-2000:], ray.stderr[-2000:])
    a = json.loads((tmp_path / "local" / "hunt.json").read_text())
    b = json.loads((tmp_path / "ray" / "hunt.json").read_text())
    assert a["run"]["executor"] == "local" and b["run"]["executor"] == "ray"
    assert a["findings"] == b["findings"] and a["sweep"] == b["sweep"]
    assert len(a["findings"]) >= 2


def test_a_reduction_that_follows_another_failure_is_not_kept():
    from oracles.outcome import Signature
    from reducer.hunt.sweep import Finding, _kept_if_same

    wanted = Signature("adjoint-missing", (("source", "enzyme"), ("op", "chlo.zeta")))
    finding = Finding(wanted, True, [Probe(OPS["lax.zeta"], "grad", "enzyme", "float32")])
    same = {"summary": {"signature": wanted.to_dict(), "final_tokens": 20}, "files": {"repro.py": "x"}}
    assert _kept_if_same(finding, same) is same
    other = Signature("jax-error", (("library", "enzyme_ad"), ("type", "ValueError")))
    slipped = _kept_if_same(finding, {"summary": {"signature": other.to_dict(), "final_tokens": 20, "status": 0},
                                      "files": {"repro.py": "x"}})
    assert slipped["files"] == {} and "another failure" in slipped["summary"]["error"]
