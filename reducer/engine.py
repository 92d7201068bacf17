"""The generic reduction driver: passes propose, the engine tests, keeps the best, repeats.

It knows nothing about Python, jaxprs or MLIR. A `Problem` is what one level reduces (as Shrink
Ray's `ReductionProblem`): its *representation* (how big a program is, the order candidates must
descend in, whether a candidate is well formed, and how to parse a program into the *work item*
passes read), the *test* (is a candidate still interesting?), the callbacks that see progress,
and the outcome cache and statistics, kept for the whole level run however many engines run on it.

A *pass* reports the change points of a work item (`points(item)`, in the order they are to be
tried; a `Chunks(where, n)` entry stands for chunks of `n` items that the driver lays out, the
whole first, then halves, quarters … single items) and makes the candidate for one point
(`apply(item, point)`, None when the point gives none). The engine parses the best program once
and hands that item to each pass. It runs the passes to a fixpoint: for each pass it tests
candidates in order, up to `jobs` at a time (the first success in proposal order wins, later ones
are cancelled), moves to the accepted candidate and resumes the pass at the same position of the
new item's points, without making the candidates before it again (llvm-reduce's driver does the
same); a round in which no pass succeeds ends it. A pass that only has `candidates(program)`
(lazily yielding whole programs) still works, resumed by skipping as many candidates.
With `reorder`, from the second round on, the passes run in order of how much each shrank the
program per candidate tested in the round before (registration order among equals).

An exception raised by a pass or by the test is a bug of the tool, not a verdict: the engine stops
and raises `ToolBug`, which carries the pass, the traceback and the best program so far.
"""
from __future__ import annotations

import hashlib
import itertools
import threading
import time
import traceback
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Protocol, Sequence


class Representation(Protocol):
    unit: str  # what `size` counts, in the user's words ("tokens", "operations")

    def size(self, program: str) -> int: ...
    def key(self, program: str) -> tuple: ...  # what must strictly decrease; starts with size
    def verify(self, program: str) -> bool: ...
    # optional: parse(program) -> the work item passes read; without it they get the text


class Pass(Protocol):
    name: str

    def points(self, item: Any) -> Sequence: ...  # what can change, in the order to try it
    def apply(self, item: Any, point: Any) -> str | None: ...  # the candidate for one point


class Chunks(NamedTuple):
    """A change point that stands for chunks of `length` items at `where` (the driver lays them out)."""

    where: Any
    length: int
    from_end: bool = False  # within one chunk size, the last chunk first


class Chunk(NamedTuple):
    """One chunk, items `start` to `stop` (not included) of what `where` names."""

    where: Any
    start: int
    stop: int


