"""Runs a localiser will read started before it reads them, side by side, and the candidate's
cancellation carried into every run it makes.

Holding a candidate to its failing value's origin costs several runs of it, each patched another way
(`reducer.faults.origin`); once the first of them, the cheap gate, lets it through, the others do
not depend on one another's results, only on the program. `Ahead.started` runs them at once; the
localiser takes each result when it comes to read it, and whatever it no longer needs (an earlier
difference ended the look) is stopped.

A candidate the engine no longer wants (another in its window was accepted) is cancelled; `CANCEL`
holds its event for the runs a localiser makes on its behalf, so that they stop with it.
"""
from __future__ import annotations

import contextlib
import contextvars
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterator

from oracles.outcome import RunResult

#: the cancellation of the candidate whose runs are being made (None: not cancellable)
CANCEL: contextvars.ContextVar = contextvars.ContextVar("reducer_cancel", default=None)


class Either:
    """Set when any of `events` is (the one method a run's cancellation is asked)."""

    def __init__(self, *events):
        self.events = [e for e in events if e is not None]

    def is_set(self) -> bool:
        return any(e.is_set() for e in self.events)


@contextlib.contextmanager
def cancelled_by(cancel) -> Iterator[None]:
    """Runs made inside stop when `cancel` is set."""
    token = CANCEL.set(cancel)
    try:
        yield
    finally:
        CANCEL.reset(token)


class Ahead:
    """Results of runs started early, by the exact text run."""

    def __init__(self):
        self._lock = threading.Lock()
        self._started: dict[str, Future] = {}

    def take(self, text: str) -> RunResult | None:
        """The result of the run of `text` started early (waiting for it), or None if none was."""
        with self._lock:
            found = self._started.pop(text, None)
        return found.result() if found is not None else None

    @contextlib.contextmanager
    def started(self, run: Callable[[str], RunResult], texts: list[str]) -> Iterator[None]:
        """`run` of each of `texts` at once, for `take` inside; those not taken are stopped on leaving."""
        texts = list(dict.fromkeys(texts))
        stop = threading.Event()
        either = Either(CANCEL.get(), stop)

        def one(text: str) -> RunResult:
            with cancelled_by(either):
                return run(text)

        with ThreadPoolExecutor(max_workers=max(1, len(texts))) as pool:
            futures = {text: pool.submit(contextvars.copy_context().run, one, text) for text in texts}
            with self._lock:
                self._started.update(futures)
            try:
                yield
            finally:
                stop.set()
                with self._lock:
                    for text in futures:
                        self._started.pop(text, None)
