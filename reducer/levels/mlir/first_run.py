"""How a module fails: the first runs of the IR level, before any reduction.

A module with a pipeline (an Enzyme-JAX dump) runs that pipeline, then, when it differentiates in
reverse mode and runs cleanly, the gradient check. A plain module runs as XLA runs it (compiled for
the platform and executed on fixed inputs), then XLA's results against its unoptimised
compilation, and only then, for a module that did not come from XLA itself (HLO text, a dump
folder), Enzyme-JAX's reverse mode as `enzyme_jax_ir` would run it. The first run that fails sets
the kind of its runs (`job`: the module's `reducer.levels.mlir.module_runs.ModuleRuns`); for a dump
folder the modules are tried newest first.
"""
from __future__ import annotations

import importlib.util

import oracles
from oracles.base import Oracle, Signature
from reducer.errors import NO_BACKEND, NO_FAILURE, OTHER_FAILURE, ReducerError
from reducer.verdict import last_words, no_backend
from reducer.levels.mlir import module as mm, wrong_gradient, xla_results
from reducer.levels.mlir.run_module import ENZYME, GRADIENT, PIPELINE_KINDS, XLA, XLA_RESULTS
from reducer.workers.sandbox import RunResult

#: what each kind of run is, in the log and in errors
TRIED = {ENZYME: "Enzyme-JAX's pipeline", XLA: "XLA (compiling and running it)",
         XLA_RESULTS: "XLA's results against its unoptimised compilation",
         GRADIENT: "the gradient check against finite differences"}


def first_failure(job) -> tuple[Oracle, Signature, RunResult]:
    """How the job's module fails, from first runs in subprocesses; for an XLA dump, the newest of
    its modules that fails."""
    first = (job.source_name, job.original)
    for k, (name, module_text) in enumerate([first, *job.dumped]):
        job.source_name, job.original, job.text = name, module_text, module_text
        try:
            return of_module(job)
        except ReducerError as exc:
            if exc.status != NO_FAILURE or k == len(job.dumped):
                if job.dumped:
                    raise ReducerError(f"{first[0].split('/')[0]}: none of its {len(job.dumped) + 1} modules "
                                       f"fails in XLA (the last tried: {exc})", exc.status) from None
                raise
            job.log(f"{name}: does not fail; trying the module XLA compiled before it")
    raise AssertionError("unreachable")


def of_module(job) -> tuple[Oracle, Signature, RunResult]:
    """How one module fails: the runs that apply to it, in turn, until one shows a failure."""
    pipeline, module_text = mm.split(job.original)
    if pipeline:
        attempts = [(ENZYME, pipeline)]
    else:  # a plain module runs as XLA runs it; Enzyme-JAX's reverse mode only if XLA runs it right
        attempts = [(XLA, None), (XLA_RESULTS, None)] + [
            (ENZYME, p) for p in [None if job.from_xla else job.rep.default_pipeline(module_text)] if p]
    # a pipeline that runs may still differentiate wrongly
    attempts += [(GRADIENT, p) for kind, p in attempts[-1:] if kind == ENZYME and wrong_gradient.differentiates(p)]
    if importlib.util.find_spec("enzyme_ad") is None:
        if job.header:
            raise ReducerError(f"{job.source_name}: running its Enzyme-JAX pipeline needs enzyme-ad "
                               f"(pip install enzyme-ad)", OTHER_FAILURE)
        attempts = [a for a in attempts if a[0] not in PIPELINE_KINDS]
    seen = []
    for kind, pipeline in attempts:
        job.kind = kind
        program = mm.join(pipeline if kind in PIPELINE_KINDS else None, module_text)
        run = job.run_candidate(program, fresh=True)
        reason = no_backend(run)
        if reason:
            raise ReducerError(f"{job.source_name}: {reason}", NO_BACKEND)
        hit = job.classify(run)
        seen.append((kind, run))
        verdict = xla_results.verdict(run.output) if kind == XLA_RESULTS else None
        if verdict:  # the reference every candidate is run against
            job.xla = {**job.xla, "reference": verdict["reference"]}
        if hit:
            job.original = program
            break
        if kind == XLA and run.returncode == 0:
            job.log(f"XLA compiles and runs {job.source_name} on {job.options.platform}")
    else:
        no_failure(job, seen)
    return (*hit, run)


def no_failure(job, seen: list[tuple[str, RunResult]]) -> None:
    """Raise the one-line error for a module on which no run showed the failure wanted."""
    kind, run = seen[-1]
    if job.requested is not None and job.requested.runs_candidates:
        raise ReducerError(f"{job.source_name}: the --oracle command rejects the original module "
                           f"({last_words(run)})", OTHER_FAILURE)
    if kind == GRADIENT and run.returncode != 0 and run.signal is None and wrong_gradient.verdict(run.output) is None:
        raise ReducerError(f"{job.source_name}: does not fail in Enzyme-JAX's pipeline, and its gradient could "
                           f"not be checked: {last_words(run)}", NO_FAILURE)
    if all(r.returncode == 0 for _, r in seen):
        tried = [TRIED[k] for k, _ in seen]
        who = (f"{tried[0]} does not fail" if len(tried) == 1
               else "neither " + ", ".join(tried[:-1]) + f" nor {tried[-1]} fails")
        raise ReducerError(f"{job.source_name}: does not fail ({who} on it): nothing to reduce", NO_FAILURE)
    other = oracles.detect(run, job.options.platform, own_checks=False)
    what = str(other[1]) if other else last_words(run)
    raise ReducerError(f"{job.source_name}: fails, but not as --oracle {job.options.oracle} expects; "
                       f"saw: {what}", OTHER_FAILURE)
