"""The one base of every pass, at every level (source, jaxpr, IR, pipeline): what the engine asks of
a pass (`reducer.engine.Pass`) and what the levels share.

A pass has a `name`; `points(item)` lists what it can change in the work item (the program parsed
once by the level's representation, which no pass changes), in the order to try it, largest cuts
first; a `Chunks(where, n)` entry stands for chunks of `n` items, which the engine lays out (the
whole, then halves … single items), and `apply` then gets one `Chunk(where, start, stop)`;
`apply(item, point)` makes the candidate's text for one point, or None. `candidates(program)`
gives every candidate for a program's text, in the order the engine would try them (`parse` reads
the text as the pass's work item).

What a pass's exception means: by default a bug of the tool (the engine stops and raises
`reducer.engine.ToolBug`, with the pass, the traceback and the best program). A pass wrapped in
`Guarded` (the IR passes, whose MLIR bindings may fail on an odd module) stops on that program
instead: it proposes nothing more there, and the exception is reported through `stopped` (kept in
`errors` for the level's summary, each different one logged once).
"""
from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any, Callable, Iterator

from reducer.engine import Chunk, Chunks, proposals

__all__ = ["Chunk", "Chunks", "Guarded", "ReductionPass", "raised_at"]


class ReductionPass:
    """The base of every pass (see the module docstring); a subclass has `name`, `points`, `apply`,
    and `parse` when its work item is not the program's text."""

    name = ""
    #: why this pass stopped on a program, once per time (see `stopped`)
    errors: list[str] | tuple = ()

    def points(self, item: Any) -> list:
        raise NotImplementedError

    def apply(self, item: Any, point: Any) -> str | None:
        raise NotImplementedError

    def parse(self, program: str) -> Any:
        """The work item of `program`'s text (the text itself unless a level says otherwise)."""
        return program

    def candidates(self, program: str) -> Iterator[str]:
        """Every candidate for the text `program`, in order (what the engine would try)."""
        yield from proposals(self, self.parse(program))

    def log(self, line: str) -> None:
        """Where `stopped` says so (nowhere unless the pass is given a log)."""

    def stopped(self, what: str) -> None:
        """The pass stops on the program at hand because of `what`: kept in `errors`, and logged the
        first time it is seen."""
        if not isinstance(self.errors, list):
            self.errors = []
        if what not in self.errors:
            self.log(f"pass {self.name} stopped on this module: {what}")
        self.errors.append(what)


def raised_at(exc: BaseException) -> str:
    """An exception in one line, with the file and line it was raised at."""
    at = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{type(exc).__name__}: {exc} (at {Path(at.filename).name}:{at.lineno})"


class Guarded(ReductionPass):
    """A pass that stops proposing, instead of ending the reduction, when it fails on a program it
    cannot handle (an exception while finding its points or making a candidate): each such
    exception is reported through `stopped`, with where it was raised. A work item that says it
    could not be read (`ok` false) has no points."""

    def __init__(self, inner, log: Callable[[str], None] | None = None):
        self.inner = inner
        self.name = inner.name
        self.errors = []
        if log is not None:
            self.log = log

    def parse(self, program: str) -> Any:
        return self.inner.parse(program) if hasattr(self.inner, "parse") else program

    def points(self, item: Any) -> list:
        if not getattr(item, "ok", True):
            return []
        try:
            return self.inner.points(item)
        except Exception as exc:
            self.stopped(raised_at(exc))
            return []

    def apply(self, item: Any, point: Any) -> str | None:
        try:
            return self.inner.apply(item, point)
        except Exception as exc:
            self.stopped(raised_at(exc))
            return None
