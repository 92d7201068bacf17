"""The generic reduction driver: passes propose, the engine tests, keeps the best, repeats.

It knows nothing about Python, jaxprs or MLIR. A *representation* says how big a program is and
whether a candidate is well formed; a *pass* lazily proposes smaller variants of a program in a
fixed order; a *test* says whether a candidate is still interesting. The engine runs the passes
to a fixpoint: for each pass it tests candidates in order, up to `jobs` at a time (the first
success in proposal order wins, later ones are cancelled), moves to the accepted candidate and
resumes the pass at the same position, as C-Vise does; a round in which no pass succeeds ends it.
With `reorder`, from the second round on, the passes run in order of how much each shrank the
program per candidate tested in the round before (registration order among equals), so that the
passes that make large cuts go first. Outcomes are cached by the candidate's content.
"""
from __future__ import annotations

import hashlib
import itertools
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Protocol


class Representation(Protocol):
    def size(self, program: str) -> int: ...
    def key(self, program: str) -> tuple: ...  # what must strictly decrease; starts with size
    def verify(self, program: str) -> bool: ...


class Pass(Protocol):
    name: str

    def candidates(self, program: str) -> Iterator[str]: ...


#: test(candidate, cancel) -> still interesting?
Test = Callable[[str, threading.Event], bool]


@dataclass
class Stats:
    tested: int = 0
    accepted: int = 0
    cache_hits: int = 0
    invalid: int = 0
    rounds: int = 0
    started: float = field(default_factory=time.monotonic)
    per_pass: dict = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    def hit_rate(self) -> float:
        asked = self.tested + self.cache_hits
        return self.cache_hits / asked if asked else 0.0

    def count(self, name: str, key: str) -> None:
        self.per_pass.setdefault(name, {"tested": 0, "accepted": 0})[key] += 1


@dataclass
class Event:
    """What the engine tells a progress display."""

    kind: str  # "test", "accept", "pass", "round"
    pass_name: str
    size: int
    stats: Stats


class Engine:
    def __init__(self, representation: Representation, passes: Iterable[Pass], test: Test, jobs: int = 1,
                 on_event: Callable[[Event], None] | None = None,
                 on_accept: Callable[[str], None] | None = None,
                 stop: threading.Event | None = None, deadline: float | None = None,
                 stall: float | None = None, reorder: bool = False):
        self.rep = representation
        self.passes = list(passes)
        self.test = test
        self.jobs = max(1, jobs)
        self.on_event = on_event or (lambda e: None)
        self.on_accept = on_accept or (lambda p: None)
        self.stop = stop or threading.Event()
        self.deadline = deadline
        self.stall = stall  # stop after this many seconds without an accepted candidate
        self.reorder = reorder
        self._yield: dict[str, tuple[int, int]] = {}  # pass -> (size removed, candidates tested), last round
        self.stalled = False
        self._last_progress = time.monotonic()
        self.cache: dict[str, bool] = {}
        self.stats = Stats()
        self.best = ""
        self._best_key: tuple = ()

    def _key(self, program: str) -> tuple:
        return self.rep.key(program)

    def _halted(self) -> bool:
        now = time.monotonic()
        if self.stall is not None and now - self._last_progress > self.stall:
            self.stalled = True
        return self.stop.is_set() or self.stalled or (self.deadline is not None and now > self.deadline)

    def reduce(self, program: str) -> str:
        """Shrink `program` to a fixpoint of all passes; returns the smallest interesting one."""
        self.best, self._best_key = program, self._key(program)
        self._last_progress = time.monotonic()
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            self._pool = pool
            progress = True
            while progress and not self._halted():
                progress = False
                self.stats.rounds += 1
                self.on_event(Event("round", "", self._best_key[0], self.stats))
                order = self.pass_order()
                self._yield = {}
                for p in order:
                    if self._halted():
                        break
                    self.on_event(Event("pass", p.name, self._best_key[0], self.stats))
                    size, tested = self._best_key[0], self.stats.tested
                    progress |= self.run_pass(p)
                    self._yield[p.name] = (size - self._best_key[0], self.stats.tested - tested)
        return self.best

    def pass_order(self) -> list[Pass]:
        """The passes for the next round: the most size removed per candidate tested last round first."""
        if not self.reorder or not self._yield:
            return list(self.passes)

        def rate(p: Pass) -> float:
            removed, tested = self._yield.get(p.name, (0, 0))
            return removed / max(1, tested)

        return sorted(self.passes, key=lambda p: -rate(p))

    def run_pass(self, p: Pass) -> bool:
        """Apply one pass until it proposes nothing interesting; resumes where it succeeded."""
        start, progressed = 0, False
        while not self._halted():
            found = self._first_success(p, start)
            if found is None:
                break
            start, progressed = found, True
        return progressed

    def _eligible(self, p: Pass, start: int) -> Iterator[tuple[int, str]]:
        seen: set[str] = set()
        for index, cand in enumerate(itertools.islice(p.candidates(self.best), start, None), start):
            digest = hashlib.sha1(cand.encode()).hexdigest()
            if digest in seen or self._key(cand) >= self._best_key:
                continue
            seen.add(digest)
            if digest in self.cache:
                self.stats.cache_hits += 1
                if self.cache[digest]:
                    yield index, cand  # cannot normally happen: a success is always accepted
                continue
            if not self.rep.verify(cand):
                self.stats.invalid += 1
                self.cache[digest] = False
                continue
            yield index, cand

    def _first_success(self, p: Pass, start: int) -> int | None:
        """Test candidates from position `start` on; accept the first interesting one in order."""
        window: deque[tuple[int, str, Future, threading.Event]] = deque()
        proposals = self._eligible(p, start)
        exhausted = False
        try:
            while True:
                while not exhausted and len(window) < self.jobs and not self._halted():
                    nxt = next(proposals, None)
                    if nxt is None:
                        exhausted = True
                        break
                    cancel = threading.Event()
                    window.append((*nxt, self._pool.submit(self.test, nxt[1], cancel), cancel))
                if not window:
                    return None
                index, cand, fut, cancel = window.popleft()
                try:
                    ok = fut.result()
                except Exception:
                    ok = False
                if cancel.is_set():  # stopped: the verdict means nothing
                    continue
                digest = hashlib.sha1(cand.encode()).hexdigest()
                self.cache[digest] = ok
                self.stats.tested += 1
                self.stats.count(p.name, "tested")
                self.on_event(Event("test", p.name, self._best_key[0], self.stats))
                if ok and self._key(cand) < self._best_key:
                    self.best, self._best_key = cand, self._key(cand)
                    self.stats.accepted += 1
                    self._last_progress = time.monotonic()
                    self.stats.count(p.name, "accepted")
                    self.on_accept(cand)
                    self.on_event(Event("accept", p.name, self._best_key[0], self.stats))
                    return index
                if self._halted():
                    return None
        finally:
            for _, _, fut, cancel in window:
                cancel.set()
            for _, _, fut, _ in window:
                try:
                    fut.result()
                except Exception:
                    pass
