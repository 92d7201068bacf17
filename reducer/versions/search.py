"""The bisection: over versions ordered oldest first, find where the failure starts and stops.

Probes run `jobs` at a time. The first round tries the newest and oldest versions and the installed
one; until a failing version is known, the untried ones follow middle first. From a failing
version the search goes down to the last working version before it and up to the first working
version after it, each time trying `jobs` versions spread evenly over the part still in doubt.
A skipped version (it cannot be installed, or the reproducer fails to import or fails in another
way) is neither good nor bad, as with `git bisect skip`: the search tries its neighbours instead,
and a boundary with skipped versions on it is reported as a range.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from reducer.versions.probe import FAILS, SKIPPED, WORKS, Probe


@dataclass
class Bisection:
    """The versions tried and what each showed, and the boundaries found."""

    package: str
    versions: list[str]
    probes: dict[str, Probe] = field(default_factory=dict)
    first_bad: int | None = None  # index of the first failing version of the run that holds the anchor
    last_bad: int | None = None

    def verdict(self, i: int) -> str | None:
        probe = self.probes.get(self.versions[i])
        return probe.verdict if probe else None

    def indices(self, verdict: str) -> list[int]:
        return [i for i in range(len(self.versions)) if self.verdict(i) == verdict]

    @property
    def last_good(self) -> int | None:
        """The working version just before the failing run, if one was found."""
        if self.first_bad is None:
            return None
        good = [i for i in self.indices(WORKS) if i < self.first_bad]
        return good[-1] if good else None

    @property
    def first_fixed(self) -> int | None:
        if self.last_bad is None:
            return None
        good = [i for i in self.indices(WORKS) if i > self.last_bad]
        return good[0] if good else None


def spread(candidates: list[int], k: int) -> list[int]:
    """`k` of `candidates` spread evenly over them (the middle one when k is 1)."""
    if len(candidates) <= k:
        return list(candidates)
    return sorted({candidates[(j + 1) * len(candidates) // (k + 1)] for j in range(k)})


def middle_first(candidates: list[int]) -> list[int]:
    """The candidates in the order a coarse-to-fine scan tries them."""
    order, spans = [], [candidates]
    while spans:
        span = spans.pop(0)
        if not span:
            continue
        mid = len(span) // 2
        order.append(span[mid])
        spans += [span[:mid], span[mid + 1:]]
    return order


def bisect(package: str, versions: list[str], probe: Callable[[str], Probe], jobs: int = 1,
           anchor: str | None = None, on_probe: Callable[[Probe], None] | None = None,
           known: dict[str, Probe] | None = None) -> Bisection:
    """Probe versions until the boundaries of the failing run that holds the anchor are known.

    `known`: verdicts settled without a run (a release with nothing that installs here is skipped).
    """
    state = Bisection(package, list(versions), dict(known or {}))
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))

    def run(indices: list[int]) -> None:
        todo = [state.versions[i] for i in indices if state.verdict(i) is None]
        for result in pool.map(probe, todo):
            state.probes[result.version] = result
            if on_probe:
                on_probe(result)

    try:
        n = len(versions)
        first = [n - 1, 0] + ([versions.index(anchor)] if anchor in versions else [])
        run(list(dict.fromkeys(first)))
        untried = [i for i in middle_first(list(range(n))) if state.verdict(i) is None]
        while not state.indices(FAILS) and untried:
            run(untried[:jobs])
            untried = untried[jobs:]
        bad = state.indices(FAILS)
        if not bad:
            return state
        start = versions.index(anchor) if anchor in versions and state.verdict(versions.index(anchor)) == FAILS \
            else bad[-1]
        state.first_bad = _boundary(state, start, -1, run, jobs)
        state.last_bad = _boundary(state, start, +1, run, jobs)
        return state
    finally:
        pool.shutdown(wait=True)


def _boundary(state: Bisection, bad: int, step: int, run, jobs: int) -> int:
    """From failing index `bad`, the outermost failing index in direction `step` before a working one."""
    while True:
        beyond = range(bad + step, -1 if step < 0 else len(state.versions), step)
        good = next((i for i in beyond if state.verdict(i) == WORKS), None)
        end = good if good is not None else (-1 if step < 0 else len(state.versions))
        between = range(bad + step, end, step)
        nearer = [i for i in between if state.verdict(i) == FAILS]
        if nearer:  # a failing version already known between: move the boundary to the outermost one
            bad = nearer[-1]
            continue
        doubt = sorted(i for i in between if state.verdict(i) is None)
        if not doubt:
            return bad
        run(spread(doubt, jobs))


def skipped_between(state: Bisection, low: int | None, high: int | None) -> list[Probe]:
    """The skipped versions strictly between two indices (None: the end of the list)."""
    lo = -1 if low is None else low
    hi = len(state.versions) if high is None else high
    return [state.probes[state.versions[i]] for i in range(lo + 1, hi) if state.verdict(i) == SKIPPED]
