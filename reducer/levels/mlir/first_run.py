"""How a module fails: the first runs of the IR level, before any reduction.

A module with a pipeline (an Enzyme-JAX dump) runs that pipeline, then, when it differentiates in
reverse mode and runs cleanly, the gradient check. A plain module runs as XLA runs it (compiled for
the platform and executed on fixed inputs), then XLA's results against its unoptimised
compilation, and only then, for a module that did not come from XLA itself (HLO text, a dump
folder), Enzyme-JAX's reverse mode as `enzyme_jax_ir` would run it. The first run that fails says
the kind of its runs; for a dump folder the modules are tried newest first. What they learn is
returned (`FirstRun`), for the module's runs (`reducer.levels.mlir.module_runs.ModuleRuns`, `job`
here, each run told its kind) to take.
"""
from __future__ import annotations

import importlib.util
from typing import NamedTuple, NoReturn

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


class FirstRun(NamedTuple):
    """What the first runs of a module learned: how it fails, which module (of a dump folder, the
    newest that fails: `source_name`, its `text` as given), the program that fails (`original`: with
    the pipeline of the kind of run it fails in), that `kind`, and for XLA's results the options of
    the compilation they are compared with (`reference`)."""

    oracle: Oracle
    signature: Signature
    run: RunResult
    source_name: str
    text: str
    original: str
    kind: str
    reference: dict | None = None


def first_failure(job, text: str) -> FirstRun:
    """How the job's module (`text`) fails, from first runs in subprocesses; for an XLA dump, the
    newest of its modules that fails."""
    first = (job.source_name, text)
    for k, (name, module_text) in enumerate([first, *job.dumped]):
        try:
            return of_module(job, name, module_text)
        except ReducerError as exc:
            if exc.status != NO_FAILURE or k == len(job.dumped):
                if job.dumped:
                    raise ReducerError(f"{first[0].split('/')[0]}: none of its {len(job.dumped) + 1} modules "
                                       f"fails in XLA (the last tried: {exc})", exc.status) from None
                raise
            job.log(f"{name}: does not fail; trying the module XLA compiled before it")
    raise AssertionError("unreachable")


def of_module(job, name: str, text: str) -> FirstRun:
    """How one module (`text`, called `name`) fails: the runs that apply to it, in turn, until one
    shows a failure."""
    pipeline, module_text = mm.split(text)
    if pipeline:
        attempts = [(ENZYME, pipeline)]
    else:  # a plain module runs as XLA runs it; Enzyme-JAX's reverse mode only if XLA runs it right
        attempts = [(XLA, None), (XLA_RESULTS, None)] + [
            (ENZYME, p) for p in [None if job.from_xla else job.rep.default_pipeline(module_text)] if p]
    # a pipeline that runs may still differentiate wrongly
    attempts += [(GRADIENT, p) for kind, p in attempts[-1:] if kind == ENZYME and wrong_gradient.differentiates(p)]
    if importlib.util.find_spec("enzyme_ad") is None:
        if job.header:
            raise ReducerError(f"{name}: running its Enzyme-JAX pipeline needs enzyme-ad "
                               f"(pip install enzyme-ad)", OTHER_FAILURE)
        attempts = [a for a in attempts if a[0] not in PIPELINE_KINDS]
    seen, reference = [], None
    for kind, pipeline in attempts:
        program = mm.join(pipeline if kind in PIPELINE_KINDS else None, module_text)
        run = job.run_candidate(program, fresh=True, kind=kind)
        reason = no_backend(run)
        if reason:
            raise ReducerError(f"{name}: {reason}", NO_BACKEND)
        hit = job.classify(run, kind)
        seen.append((kind, run))
        verdict = xla_results.verdict(run.output) if kind == XLA_RESULTS else None
        if verdict:  # the reference every candidate is run against
            reference = verdict["reference"]
        if hit:
            return FirstRun(*hit, run, name, text, program, kind, reference)
        if kind == XLA and run.returncode == 0:
            job.log(f"XLA compiles and runs {name} on {job.options.platform}")
    no_failure(job, seen, name)


def no_failure(job, seen: list[tuple[str, RunResult]], name: str) -> NoReturn:
    """Raise the one-line error for a module (called `name`) on which no run showed the failure wanted."""
    kind, run = seen[-1]
    if job.requested is not None and job.requested.runs_candidates:
        raise ReducerError(f"{name}: the --oracle command rejects the original module "
                           f"({last_words(run)})", OTHER_FAILURE)
    if kind == GRADIENT and run.returncode != 0 and run.signal is None and wrong_gradient.verdict(run.output) is None:
        raise ReducerError(f"{name}: does not fail in Enzyme-JAX's pipeline, and its gradient could "
                           f"not be checked: {last_words(run)}", NO_FAILURE)
    if all(r.returncode == 0 for _, r in seen):
        tried = [TRIED[k] for k, _ in seen]
        who = (f"{tried[0]} does not fail" if len(tried) == 1
               else "neither " + ", ".join(tried[:-1]) + f" nor {tried[-1]} fails")
        raise ReducerError(f"{name}: does not fail ({who} on it): nothing to reduce", NO_FAILURE)
    other = oracles.detect(run, job.options.platform, own_checks=False)
    what = str(other[1]) if other else last_words(run)
    raise ReducerError(f"{name}: fails, but not as --oracle {job.options.oracle} expects; "
                       f"saw: {what}", OTHER_FAILURE)
