"""XLA's culprit pass for a script (reducer/xla_culprit.py): the halving search on its own, and on a
real miscompile of jaxlib 0.10.2 (jax-ml/jax#39103), whose reproducer runs through with the pass
the search names disabled, and only then."""
from __future__ import annotations

from pathlib import Path

import pytest

import oracles
from oracles.base import Signature
from reducer import xla_culprit
from reducer.reduce import Options, Reduction

PROGRAMS = Path(__file__).parent / "programs"
PASSES = [f"pass-{k}" for k in range(25)]


def counted(needed: set[str], together: bool = False):
    """A stand-in for the program's runs: it runs through when `needed` is disabled (all of it, when
    `together`, else any one of it); the runs are counted."""
    runs = []

    def through(disabled: list[str]) -> bool:
        runs.append(list(disabled))
        return needed <= set(disabled) if together else bool(needed & set(disabled))

    return through, runs


def test_halving_finds_the_one_pass_in_about_log2_runs_and_ends_on_it_alone():
    through, runs = counted({"pass-20"})
    assert xla_culprit.halve(PASSES, through) == "pass-20"
    assert len(runs) <= 2 * 5 + 1 and ["pass-20"] in runs  # it ran through with that pass alone off


def test_two_passes_needed_together_or_none_at_all_name_no_culprit():
    through, _ = counted({"pass-3", "pass-17"}, together=True)
    assert xla_culprit.halve(PASSES, through) is None
    through, runs = counted(set())
    assert xla_culprit.halve(PASSES, through) is None and len(runs) == 1  # all of them off: still fails
    assert xla_culprit.halve([], through) is None


def test_only_failures_xla_owns_are_searched():
    assert oracles.xla_owns(Signature("wrong-result", (("source", "jit"), ("op", "sub"))))
    assert oracles.xla_owns(Signature("crash", (("how", "signal"), ("detail", "SIGSEGV in jax/_src/x.py:f"))))
    assert not oracles.xla_owns(Signature("crash", (("how", "signal"), ("detail", "SIGSEGV in ctypes/x.py:f"))))
    assert not oracles.xla_owns(Signature("crash", (("how", "hang"), ("detail", "timeout"))))
    assert not oracles.xla_owns(Signature("crash", (("how", "internal-error"), ("detail", "KeyError in flax/x.py:f"))))
    assert not oracles.xla_owns(Signature("adjoint-missing", (("source", "jax"), ("op", "schur"))))


@pytest.mark.slow
def test_a_jit_miscompile_s_culprit_pass_makes_its_reproducer_run_through(tmp_path):
    job = Reduction(PROGRAMS / "jit_miscompare.py", tmp_path / "out", Options(oracle="wrong-result", jobs=1))
    lines = []
    try:
        name = xla_culprit.search(job, job.source, lines.append)
        assert name == "dot-library-rewriter", lines
        assert job.fresh_run(xla_culprit.flags(job.source, f"--xla_disable_hlo_passes={name}")).returncode == 0
        assert job.fresh_run(xla_culprit.flags(job.source, "--xla_disable_hlo_passes=dce")).returncode == 1
        assert "runs through" in lines[-1]
    finally:
        job.close()