def chunk_order(n: int, from_end: bool = False) -> Iterator[tuple[int, int]]:
    """(start, stop) of every chunk of `n` items, the whole first, then halves … single items."""
    size = n
    while size >= 1:
        if from_end:
            yield from ((max(0, end - size), end) for end in range(n, 0, -size))
        else:
            yield from ((start, min(n, start + size)) for start in range(0, n, size))
        if size == 1:
            break
        size = max(1, size // 2)


def layout(points: Iterable) -> list:
    """The points a pass reported, with every `Chunks` entry laid out as its chunks."""
    out = []
    for point in points:
        if isinstance(point, Chunks):
            out += [Chunk(point.where, a, b) for a, b in chunk_order(point.length, point.from_end)]
        else:
            out.append(point)
    return out


def proposals(p, item: Any) -> Iterator[str]:
    """Every candidate a pass makes for `item`, in order (for tests and measurements)."""
    for point in layout(p.points(item)):
        candidate = p.apply(item, point)
        if candidate is not None:
            yield candidate


#: test(candidate, cancel) -> still interesting?
Test = Callable[[str, threading.Event], bool]


class ToolBug(Exception):
    """A pass or a test raised an exception: a bug of the tool, never a verdict on a candidate."""

    def __init__(self, pass_name: str, trace: str, best: str, during: str = "pass"):
        self.pass_name, self.trace, self.best, self.during = pass_name, trace, best, during
        last = trace.strip().splitlines()[-1] if trace.strip() else "an exception"
        where = f"pass {pass_name}" if during == "pass" else f"the test of a candidate of pass {pass_name}"
        super().__init__(f"bug in reducer: {where} raised {last}")


@dataclass
class Stats:
    started: float = field(default_factory=time.monotonic)
    tested: int = 0
    accepted: int = 0
    cache_hits: int = 0
    invalid: int = 0
    rounds: int = 0
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
    level: str = ""  # the level's name
    unit: str = ""  # what `size` counts (the representation's `unit`)


def _ignore(_: Any) -> None:
    return None


def _same(program: str) -> str:
    return program


@dataclass
class Problem:
    """What one level reduces, handed to every engine of that level run: the representation, the
    test, the callbacks, and the outcome cache and statistics that outlive any one engine."""

    representation: Representation
    test: Test
    on_event: Callable[[Event], None] = _ignore
    on_accept: Callable[[str], None] = _ignore
    level: str = ""
    cache: dict[str, bool] = field(default_factory=dict)
    stats: Stats = field(default_factory=Stats)
    whole: Callable[[str], str] = _same  # the whole program a candidate stands for (see `part`)

    def digest(self, candidate: str) -> str:
        return hashlib.sha1(self.whole(candidate).encode()).hexdigest()

    def parse(self, program: str) -> Any:
        parse = getattr(self.representation, "parse", None)
        return parse(program) if parse is not None else program

    def forget(self) -> None:
        """Drop every cached verdict (when earlier verdicts turn out not to be trusted)."""
        self.cache.clear()

    def part(self, representation: Representation, whole: Callable[[str], str], level: str) -> Problem:
        """The same problem reduced through one part of its programs (an MLIR module's pipeline):
        a candidate part is tested, cached, counted and saved as the whole program it makes."""
        outer = self.whole
        return replace(self, representation=representation, level=level, whole=lambda c: outer(whole(c)),
                       test=lambda c, cancel: self.test(whole(c), cancel),
                       on_accept=lambda c: self.on_accept(whole(c)))


class Engine:
    """Runs passes on one problem to a fixpoint; `reduce` may be called again on the same problem."""

    def __init__(self, problem: Problem, passes: Iterable[Pass], jobs: int = 1, stop: threading.Event | None = None,
                 deadline: float | None = None, stall: float | None = None, reorder: bool = False):
        self.problem = problem
        self.rep = problem.representation
        self.passes = list(passes)
        self.jobs = max(1, jobs)
        self.stop = stop or threading.Event()
        self.deadline = deadline
        self.stall = stall  # stop after this many seconds without an accepted candidate
        self.reorder = reorder
        self._yield: dict[str, tuple[int, int]] = {}  # pass -> (size removed, candidates tested), last round
        self.stalled = False
        self.cut = False  # the last `reduce` stopped at the deadline, short of a fixpoint and of its stall
        self._last_progress = time.monotonic()
        self.best = ""
        self._best_key: tuple = ()
        self._item: Any = None  # the best program, parsed (once per accepted candidate)
        self._points: dict[int, list] = {}  # id of a pass -> its laid-out points for `_item`

    @property
    def stats(self) -> Stats:
        return self.problem.stats

    def _halted(self) -> bool:
        now = time.monotonic()
        if self.stall is not None and now - self._last_progress > self.stall:
            self.stalled = True
        return self.stalled or self._out_of_time(now)

    def _out_of_time(self, now: float) -> bool:
        deadline = self.deadline() if callable(self.deadline) else self.deadline  # one that moves as runs get faster
        return self.stop.is_set() or (deadline is not None and now > deadline)

    def _verdict(self, fut: Future, cancel: threading.Event) -> bool | None:
        """A candidate's verdict; None when the deadline passed (or the job stopped) while it ran: it
        is cancelled then, not waited for (on a loaded machine a run in flight took the final checks' time)."""
        while True:
            try:
                return fut.result(timeout=0.25)
            except FutureTimeout:
                if fut.done():  # the test itself raised it
                    raise
                if self._out_of_time(time.monotonic()):
                    cancel.set()
                    return None

    def _event(self, kind: str, pass_name: str) -> None:
        self.problem.on_event(Event(kind, pass_name, self._best_key[0], self.stats, self.problem.level,
                                    getattr(self.rep, "unit", "")))

    def _move_to(self, program: str) -> None:
        self.best, self._best_key = program, self.rep.key(program)
        self._item, self._points = None, {}

    def reduce(self, program: str) -> str:
        """Shrink `program` to a fixpoint of all passes; returns the smallest interesting one."""
        self._move_to(program)
        self._last_progress = time.monotonic()
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            self._pool = pool
            progress = True
            while progress and not self._halted():
                progress = False
                self.stats.rounds += 1
                order = self.pass_order()
                self._event("round", " ".join(p.name for p in order))  # a round's event names its passes in order
                self._yield = {}
                for p in order:
                    if self._halted():
                        break
                    self._event("pass", p.name)
                    size, tested = self._best_key[0], self.stats.tested
                    progress |= self.run_pass(p)
                    self._yield[p.name] = (size - self._best_key[0], self.stats.tested - tested)
        self.cut = self._halted() and not self.stalled and not self.stop.is_set()
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

    def _bug(self, p: Pass, during: str = "pass") -> ToolBug:
        return ToolBug(p.name, traceback.format_exc(), self.best, during)

    def _proposed(self, p: Pass, start: int) -> Iterator[tuple[int, str]]:
        """(position, candidate) from position `start` on: a point-based pass makes only the
        candidates asked for; a `candidates`-only pass is re-run and skips the first `start`."""
        if not hasattr(p, "points"):
            yield from enumerate(itertools.islice(p.candidates(self.best), start, None), start)
            return
        if self._item is None:
            self._item = self.problem.parse(self.best)
        if id(p) not in self._points:
            self._points[id(p)] = layout(p.points(self._item))
        points = self._points[id(p)]
        for index in range(start, len(points)):
            candidate = p.apply(self._item, points[index])
            if candidate is not None:
                yield index, candidate

    def _eligible(self, p: Pass, start: int) -> Iterator[tuple[int, str]]:
        seen: set[str] = set()
        cache, stats = self.problem.cache, self.stats
        proposed = self._proposed(p, start)
        while True:
            try:
                nxt = next(proposed, None)
            except Exception:
                raise self._bug(p) from None
            if nxt is None:
                return
            index, cand = nxt
            digest = self.problem.digest(cand)
            if digest in seen or self.rep.key(cand) >= self._best_key:
                continue
            seen.add(digest)
            if digest in cache:
                stats.cache_hits += 1
                if cache[digest]:
                    yield index, cand  # cannot normally happen: a success is always accepted
                continue
            if not self.rep.verify(cand):
                stats.invalid += 1
                cache[digest] = False
                continue
            yield index, cand

    def _accept(self, p: Pass, cand: str) -> None:
        self._move_to(cand)
        self.stats.accepted += 1
        self._last_progress = time.monotonic()
        self.stats.count(p.name, "accepted")
        self.problem.on_accept(cand)
        self._event("accept", p.name)

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
                    window.append((*nxt, self._pool.submit(self.problem.test, nxt[1], cancel), cancel))
                if not window:
                    return None
                index, cand, fut, cancel = window.popleft()
                try:
                    ok = self._verdict(fut, cancel)
                except Exception:
                    raise self._bug(p, "test") from None
                if ok is None:
                    return None
                if cancel.is_set():  # stopped: the verdict means nothing
                    continue
                self.problem.cache[self.problem.digest(cand)] = ok
                self.stats.tested += 1
                self.stats.count(p.name, "tested")
                self._event("test", p.name)
                if ok and self.rep.key(cand) < self._best_key:
                    self._accept(p, cand)
                    return index
                if self._halted():
                    return None
        finally:
            for _, _, fut, cancel in window:
                cancel.set()
            for _, _, fut, _ in window:
                try:
                    fut.result()
                except Exception:  # a cancelled candidate: its verdict, or its failure, is not used
                    pass
