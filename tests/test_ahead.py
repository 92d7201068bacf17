"""Runs started before a localiser reads them (`reducer.faults.ahead`): they run side by side, each
is run once, those not read stop, and a candidate's cancellation reaches every run made for it,
down to a real child process."""
from __future__ import annotations

import threading
import time

import pytest

from oracles.outcome import RunResult
from reducer.faults import CutShort
from reducer.faults.ahead import CANCEL, Ahead, cancelled_by
from reducer.faults.origin import ValueOrigin
from reducer.workers.sandbox import Limits, Sandbox


def result(text: str, seconds: float = 0.0, cancelled: bool = False) -> RunResult:
    return RunResult(returncode=1, stdout=text, stderr="", seconds=seconds, cancelled=cancelled)


def test_runs_started_ahead_run_side_by_side_and_once():
    together = threading.Barrier(3, timeout=10)  # broken unless all three run at once
    calls = []

    def run(text: str) -> RunResult:
        calls.append(text)
        together.wait()
        return result(text)

    ahead = Ahead()
    with ahead.started(run, ["a", "b", "c", "a"]):
        assert [ahead.take(t).stdout for t in ("c", "a", "b")] == ["c", "a", "b"]
        assert ahead.take("a") is None  # taken once: a second read runs it again, as without
    assert sorted(calls) == ["a", "b", "c"]


def test_runs_not_read_are_stopped_on_leaving():
    ended = {}

    def run(text: str) -> RunResult:
        start, cancel = time.monotonic(), CANCEL.get()
        while not cancel.is_set() and time.monotonic() - start < 30:
            time.sleep(0.01)
        ended[text] = time.monotonic() - start
        return result(text, cancelled=cancel.is_set())

    ahead = Ahead()
    with ahead.started(run, ["slow", "unread"]):
        pass
    assert set(ended) == {"slow", "unread"} and max(ended.values()) < 10
    assert ahead.take("slow") is None


def test_a_candidates_cancellation_reaches_the_runs_started_for_it():
    outer = threading.Event()
    seen = []

    def run(text: str) -> RunResult:
        cancel = CANCEL.get()
        seen.append(cancel.is_set())
        outer.set()
        seen.append(cancel.is_set())
        return result(text)

    ahead = Ahead()
    with cancelled_by(outer), ahead.started(run, ["x"]):
        ahead.take("x")
    assert seen == [False, True]


@pytest.mark.parametrize("ahead_of_time", [False, True])
def test_a_cancelled_candidates_origin_run_is_killed_and_cut_short(tmp_path, ahead_of_time):
    sandbox = Sandbox(tmp_path / "runs", script_name="prog.py")
    origin = ValueOrigin(lambda text: sandbox.run(text, Limits(timeout=120), CANCEL.get(), isolated=True))
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    program = "import time\ntime.sleep(60)\n"
    start = time.monotonic()
    with cancelled_by(cancel), pytest.raises(CutShort):
        if ahead_of_time:
            with origin.ahead.started(origin.run, [origin.run_text(program)]):
                origin.ran(program)
        else:
            origin.ran(program)
    assert time.monotonic() - start < 30
