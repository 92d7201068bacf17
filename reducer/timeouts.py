"""Adaptive candidate timeouts: the limit follows how long interesting candidates have taken lately.

The first runs of the original set the starting limit (four times the slowest, at least 20 s). As
the program shrinks, candidates get faster, and one that loops forever (a `while_loop` whose
condition became a constant) should not cost the full starting limit: after each interesting run
the limit becomes `factor` times the slowest of the last `window` interesting runs, never below
`floor` and never above the starting limit. `FRESH_START` is what a run in a new interpreter adds;
`least_for_checks`, the least time kept for the final checks before they ran.
"""
from __future__ import annotations

import threading
from collections import deque

#: what starting a fresh interpreter (Python, jax, the harness) adds to a run, allowing for a loaded machine
FRESH_START = 5.0
#: kept for the final checks at least until they ran once, whatever a warm run says a fresh one costs:
#: beside another load a fresh run took ten times a warm one's seconds (what they leave is not lost:
#: the last level goes on, `reducer.levels.chain.ChainJob.checked`)
CHECK_LEAST, CHECK_LEAST_SECONDS = 0.2, 60.0


def least_for_checks(max_time: float) -> float:
    """The least kept for the final checks of a job of `max_time` seconds, before they ran once."""
    return min(CHECK_LEAST * max_time, CHECK_LEAST_SECONDS)


class AdaptiveTimeout:
    def __init__(self, initial: float, floor: float = 8.0, factor: float = 4.0, window: int = 16):
        self.initial, self.floor, self.factor = initial, min(floor, initial), factor
        self.recent: deque[float] = deque(maxlen=window)
        self.lock = threading.Lock()

    def record(self, seconds: float) -> None:
        """An interesting candidate ran for `seconds`."""
        with self.lock:
            self.recent.append(seconds)

    @property
    def value(self) -> float:
        with self.lock:
            if not self.recent:
                return self.initial
            return min(self.initial, max(self.floor, self.factor * max(self.recent)))
