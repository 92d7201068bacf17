"""The traced level's deadline: its share of --max-time, longer only while it is still shrinking."""
import pytest

from reducer.levels.time_share import TimeShare


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_level_that_has_stopped_shrinking_ends_at_its_share():
    clock = Clock()
    share = TimeShare(start=10.0, share=90.0, job_deadline=180.0, window=9.0, clock=clock)
    clock.now = 50.0
    share.accepted()
    clock.now = 100.5  # past the share, the last smaller candidate 50 s ago
    assert share() == 100.0 and not share.extended


def test_a_level_still_shrinking_at_the_end_of_its_share_goes_on_into_half_of_what_is_left():
    clock = Clock()
    share = TimeShare(start=10.0, share=90.0, job_deadline=180.0, window=9.0, clock=clock)
    clock.now = 95.0
    share.accepted()
    clock.now = 101.0
    assert share() == 140.0 and share.extended  # 100 + (180 - 100) / 2: the source level keeps 40 s
    clock.now = 110.0  # 15 s without a smaller candidate: it ends
    assert share() == 100.0
    clock.now = 120.0
    share.accepted()  # it shrank again: on, but never past half of what was left
    clock.now = 125.0
    assert share() == 140.0


def test_before_its_share_ends_and_without_a_job_deadline_the_share_is_the_deadline():
    clock = Clock()
    share = TimeShare(start=0.0, share=60.0, job_deadline=None, window=5.0, clock=clock)
    clock.now = 59.0
    share.accepted()
    assert share() == 60.0
    clock.now = 61.0
    assert share() == 60.0


def test_neither_the_share_nor_its_extension_goes_past_when_shrinking_must_end():
    clock = Clock()  # a level that started late (a slow original's runs): its share would end past the final checks
    share = TimeShare(start=100.0, share=90.0, job_deadline=150.0, window=9.0, clock=clock)
    clock.now = 120.0
    assert share() == 150.0
    clock.now = 149.0
    share.accepted()
    clock.now = 151.0
    assert share() == 150.0 and clock.now > share()


def test_the_traced_level_stops_shrinking_before_its_write_back_and_the_final_checks():
    from types import SimpleNamespace

    from reducer.levels.jaxpr.level import AFTER_RUNS, CHECK_ROUNDS, shrinking_ends
    from reducer.timeouts import FRESH_START

    # `until`, sized by the original's runs, is not asked
    ctx = SimpleNamespace(until=lambda: 100.0, deadline=180.0, started=0.0)
    fresh = 15.0 + FRESH_START
    assert shrinking_ends(ctx, 10.0) == 180.0 - (AFTER_RUNS + CHECK_ROUNDS) * fresh >= 100.0
    # quick runs: the final checks still get what the job keeps for them before they ran (a fifth)
    assert shrinking_ends(ctx, 1.0) == 180.0 - AFTER_RUNS * (1.5 + FRESH_START) - 0.2 * 180.0
    assert shrinking_ends(SimpleNamespace(until=None, deadline=None, started=0.0), 3.0) is None


def test_a_replay_costs_the_first_replays_seconds_but_those_it_spent_explaining():
    """A loaded Flax loss's first replay took 20.6 s, most of it finding the operation alone and
    recording values: taken for a replay's, its write-back and final checks were reckoned at 132 s
    and the level stopped before its first candidate."""
    from types import SimpleNamespace

    from reducer.levels.jaxpr.model import EXPLAINED
    from reducer.levels.jaxpr.value_checks import replay_seconds

    assert replay_seconds(SimpleNamespace(seconds=20.6, harness={EXPLAINED: 15.0})) == pytest.approx(5.6)
    assert replay_seconds(SimpleNamespace(seconds=4.0, harness={})) == 4.0


def test_the_written_back_script_runs_as_long_as_the_call_not_as_the_replay_that_locates_its_value():
    """Beside a second load, a Flax loss's replay took 12 s, ten runs of its written-back script that
    locate the Inf's origin: taken for one run, it kept 92 s for the write-back and the final checks,
    the level stopped after 3 candidates, and the job ended with 38 s of --max-time unused."""
    from types import SimpleNamespace

    from reducer.levels.jaxpr.model import CALLED, EXPLAINED
    from reducer.levels.jaxpr.value_checks import script_seconds

    assert script_seconds(SimpleNamespace(seconds=15.3, harness={EXPLAINED: 3.3, CALLED: 1.5})) == 1.5
    assert script_seconds(SimpleNamespace(seconds=15.3, harness={EXPLAINED: 3.3})) == pytest.approx(12.0)


def test_a_share_cut_to_its_end_before_the_level_began_is_not_said_to_be_extended():
    clock = Clock()
    share = TimeShare(start=100.0, share=90.0, job_deadline=100.0, window=9.0, clock=clock)
    clock.now = 101.0  # the level's first candidate was just accepted (its start)
    share.accepted()
    assert share() == 100.0 and not share.extended
