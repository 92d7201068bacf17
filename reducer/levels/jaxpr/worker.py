"""What a worker runs for a traced-program candidate.

The traced level's candidates are `reducer.workers.requests.TracedProgram` requests: they run in the
warm workers every level shares (`reducer.workers.sandbox`), with the same limits, timeout,
cancellation and crash isolation as scripts, and no Python source written per candidate.
`run_traced` re-runs the spec's transformations on its jaxpr (`reducer.levels.jaxpr.program.run`):
exit status 0 when the transformed program ran, 1 and the traceback when it raised.
"""
from __future__ import annotations

import dataclasses

from reducer.workers.requests import TracedProgram


def run_traced(request: TracedProgram) -> None:
    """Run a `TracedProgram` request in this interpreter; raises what the program raises."""
    from reducer.levels.jaxpr import program as jaxpr_program
    from reducer.levels.jaxpr.codec import registry

    registry()
    jaxpr_program.run(request.spec)


def run_spec(sandbox, spec: str, limits, timeout: float, cancel=None):
    """Run one spec through `sandbox` (the reduction's own, so that Ctrl-C and cancellation reach
    it) with the candidate limits and this `timeout`; returns the `RunResult`."""
    return sandbox.run(TracedProgram(spec), dataclasses.replace(limits, timeout=timeout), cancel)
