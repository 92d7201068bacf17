"""Fault injection: reductions whose candidates hang, eat memory, fork, flood output or fail only
sometimes, with real processes. Nothing may be lost: the input stays as it was, the result is
verified, and no process outlives the reduction."""
import json
import subprocess

import pytest

from conftest import PROGRAMS, reducer_cli


def leftover(pattern: str) -> bool:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 0


@pytest.mark.slow
def test_hostile_candidates_do_not_hurt_the_reduction(tmp_path):
    script = PROGRAMS / "hostile" / "runaway.py"
    before = script.read_bytes()
    done = reducer_cli("reduce", script, "--oracle", "regex:BUG-42 budget=0 blocks=3 noise=5 child=-9", "--timeout", "3", "--memory-mb", "3000",
                       "--out", tmp_path / "out", "--json", "--jobs", "2", timeout=900)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["verified"].startswith("yes")
    repro = (tmp_path / "out" / "repro.py").read_text()
    assert "BUG-42" in repro and "child.kill()" in repro and "while" in repro
    assert script.read_bytes() == before
    assert not leftover("time.sleep(600)"), "a forked child outlived its candidate"
    assert not any(p.name.startswith("reducer-") for p in tmp_path.iterdir())


@pytest.mark.slow
def test_flaky_failure_is_measured_and_voted(tmp_path):
    done = reducer_cli("reduce", PROGRAMS / "hostile" / "flaky.py", "--oracle", "regex:^FLAKY-BUG after", "--runs", "8",
                       "--out", tmp_path / "out", "--json", "--jobs", "2", timeout=900)
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Failure rate:" in report and "of 8 runs of the original" in report
    repro = (tmp_path / "out" / "repro.py").read_text()
    assert "flaky_component.step(" in repro and "state" not in repro
