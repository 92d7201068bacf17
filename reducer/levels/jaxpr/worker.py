"""What a worker runs for a traced-program candidate.

The traced level's candidates are `TracedProgram` requests (a kind registered with
`reducer.workers.requests`, defined here): they run in the
warm workers every level shares (`reducer.workers.sandbox`), with the same limits, timeout,
cancellation and crash isolation as scripts, and no Python source written per candidate.
`run_traced` re-runs the spec's transformations on its jaxpr (`reducer.levels.jaxpr.program.run`):
exit status 0 when the transformed program ran, 1 and the traceback when it raised; a crash ends
only the worker's child. A spec with a `check` is judged numerically instead
(`reducer.levels.jaxpr.value_checks`).

`CapturedScript` is the other request kind of this level: a script run under the traced level's
capture (`reducer.levels.jaxpr.capture`), with each transformed call recorded ahead when `ahead`
(`reducer.levels.jaxpr.calls_recorded_ahead`), and the values of calls made inside traced ones when `values`:
what the traced level starts from, and what a crash's operation is
looked for in (`reducer.levels.jaxpr.crash_site`).
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import ClassVar

from reducer.workers import requests


@requests.kind
@dataclass(frozen=True)
class TracedProgram:
    """A jaxpr spec (`reducer.levels.jaxpr.program`): its jaxpr, transformations and arguments."""

    kind: ClassVar[str] = "jaxpr"
    spec: str

    def run(self) -> int:
        from reducer import compile_cache

        compile_cache.shared_by_candidates()  # as a script's harness does: what a candidate compiles stays
        return requests.status_of(lambda: run_traced(self))


@requests.kind
@dataclass(frozen=True)
class CapturedScript:
    """A candidate script (`source`, written into the scratch folder as `name`) run under the
    capturing harness, every transformed call recorded before it runs when `ahead`."""

    kind: ClassVar[str] = "capture"
    name: str
    source: str
    ahead: bool = True
    values: bool = False  # the values of calls made inside traced ones too (`calls_recorded_ahead.VALUES_ENV`)

    def run(self) -> int:
        from reducer.workers import imports

        imports.lend_nothing()  # the script sees the modules its own imports load, and the capture
        from reducer.levels.jaxpr import calls_recorded_ahead, capture

        if self.ahead:
            os.environ[calls_recorded_ahead.ENV] = "1"
        if self.values:
            os.environ[calls_recorded_ahead.VALUES_ENV] = "1"
        return capture.main([self.name])


def run_traced(request: TracedProgram) -> None:
    """Run a `TracedProgram` request in this interpreter; raises what the program raises."""
    import jax

    from reducer.levels.jaxpr import value_checks
    from reducer.levels.jaxpr import program as jaxpr_program
    from reducer.levels.jaxpr.primitives import registry

    registry()
    jax.config.update("jax_cpu_enable_async_dispatch", False)  # a crash on the thread that ran it, as in the harness
    spec = jaxpr_program.parse(request.spec)
    if spec.check:
        value_checks.run_check(spec)
    else:
        jaxpr_program.run(request.spec)


def run_spec(sandbox, spec: str, limits, timeout: float, cancel=None):
    """Run one spec through `sandbox` (the reduction's own, so that Ctrl-C and cancellation reach
    it) with the candidate limits and this `timeout`; returns the `RunResult`."""
    return sandbox.run(TracedProgram(spec), dataclasses.replace(limits, timeout=timeout), cancel)
