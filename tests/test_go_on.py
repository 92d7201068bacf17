"""The time the final checks leave (`reducer.levels.chain.ChainJob.checked`): shrinking stops where an
estimate of the checks' length says, and under load that estimate is off threefold either way. When
the checks of a cut level's result leave time, the level goes on from the verified result, with what
the checks took kept for them; run for real on a script, with the estimate made too large."""
import pytest

from conftest import PROGRAMS
from reducer import job as job_module
from reducer.cli import run_job
from reducer.reduce import Options, Reduction


@pytest.mark.slow
def test_a_level_cut_by_too_large_an_estimate_goes_on_with_the_time_its_checks_left(tmp_path, monkeypatch):
    # a fresh run estimated at minutes: most of --max-time is kept for checks that take seconds
    monkeypatch.setattr(job_module, "FRESH_START", 300.0)
    monkeypatch.setattr(job_module, "CHECK_SHARE", 0.9)
    job = Reduction(PROGRAMS / "custom_vjp_wrong_arity.py", tmp_path / "o",
                    Options(runs=1, jobs=2, max_time=60, levels="source"))
    assert run_job(job, quiet=True, json_out=False) == 0
    log = (tmp_path / "o" / "reduce.log").read_text()
    first = log.split("verified: ")[0]
    assert "going on from the verified result" in log, log
    cut_at = int(log.split("going on from the verified result (")[1].split(" tokens")[0])
    went_to = int(log.split("source level, going on: ")[1].split(" -> ")[1].split(" tokens")[0])
    assert went_to < cut_at, log
    assert "verified: yes" in log.split("source level, going on: ")[1], log
    assert job.checks_seconds is not None and job.checks_seconds < 0.9 * 60 - 20, first  # measured, not estimated
