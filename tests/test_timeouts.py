"""The adaptive candidate timeout follows the interesting runs, within its floor and start."""
from reducer.timeouts import AdaptiveTimeout


def test_starts_at_the_initial_limit_then_follows_the_slowest_recent_run():
    t = AdaptiveTimeout(40.0, floor=8.0, factor=4.0, window=3)
    assert t.value == 40.0
    t.record(0.5)
    assert t.value == 8.0  # never below the floor
    t.record(3.0)
    assert t.value == 12.0
    for _ in range(3):
        t.record(1.0)
    assert t.value == 8.0  # the slow run fell out of the window
    t.record(30.0)
    assert t.value == 40.0  # never above the initial limit


def test_floor_never_exceeds_the_initial_limit():
    t = AdaptiveTimeout(5.0, floor=8.0)
    t.record(0.1)
    assert t.value == 5.0
