"""How a level shares --max-time with the levels after it: by what it is still achieving, not by
halves alone.

A level has its share (the traced level: half of --max-time). At the end of its share it goes on
while it is still shrinking (a smaller candidate accepted within the last `window` seconds), into
at most half of the time the job has left then, so that the levels after it keep about a quarter
of --max-time: on a loaded machine a traced level still cutting equations at its half-way mark
used to stop there (the triplet-loss case: 73 -> 7 equations, written back as 295 tokens, where
the level goes on to 2 equations and 51 tokens), for a source level that then had too little time
to shrink what it was given. A level that has stopped shrinking ends at its share (or
earlier, by its stall). Neither goes past `job_deadline`, the time the level must have stopped
shrinking by (the final checks and its own write-back after it): on a loaded machine a traced level
that started late, after a slow original's runs, went on into the final checks' time and left the
result unverified.
"""
from __future__ import annotations

import time
from typing import Callable


class TimeShare:
    """The engine's deadline for one level (a callable: `Engine` asks it before every step)."""

    def __init__(self, start: float, share: float, job_deadline: float | None, window: float,
                 clock: Callable[[], float] = time.monotonic):
        self.share_ends = start + share if job_deadline is None else min(start + share, job_deadline)
        self.job_deadline = job_deadline
        self.window = window
        self.clock = clock
        self.last_accept = start
        self.extended = False  # it went on past its share (not where its share already ends at the deadline)

    def accepted(self) -> None:
        """The level accepted a smaller candidate now."""
        self.last_accept = self.clock()

    def watching(self, on_accept: Callable[[str], None]) -> Callable[[str], None]:
        """`on_accept` that also tells this share the level accepted a smaller candidate."""
        def accepted(best: str) -> None:
            self.accepted()
            on_accept(best)
        return accepted

    def latest(self) -> float:
        """The latest the level may go on to: half of what the job had left when its share ended."""
        if self.job_deadline is None:
            return self.share_ends
        return max(self.share_ends, self.share_ends + 0.5 * (self.job_deadline - self.share_ends))

    def __call__(self) -> float:
        now = self.clock()
        if now <= self.share_ends or now - self.last_accept > self.window:
            return self.share_ends
        self.extended = self.extended or self.latest() > self.share_ends
        return self.latest()
