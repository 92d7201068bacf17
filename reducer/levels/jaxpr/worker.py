"""What a worker runs for a traced-program candidate.

The traced level's candidates are `reducer.workers.requests.TracedProgram` requests: they run in the
warm workers every level shares (`reducer.workers.sandbox`), with the same limits, timeout,
cancellation and crash isolation as scripts, and no Python source written per candidate.
`run_traced` re-runs the spec's transformations on its jaxpr (`reducer.levels.jaxpr.program.run`):
exit status 0 when the transformed program ran, 1 and the traceback when it raised; a crash ends
only the worker's child. A spec with a `check` is judged numerically instead
(`reducer.levels.jaxpr.numeric`).
"""
from __future__ import annotations

import dataclasses

from reducer.workers.requests import TracedProgram


def run_traced(request: TracedProgram) -> None:
    """Run a `TracedProgram` request in this interpreter; raises what the program raises."""
    import jax

    from reducer.levels.jaxpr import numeric
    from reducer.levels.jaxpr import program as jaxpr_program
    from reducer.levels.jaxpr.codec import registry

    registry()
    jax.config.update("jax_cpu_enable_async_dispatch", False)  # a crash on the thread that ran it, as in the harness
    spec = jaxpr_program.loads(request.spec)
    if spec.get("check"):
        numeric.run_check(spec)
    else:
        jaxpr_program.run(request.spec)


def run_spec(sandbox, spec: str, limits, timeout: float, cancel=None):
    """Run one spec through `sandbox` (the reduction's own, so that Ctrl-C and cancellation reach
    it) with the candidate limits and this `timeout`; returns the `RunResult`."""
    return sandbox.run(TracedProgram(spec), dataclasses.replace(limits, timeout=timeout), cancel)
