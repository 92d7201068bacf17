"""The chain of levels every job runs (`reducer.levels.chain.ChainJob`): the levels in order, each
keeping its best program in its own form with state.json naming the level, no level started once
the job is stopped, and --resume going on from the level an interrupted run was in, from the
program it kept there."""
import json

import oracles
from oracles.base import Signature
from reducer.engine import Stats
from reducer.established import EstablishedFailure, Options
from reducer.levels.base import LevelResult
from reducer.levels.chain import ChainJob


class DropLetter:
    """A level that drops one `letter` at a time, keeping each smaller program; it stops the job
    after `stop_after` of them (a Ctrl-C)."""

    def __init__(self, name: str, suffix: str, letter: str, stop_after: int | None = None):
        self.name, self.suffix, self.letter, self.stop_after = name, suffix, letter, stop_after
        self.started_from: list[str] = []

    def why_not(self, est, program):
        return None

    def applies(self, est, program):
        return True

    def reduce(self, program, est, ctx):
        best = ctx.resumed or program
        self.started_from.append(best)
        stats = Stats()
        ctx.on_accept(best, stats)
        while self.letter in best and not ctx.stop.is_set():
            best = best.replace(self.letter, "", 1)
            stats.tested += 1
            stats.accepted += 1
            ctx.on_accept(best, stats)
            if stats.accepted == self.stop_after:
                ctx.stop.set()
        return LevelResult(best, stats.tested, stats.accepted, levels=(self.name,))


class Letters(ChainJob):
    def __init__(self, out, chain):
        super().__init__(out, Options(jobs=1))
        self.chain_levels = chain
        self.out.mkdir(parents=True, exist_ok=True)

    def levels(self):
        return self.chain_levels


def established() -> EstablishedFailure:
    oracle = oracles.make_oracle("regex:BUG", "cpu", False)
    return EstablishedFailure(oracle, Signature("regex", (("pattern", "BUG"),)), None, 1.0, 0.0)


def test_each_level_starts_from_the_last_ones_program_and_keeps_its_best_in_its_own_form(tmp_path):
    first, second = DropLetter("first", ".one", "a"), DropLetter("second", ".two", "b")
    job = Letters(tmp_path, (first, second))
    try:
        assert job.shrink("aabbc", established()) == "c"
    finally:
        job.close()
    assert first.started_from == ["aabbc"] and second.started_from == ["bbc"]
    assert (tmp_path / "best.one").read_text() == "bbc" and (tmp_path / "best.two").read_text() == "c"
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["level"] == "second" and state["best"] == "best.two"
    assert state["tested"] == 4 and state["signature"]["family"] == "regex"
    assert [r.levels for r in job.chain] == [("first",), ("second",)] and job.levels_run == ["first", "second"]


def test_resume_goes_on_from_the_level_and_program_an_interrupted_run_kept(tmp_path):
    job = Letters(tmp_path, (DropLetter("first", ".one", "a", stop_after=1), DropLetter("second", ".two", "b")))
    try:
        assert job.shrink("aaabbc", established()) == "aabbc"  # stopped: the second level never starts
    finally:
        job.close()
    assert job.chain[0].levels == ("first",) and len(job.chain) == 1
    assert not (tmp_path / "best.two").exists()
    state, kept, _ = job.read_state()
    assert state["level"] == "first" and kept == "aabbc" and state["accepted"] == 1

    first, second = DropLetter("first", ".one", "a"), DropLetter("second", ".two", "b")
    again = Letters(tmp_path, (first, second))
    try:
        again.resume_level(state, kept)
        assert again.shrink("aaabbc", established()) == "c"
        assert first.started_from == ["aabbc"]  # the kept program, not the one handed in
        assert json.loads((tmp_path / "state.json").read_text())["accepted"] == 1 + 2 + 2  # counts go on
        again.drop_state()
    finally:
        again.close()
    assert not any((tmp_path / name).exists() for name in ("state.json", "best.one", "best.two"))


def test_resume_skips_the_levels_before_the_one_that_was_running(tmp_path):
    first, second = DropLetter("first", ".one", "a"), DropLetter("second", ".two", "b")
    job = Letters(tmp_path, (first, second))
    try:
        job.resume_level({"level": "second", "signature": {}}, "abbc")
        assert job.shrink("aabbc", established()) == "ac"
    finally:
        job.close()
    assert first.started_from == [] and second.started_from == ["abbc"]
    assert "first level: not run (resuming the second level)" in "\n".join(job.log_lines)


def test_the_final_checks_reserve_what_a_fresh_run_measured_here_costs(tmp_path):
    """On a loaded machine a fresh interpreter costs more than the allowance: the time kept for the
    final checks grows to a fresh run measured in this job, so that they are not cut short."""
    import dataclasses

    job = Letters(tmp_path, ())
    job.options = dataclasses.replace(job.options, max_time=180.0)
    job.deadline = job.started + 180.0
    try:
        allowed = job.shrink_deadline(2.0)
        job.fresh_seconds = 15.0  # a fresh run of the written-back script, measured
        assert job.shrink_deadline(2.0) < allowed - 10
        job.fresh_seconds = 1.0  # a quick machine: the allowance stands
        assert job.shrink_deadline(2.0) == allowed
        assert job.deadline - allowed >= 0.2 * 180  # never less than a fifth of --max-time before they ran
        job.checks_seconds = 8.0  # once they ran: what they took, whatever the runs before say
        assert job.shrink_deadline(2.0) == job.deadline - (1.2 * 8.0 + 2)
    finally:
        job.close()
