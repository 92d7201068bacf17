"""Starting points of the source level: a small program built from one more run of the script with
an instrument on, tried before the passes shrink the script statement by statement. The source
level's counterpart of the traced level's operation at fault alone: where the failure is a value
the program's own check reads, a person isolates the step that goes wrong (the layer whose output
first parts from the NumPy reference, the optimizer on a toy problem) instead of deleting lines
around it; the passes then shrink what is left.

Contract: a start is one module with a class that has `name`, `applies(signature) -> bool` and
`proposals(program, run) -> Iterator[str]`, where `run(text) -> RunResult` runs a program as a
fresh candidate (in the job's sandbox, with its limits and data files). Proposals come smallest
first; the level judges each with the job's own test, and the first smaller than the program that
shows the failure is where the passes start. A start may also have `must_keep(start) -> predicate`:
what every later candidate must still have of the program it started (a candidate that lost it is
not judged). Add it with one line in `STARTS`.
"""
from __future__ import annotations

import threading
from typing import Callable, Iterator, Protocol

from oracles.outcome import RunResult, Signature
from reducer.levels.source.starts.call_alone import CallAlone
from reducer.levels.source.starts.check_alone import CheckAlone
from reducer.levels.source.starts.optimizer_alone import OptimizerAlone
from reducer.levels.source.starts.reference_alone import ReferenceAlone


class Start(Protocol):
    name: str

    def applies(self, signature: Signature) -> bool: ...

    def proposals(self, program: str, run: Callable[[str], RunResult]) -> Iterator[str]: ...


#: tried in order; the first proposal that shows the failure is where the source passes start
STARTS: list[type] = [ReferenceAlone, OptimizerAlone, CallAlone, CheckAlone]

MAX_PROPOSALS = 6  # judged per start: each costs a candidate's run (and its votes)


def starting_point(program: str, signature: Signature, run: Callable[[str], RunResult],
                   test: Callable[[str, threading.Event], bool], log: Callable[[str], None],
                   stop: threading.Event, size: Callable[[str], int] = len) -> tuple[str, Start] | None:
    """The first proposal of an applicable start smaller than `program` (by `size`) that passes
    `test`, with the start that made it; None when no start applies or none of their proposals shows
    the failure."""
    for kind in STARTS:
        start = kind()
        if not start.applies(signature):
            continue
        for k, candidate in enumerate(c for c in start.proposals(program, run) if size(c) < size(program)):
            if stop.is_set() or k >= MAX_PROPOSALS:
                break
            if test(candidate, stop):
                return candidate, start
        log(f"{start.name}: no smaller program to start from showed the failure")
    return None
